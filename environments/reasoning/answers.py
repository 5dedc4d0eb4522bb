"""What every id of the family shares: one question, one final answer, optionally the Python interpreter before it.

Action: the final answer as ``Action: answer[<answer>]`` (the brackets may hold brackets and
several lines), or inside ``<answer>...</answer>`` tags (reasoning-gym's own format), or a call of
the ``answer`` tool. Ids with the interpreter also take Python code: a fenced ```python block, or
``Action: python`` with the code below it, or a call of the ``python`` tool
(:class:`~agentgym.sandbox.interpreter.InterpreterMixin`); its output is the next observation and
the episode goes on. With ``flexible_answer=True`` a reply that gives no answer in these forms is
read as its last number (lm-evaluation-harness's "flexible-extract" of GSM8K: how small models that
answer in prose are scored); anything else is an invalid action.

Reward and termination: the first answer ends the episode; its score (in [0, 1], partial credit
where the scorer gives it) is the reward; success is a score of 1. Without the interpreter an id
is single-turn (``max_episode_steps=1``: a reply that holds no answer is truncated, score 0).
"""

from __future__ import annotations

import abc
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentgym.contract.core import InvalidAction, quote
from agentgym.sandbox import Limits
from agentgym.sandbox.interpreter import InterpreterMixin, code_of

_ANSWER = re.compile(r"answer\s*\[(.*)\]", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?")
#: Host packages the interpreter shows (their site-packages folders), when installed.
INTERPRETER_PACKAGES = ("numpy", "sympy")


def answer_in(command: str) -> str | None:
    """The answer a command gives: ``answer[...]`` (up to the last ``]``), else the last ``<answer>`` tag."""
    match = _ANSWER.match(command)
    if match:
        return match.group(1).strip()
    tags = _TAG.findall(command)
    return tags[-1].strip() if tags else None


def last_number(text: str) -> str | None:
    """The last number written in ``text`` (dollar signs and thousands' commas dropped), or ``None``."""
    numbers = _NUMBER.findall(text)
    return numbers[-1].replace("$", "").replace(",", "") if numbers else None


class AnswerEnv(InterpreterMixin):
    """A question answered once, scored by the family's judge (see the module docstring).

    Subclasses set up the question in ``_generate`` (storing ``self.question``) and implement
    :meth:`judge` and :meth:`expected_answer`.
    """

    max_observation_chars = 50_000

    def __init__(
        self,
        tools: bool = False,
        interpreter_limits: Limits | Mapping[str, Any] | None = None,
        interpreter_packages: Sequence[str] = INTERPRETER_PACKAGES,
        render_mode: str | None = None,
        flexible_answer: bool = False,
    ) -> None:
        super().__init__(render_mode)
        self.init_interpreter(tools, interpreter_limits, interpreter_packages)
        self.flexible_answer = flexible_answer
        self.question = ""
        self.last_answer: str | None = None

    @abc.abstractmethod
    def judge(self, answer: str) -> float:
        """The score of ``answer`` (in [0, 1]) for the current question; never raises."""

    @abc.abstractmethod
    def expected_answer(self) -> str | None:
        """A correct answer to the current question (the oracle's), or ``None`` when none is known."""

    def find_answer(self, command: str) -> str | None:
        """The answer a command gives (families add their own forms, e.g. ``\\boxed{}``)."""
        return answer_in(command)

    def answer_of(self, command: str) -> str | None:
        """The answer a reply gives: :meth:`find_answer`, else (``flexible_answer``) its last number."""
        found = self.find_answer(command)
        return last_number(command) if found is None and self.flexible_answer else found

    @property
    def action_syntax(self) -> str:
        answer = (
            "Give your final answer as 'Action: answer[<your answer>]' (or <answer>...</answer>); "
            "only the first answer counts and it ends the episode."
        )
        if self.flexible_answer:
            answer += " A reply without one is read as its last number."
        return f"{answer}\n{self.interpreter_syntax}" if self.interpreter_enabled else answer

    def _describe(self) -> str:
        if self.terminated:
            return "The episode is over."
        return "Run code or answer." if self.interpreter_enabled else "Reply with your answer."

    def _execute(self, command: str) -> str:
        code = code_of(command)
        if code is not None:
            return self.run_cell(code)
        answer = self.answer_of(command)
        if answer is None:
            kinds = "Python code or " if self.interpreter_enabled else ""
            raise InvalidAction(f"expected {kinds}a final answer as answer[...].")
        if not answer:
            raise InvalidAction("the answer is empty.")
        self.last_answer = answer
        self.score = min(max(float(self.judge(answer)), 0.0), 1.0)
        self.success = self.score >= 1.0
        self.terminated = True
        verdict = "correct" if self.success else f"scored {self.score:g}"
        expected = self.expected_answer()
        reveal = f" A correct answer: {quote(expected, 300)}." if not self.success and expected is not None else ""
        return f"Your answer {quote(answer, 300)} is {verdict}.{reveal}"

    def oracle_action(self) -> str:
        return f"answer[{self.expected_answer() or '?'}]"
