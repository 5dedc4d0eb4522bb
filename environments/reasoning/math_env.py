"""Math problems judged by math-verify: generated ones (``Math-v0``) and the user's files (:class:`MathFileEnv`).

``Math-v0``: task ``task_id`` is one problem drawn by a generator seeded with the id: a kind of
``math_problems.yaml`` (linear equations, sums of fractions, a discount word problem, committees,
sums of squared roots, modular powers, least common multiples), one of its templates and its
numbers. The answer is computed exactly (an integer, a fraction in lowest terms, or a decimal
of at most two places). Splits are by task id (train 0-9,999, dev 10,000-10,999, test
11,000-11,999).

:class:`MathFileEnv` reads problems from the user's JSONL or parquet files (GSM8K, MATH,
AIME, DAPO-Math style; nothing is downloaded): ``question_field`` and ``answer_field`` name the
fields (dotted paths reach nested ones, e.g. ``reward_model.ground_truth``; a list of chat
messages counts as its last user message). A reference answer is the text after GSM8K's
``####``, else the last ``\\boxed{}`` (MATH's solutions), else the field as it is.

Action: the final answer as ``Action: answer[...]``, ``<answer>...</answer>``, or the last
``\\boxed{...}`` or ``Final answer: ...`` line of the reply (see :mod:`.answers`).

Reward: 1 when math-verify finds the answer equal to the reference (``\\frac{1}{2}``, ``0.5``
and ``1/2`` are the same number; a sympy expression equal to it is too), else 0. Answers with
numbers too big to compare safely (a power with an exponent above 10,000 or that is itself a
power, a factorial above 1,000) score 0: math-verify's own timeouts use ``signal.alarm``, which
works only in the main thread, so they are off and this bound keeps judging fast everywhere.

Oracle: the reference answer. Random baseline: the reference answer of another task of the
same split.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from agentgym.contract.core import TaskSplits
from agentgym.environments.reasoning import MATH_SPLITS
from agentgym.environments.reasoning.answers import INTERPRETER_PACKAGES, AnswerEnv
from agentgym.sandbox import Limits

_FINAL_LINE = re.compile(r"^[ \t*#>_-]*(?:the\s+)?final\s+answer(?:\s+is)?[*_ \t]*[:：]?(.+)$", re.I | re.M)
#: Bounds of :func:`safe_to_compare`.
MAX_EXPONENT = 10_000
MAX_FACTORIAL = 1_000


# ---- judging ------------------------------------------------------------------------------------


def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``, braces balanced."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    opening = text.find("{", start)
    if opening < 0:
        return None
    depth = 0
    for index in range(opening, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return text[opening + 1 : index].strip()
    return None


def reference_answer(text: str) -> str:
    """A file's reference answer: after GSM8K's ``####``, else the last ``\\boxed{}``, else the text."""
    if "####" in text:
        return text.rsplit("####", 1)[1].strip()
    return last_boxed(text) or text.strip()


def parse_math(text: str) -> list[Any]:
    """math-verify's reading of ``text`` (as it is, else as inline LaTeX); empty when it finds nothing."""
    from math_verify import parse

    return parse(text, parsing_timeout=None) or parse(f"${text}$", parsing_timeout=None)


def safe_to_compare(parsed: Sequence[Any]) -> bool:
    """Whether a parsed answer holds no number too big to compare quickly (see the module docstring)."""
    import sympy

    for value in parsed:
        if not isinstance(value, sympy.Basic):
            continue
        for power in value.atoms(sympy.Pow):
            exponent = power.exp
            if exponent.has(sympy.Pow) or (exponent.is_Number and abs(exponent) > MAX_EXPONENT):
                return False
        for factorial in value.atoms(sympy.factorial):
            if factorial.args[0].is_Number and factorial.args[0] > MAX_FACTORIAL:
                return False
    return True


def math_equal(reference: str, answer: str) -> bool:
    """Whether math-verify finds ``answer`` equal to ``reference``; never raises."""
    from math_verify import verify

    try:
        gold, prediction = parse_math(reference), parse_math(answer)
        if not gold or not prediction or not (safe_to_compare(gold) and safe_to_compare(prediction)):
            return False
        return bool(verify(gold, prediction, timeout_seconds=None))
    except Exception:  # noqa: BLE001 (sympy can fail on odd input in many ways: a wrong answer)
        return False


class MathAnswerEnv(AnswerEnv):
    """A math question with a reference answer, judged by :func:`math_equal` (see the module docstring)."""

    reference = ""

    def find_answer(self, command: str) -> str | None:
        found = super().find_answer(command)
        if found is not None:
            return found
        boxed = last_boxed(command)
        if boxed is not None:
            return boxed
        lines = _FINAL_LINE.findall(command)
        return lines[-1].strip().strip("$ .") if lines else None

    def judge(self, answer: str) -> float:
        return 1.0 if math_equal(self.reference, answer) else 0.0

    def expected_answer(self) -> str | None:
        return self.reference

    @property
    def action_syntax(self) -> str:
        return super().action_syntax + " A \\boxed{...} answer or a 'Final answer: ...' line counts too."


# ---- generated problems -----------------------------------------------------------------------------


@cache
def templates() -> dict[str, list[str]]:
    """Kind -> its question templates (``math_problems.yaml``)."""
    return yaml.safe_load(resources.files(__package__).joinpath("math_problems.yaml").read_text(encoding="utf-8"))


def _latex(value: Fraction | int) -> str:
    value = Fraction(value)
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def _draw(kind: str, rng: random.Random) -> tuple[dict[str, int], str]:
    """The template fields of one ``kind`` problem and its answer (LaTeX)."""
    if kind == "linear":
        a, b = rng.choice([n for n in range(-12, 13) if n not in (0, 1)]), rng.randint(-50, 50)
        c = rng.randint(-60, 60)
        return {"a": a, "b": b, "c": c}, _latex(Fraction(c - b, a))
    if kind == "fractions":
        b, d = rng.randint(2, 15), rng.randint(2, 15)
        a, c = rng.randint(1, b - 1), rng.randint(1, d - 1)
        return {"a": a, "b": b, "c": c, "d": d}, _latex(Fraction(a, b) + Fraction(c, d))
    if kind == "discount":
        price, pct, coupon = 20 * rng.randint(2, 40), rng.choice([10, 15, 20, 25, 30, 40, 50]), rng.randint(1, 10)
        final = Fraction(price * (100 - pct), 100) - coupon
        return {"price": price, "pct": pct, "coupon": coupon}, f"{float(final):g}"
    if kind == "committee":
        n = rng.randint(5, 20)
        k = rng.randint(2, min(6, n - 1))
        return {"n": n, "k": k}, str(math.comb(n, k))
    if kind == "roots":
        r, t = rng.randint(-12, 12), rng.randint(-12, 12)
        return {"s": r + t, "p": r * t}, str(r * r + t * t)
    if kind == "power_mod":
        a, e, m = rng.randint(2, 30), rng.randint(5, 200), rng.randint(3, 50)
        return {"a": a, "e": e, "m": m}, str(pow(a, e, m))
    if kind == "lcm":
        a, b = rng.randint(4, 120), rng.randint(4, 120)
        return {"a": a, "b": b}, str(math.lcm(a, b))
    raise ValueError(f"math_problems.yaml names a kind the generator does not know: {kind!r}")


class MathEnv(MathAnswerEnv):
    """Generated math problems (``Math-v0``, ``Math-Python-v0``); see the module docstring."""

    splits = MATH_SPLITS

    def _generate(self, task_id: int) -> str:
        self.question, self.reference = self.problem(task_id)
        return self.question

    def problem(self, task_id: int) -> tuple[str, str]:
        """Task ``task_id``'s question and reference answer."""
        rng = self.task_rng(task_id)
        kind = rng.choice(sorted(templates()))
        template = rng.choice(templates()[kind])
        fields, answer = _draw(kind, rng)
        question = template.format(**fields).replace("+ -", "- ").replace("- -", "+ ")
        return question, answer

    def random_action(self, rng: random.Random) -> str:
        """The reference answer of another task of this split (the "random" baseline)."""
        return f"answer[{self.problem(rng.choice(self.splits.ids(self.split)))[1]}]"


# ---- the user's files --------------------------------------------------------------------------------


class MathSetupError(ValueError):
    """The problem files are missing, unreadable, or lack the named fields; the message says what to give."""


def _field(record: Mapping[str, Any], path: str) -> Any:
    value: Any = record
    for key in path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            raise KeyError(path)
        value = value[key]
    if isinstance(value, list) and value and all(isinstance(item, Mapping) for item in value):
        users = [item for item in value if item.get("role") == "user"] or value
        value = users[-1].get("content", "")
    return value


def read_problems(path: str | Path, question_field: str, answer_field: str) -> list[tuple[str, str]]:
    """(question, reference answer) of every record of a JSONL or parquet file."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise MathSetupError(f"problem file {str(path)!r} does not exist")
    if path.suffix == ".parquet":
        import pyarrow.parquet  # the search extra's dependency

        records = pyarrow.parquet.read_table(path).to_pylist()
    else:
        lines = path.read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines if line.strip()]
    problems = []
    for number, record in enumerate(records, 1):
        try:
            question, answer = _field(record, question_field), _field(record, answer_field)
        except KeyError as missing:
            raise MathSetupError(
                f"{path}: record {number} has no field {missing}; name the fields with question_field= and "
                f"answer_field= (it has {', '.join(record)})"
            ) from None
        problems.append((str(question).strip(), reference_answer(str(answer))))
    if not problems:
        raise MathSetupError(f"problem file {str(path)!r} holds no records")
    return problems


class MathFileEnv(MathAnswerEnv):
    """Problems from the user's files, one file per split (see the module docstring).

    Task ids follow the files: train records first, then dev, then test, each in file order.
    """

    def __init__(
        self,
        train: str | Path | None = None,
        dev: str | Path | None = None,
        test: str | Path | None = None,
        question_field: str = "question",
        answer_field: str = "answer",
        tools: bool = False,
        interpreter_limits: Limits | Mapping[str, Any] | None = None,
        interpreter_packages: Sequence[str] = INTERPRETER_PACKAGES,
        render_mode: str | None = None,
        flexible_answer: bool = False,
    ) -> None:
        super().__init__(tools, interpreter_limits, interpreter_packages, render_mode, flexible_answer)
        files = {"train": train, "dev": dev, "test": test}
        if not any(files.values()):
            raise MathSetupError(
                "MathFileEnv reads your problem files: give train=, dev= and/or test= (JSONL or parquet), and "
                "question_field=/answer_field= when the fields are not 'question' and 'answer'"
            )
        self.problems = {
            split: read_problems(path, question_field, answer_field) if path else [] for split, path in files.items()
        }
        self.splits = TaskSplits(*(len(self.problems[split]) for split in ("train", "dev", "test")))

    def _generate(self, task_id: int) -> str:
        split = self.splits.split_of(task_id)
        self.question, self.reference = self.problems[split][task_id - self.splits.ids(split)[0]]
        return self.question

    def random_action(self, rng: random.Random) -> str:
        """The reference answer of another problem of this split (the "random" baseline)."""
        return f"answer[{rng.choice(self.problems[self.split])[1]}]"
