"""BugFix-v0: fix a bug in a small generated Python repository (SWE-bench style, offline).

Task: a repository in the sandbox work dir ``/work``: a package of real-looking library
code (statistics, text utilities, an inventory, or dates; see :data:`DOMAINS`), a test
suite of plain ``assert`` tests in ``tests/test_<module>.py``, and ``run_tests.py``, a
tiny pytest stand-in (the sandbox's Python has no pytest; the tests run under pytest
too). One mutation was injected into the package: a flipped comparison, a wrong
arithmetic or boolean operator, an off-by-one constant or bound, a wrong variable,
swapped arguments, ``min`` for ``max``, or a deleted branch. The generator keeps only
mutations that make at least one test fail, which it checks by running the suite
in-process on the mutated code; the test values were computed from the correct code.
``BugFix-v0`` (easy) has 2-3 modules and the bug in a function the tests call
directly, and names the failing tests; ``BugFix-Hard-v0`` has 4-6 modules and the bug in
a helper that the tests reach only through other functions (a private function or an
untested helper module), and does not name the failing tests. Task ``task_id`` is drawn
from a generator seeded with the id and the difficulty: domain, package name, modules,
test inputs and mutation.

Observation: the result of the last tool (file listings, numbered file contents, test
output; long files and outputs are cut with a note on how to see the rest) and a status
line. The first observation holds the instruction (with the repository's file list) and
the action syntax.

Action: one tool per reply, on the line after ``Action:`` (or the reply's first line
when it has no ``Action:`` line); multi-line content goes in fenced blocks after it::

    ls [DIR]                       list a directory of the repository
    cat FILE [START[-END]]         show a file with line numbers (a line range for long files)
    search TEXT                    every line of the repository holding TEXT (plain text)
    write FILE                     replace FILE's content (or create it) with the fenced block that follows
    replace FILE                   two fenced blocks follow: the exact old text (it must occur
                                   once in FILE) and the new text; aider's <<<<<<< SEARCH /
                                   ======= / >>>>>>> REPLACE form is accepted too
    run_tests [FILE|NAME ...]      run the test suite (or some files, or tests whose name holds NAME)
    submit                         end the episode; the suite is run once more and judged

A fence is a line of three or more backticks (an info string such as ``python`` may
follow) and ends at a line of at least as many backticks. An unknown tool, a path outside
the work dir, a missing block, or old text that does not occur exactly once is an invalid
action that changes nothing.

Reward: 1 on a successful submit, else 0. Success: the original test files and
``run_tests.py`` are byte-for-byte unchanged, and running the original test files passes
every test (exit status 0 and as many passed tests as the suite has).

Termination: ``submit``. Truncation comes from the registered step limit (30 easy, 50 hard).

Oracle: restore every file that differs from the correct repository (the ``replace``
that undoes the mutation when the mutated file is as generated, else ``write`` with the
original content), then ``run_tests``, then ``submit``.

The in-process check (generation only) runs the package's own trusted template code and
mutants of it, never agent code, under a budget of executed lines so that a mutant that
loops forever is skipped. Not defended: code written by the agent that forges the test
runner's output from inside the test process (as with pytest on SWE-bench).
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import itertools
import os
import random
import re
import stat
import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentgym.core import InvalidAction, TextEnv, quote
from agentgym.environments.code import BUGFIX_SPLITS
from agentgym.sandbox import WORK, Limits, Sandbox, SandboxError

# ---- the test runner shipped in every repository ---------------------------------------------

RUNNER = '''"""Run this repository's tests: every test_* function in tests/test_*.py.

A small stand-in for pytest, which this machine does not have. The tests are plain
functions with assert statements, so "python -m pytest" runs them too where pytest exists.

Usage: python3 run_tests.py [TEST_FILE ...] [-k NAME_PART]
"""

import ast
import importlib.util
import os
import sys
import traceback

ROOT = os.path.dirname(os.path.abspath(__file__))
LINE = "=" * 30


def relative(path):
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path


def short_traceback(error):
    """The frames in this repository (not this runner), pytest style."""
    lines = []
    for frame in traceback.extract_tb(error.__traceback__):
        if os.path.abspath(frame.filename) == os.path.abspath(__file__):
            continue
        lines.append(f"{relative(frame.filename)}:{frame.lineno}: in {frame.name}")
        if frame.line:
            lines.append(f"    {frame.line}")
    message = "".join(traceback.format_exception_only(type(error), error)).rstrip()
    return lines + [message]


def explain_assert(error):
    """The values inside a failed assert: both sides of a comparison, or a call's arguments."""
    tb = error.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    try:
        with open(frame.f_code.co_filename) as handle:
            source = handle.read().splitlines()[tb.tb_lineno - 1].strip()
        node = ast.parse(source).body[0]
    except (OSError, IndexError, SyntaxError, UnicodeDecodeError):
        return []
    if not isinstance(node, ast.Assert):
        return []
    test = node.test
    if isinstance(test, ast.Compare) and len(test.comparators) == 1:
        parts = [("left", test.left), ("right", test.comparators[0])]
    elif isinstance(test, ast.Call):
        parts = [(f"argument {index + 1}", arg) for index, arg in enumerate(test.args)]
    else:
        return []
    lines = []
    for label, part in parts:
        text = ast.get_source_segment(source, part)
        try:
            value = eval(compile(ast.Expression(part), "<assert>", "eval"), frame.f_globals, frame.f_locals)
            shown = repr(value)
        except Exception as problem:
            shown = f"<raised {type(problem).__name__}: {problem}>"
        if len(shown) > 400:
            shown = shown[:400] + "..."
        lines.append(f"    {label}: {shown}" if shown == text else f"    {label}: {text} = {shown}")
    return lines


def load(path, index):
    spec = importlib.util.spec_from_file_location(f"_tests_{index}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv):
    files, pattern = [], None
    arguments = list(argv)
    while arguments:
        argument = arguments.pop(0)
        if argument == "-k" and arguments:
            pattern = arguments.pop(0)
        elif argument.startswith("-"):
            print(f"unknown option {argument}")
            return 2
        else:
            files.append(argument)
    if not files:
        folder = os.path.join(ROOT, "tests")
        names = os.listdir(folder) if os.path.isdir(folder) else []
        names = [name for name in names if name.startswith("test_") and name.endswith(".py")]
        files = sorted(os.path.join("tests", name) for name in names)
    sys.path.insert(0, ROOT)
    passed = failed = errors = 0
    reports = []
    for index, name in enumerate(files):
        path = name if os.path.isabs(name) else os.path.join(ROOT, name)
        print(relative(path) + " ", end="", flush=True)
        try:
            module = load(path, index)
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            errors += 1
            print("E", flush=True)
            reports.append((f"ERROR collecting {relative(path)}", short_traceback(error)))
            continue
        tests = [
            (test_name, function)
            for test_name, function in vars(module).items()
            if test_name.startswith("test")
            and callable(function)
            and getattr(function, "__module__", "") == module.__name__
        ]
        if pattern:
            tests = [(test_name, function) for test_name, function in tests if pattern in test_name]
        for test_name, function in tests:
            try:
                function()
            except AssertionError as error:
                failed += 1
                print("F", end="", flush=True)
                reports.append((test_name, short_traceback(error) + explain_assert(error)))
            except BaseException as error:
                if isinstance(error, KeyboardInterrupt):
                    raise
                failed += 1
                print("F", end="", flush=True)
                reports.append((test_name, short_traceback(error)))
            else:
                passed += 1
                print(".", end="", flush=True)
        print(flush=True)
    if reports:
        print()
        print(f"{LINE} FAILURES {LINE}")
        for title, lines in reports:
            print(f"_____ {title} _____")
            print("\\n".join(lines))
    counts = [f"{count} {label}" for count, label in ((failed, "failed"), (passed, "passed"), (errors, "error"))]
    counts = [text for text in counts if not text.startswith("0 ")] or ["no tests ran"]
    print(f"{LINE} {', '.join(counts)} {LINE}")
    if failed or errors:
        return 1
    return 0 if passed else 5


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''

#: How test files compare values that hold floats (also defined in those test files).
CLOSE_SOURCE = '''def close(actual, expected, tolerance=1e-9):
    """Whether actual equals expected up to float rounding (also inside lists and tuples)."""
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, type(expected))
            and len(actual) == len(expected)
            and all(close(a, e, tolerance) for a, e in zip(actual, expected))
        )
    if isinstance(expected, float):
        return isinstance(actual, (int, float)) and abs(actual - expected) <= tolerance * max(1.0, abs(expected))
    return actual == expected
'''
_close_namespace: dict[str, Any] = {}
exec(CLOSE_SOURCE, _close_namespace)
close: Callable[[Any, Any], bool] = _close_namespace["close"]

# ---- test specifications -----------------------------------------------------------------------


@dataclass
class Step:
    """One line of a test: ``do`` a statement, ``check`` an expression's value, or ``raises``."""

    kind: str
    code: str
    error: str = ""
    #: Filled by evaluating on the correct code: the value's ``repr`` and whether it holds floats.
    expected: str = ""
    approx: bool = False


def do(code: str) -> Step:
    return Step("do", code)


def check(code: str) -> Step:
    return Step("check", code)


def raises(code: str, error: str = "ValueError") -> Step:
    return Step("raises", code, error)


@dataclass
class Case:
    name: str
    steps: list[Step]


@dataclass
class TestFile:
    """The tests of one module: the names it imports (by module) and its cases."""

    imports: dict[str, tuple[str, ...]]
    cases: list[Case]


@dataclass(frozen=True)
class Module:
    """A module template: its source, and the generator of its test file (None: no tests)."""

    name: str
    source: str
    tests: Callable[[random.Random], TestFile] | None = None
    #: Modules the tests use besides this one and what it imports.
    test_needs: tuple[str, ...] = ()

    @property
    def requires(self) -> tuple[str, ...]:
        """The modules this one imports, and those its tests need."""
        imported = re.findall(r"^from \.(\w+) import", self.source, re.M)
        return tuple(dict.fromkeys([*imported, *self.test_needs]))


@dataclass(frozen=True)
class Domain:
    name: str
    packages: tuple[str, ...]
    description: str
    modules: dict[str, Module]


def ints(rng: random.Random, count: int, low: int, high: int) -> list[int]:
    return [rng.randint(low, high) for _ in range(count)]


def distinct(rng: random.Random, count: int, low: int, high: int) -> list[int]:
    return rng.sample(range(low, high + 1), count)


# ---- domain: statistics ------------------------------------------------------------------------

STATS_VALIDATE = '''"""Argument checks shared by the statistics functions."""


def require_values(values, minimum=1):
    """The values as a list; ValueError if there are fewer than ``minimum`` of them."""
    items = list(values)
    if len(items) < minimum:
        raise ValueError(f"need at least {minimum} values, got {len(items)}")
    return items


def require_fraction(fraction):
    """``fraction`` as a float; ValueError unless 0 <= fraction <= 1."""
    if fraction < 0 or fraction > 1:
        raise ValueError(f"expected a fraction between 0 and 1, got {fraction}")
    return float(fraction)


def require_window(window, length):
    """``window`` if it is between 1 and ``length``; ValueError otherwise."""
    if window < 1 or window > length:
        raise ValueError(f"window must be between 1 and {length}, got {window}")
    return window
'''

STATS_CENTRAL = '''"""Measures of central tendency."""

from ._validate import require_values


def mean(values):
    """The arithmetic mean."""
    items = require_values(values)
    return sum(items) / len(items)


def median(values):
    """The middle value; the mean of the two middle values for an even count."""
    items = sorted(require_values(values))
    middle = len(items) // 2
    if len(items) % 2 == 1:
        return items[middle]
    return (items[middle - 1] + items[middle]) / 2


def mode(values):
    """The most common value; the smallest of them on a tie."""
    counts = {}
    for value in require_values(values):
        counts[value] = counts.get(value, 0) + 1
    best = max(counts.values())
    return min(value for value, count in counts.items() if count == best)


def weighted_mean(values, weights):
    """The mean of ``values`` weighted by ``weights``."""
    items = require_values(values)
    if len(weights) != len(items):
        raise ValueError("values and weights differ in length")
    total = sum(weights)
    if total <= 0:
        raise ValueError("weights must sum to a positive number")
    return sum(value * weight for value, weight in zip(items, weights)) / total


def midrange(values):
    """Halfway between the smallest and the largest value."""
    items = require_values(values)
    return (min(items) + max(items)) / 2
'''

STATS_SPREAD = '''"""Measures of spread."""

import math

from ._validate import require_fraction, require_values
from .central import mean


def variance(values, sample=True):
    """The variance; ``sample=True`` divides by n - 1 (Bessel's correction), else by n."""
    items = require_values(values, 2 if sample else 1)
    center = mean(items)
    squares = sum((value - center) ** 2 for value in items)
    return squares / (len(items) - 1 if sample else len(items))


def stdev(values, sample=True):
    """The standard deviation."""
    return math.sqrt(variance(values, sample))


def value_range(values):
    """The largest value minus the smallest."""
    items = require_values(values)
    return max(items) - min(items)


def quantile(values, fraction):
    """The quantile at ``fraction`` (0 to 1), interpolating linearly between ranks."""
    items = sorted(require_values(values))
    position = require_fraction(fraction) * (len(items) - 1)
    lower = int(position)
    upper = min(lower + 1, len(items) - 1)
    weight = position - lower
    return items[lower] + (items[upper] - items[lower]) * weight


def interquartile_range(values):
    """The distance from the first to the third quartile."""
    return quantile(values, 0.75) - quantile(values, 0.25)


def mean_absolute_deviation(values):
    """The mean distance of the values from their mean."""
    items = require_values(values)
    center = mean(items)
    return sum(abs(value - center) for value in items) / len(items)
'''

STATS_SCALE = '''"""Rescaling values."""

from ._validate import require_values
from .central import mean
from .spread import stdev


def normalize(values):
    """Min-max scaling to [0, 1]; all zeros when every value is the same."""
    items = require_values(values)
    low, high = min(items), max(items)
    if high == low:
        return [0.0 for _ in items]
    return [(value - low) / (high - low) for value in items]


def rescale(values, new_min, new_max):
    """Min-max scaling to [new_min, new_max]."""
    if new_max < new_min:
        raise ValueError("new_max must not be below new_min")
    return [new_min + unit * (new_max - new_min) for unit in normalize(values)]


def zscores(values):
    """How many sample standard deviations each value lies from the mean."""
    items = require_values(values, 2)
    center, spread = mean(items), stdev(items)
    if spread == 0:
        return [0.0 for _ in items]
    return [(value - center) / spread for value in items]


def clip(values, low, high):
    """Each value limited to [low, high]."""
    if low > high:
        raise ValueError("low must not exceed high")
    return [min(max(value, low), high) for value in values]
'''

STATS_SERIES = '''"""Operations on ordered series."""

from ._validate import require_values, require_window


def moving_average(values, window):
    """The mean of each run of ``window`` consecutive values."""
    items = require_values(values)
    require_window(window, len(items))
    averages = []
    for start in range(len(items) - window + 1):
        averages.append(sum(items[start : start + window]) / window)
    return averages


def cumulative_sum(values):
    """The running totals."""
    totals, running = [], 0
    for value in values:
        running += value
        totals.append(running)
    return totals


def differences(values, lag=1):
    """Each value minus the value ``lag`` places before it."""
    items = list(values)
    if lag < 1:
        raise ValueError("lag must be at least 1")
    return [items[index] - items[index - lag] for index in range(lag, len(items))]


def running_max(values):
    """The largest value seen so far, at each position."""
    result = []
    for value in values:
        if not result or value > result[-1]:
            result.append(value)
        else:
            result.append(result[-1])
    return result


def percent_change(values):
    """The change from each value to the next, in percent of the earlier one."""
    items = require_values(values, 2)
    changes = []
    for previous, current in zip(items, items[1:]):
        if previous == 0:
            raise ValueError("cannot compute a change from zero")
        changes.append((current - previous) / previous * 100)
    return changes
'''

STATS_OUTLIERS = '''"""Finding outliers."""

from .scale import zscores
from .spread import quantile


def iqr_bounds(values, factor=1.5):
    """The (low, high) fences: the quartiles widened by ``factor`` interquartile ranges."""
    first, third = quantile(values, 0.25), quantile(values, 0.75)
    spread = third - first
    return first - factor * spread, third + factor * spread


def iqr_outliers(values, factor=1.5):
    """The values outside the fences, in their original order."""
    low, high = iqr_bounds(values, factor)
    return [value for value in values if value < low or value > high]


def zscore_outliers(values, threshold=2.0):
    """The values whose z-score exceeds ``threshold`` in size, in their original order."""
    return [value for value, score in zip(values, zscores(values)) if abs(score) > threshold]


def trimmed(values, fraction):
    """The values, sorted, without the lowest and the highest ``fraction`` of them."""
    items = sorted(values)
    cut = int(len(items) * fraction)
    if cut * 2 >= len(items):
        raise ValueError("nothing is left after trimming")
    return items[cut : len(items) - cut]
'''

STATS_HISTOGRAM = '''"""Counting values into bins."""

from ._validate import require_values


def bin_edges(low, high, bins):
    """The ``bins + 1`` edges of equal-width bins from ``low`` to ``high``."""
    if bins < 1:
        raise ValueError("need at least one bin")
    if high <= low:
        raise ValueError("high must exceed low")
    width = (high - low) / bins
    return [low + index * width for index in range(bins + 1)]


def _bin_index(value, low, high, bins):
    """The bin of ``value`` (the top edge belongs to the last bin); None outside [low, high]."""
    if value < low or value > high:
        return None
    if value == high:
        return bins - 1
    return int((value - low) / (high - low) * bins)


def histogram(values, bins, low, high):
    """How many values fall into each bin; values outside [low, high] are left out."""
    bin_edges(low, high, bins)  # checks the arguments
    counts = [0] * bins
    for value in require_values(values):
        index = _bin_index(value, low, high, bins)
        if index is not None:
            counts[index] += 1
    return counts


def frequencies(values):
    """Each distinct value with its count, the most frequent first; ties by value."""
    counts = {}
    for value in require_values(values):
        counts[value] = counts.get(value, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))
'''


def _tests_central(rng: random.Random) -> TestFile:
    odd = ints(rng, rng.choice((5, 7)), 1, 60)
    even = ints(rng, rng.choice((4, 6)), -20, 60)
    winner, other, third = distinct(rng, 3, 1, 30)
    common = [winner] * 3 + [other] * 2 + [third]
    rng.shuffle(common)
    low, high = sorted(distinct(rng, 2, 1, 30))
    tie = [high, low, high, low, third]
    values, weights = ints(rng, 4, 1, 20), ints(rng, 4, 1, 5)
    return TestFile(
        {"central": ("mean", "median", "midrange", "mode", "weighted_mean")},
        [
            Case("test_mean", [check(f"mean({odd})"), check(f"mean({even})")]),
            Case("test_mean_needs_values", [raises("mean([])")]),
            Case("test_median_odd_count", [check(f"median({odd})"), check(f"median([{rng.randint(1, 9)}])")]),
            Case("test_median_even_count", [check(f"median({even})")]),
            Case("test_mode", [check(f"mode({common})")]),
            Case("test_mode_tie_takes_smallest", [check(f"mode({tie})")]),
            Case("test_weighted_mean", [check(f"weighted_mean({values}, {weights})")]),
            Case("test_weighted_mean_checks_lengths", [raises(f"weighted_mean({values}, {weights[:3]})")]),
            Case("test_midrange", [check(f"midrange({odd})")]),
        ],
    )


def _tests_spread(rng: random.Random) -> TestFile:
    values = ints(rng, rng.choice((5, 6, 7)), 1, 40)
    while len(set(values)) < 3:
        values = ints(rng, len(values), 1, 40)
    single = rng.randint(1, 9)
    return TestFile(
        {"spread": ("interquartile_range", "mean_absolute_deviation", "quantile", "stdev", "value_range", "variance")},
        [
            Case("test_sample_variance", [check(f"variance({values})")]),
            Case("test_population_variance", [check(f"variance({values}, sample=False)")]),
            Case(
                "test_variance_of_one_value",
                [check(f"variance([{single}], sample=False)"), raises(f"variance([{single}])")],
            ),
            Case("test_stdev", [check(f"stdev({values})"), check(f"stdev({values}, sample=False)")]),
            Case("test_value_range", [check(f"value_range({values})")]),
            Case(
                "test_quantile",
                [check(f"quantile({values}, {fraction})") for fraction in (0, 0.25, 0.5, 0.9, 1)],
            ),
            Case("test_quantile_rejects_bad_fraction", [raises(f"quantile({values}, 1.5)")]),
            Case("test_interquartile_range", [check(f"interquartile_range({values})")]),
            Case("test_mean_absolute_deviation", [check(f"mean_absolute_deviation({values})")]),
        ],
    )


def _tests_scale(rng: random.Random) -> TestFile:
    values = distinct(rng, rng.choice((4, 5, 6)), 0, 50)
    same = [rng.randint(1, 9)] * 3
    low, high = sorted(distinct(rng, 2, 10, 40))
    return TestFile(
        {"scale": ("clip", "normalize", "rescale", "zscores")},
        [
            Case("test_normalize", [check(f"normalize({values})")]),
            Case("test_normalize_constant_values", [check(f"normalize({same})")]),
            Case("test_rescale", [check(f"rescale({values}, -1, 1)"), check(f"rescale({values}, 10, 20)")]),
            Case("test_rescale_rejects_inverted_range", [raises(f"rescale({values}, 5, 1)")]),
            Case("test_zscores", [check(f"zscores({values})")]),
            Case("test_zscores_constant_values", [check(f"zscores({same})")]),
            Case("test_clip", [check(f"clip({values}, {low}, {high})")]),
            Case("test_clip_rejects_bad_bounds", [raises(f"clip({values}, {high}, {low})")]),
        ],
    )


def _tests_series(rng: random.Random) -> TestFile:
    values = ints(rng, rng.choice((6, 7, 8)), 1, 50)
    signed = ints(rng, 6, -20, 20)
    return TestFile(
        {"series": ("cumulative_sum", "differences", "moving_average", "percent_change", "running_max")},
        [
            Case(
                "test_moving_average",
                [check(f"moving_average({values}, 2)"), check(f"moving_average({values}, 3)")],
            ),
            Case("test_moving_average_whole_series", [check(f"moving_average({values}, {len(values)})")]),
            Case("test_moving_average_window_too_large", [raises(f"moving_average({values}, {len(values) + 1})")]),
            Case("test_cumulative_sum", [check(f"cumulative_sum({signed})"), check("cumulative_sum([])")]),
            Case("test_differences", [check(f"differences({values})"), check(f"differences({values}, lag=2)")]),
            Case("test_differences_rejects_zero_lag", [raises(f"differences({values}, lag=0)")]),
            Case("test_running_max", [check(f"running_max({signed})")]),
            Case("test_percent_change", [check(f"percent_change({values})")]),
            Case("test_percent_change_from_zero", [raises("percent_change([0, 5, 10])")]),
        ],
    )


def _tests_outliers(rng: random.Random) -> TestFile:
    base = ints(rng, rng.choice((8, 9, 10)), 40, 60)
    spiked = base + [rng.randint(150, 200), rng.randint(-90, -50)]
    rng.shuffle(spiked)
    calm = distinct(rng, 6, 10, 20)
    spike = ints(rng, 9, 10, 12) + [rng.randint(60, 90)]
    rng.shuffle(spike)
    return TestFile(
        {"outliers": ("iqr_bounds", "iqr_outliers", "trimmed", "zscore_outliers")},
        [
            Case("test_iqr_bounds", [check(f"iqr_bounds({base})"), check(f"iqr_bounds({base}, factor=3)")]),
            Case("test_iqr_outliers", [check(f"iqr_outliers({spiked})")]),
            Case("test_iqr_outliers_none", [check(f"iqr_outliers({calm})")]),
            Case("test_zscore_outliers", [check(f"zscore_outliers({spike})"), check(f"zscore_outliers({calm})")]),
            Case("test_trimmed", [check(f"trimmed({spiked}, 0.1)"), check(f"trimmed({calm}, 0.2)")]),
            Case("test_trimmed_too_much", [raises(f"trimmed({calm}, 0.5)")]),
        ],
    )


def _tests_histogram(rng: random.Random) -> TestFile:
    bins = rng.choice((2, 4, 5))
    high = bins * rng.choice((2, 5))
    values = ints(rng, 12, -2, high + 2) + [0, high]
    rng.shuffle(values)
    repeated = ints(rng, 9, 1, 5)
    return TestFile(
        {"histogram": ("bin_edges", "frequencies", "histogram")},
        [
            Case("test_bin_edges", [check(f"bin_edges(0, {high}, {bins})"), check("bin_edges(-1, 1, 4)")]),
            Case("test_bin_edges_rejects_bad_arguments", [raises("bin_edges(5, 5, 2)"), raises("bin_edges(0, 1, 0)")]),
            Case("test_histogram", [check(f"histogram({values}, {bins}, 0, {high})")]),
            Case("test_histogram_top_edge_in_last_bin", [check(f"histogram([{high}, {high}, 0], {bins}, 0, {high})")]),
            Case("test_frequencies", [check(f"frequencies({repeated})")]),
        ],
    )


STATS = Domain(
    "stats",
    ("statkit", "tinystats", "numbox", "quickstats", "metricly", "figures"),
    "descriptive statistics: central tendency, spread, scaling, series, outliers and histograms",
    {
        module.name: module
        for module in (
            Module("_validate", STATS_VALIDATE),
            Module("central", STATS_CENTRAL, _tests_central),
            Module("spread", STATS_SPREAD, _tests_spread),
            Module("scale", STATS_SCALE, _tests_scale),
            Module("series", STATS_SERIES, _tests_series),
            Module("outliers", STATS_OUTLIERS, _tests_outliers),
            Module("histogram", STATS_HISTOGRAM, _tests_histogram),
        )
    },
)

# ---- domain: text ------------------------------------------------------------------------------

TEXT_CHARS = '''"""Character classes and word splitting shared by the text functions."""


def is_word_char(char):
    """Letters and digits make up words."""
    return char.isalnum()


def split_words(text):
    """The runs of letters and digits in ``text``, in order."""
    words, current = [], []
    for char in text:
        if is_word_char(char):
            current.append(char)
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words


def split_camel(word):
    """``parseHTTPResponse`` -> ``['parse', 'HTTP', 'Response']``."""
    parts, start = [], 0
    for index in range(1, len(word)):
        previous, char = word[index - 1], word[index]
        following = word[index + 1] if index + 1 < len(word) else ""
        if char.isupper() and (previous.islower() or previous.isdigit() or following.islower()):
            if index > start:
                parts.append(word[start:index])
                start = index
    parts.append(word[start:])
    return parts
'''

TEXT_CASE = '''"""Converting between naming conventions."""

from ._chars import split_camel, split_words

SMALL_WORDS = ("a", "an", "and", "as", "at", "but", "by", "for", "in", "of", "on", "or", "the", "to")


def _words(text):
    """The lower-case words of ``text``, with camel case split as well."""
    return [part.lower() for word in split_words(text) for part in split_camel(word)]


def to_snake(text):
    """``Parse HTTP response`` -> ``parse_http_response``."""
    return "_".join(_words(text))


def to_kebab(text):
    """``Parse HTTP response`` -> ``parse-http-response``."""
    return "-".join(_words(text))


def to_camel(text):
    """``parse http response`` -> ``parseHttpResponse``."""
    words = _words(text)
    if not words:
        return ""
    return words[0] + "".join(word.capitalize() for word in words[1:])


def to_pascal(text):
    """``parse http response`` -> ``ParseHttpResponse``."""
    return "".join(word.capitalize() for word in _words(text))


def title_case(text):
    """Each word capitalized, except small words that are neither first nor last."""
    words = text.split()
    result = []
    for index, word in enumerate(words):
        if 0 < index < len(words) - 1 and word.lower() in SMALL_WORDS:
            result.append(word.lower())
        else:
            result.append(word[:1].upper() + word[1:].lower())
    return " ".join(result)
'''

TEXT_TOKENS = '''"""Splitting text into tokens and sentences."""

from ._chars import split_words

STOPWORDS = ("a", "an", "and", "are", "in", "is", "it", "of", "on", "or", "the", "to", "was")


def tokenize(text):
    """The lower-case words of ``text``."""
    return [word.lower() for word in split_words(text)]


def remove_stopwords(tokens):
    """The tokens that are not stop words."""
    return [token for token in tokens if token not in STOPWORDS]


def ngrams(tokens, n):
    """The runs of ``n`` consecutive tokens, as tuples."""
    if n < 1:
        raise ValueError("n must be at least 1")
    return [tuple(tokens[start : start + n]) for start in range(len(tokens) - n + 1)]


def sentences(text):
    """The sentences of ``text``: split after '.', '!' or '?', stripped, empty ones dropped."""
    found, start = [], 0
    for index, char in enumerate(text):
        if char in ".!?":
            sentence = text[start : index + 1].strip()
            if len(sentence) > 1:
                found.append(sentence)
            start = index + 1
    rest = text[start:].strip()
    if rest:
        found.append(rest)
    return found
'''

TEXT_COUNTING = '''"""Counting words and letters."""

from .tokens import remove_stopwords, tokenize


def word_counts(text, skip_stopwords=False):
    """How often each word occurs, in the order of first appearance."""
    tokens = tokenize(text)
    if skip_stopwords:
        tokens = remove_stopwords(tokens)
    counts = {}
    for token in tokens:
        counts[token] = counts.get(token, 0) + 1
    return counts


def top_words(text, n, skip_stopwords=True):
    """The ``n`` most frequent words with their counts; ties in alphabetical order."""
    counts = word_counts(text, skip_stopwords)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:n]


def letter_frequencies(text):
    """How often each letter occurs, ignoring case, in alphabetical order."""
    counts = {}
    for char in text.lower():
        if "a" <= char <= "z":
            counts[char] = counts.get(char, 0) + 1
    return dict(sorted(counts.items()))


def average_word_length(text):
    """The mean length of the words (0.0 without words)."""
    tokens = tokenize(text)
    if not tokens:
        return 0.0
    return sum(len(token) for token in tokens) / len(tokens)


def lexical_diversity(text):
    """Distinct words divided by all words (0.0 without words)."""
    tokens = tokenize(text)
    if not tokens:
        return 0.0
    return len(set(tokens)) / len(tokens)
'''

TEXT_LAYOUT = '''"""Laying text out in lines."""


def wrap(text, width):
    """Greedy word wrap into lines of at most ``width`` characters (a longer word stands alone)."""
    if width < 1:
        raise ValueError("width must be positive")
    lines, current = [], ""
    for word in text.split():
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= width:
            current += " " + word
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def truncate(text, limit, suffix="..."):
    """``text`` cut to at most ``limit`` characters, ending in ``suffix`` when it was cut."""
    if len(text) <= limit:
        return text
    if limit <= len(suffix):
        return suffix[:limit]
    return text[: limit - len(suffix)] + suffix


def center(text, width, fill="*"):
    """``text`` centered in ``width`` characters; an odd extra fill character goes right."""
    if len(text) >= width:
        return text
    total = width - len(text)
    left = total // 2
    return fill * left + text + fill * (total - left)


def indent(text, prefix="    "):
    """Every non-blank line of ``text`` with ``prefix`` in front."""
    return "\\n".join(prefix + line if line.strip() else line for line in text.split("\\n"))


def columns(rows, gap=2):
    """Rows of cells as lines of left-aligned columns, ``gap`` spaces apart."""
    widths = [max(len(row[index]) for row in rows) for index in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)]
        lines.append((" " * gap).join(cells).rstrip())
    return lines
'''

TEXT_SLUG = '''"""URL slugs."""

from ._chars import split_words


def slugify(text, separator="-", max_length=None):
    """Lower-case words joined by ``separator``, cut at a word boundary to ``max_length``."""
    slug = ""
    for word in split_words(text):
        candidate = word.lower() if not slug else slug + separator + word.lower()
        if max_length is not None and len(candidate) > max_length:
            break
        slug = candidate
    return slug


def unique_slug(text, taken):
    """``slugify(text)``, with -2, -3, ... appended until it is not in ``taken``."""
    base = slugify(text)
    if base not in taken:
        return base
    for number in range(2, len(taken) + 3):
        candidate = f"{base}-{number}"
        if candidate not in taken:
            return candidate
    raise RuntimeError("unreachable: there are more numbers than taken slugs")
'''

TEXT_CIPHER = '''"""Small text transforms."""

ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def _shift_char(char, shift):
    """``char`` moved ``shift`` places along the alphabet, keeping its case; others unchanged."""
    lower = char.lower()
    if lower not in ALPHABET:
        return char
    moved = ALPHABET[(ALPHABET.index(lower) + shift) % 26]
    return moved.upper() if char.isupper() else moved


def caesar(text, shift):
    """Every letter shifted by ``shift`` places."""
    return "".join(_shift_char(char, shift) for char in text)


def rot13(text):
    return caesar(text, 13)


def is_palindrome(text):
    """Whether the letters and digits read the same backwards, ignoring case."""
    kept = [char.lower() for char in text if char.isalnum()]
    return kept == kept[::-1]


def vowel_count(text):
    return sum(1 for char in text.lower() if char in "aeiou")


def run_length(text):
    """``aaabcc`` -> ``a3b1c2``."""
    if not text:
        return ""
    parts, current, count = [], text[0], 1
    for char in text[1:]:
        if char == current:
            count += 1
        else:
            parts.append(f"{current}{count}")
            current, count = char, 1
    parts.append(f"{current}{count}")
    return "".join(parts)
'''

PHRASES = (
    "parse HTTP response",
    "user id",
    "XMLHttpRequest",
    "total_amount_due",
    "get2ndItem",
    "load-config-file",
    "Max retry count",
    "isReadyForReview",
    "HTML to PDF converter",
    "shipping address line 2",
)


def _word_list(text: str) -> list[str]:
    return text.split()


WORDS = _word_list(
    "river stone cloud garden window letter market silver forest engine bridge candle harbor pocket ladder "
    "signal meadow copper lantern velvet orbit puzzle ribbon saddle tunnel"
)


def _sentence(rng: random.Random, low: int, high: int, stopwords: bool = True) -> str:
    pool = WORDS + (["the", "a", "of", "and", "is", "to"] * 2 if stopwords else [])
    words = [rng.choice(pool) for _ in range(rng.randint(low, high))]
    return " ".join(words)


def _tests_case(rng: random.Random) -> TestFile:
    phrases = rng.sample(PHRASES, 3)
    title = f"the {rng.choice(WORDS)} of the {rng.choice(WORDS)} and a {rng.choice(WORDS)}"
    return TestFile(
        {"case": ("title_case", "to_camel", "to_kebab", "to_pascal", "to_snake")},
        [
            Case("test_to_snake", [check(f"to_snake({phrase!r})") for phrase in phrases]),
            Case("test_to_kebab", [check(f"to_kebab({phrases[0]!r})")]),
            Case("test_to_camel", [check(f"to_camel({phrase!r})") for phrase in phrases[1:]]),
            Case("test_to_camel_empty", [check("to_camel('  ')")]),
            Case("test_to_pascal", [check(f"to_pascal({phrases[2]!r})")]),
            Case("test_title_case", [check(f"title_case({title!r})"), check("title_case('OF MICE AND MEN')")]),
        ],
    )


def _tests_tokens(rng: random.Random) -> TestFile:
    text = _sentence(rng, 6, 10).capitalize() + ", " + _sentence(rng, 2, 4) + "!"
    tokens = [rng.choice(WORDS) for _ in range(rng.randint(4, 6))]
    story = f"{_sentence(rng, 3, 5)}. {_sentence(rng, 2, 4)}? {_sentence(rng, 2, 3)}! {_sentence(rng, 1, 3)}"
    return TestFile(
        {"tokens": ("ngrams", "remove_stopwords", "sentences", "tokenize")},
        [
            Case("test_tokenize", [check(f"tokenize({text!r})"), check("tokenize('--')")]),
            Case("test_remove_stopwords", [check(f"remove_stopwords(tokenize({text!r}))")]),
            Case("test_ngrams", [check(f"ngrams({tokens}, 2)"), check(f"ngrams({tokens}, 3)")]),
            Case("test_ngrams_longer_than_tokens", [check(f"ngrams({tokens[:2]}, 3)")]),
            Case("test_ngrams_rejects_zero", [raises(f"ngrams({tokens}, 0)")]),
            Case("test_sentences", [check(f"sentences({story!r})")]),
        ],
    )


def _tests_counting(rng: random.Random) -> TestFile:
    text = " ".join(rng.choice(WORDS[:6] + ["the", "of", "a"]) for _ in range(rng.randint(10, 16)))
    mixed = _sentence(rng, 4, 7).title() + "!"
    return TestFile(
        {"counting": ("average_word_length", "letter_frequencies", "lexical_diversity", "top_words", "word_counts")},
        [
            Case("test_word_counts", [check(f"word_counts({text!r})")]),
            Case("test_word_counts_without_stopwords", [check(f"word_counts({text!r}, skip_stopwords=True)")]),
            Case("test_top_words", [check(f"top_words({text!r}, 2)"), check(f"top_words({text!r}, 3, False)")]),
            Case("test_letter_frequencies", [check(f"letter_frequencies({mixed!r})")]),
            Case("test_average_word_length", [check(f"average_word_length({mixed!r})")]),
            Case("test_average_word_length_empty", [check("average_word_length('...')")]),
            Case("test_lexical_diversity", [check(f"lexical_diversity({text!r})"), check("lexical_diversity('')")]),
        ],
    )


def _tests_layout(rng: random.Random) -> TestFile:
    text = _sentence(rng, 8, 14)
    width = rng.randint(10, 18)
    word = rng.choice(WORDS)
    rows = [[rng.choice(WORDS), str(rng.randint(1, 999))] for _ in range(3)]
    return TestFile(
        {"layout": ("center", "columns", "indent", "truncate", "wrap")},
        [
            Case("test_wrap", [check(f"wrap({text!r}, {width})"), check(f"wrap({text!r}, {width + 7})")]),
            Case("test_wrap_long_word_stands_alone", [check(f"wrap('a {'x' * 12} b', 5)")]),
            Case("test_wrap_rejects_zero_width", [raises("wrap('a b', 0)")]),
            Case(
                "test_truncate",
                [
                    check(f"truncate({text!r}, {width})"),
                    check(f"truncate({word!r}, {len(word)})"),
                    check(f"truncate({text!r}, 2)"),
                ],
            ),
            Case("test_center", [check(f"center({word!r}, {len(word) + 5})"), check(f"center({word!r}, 2)")]),
            Case("test_indent", [check(f"indent('{word}\\n\\n  {word}', '> ')")]),
            Case("test_columns", [check(f"columns({rows})"), check(f"columns({rows}, gap=1)")]),
        ],
    )


def _tests_slug(rng: random.Random) -> TestFile:
    title = f"{rng.choice(WORDS).title()} & {rng.choice(WORDS)}: {rng.randint(2, 99)} {rng.choice(WORDS)}!"
    base = "-".join(rng.sample(WORDS, 2))
    taken = [base] + [f"{base}-{number}" for number in range(2, rng.randint(2, 5))]
    return TestFile(
        {"slug": ("slugify", "unique_slug")},
        [
            Case("test_slugify", [check(f"slugify({title!r})"), check(f"slugify({title!r}, separator='_')")]),
            Case("test_slugify_max_length", [check(f"slugify({title!r}, max_length={length})") for length in (5, 12)]),
            Case("test_unique_slug_free", [check(f"unique_slug({base.replace('-', ' ')!r}, [])")]),
            Case("test_unique_slug_taken", [check(f"unique_slug({base.replace('-', ' ')!r}, {taken})")]),
        ],
    )


def _tests_cipher(rng: random.Random) -> TestFile:
    text = f"{rng.choice(WORDS).title()} {rng.choice(WORDS)}-{rng.randint(1, 99)}, {rng.choice(WORDS)}!"
    shift = rng.randint(1, 25)
    palindrome = rng.choice(("Never odd or even", "A man, a plan, a canal: Panama", "Step on no pets", "Was it a car?"))
    runs = "".join(rng.choice("abc") * rng.randint(1, 4) for _ in range(4))
    return TestFile(
        {"cipher": ("caesar", "is_palindrome", "rot13", "run_length", "vowel_count")},
        [
            Case("test_caesar", [check(f"caesar({text!r}, {shift})"), check(f"caesar({text!r}, -{shift})")]),
            Case("test_rot13", [check(f"rot13({text!r})"), check(f"rot13(rot13({text!r}))")]),
            Case("test_is_palindrome", [check(f"is_palindrome({palindrome!r})"), check(f"is_palindrome({text!r})")]),
            Case("test_vowel_count", [check(f"vowel_count({text!r})")]),
            Case("test_run_length", [check(f"run_length({runs!r})"), check("run_length('')")]),
        ],
    )


TEXT = Domain(
    "text",
    ("textkit", "wordsmith", "strutil", "prose", "inkwell", "lexis"),
    "text utilities: naming conventions, tokens, word counts, layout, slugs and small ciphers",
    {
        module.name: module
        for module in (
            Module("_chars", TEXT_CHARS),
            Module("case", TEXT_CASE, _tests_case),
            Module("tokens", TEXT_TOKENS, _tests_tokens),
            Module("counting", TEXT_COUNTING, _tests_counting),
            Module("layout", TEXT_LAYOUT, _tests_layout),
            Module("slug", TEXT_SLUG, _tests_slug),
            Module("cipher", TEXT_CIPHER, _tests_cipher),
        )
    },
)

# ---- domain: inventory -------------------------------------------------------------------------

SHOP_ROUNDING = '''"""Integer arithmetic on cents."""


def round_half_up(numerator, denominator):
    """numerator / denominator rounded to the nearest integer, halves away from zero."""
    if denominator <= 0:
        raise ValueError("denominator must be positive")
    quotient, remainder = divmod(abs(numerator), denominator)
    if remainder * 2 >= denominator:
        quotient += 1
    return quotient if numerator >= 0 else -quotient


def percent_of(cents, percent):
    """``percent`` percent of ``cents``, rounded half up to a whole cent."""
    return round_half_up(cents * percent, 100)
'''

SHOP_MONEY = '''"""Money amounts as integer cents."""

from ._rounding import percent_of


def parse_amount(text):
    """'12.5' -> 1250, '$1,299.99' -> 129999, '-3.07' -> -307."""
    cleaned = text.strip().replace("$", "").replace(",", "")
    negative = cleaned.startswith("-")
    if negative:
        cleaned = cleaned[1:]
    whole, _, fraction = cleaned.partition(".")
    if not whole.isdigit() or len(fraction) > 2 or (fraction and not fraction.isdigit()):
        raise ValueError(f"not an amount: {text!r}")
    cents = int(whole) * 100 + int(fraction.ljust(2, "0"))
    return -cents if negative else cents


def format_amount(cents):
    """1234567 -> '$12,345.67'; a negative amount gets a leading minus."""
    sign = "-" if cents < 0 else ""
    whole, rest = divmod(abs(cents), 100)
    return f"{sign}${whole:,}.{rest:02d}"


def apply_discount(cents, percent):
    """The price after taking ``percent`` percent off."""
    if not 0 <= percent <= 100:
        raise ValueError("a discount must be between 0 and 100 percent")
    return cents - percent_of(cents, percent)


def add_tax(cents, rate):
    """The price plus ``rate`` percent tax."""
    return cents + percent_of(cents, rate)


def split_evenly(cents, parts):
    """``cents`` split into ``parts`` amounts that differ by at most a cent, the larger first."""
    if parts < 1:
        raise ValueError("parts must be positive")
    base, extra = divmod(cents, parts)
    return [base + 1 if index < extra else base for index in range(parts)]
'''

SHOP_ITEMS = '''"""Stock items."""

from dataclasses import dataclass

from .money import parse_amount

SKU_LETTERS = 3
SKU_DIGITS = 4


@dataclass
class Item:
    """A product line: price in cents."""

    sku: str
    name: str
    price: int
    quantity: int = 0

    @property
    def value(self):
        return self.price * self.quantity


def valid_sku(sku):
    """Three capital letters, a dash and four digits, like 'ABC-1234'."""
    if len(sku) != SKU_LETTERS + 1 + SKU_DIGITS:
        return False
    letters, dash, digits = sku[:SKU_LETTERS], sku[SKU_LETTERS], sku[SKU_LETTERS + 1 :]
    return letters.isalpha() and letters.isupper() and dash == "-" and digits.isdigit()


def parse_item(line):
    """'ABC-1234; Blue mug; 4.50; 12' -> Item('ABC-1234', 'Blue mug', 450, 12)."""
    fields = [part.strip() for part in line.split(";")]
    if len(fields) != 4:
        raise ValueError(f"expected 4 fields, got {len(fields)}")
    sku, name, price, quantity = fields
    if not valid_sku(sku):
        raise ValueError(f"bad SKU {sku!r}")
    return Item(sku, name, parse_amount(price), int(quantity))
'''

SHOP_STOCK = '''"""An inventory: items by SKU."""

from .items import Item


class Inventory:
    def __init__(self):
        self._items = {}

    def add(self, item):
        """Add ``item``; a known SKU gets its quantity increased and takes the new price."""
        if item.quantity < 0:
            raise ValueError("quantity must not be negative")
        existing = self._items.get(item.sku)
        if existing is None:
            self._items[item.sku] = Item(item.sku, item.name, item.price, item.quantity)
        else:
            existing.quantity += item.quantity
            existing.price = item.price

    def remove(self, sku, quantity):
        """Take ``quantity`` units of ``sku`` out: KeyError if unknown, ValueError if too few."""
        if sku not in self._items:
            raise KeyError(sku)
        item = self._items[sku]
        if quantity > item.quantity:
            raise ValueError(f"only {item.quantity} of {sku} in stock")
        item.quantity -= quantity

    def quantity(self, sku):
        item = self._items.get(sku)
        return item.quantity if item else 0

    def skus(self):
        return sorted(self._items)

    def items(self):
        return [self._items[sku] for sku in self.skus()]

    def low_stock(self, threshold):
        """The SKUs with fewer than ``threshold`` units, sorted."""
        return [item.sku for item in self.items() if item.quantity < threshold]

    def total_units(self):
        return sum(item.quantity for item in self._items.values())
'''

SHOP_PRICING = '''"""Order pricing."""

from ._rounding import percent_of

#: (minimum quantity, discount percent), the largest tier first.
BULK_TIERS = ((100, 15), (50, 10), (10, 5))


def bulk_discount(quantity):
    """The discount percent for ordering ``quantity`` units."""
    for minimum, percent in BULK_TIERS:
        if quantity >= minimum:
            return percent
    return 0


def unit_price(base_price, quantity):
    """The price of one unit when ``quantity`` units are ordered."""
    return base_price - percent_of(base_price, bulk_discount(quantity))


def line_total(base_price, quantity):
    if quantity < 0:
        raise ValueError("quantity must not be negative")
    return unit_price(base_price, quantity) * quantity


def order_total(lines, tax_rate=0, coupon=0):
    """The lines' (base price, quantity) totals, less a coupon (never below zero), plus tax."""
    subtotal = sum(line_total(price, quantity) for price, quantity in lines)
    subtotal = max(subtotal - coupon, 0)
    return subtotal + percent_of(subtotal, tax_rate)


def shipping_cost(weight_grams, express=False):
    """499 up to 1 kg, plus 150 per started kilogram beyond; express doubles it."""
    if weight_grams <= 0:
        raise ValueError("weight must be positive")
    extra_kilos = (weight_grams - 1) // 1000
    cost = 499 + 150 * extra_kilos
    return cost * 2 if express else cost
'''

SHOP_REPORTS = '''"""Reports on an inventory."""

from .money import format_amount


def stock_value(inventory):
    """The value of everything in stock, in cents."""
    return sum(item.price * item.quantity for item in inventory.items())


def most_valuable(inventory, n):
    """The SKUs of the ``n`` items with the highest stock value; ties by SKU."""
    ranked = sorted(inventory.items(), key=lambda item: (-item.price * item.quantity, item.sku))
    return [item.sku for item in ranked[:n]]


def restock_list(inventory, threshold, target):
    """(SKU, units to order) for each item below ``threshold``, to bring it up to ``target``."""
    return [(sku, target - inventory.quantity(sku)) for sku in inventory.low_stock(threshold)]


def summary_lines(inventory):
    """One line per item: SKU, quantity and value, aligned."""
    lines = []
    for item in inventory.items():
        lines.append(f"{item.sku}  {item.quantity:>5}  {format_amount(item.price * item.quantity):>12}")
    return lines
'''

PRODUCTS = ("mug", "kettle", "lamp", "notebook", "stapler", "scarf", "umbrella", "candle", "teapot", "backpack")


def _sku(rng: random.Random) -> str:
    letters = "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(3))
    return f"{letters}-{rng.randint(1000, 9999)}"


def _stock_setup(rng: random.Random, count: int) -> tuple[list[Step], list[str]]:
    skus = []
    while len(skus) < count:
        sku = _sku(rng)
        if sku not in skus:
            skus.append(sku)
    steps = [do("inventory = Inventory()")]
    for sku in skus:
        name, price, quantity = rng.choice(PRODUCTS), rng.randint(150, 9_000), rng.randint(0, 40)
        steps.append(do(f"inventory.add(Item({sku!r}, {name!r}, {price}, {quantity}))"))
    return steps, skus


def _tests_money(rng: random.Random) -> TestFile:
    cents = rng.randint(100, 99_999)
    amount = f"{cents // 100}.{cents % 100:02d}"
    big = rng.randint(100_000, 99_999_999)
    parts = rng.randint(2, 7)
    return TestFile(
        {"money": ("add_tax", "apply_discount", "format_amount", "parse_amount", "split_evenly")},
        [
            Case(
                "test_parse_amount",
                [check(f"parse_amount({text!r})") for text in (amount, f"${big // 100:,}.{big % 100:02d}", "-3.07")]
                + [check(f"parse_amount('{rng.randint(1, 99)}.5')"), check(f"parse_amount('{rng.randint(1, 99)}')")],
            ),
            Case("test_parse_amount_rejects_garbage", [raises(f"parse_amount({t!r})") for t in ("abc", "1.234", "")]),
            Case("test_format_amount", [check(f"format_amount({big})"), check(f"format_amount(-{cents})")]),
            Case("test_format_amount_small", [check("format_amount(5)"), check("format_amount(0)")]),
            Case(
                "test_apply_discount",
                [check(f"apply_discount({cents}, {rng.randint(1, 60)})"), check(f"apply_discount({cents}, 0)")]
                + [check("apply_discount(999, 50)")],
            ),
            Case("test_apply_discount_rejects_bad_percent", [raises(f"apply_discount({cents}, 120)")]),
            Case("test_add_tax", [check(f"add_tax({cents}, {rng.randint(5, 25)})"), check("add_tax(250, 10)")]),
            Case("test_split_evenly", [check(f"split_evenly({cents}, {parts})"), check("split_evenly(100, 3)")]),
            Case("test_split_evenly_rejects_zero_parts", [raises(f"split_evenly({cents}, 0)")]),
        ],
    )


def _tests_items(rng: random.Random) -> TestFile:
    sku, cents, quantity = _sku(rng), rng.randint(100, 9_999), rng.randint(1, 50)
    line = f"{sku}; {rng.choice(PRODUCTS).title()}; {cents // 100}.{cents % 100:02d}; {quantity}"
    return TestFile(
        {"items": ("Item", "parse_item", "valid_sku")},
        [
            Case(
                "test_valid_sku",
                [check(f"valid_sku({sku!r})")]
                + [check(f"valid_sku({bad!r})") for bad in (sku.lower(), sku.replace("-", "_"), sku[:-1], sku + "0")],
            ),
            Case(
                "test_parse_item",
                [do(f"item = parse_item({line!r})")]
                + [check(f"item.{name}") for name in ("sku", "name", "price", "quantity")],
            ),
            Case("test_parse_item_rejects_bad_lines", [raises(f"parse_item({line.rsplit(';', 1)[0]!r})")]),
            Case("test_parse_item_rejects_bad_sku", [raises(f"parse_item({line.replace('-', '', 1)!r})")]),
            Case("test_item_value", [check(f"Item({sku!r}, 'x', {cents}, {quantity}).value")]),
        ],
    )


def _tests_stock(rng: random.Random) -> TestFile:
    setup, skus = _stock_setup(rng, rng.randint(3, 5))
    first, second = skus[0], skus[1]
    return TestFile(
        {"items": ("Item",), "stock": ("Inventory",)},
        [
            Case("test_quantity", setup + [check(f"inventory.quantity({sku!r})") for sku in skus]),
            Case("test_quantity_of_unknown_sku", setup + [check("inventory.quantity('ZZZ-0000')")]),
            Case(
                "test_add_existing_sku_adds_up",
                setup
                + [do(f"inventory.add(Item({first!r}, 'x', 100, 5))"), check(f"inventory.quantity({first!r})")]
                + [check("[item.price for item in inventory.items()]")],
            ),
            Case(
                "test_remove",
                setup
                + [do(f"inventory.add(Item({second!r}, 'x', 100, 10))"), do(f"inventory.remove({second!r}, 4)")]
                + [check(f"inventory.quantity({second!r})")],
            ),
            Case(
                "test_remove_everything",
                setup
                + [do(f"inventory.remove({first!r}, inventory.quantity({first!r}))")]
                + [check(f"inventory.quantity({first!r})")],
            ),
            Case("test_remove_too_many", setup + [raises(f"inventory.remove({first!r}, 1000)")]),
            Case("test_remove_unknown", setup + [raises("inventory.remove('ZZZ-0000', 1)", "KeyError")]),
            Case("test_add_negative", setup + [raises(f"inventory.add(Item({first!r}, 'x', 100, -1))")]),
            Case("test_low_stock", setup + [check("inventory.low_stock(10)"), check("inventory.low_stock(25)")]),
            Case("test_totals_and_order", setup + [check("inventory.total_units()"), check("inventory.skus()")]),
        ],
    )


def _tests_pricing(rng: random.Random) -> TestFile:
    price = rng.randint(100, 5_000)
    lines = [(rng.randint(100, 5_000), rng.choice((1, 3, 10, 12, 50, 60, 100, 120))) for _ in range(3)]
    return TestFile(
        {"pricing": ("bulk_discount", "line_total", "order_total", "shipping_cost", "unit_price")},
        [
            Case("test_bulk_discount", [check(f"bulk_discount({q})") for q in (1, 9, 10, 49, 50, 99, 100, 250)]),
            Case("test_unit_price", [check(f"unit_price({price}, {q})") for q in (1, 10, 50, 100)]),
            Case("test_line_total", [check(f"line_total({price}, {q})") for q in (0, 7, 60)]),
            Case("test_line_total_rejects_negative", [raises(f"line_total({price}, -1)")]),
            Case(
                "test_order_total",
                [check(f"order_total({lines})"), check(f"order_total({lines}, tax_rate={rng.randint(5, 20)})")]
                + [check(f"order_total({lines}, tax_rate=10, coupon=500)")],
            ),
            Case("test_order_total_coupon_never_negative", [check("order_total([(100, 1)], coupon=500)")]),
            Case("test_shipping_cost", [check(f"shipping_cost({g})") for g in (500, 1000, 1001, 2500)]),
            Case("test_shipping_cost_express", [check("shipping_cost(1500, express=True)")]),
            Case("test_shipping_cost_rejects_zero", [raises("shipping_cost(0)")]),
        ],
    )


def _tests_reports(rng: random.Random) -> TestFile:
    setup, _ = _stock_setup(rng, rng.randint(3, 5))
    return TestFile(
        {
            "items": ("Item",),
            "stock": ("Inventory",),
            "reports": ("most_valuable", "restock_list", "stock_value", "summary_lines"),
        },
        [
            Case("test_stock_value", setup + [check("stock_value(inventory)")]),
            Case("test_stock_value_empty", [check("stock_value(Inventory())")]),
            Case(
                "test_most_valuable",
                setup + [check("most_valuable(inventory, 2)"), check("most_valuable(inventory, 9)")],
            ),
            Case("test_restock_list", setup + [check("restock_list(inventory, 20, 50)")]),
            Case("test_summary_lines", setup + [check("summary_lines(inventory)")]),
        ],
    )


SHOP = Domain(
    "inventory",
    ("stockroom", "shelfwise", "inventra", "stocklib", "depotkit", "cratekit"),
    "a small inventory library: money in cents, items, stock keeping, pricing and reports",
    {
        module.name: module
        for module in (
            Module("_rounding", SHOP_ROUNDING),
            Module("money", SHOP_MONEY, _tests_money),
            Module("items", SHOP_ITEMS, _tests_items),
            Module("stock", SHOP_STOCK, _tests_stock),
            Module("pricing", SHOP_PRICING, _tests_pricing),
            Module("reports", SHOP_REPORTS, _tests_reports, test_needs=("stock",)),
        )
    },
)

# ---- domain: dates -----------------------------------------------------------------------------

DATES_DAYS = '''"""Day counting shared by the date functions. Dates are (year, month, day) tuples."""

MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_leap(year):
    """Gregorian leap years: divisible by 4, except centuries not divisible by 400."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    if month == 2 and is_leap(year):
        return 29
    return MONTH_DAYS[month - 1]


def days_before_year(year):
    """The days from 0001-01-01 to the first day of ``year``."""
    previous = year - 1
    return previous * 365 + previous // 4 - previous // 100 + previous // 400


def to_ordinal(date):
    """The day number of ``date``: 1 for 0001-01-01."""
    year, month, day = date
    days = days_before_year(year)
    for earlier in range(1, month):
        days += days_in_month(year, earlier)
    return days + day


def from_ordinal(number):
    """The date whose day number is ``number``."""
    year = max(1, (number - 1) * 400 // 146097 - 1)  # a year at or before the right one
    for _ in range(4):
        if days_before_year(year + 1) < number:
            year += 1
    remaining = number - days_before_year(year)
    for month in range(1, 13):
        length = days_in_month(year, month)
        if remaining <= length:
            return (year, month, remaining)
        remaining -= length
    raise ValueError(f"day number {number} is out of range")
'''

DATES_MONTHS = '''"""Facts about months and years."""

from ._days import days_in_month, is_leap

NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def month_name(month, short=False):
    """'March' for 3 ('Mar' when ``short``)."""
    if not 1 <= month <= 12:
        raise ValueError(f"there is no month {month}")
    name = NAMES[month - 1]
    return name[:3] if short else name


def month_number(name):
    """1-12 for a full or three-letter month name, in any case."""
    wanted = name.strip().lower()
    for index, full in enumerate(NAMES):
        if wanted in (full.lower(), full[:3].lower()):
            return index + 1
    raise ValueError(f"unknown month {name!r}")


def days_in_year(year):
    return 366 if is_leap(year) else 365


def quarter(month):
    """1 for January to March, ..., 4 for October to December."""
    return (month - 1) // 3 + 1


def month_lengths(year):
    return [days_in_month(year, month) for month in range(1, 13)]
'''

DATES_PARSING = '''"""Reading and writing dates."""

from ._days import days_in_month
from .months import month_name, month_number


def validate(date):
    """``date`` if it is a real (year, month, day); ValueError otherwise."""
    year, month, day = date
    if not 1 <= year <= 9999:
        raise ValueError(f"year {year} is out of range")
    if not 1 <= month <= 12:
        raise ValueError(f"month {month} is out of range")
    if not 1 <= day <= days_in_month(year, month):
        raise ValueError(f"day {day} is out of range for {year}-{month:02d}")
    return date


def parse_iso(text):
    """'2024-03-05' -> (2024, 3, 5)."""
    parts = text.strip().split("-")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        raise ValueError(f"not an ISO date: {text!r}")
    return validate(tuple(int(part) for part in parts))


def format_iso(date):
    year, month, day = validate(date)
    return f"{year:04d}-{month:02d}-{day:02d}"


def parse_us(text):
    """'03/05/2024' (month/day/year) -> (2024, 3, 5)."""
    parts = text.strip().split("/")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        raise ValueError(f"not a US date: {text!r}")
    month, day, year = (int(part) for part in parts)
    return validate((year, month, day))


def format_long(date):
    """(2024, 3, 5) -> 'March 5, 2024'."""
    year, month, day = validate(date)
    return f"{month_name(month)} {day}, {year}"


def parse_long(text):
    """'March 5, 2024' or 'mar 5 2024' -> (2024, 3, 5)."""
    words = text.replace(",", " ").split()
    if len(words) != 3:
        raise ValueError(f"not a date: {text!r}")
    return validate((int(words[2]), month_number(words[0]), int(words[1])))
'''

DATES_ARITHMETIC = '''"""Adding to dates and measuring between them."""

from ._days import days_in_month, from_ordinal, to_ordinal


def add_days(date, days):
    return from_ordinal(to_ordinal(date) + days)


def days_between(start, end):
    """The days from ``start`` to ``end`` (negative if ``end`` comes first)."""
    return to_ordinal(end) - to_ordinal(start)


def add_months(date, months):
    """The same day ``months`` later, clamped to the month's end (Jan 31 + 1 month = Feb 28 or 29)."""
    year, month, day = date
    index = year * 12 + (month - 1) + months
    new_year, new_month = divmod(index, 12)
    new_month += 1
    return (new_year, new_month, min(day, days_in_month(new_year, new_month)))


def age(birth, today):
    """The completed years from ``birth`` to ``today``."""
    years = today[0] - birth[0]
    if (today[1], today[2]) < (birth[1], birth[2]):
        years -= 1
    return years


def is_before(first, second):
    return to_ordinal(first) < to_ordinal(second)
'''

DATES_WEEKDAYS = '''"""Weekdays and business days (Monday = 0, ..., Sunday = 6)."""

from ._days import to_ordinal
from .arithmetic import add_days

DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def weekday(date):
    """0 for Monday ... 6 for Sunday (0001-01-01 was a Monday)."""
    return (to_ordinal(date) - 1) % 7


def day_name(date):
    return DAY_NAMES[weekday(date)]


def is_weekend(date):
    return weekday(date) >= 5


def next_weekday(date, target):
    """The first date after ``date`` that falls on weekday ``target``."""
    ahead = (target - weekday(date)) % 7
    if ahead == 0:
        ahead = 7
    return add_days(date, ahead)


def add_business_days(date, count):
    """The date ``count`` business days (Monday to Friday) after ``date``."""
    if count < 0:
        raise ValueError("count must not be negative")
    current = date
    for _ in range(count):
        current = add_days(current, 1)
        if weekday(current) == 5:
            current = add_days(current, 2)
        elif weekday(current) == 6:
            current = add_days(current, 1)
    return current


def business_days_between(start, end):
    """The business days after ``start``, up to and including ``end``."""
    total = 0
    for offset in range(1, to_ordinal(end) - to_ordinal(start) + 1):
        if not is_weekend(add_days(start, offset)):
            total += 1
    return total
'''

DATES_PERIODS = '''"""Calendar periods: months, quarters, weeks and ranges of dates."""

from ._days import days_in_month
from .arithmetic import add_days, days_between
from .weekdays import weekday


def month_range(year, month):
    """(first day, last day) of a month."""
    return (year, month, 1), (year, month, days_in_month(year, month))


def quarter_range(year, number):
    """(first day, last day) of quarter ``number`` (1-4)."""
    if not 1 <= number <= 4:
        raise ValueError("a quarter is numbered 1 to 4")
    first_month = 3 * (number - 1) + 1
    last_month = first_month + 2
    return (year, first_month, 1), (year, last_month, days_in_month(year, last_month))


def week_start(date, first_weekday=0):
    """The first day of the week holding ``date`` (weeks start on ``first_weekday``)."""
    offset = (weekday(date) - first_weekday) % 7
    return add_days(date, -offset)


def dates_between(start, end, step=1):
    """Every ``step``-th date from ``start`` up to and including ``end``."""
    if step < 1:
        raise ValueError("step must be positive")
    return [add_days(start, offset) for offset in range(0, days_between(start, end) + 1, step)]


def overlap_days(first, second):
    """How many days two inclusive (start, end) ranges share."""
    start = max(first[0], second[0])
    end = min(first[1], second[1])
    if end < start:
        return 0
    return days_between(start, end) + 1
'''


def _date(rng: random.Random, low: int = 1990, high: int = 2030) -> tuple[int, int, int]:
    year, month = rng.randint(low, high), rng.randint(1, 12)
    return (year, month, rng.randint(1, 28))


def _tests_months(rng: random.Random) -> TestFile:
    month = rng.randint(1, 12)
    names = ("January", "February", "March", "April", "May", "June")
    names += ("July", "August", "September", "October", "November", "December")
    name = names[rng.randint(0, 11)]
    return TestFile(
        {"months": ("days_in_year", "month_lengths", "month_name", "month_number", "quarter")},
        [
            Case("test_month_name", [check(f"month_name({month})"), check(f"month_name({month}, short=True)")]),
            Case("test_month_name_rejects_13", [raises("month_name(13)"), raises("month_name(0)")]),
            Case(
                "test_month_number",
                [check(f"month_number({name!r})"), check(f"month_number({name[:3].lower()!r})")]
                + [check("month_number(' DEC ')")],
            ),
            Case("test_month_number_unknown", [raises("month_number('Smarch')")]),
            Case("test_days_in_year", [check(f"days_in_year({year})") for year in (2023, 2024, 1900, 2000)]),
            Case("test_quarter", [check(f"quarter({m})") for m in range(1, 13)]),
            Case("test_month_lengths", [check(f"month_lengths({rng.choice((2024, 2028, 2000))})")]),
            Case("test_month_lengths_common_year", [check(f"month_lengths({rng.choice((2023, 2025, 1900))})")]),
        ],
    )


def _tests_parsing(rng: random.Random) -> TestFile:
    date = _date(rng)
    iso = f"{date[0]:04d}-{date[1]:02d}-{date[2]:02d}"
    us = f"{date[1]:02d}/{date[2]:02d}/{date[0]}"
    return TestFile(
        {"parsing": ("format_iso", "format_long", "parse_iso", "parse_long", "parse_us", "validate")},
        [
            Case("test_parse_iso", [check(f"parse_iso({iso!r})"), check("parse_iso('2024-02-29')")]),
            Case(
                "test_parse_iso_rejects_bad_dates",
                [raises(f"parse_iso({bad!r})") for bad in ("2023-02-29", "2024-13-01", "2024/01/01", "2024-04-31")],
            ),
            Case("test_format_iso", [check(f"format_iso({date})"), check("format_iso((987, 6, 5))")]),
            Case("test_parse_us", [check(f"parse_us({us!r})")]),
            Case("test_format_long", [check(f"format_long({date})")]),
            Case("test_parse_long", [check(f"parse_long(format_long({date}))"), check("parse_long('mar 5 2024')")]),
            Case("test_validate_day_zero", [raises(f"validate(({date[0]}, {date[1]}, 0))")]),
            Case("test_validate_last_day", [check("validate((2023, 12, 31))"), check("validate((2024, 2, 29))")]),
        ],
    )


def _tests_arithmetic(rng: random.Random) -> TestFile:
    date, other = _date(rng), _date(rng)
    days = rng.randint(40, 900)
    birth = _date(rng, 1950, 2000)
    return TestFile(
        {"arithmetic": ("add_days", "add_months", "age", "days_between", "is_before")},
        [
            Case("test_add_days", [check(f"add_days({date}, {days})"), check(f"add_days({date}, -{days})")]),
            Case(
                "test_add_days_across_leap_day",
                [check("add_days((2024, 2, 28), 1)"), check("add_days((2023, 2, 28), 1)")],
            ),
            Case(
                "test_add_days_across_years",
                [check("add_days((1999, 12, 31), 1)"), check("add_days((2000, 1, 1), -1)")],
            ),
            Case(
                "test_days_between", [check(f"days_between({date}, {other})"), check(f"days_between({date}, {date})")]
            ),
            Case(
                "test_add_months",
                [check(f"add_months({date}, {rng.randint(1, 30)})"), check("add_months((2023, 11, 15), 3)")],
            ),
            Case(
                "test_add_months_clamps_to_month_end",
                [check("add_months((2024, 1, 31), 1)"), check("add_months((2023, 3, 31), -1)")],
            ),
            Case("test_age", [check(f"age({birth}, (2024, {birth[1]}, {birth[2]}))"), check(f"age({birth}, {other})")]),
            Case("test_is_before", [check(f"is_before({date}, {other})"), check(f"is_before({date}, {date})")]),
        ],
    )


def _tests_weekdays(rng: random.Random) -> TestFile:
    date, count = _date(rng), rng.randint(3, 12)
    target = rng.randint(0, 6)
    later = (date[0], date[1], min(date[2] + count, 28))
    return TestFile(
        {
            "weekdays": (
                "add_business_days",
                "business_days_between",
                "day_name",
                "is_weekend",
                "next_weekday",
                "weekday",
            )
        },
        [
            Case(
                "test_weekday",
                [check(f"weekday({date})"), check("weekday((2024, 3, 1))"), check("weekday((2000, 1, 1))")],
            ),
            Case("test_day_name", [check(f"day_name({date})")]),
            Case("test_is_weekend", [check(f"is_weekend((2024, 3, {day}))") for day in (1, 2, 3, 4)]),
            Case(
                "test_next_weekday", [check(f"next_weekday({date}, {target})"), check("next_weekday((2024, 3, 1), 4)")]
            ),
            Case(
                "test_add_business_days",
                [check("add_business_days((2024, 3, 1), 1)"), check(f"add_business_days({date}, {count})")]
                + [check("add_business_days((2024, 3, 2), 1)"), check(f"add_business_days({date}, 0)")],
            ),
            Case("test_add_business_days_rejects_negative", [raises(f"add_business_days({date}, -1)")]),
            Case(
                "test_business_days_between",
                [
                    check(f"business_days_between({date}, {later})"),
                    check("business_days_between((2024, 3, 1), (2024, 3, 4))"),
                ],
            ),
        ],
    )


def _tests_periods(rng: random.Random) -> TestFile:
    date = _date(rng)
    year = rng.randint(1990, 2030)
    start = _date(rng, 2020, 2020)
    end = (2020, start[1], min(start[2] + rng.randint(3, 20), 28))
    first = ((2024, 1, rng.randint(1, 10)), (2024, 1, rng.randint(15, 25)))
    second = ((2024, 1, rng.randint(5, 20)), (2024, 2, rng.randint(1, 9)))
    return TestFile(
        {"periods": ("dates_between", "month_range", "overlap_days", "quarter_range", "week_start")},
        [
            Case(
                "test_month_range", [check("month_range(2024, 2)"), check(f"month_range({year}, {rng.randint(1, 12)})")]
            ),
            Case("test_quarter_range", [check(f"quarter_range({year}, {q})") for q in (1, 2, 3, 4)]),
            Case("test_quarter_range_rejects_5", [raises(f"quarter_range({year}, 5)")]),
            Case("test_week_start", [check(f"week_start({date})"), check(f"week_start({date}, first_weekday=6)")]),
            Case(
                "test_dates_between",
                [check(f"dates_between({start}, {end})"), check(f"dates_between({start}, {end}, step=3)")],
            ),
            Case(
                "test_overlap_days",
                [
                    check(f"overlap_days({first}, {second})"),
                    check(f"overlap_days({first}, ((2024, 3, 1), (2024, 3, 9)))"),
                ],
            ),
        ],
    )


DATES = Domain(
    "dates",
    ("datekit", "calendrix", "daytools", "almanac", "chronos", "timely"),
    "date utilities on (year, month, day) tuples: months, parsing, arithmetic, weekdays and periods",
    {
        module.name: module
        for module in (
            Module("_days", DATES_DAYS),
            Module("months", DATES_MONTHS, _tests_months),
            Module("parsing", DATES_PARSING, _tests_parsing),
            Module("arithmetic", DATES_ARITHMETIC, _tests_arithmetic),
            Module("weekdays", DATES_WEEKDAYS, _tests_weekdays),
            Module("periods", DATES_PERIODS, _tests_periods),
        )
    },
)

DOMAINS: tuple[Domain, ...] = (STATS, TEXT, SHOP, DATES)

# ---- running a suite in-process (generation only) ----------------------------------------------

#: Most executed lines one in-process run of a suite may take; a mutant past it is skipped.
LINE_BUDGET = 400_000
_package_ids = itertools.count()


class _OverBudget(BaseException):
    """Raised inside a mutant that runs too long (BaseException: template code never catches it)."""


def _topological(modules: dict[str, Module], names: set[str]) -> list[str]:
    order: list[str] = []

    def visit(name: str) -> None:
        if name not in order:
            for required in modules[name].requires:
                visit(required)
            order.append(name)

    for name in sorted(names):
        visit(name)
    return order


def _run_cases(sources: dict[str, str], order: list[str], files: dict[str, TestFile], record: bool) -> set[str] | None:
    """Run every case of ``files`` on a package built from ``sources``; the failing cases ("module::case").

    With ``record`` (the correct code), fill each step's expected value and raise
    ``RuntimeError`` when a step does not behave as its spec says. ``None`` when the run
    went past :data:`LINE_BUDGET` lines.
    """
    name = f"_agentgym_bugfix_{next(_package_ids)}"
    package = types.ModuleType(name)
    package.__path__ = []
    loaded: dict[str, types.ModuleType] = {}
    previous_trace = sys.gettrace()
    executed = [0]

    def trace(frame: Any, event: str, arg: Any) -> Any:
        executed[0] += 1
        if executed[0] > LINE_BUDGET:
            raise _OverBudget
        return trace

    failures: set[str] = set()
    sys.modules[name] = package
    try:
        sys.settrace(trace)
        try:
            for module_name in order:
                module = types.ModuleType(f"{name}.{module_name}")
                module.__package__ = name
                sys.modules[module.__name__] = module
                exec(compile(sources[module_name], f"{module_name}.py", "exec"), module.__dict__)
                loaded[module_name] = module
        except _OverBudget:
            return None
        except Exception:
            if record:
                raise
            return {f"{module}::*" for module in files}
        for module_name, test_file in files.items():
            for case in test_file.cases:
                namespace: dict[str, Any] = {"__builtins__": builtins, "close": close}
                for source_module, names in test_file.imports.items():
                    for imported in names:
                        namespace[imported] = getattr(loaded[source_module], imported)
                if not _run_case(case, namespace, record):
                    failures.add(f"{module_name}::{case.name}")
    except _OverBudget:
        return None
    finally:
        sys.settrace(previous_trace)
        for module_name in list(sys.modules):
            if module_name == name or module_name.startswith(name + "."):
                del sys.modules[module_name]
    return failures


def _run_case(case: Case, namespace: dict[str, Any], record: bool) -> bool:
    """Whether ``case`` passes; with ``record``, store the expected values (see :func:`_run_cases`)."""
    for step in case.steps:
        try:
            if step.kind == "do":
                exec(step.code, namespace)
            elif step.kind == "check":
                value = eval(step.code, namespace)
                if record:
                    step.expected, step.approx = repr(value), _holds_float(value)
                    if eval(step.expected, {}) != value:
                        raise RuntimeError(f"{case.name}: {step.code} gives {step.expected}, which does not round-trip")
                expected = eval(step.expected, {})
                if not (close(value, expected) if step.approx else value == expected):
                    return False
            else:
                try:
                    eval(step.code, namespace)
                except _OverBudget:
                    raise
                except BaseException as error:  # noqa: BLE001  (a mutant may raise anything)
                    if not isinstance(error, getattr(builtins, step.error)):
                        return False
                else:
                    if record:
                        raise RuntimeError(f"{case.name}: {step.code} does not raise {step.error}")
                    return False
        except _OverBudget:
            raise
        except BaseException as error:  # noqa: BLE001
            if record:
                raise RuntimeError(f"{case.name}: {step.code} raised {error!r}") from error
            return False
    return True


def _holds_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_float(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_float(item) for item in value.values())
    return False


# ---- mutations ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutation:
    """One edit of a module's source: characters ``start:end`` become ``replacement``."""

    module: str
    function: str
    kind: str
    start: int
    end: int
    replacement: str

    def apply(self, source: str) -> str:
        return source[: self.start] + self.replacement + source[self.end :]

    def key(self, domain: str) -> str:
        """What identifies the bug regardless of package name and test inputs (for split buckets)."""
        return f"{domain}:{self.module}:{self.function}:{self.kind}:{self.start}:{self.replacement}"


COMPARE_TEXT = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}
COMPARE_FLIPS = {
    "<": ("<=", ">"),
    "<=": ("<",),
    ">": (">=", "<"),
    ">=": (">",),
    "==": ("!=",),
    "!=": ("==",),
    "in": ("not in",),
    "not in": ("in",),
    "is": ("is not",),
    "is not": ("is",),
}
BINOP_TEXT = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}
BINOP_SWAPS = {"+": ("-",), "-": ("+",), "*": ("+", "/"), "/": ("//", "*"), "//": ("/",), "%": ("//",)}


class _MutationFinder:
    """Every candidate mutation inside the functions of one module's source."""

    def __init__(self, module: str, source: str) -> None:
        self.module, self.source = module, source
        self.line_starts = [0]
        for line in source.splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.found: list[Mutation] = []

    def offset(self, line: int, column: int) -> int:
        return self.line_starts[line - 1] + column

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def add(self, function: str, kind: str, start: int, end: int, replacement: str) -> None:
        if self.source[start:end] != replacement:
            self.found.append(Mutation(self.module, function, kind, start, end, replacement))

    def operator(self, function: str, kind: str, left: ast.AST, right: ast.AST, text: str, swaps: tuple[str, ...]):
        gap_start, gap_end = self.span(left)[1], self.span(right)[0]
        gap = self.source[gap_start:gap_end]
        if gap.strip(" ()\n") != text:
            return
        at = gap_start + gap.index(text)
        for swap in swaps:
            self.add(function, kind, at, at + len(text), swap)

    def find(self) -> list[Mutation]:
        tree = ast.parse(self.source)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self.function(node.name, node)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        self.function(f"{node.name}.{item.name}", item)
        return self.found

    def function(self, name: str, definition: ast.FunctionDef) -> None:
        in_fstring: set[int] = set()
        for node in ast.walk(definition):
            if isinstance(node, ast.JoinedStr):
                in_fstring.update(id(inner) for inner in ast.walk(node))
        bound = self.bound_names(definition)
        for node in ast.walk(definition):
            if id(node) in in_fstring or node is definition:
                continue
            self.visit(name, node, bound)
        self.branches(name, definition)

    @staticmethod
    def bound_names(definition: ast.FunctionDef) -> dict[str, int]:
        """Parameters and names assigned in the function body, with the line where they are first bound."""
        bound = {arg.arg: definition.lineno for arg in definition.args.args if arg.arg != "self"}
        for node in ast.walk(definition):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.For)):
                targets = [node.target]
            for target in targets:
                for inner in ast.walk(target):
                    if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                        bound.setdefault(inner.id, inner.lineno)
        return bound

    def visit(self, function: str, node: ast.AST, bound: dict[str, int]) -> None:
        if isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                text = COMPARE_TEXT[type(op)]
                self.operator(function, "comparison", left, right, text, COMPARE_FLIPS[text])
                left = right
        elif isinstance(node, ast.BinOp) and type(node.op) in BINOP_TEXT:
            text = BINOP_TEXT[type(node.op)]
            self.operator(function, "operator", node.left, node.right, text, BINOP_SWAPS[text])
        elif isinstance(node, ast.AugAssign) and type(node.op) in (ast.Add, ast.Sub):
            text = "+=" if isinstance(node.op, ast.Add) else "-="
            self.operator(function, "operator", node.target, node.value, text, ("-=" if text == "+=" else "+=",))
        elif isinstance(node, ast.BoolOp):
            text = "and" if isinstance(node.op, ast.And) else "or"
            for left, right in zip(node.values, node.values[1:]):
                self.operator(function, "boolean", left, right, text, ("or" if text == "and" else "and",))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            start, end = self.span(node)
            for value in (node.value + 1, node.value - 1):
                if value >= 0:
                    self.add(function, "off-by-one", start, end, str(value))
        elif isinstance(node, ast.Slice):
            for bound_node in (node.lower, node.upper):
                self.shift(function, bound_node)
        elif isinstance(node, ast.Call):
            self.call(function, node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in bound:
            start, end = self.span(node)
            for other, line in sorted(bound.items()):
                if other != node.id and line <= node.lineno:
                    self.add(function, "wrong variable", start, end, other)

    def shift(self, function: str, node: ast.AST | None) -> None:
        """``x`` -> ``x + 1`` and ``x - 1`` for a non-constant bound."""
        if node is None or isinstance(node, (ast.Constant, ast.UnaryOp)) or node.lineno != node.end_lineno:
            return
        start, end = self.span(node)
        text = self.source[start:end]
        if isinstance(node, ast.BinOp) and not isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
            text = f"({text})"
        for change in (" + 1", " - 1"):
            self.add(function, "off-by-one", start, end, text + change)

    def call(self, function: str, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            start, end = self.span(node.func)
            self.add(function, "min/max", start, end, "max" if node.func.id == "min" else "min")
        if isinstance(node.func, ast.Name) and node.func.id == "range" and node.args:
            self.shift(function, node.args[-1] if len(node.args) < 3 else node.args[1])
        args = node.args
        if len(args) >= 2 and not any(isinstance(arg, ast.Starred) for arg in args[:2]):
            first, second = self.span(args[0]), self.span(args[1])
            if args[0].lineno == args[1].end_lineno:
                one, two = self.source[first[0] : first[1]], self.source[second[0] : second[1]]
                if one != two:
                    between = self.source[first[1] : second[0]]
                    self.add(function, "swapped arguments", first[0], second[1], two + between + one)

    def branches(self, function: str, definition: ast.FunctionDef) -> None:
        """Delete a guard ``if`` (a one-statement body, no else) or an ``elif`` branch."""
        simple = (ast.Return, ast.Raise, ast.Assign, ast.AugAssign, ast.Expr, ast.Continue, ast.Break)
        lines = self.source.splitlines()
        for parent in ast.walk(definition):
            for field_name in ("body", "orelse"):
                block = getattr(parent, field_name, None)
                if not isinstance(block, list):
                    continue
                for node in block:
                    if not isinstance(node, ast.If):
                        continue
                    start = self.line_starts[node.lineno - 1]
                    is_elif = lines[node.lineno - 1].lstrip().startswith("elif")
                    if is_elif:
                        end = self.line_starts[node.body[-1].end_lineno]
                        self.add(function, "missing branch", start, end, "")
                    elif (
                        not node.orelse and len(node.body) == 1 and isinstance(node.body[0], simple) and len(block) > 1
                    ):
                        self.add(function, "missing branch", start, self.line_starts[node.end_lineno], "")


def find_mutations(module: str, source: str) -> list[Mutation]:
    """Every candidate mutation of ``source`` that still compiles, in source order."""
    candidates = []
    for mutation in sorted(set(_MutationFinder(module, source).find()), key=lambda m: (m.start, m.end, m.replacement)):
        try:
            compile(mutation.apply(source), f"{module}.py", "exec")
        except SyntaxError:
            continue
        candidates.append(mutation)
    return candidates


_MUTATIONS: dict[tuple[str, str], list[Mutation]] = {}
_MUTATIONS_LOCK = threading.Lock()


def module_mutations(domain: Domain, module: str) -> list[Mutation]:
    """The candidate mutations of a domain's module (computed once per process)."""
    key = (domain.name, module)
    with _MUTATIONS_LOCK:
        if key not in _MUTATIONS:
            _MUTATIONS[key] = find_mutations(module, domain.modules[module].source)
        return _MUTATIONS[key]


# ---- repositories ------------------------------------------------------------------------------


@dataclass
class Repo:
    """A generated task: the correct files, the mutated file, and how it was chosen."""

    domain: str
    package: str
    modules: list[str]
    files: dict[str, str]
    mutation: Mutation
    mutated_path: str
    mutated_source: str
    failing: list[str]
    test_files: list[str]
    test_count: int
    fix_old: str = ""
    fix_new: str = ""
    direct: set[str] = field(default_factory=set)

    @property
    def protected(self) -> list[str]:
        """The files an agent must not change: the tests and the runner."""
        return [*self.test_files, "run_tests.py"]

    def broken_files(self) -> dict[str, str]:
        return {**self.files, self.mutated_path: self.mutated_source}


def _choose_modules(rng: random.Random, domain: Domain, low: int, high: int) -> set[str]:
    modules = domain.modules

    def closure(name: str) -> set[str]:
        found = {name}
        for required in modules[name].requires:
            found |= closure(required)
        return found

    tested = sorted(name for name, module in modules.items() if module.tests)
    for _ in range(200):
        chosen = closure(rng.choice(tested))
        for name in rng.sample(tested, len(tested)):
            if len(chosen) >= low and rng.random() < 0.4:
                break
            grown = chosen | closure(name)
            if len(grown) <= high:
                chosen = grown
        if low <= len(chosen) <= high:
            return chosen
    raise RuntimeError(f"no module set of size {low}-{high} in {domain.name}")


def _render_tests(package: str, module: str, test_file: TestFile) -> str:
    lines = [f'"""Tests for {package}.{module}."""', ""]
    for source_module, names in sorted(test_file.imports.items()):
        lines.append(f"from {package}.{source_module} import {', '.join(sorted(names))}")
    approx = any(step.approx for case in test_file.cases for step in case.steps)
    if approx:
        lines += ["", "", CLOSE_SOURCE.rstrip()]
    for case in test_file.cases:
        lines += ["", "", f"def {case.name}():"]
        for step in case.steps:
            if step.kind == "do":
                lines.append(f"    {step.code}")
            elif step.kind == "check":
                if step.approx:
                    lines.append(f"    assert close({step.code}, {step.expected})")
                else:
                    lines.append(f"    assert {step.code} == {step.expected}")
            else:
                lines += [
                    "    try:",
                    f"        {step.code}",
                    f"    except {step.error}:",
                    "        pass",
                    "    else:",
                    f'        raise AssertionError("{step.error} was not raised")',
                ]
    return "\n".join(lines) + "\n"


def _first_line(text: str) -> str:
    return text.split('"""')[1].strip().splitlines()[0]


def _fix_blocks(original: str, mutated: str) -> tuple[str, str]:
    """(old, new): the changed lines with context, widened until ``old`` occurs once in ``mutated``."""
    original_lines, mutated_lines = original.split("\n"), mutated.split("\n")
    prefix = 0
    while prefix < min(len(original_lines), len(mutated_lines)) and original_lines[prefix] == mutated_lines[prefix]:
        prefix += 1
    suffix = 0
    limit = min(len(original_lines), len(mutated_lines)) - prefix
    while suffix < limit and original_lines[-1 - suffix] == mutated_lines[-1 - suffix]:
        suffix += 1
    for context in range(len(mutated_lines) + 1):
        start = max(prefix - context, 0)
        old = "\n".join(mutated_lines[start : max(len(mutated_lines) - suffix + context, start)])
        if old.strip() and mutated.count(old) == 1:
            return old, "\n".join(original_lines[start : len(original_lines) - suffix + context])
    raise RuntimeError("no unique context for the fix")


def generate_repo(rng: random.Random, hard: bool, split: str, splits: Any) -> Repo:
    """A repository with one test-breaking mutation whose key falls in ``split``."""
    for _ in range(100):
        domain = rng.choice(DOMAINS)
        package = rng.choice(domain.packages)
        names = _choose_modules(rng, domain, 4 if hard else 2, 6 if hard else 3)
        order = _topological(domain.modules, names)
        sources = {name: domain.modules[name].source for name in order}
        test_files = {name: domain.modules[name].tests(rng) for name in order if domain.modules[name].tests is not None}
        if _run_cases(sources, order, test_files, record=True):
            raise RuntimeError(f"{domain.name}: the correct code fails its own tests")
        direct = set()
        for test_file in test_files.values():
            for names_imported in test_file.imports.values():
                direct.update(names_imported)
        candidates = [
            mutation
            for name in order
            for mutation in module_mutations(domain, name)
            if _is_direct(mutation.function, direct) != hard and splits.bucket(mutation.key(domain.name)) == split
        ]
        for mutation in _interleave_kinds(rng, candidates)[:40]:
            mutated = dict(sources)
            mutated[mutation.module] = mutation.apply(sources[mutation.module])
            failing = _run_cases(mutated, order, test_files, record=False)
            if failing:
                return _assemble(domain, package, order, sources, test_files, mutation, mutated, failing, direct)
    raise RuntimeError("no repository with a test-breaking mutation found")


def _interleave_kinds(rng: random.Random, candidates: list[Mutation]) -> list[Mutation]:
    """``candidates`` in a random order that draws the kind of mutation uniformly, then a site of that kind."""
    by_kind: dict[str, list[Mutation]] = {}
    for mutation in candidates:
        by_kind.setdefault(mutation.kind, []).append(mutation)
    for group in by_kind.values():
        rng.shuffle(group)
    ordered = []
    kinds = sorted(by_kind)
    while kinds:
        kind = rng.choice(kinds)
        ordered.append(by_kind[kind].pop())
        if not by_kind[kind]:
            kinds.remove(kind)
    return ordered


def _is_direct(function: str, direct: set[str]) -> bool:
    """Whether tests call ``function`` themselves (a public function or a method of a class they import)."""
    owner, _, method = function.partition(".")
    if method:
        return owner in direct and (not method.startswith("_") or method == "__init__")
    return function in direct


def _assemble(
    domain: Domain,
    package: str,
    order: list[str],
    sources: dict[str, str],
    test_files: dict[str, TestFile],
    mutation: Mutation,
    mutated: dict[str, str],
    failing: set[str],
    direct: set[str],
) -> Repo:
    files = {"README.md": "", f"{package}/__init__.py": f'"""{package}: {domain.description}."""\n'}
    for name in order:
        files[f"{package}/{name}.py"] = sources[name]
    tests = []
    for name, test_file in test_files.items():
        path = f"tests/test_{name}.py"
        files[path] = _render_tests(package, name, test_file)
        tests.append(path)
    files["run_tests.py"] = RUNNER
    listing = "\n".join(f"- `{package}.{name}`: {_first_line(sources[name])}" for name in order)
    files["README.md"] = (
        f"# {package}\n\n{domain.description[0].upper()}{domain.description[1:]}.\n\n## Modules\n\n{listing}\n\n"
        "## Tests\n\n    python3 run_tests.py        # or: python -m pytest\n"
    )
    path = f"{package}/{mutation.module}.py"
    fix_old, fix_new = _fix_blocks(sources[mutation.module], mutated[mutation.module])
    failing_names = sorted(
        f"tests/test_{case.split('::')[0]}.py::{case.split('::')[1]}" for case in failing if not case.endswith("*")
    )
    return Repo(
        domain=domain.name,
        package=package,
        modules=order,
        files=files,
        mutation=mutation,
        mutated_path=path,
        mutated_source=mutated[mutation.module],
        failing=failing_names,
        test_files=sorted(tests),
        test_count=sum(len(test_file.cases) for test_file in test_files.values()),
        fix_old=fix_old,
        fix_new=fix_new,
        direct=direct,
    )


# ---- actions -----------------------------------------------------------------------------------

#: Limits of one test run (the suites take well under a second).
TEST_LIMITS = Limits(wall_s=20.0, cpu_s=10.0, memory_mb=512, processes=32, file_size_mb=16, output_bytes=1_000_000)
MAX_CAT_LINES = 250
MAX_LINE_CHARS = 400
MAX_OUTPUT_CHARS = 6_000
MAX_WRITE_BYTES = 200_000
MAX_SEARCH_HITS = 60
MAX_SEARCH_FILES = 500
MAX_READ_BYTES = 4_000_000

_ACTION = re.compile(r"^[ \t>*_#`-]*action[*_`]*[ \t]*:(.*)$", re.I)
_FENCE_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})[^`]*$")
_SEARCH_REPLACE = re.compile(
    r"^<{5,}[ \t]*SEARCH[ \t]*\n(.*?)\n?^={5,}[ \t]*\n(.*?)\n?^>{5,}[ \t]*REPLACE[ \t]*$", re.M | re.S
)
_RUN_TESTS = re.compile(
    r"^(?:run_tests|run-tests|runtests|python3? +run_tests\.py|python3? +-m +pytest|pytest)\b(.*)$", re.I
)
_TOOLS = {
    "ls": "ls",
    "dir": "ls",
    "cat": "cat",
    "open": "cat",
    "view": "cat",
    "search": "search",
    "grep": "search",
    "write": "write",
    "create": "write",
    "replace": "replace",
    "edit": "replace",
    "submit": "submit",
}


def extract_tool_call(reply: str) -> str:
    """The tool call in an LLM reply: from the last ``Action:`` line outside fenced blocks to the end.

    Reasoning up to a closing ``</think>`` is dropped; without an ``Action:`` line the whole
    reply is the call. The first line (the tool and its arguments) loses surrounding
    whitespace, backticks and asterisks; the lines after it (fenced blocks) are kept as they are.
    """
    end = reply.rfind("</think>")
    body = reply[end + len("</think>") :] if end >= 0 else reply
    lines = body.split("\n")
    fence, last = "", None
    for index, line in enumerate(lines):
        if fence:
            if line.strip() and set(line.strip()) == {fence[0]} and len(line.strip()) >= len(fence):
                fence = ""
            continue
        opening = _FENCE_OPEN.match(line)
        if opening:
            fence = opening.group(1)
        elif _ACTION.match(line):
            last = index
    if last is None:
        first = next((index for index, line in enumerate(lines) if line.strip()), 0)
        head, rest = lines[first], lines[first + 1 :]
    else:
        head, rest = _ACTION.match(lines[last]).group(1), lines[last + 1 :]
    head = head.strip().strip("`*").strip()
    return "\n".join([head, *rest]).rstrip()


def fenced_blocks(text: str) -> list[str]:
    """The contents of the fenced blocks in ``text``, in order (see the module docstring)."""
    blocks, lines, index = [], text.split("\n"), 0
    while index < len(lines):
        opening = _FENCE_OPEN.match(lines[index])
        if not opening:
            index += 1
            continue
        fence, body = opening.group(1), []
        index += 1
        while index < len(lines):
            stripped = lines[index].strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                break
            body.append(lines[index])
            index += 1
        else:
            raise InvalidAction(f"a fenced block opened with {fence[:10]} is never closed.")
        blocks.append("\n".join(body))
        index += 1
    return blocks


def _read_regular(path: Any) -> bytes | None:
    """A regular file's bytes, never following a final link nor blocking on a FIFO; None otherwise."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_READ_BYTES:
            return None
        with os.fdopen(os.dup(descriptor), "rb") as handle:
            data = handle.read(MAX_READ_BYTES + 1)
        return data if len(data) <= MAX_READ_BYTES else None
    finally:
        os.close(descriptor)


def _fence_for(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _numbered(text: str, first: int, last: int) -> str:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = []
    for number in range(first, min(last, len(lines)) + 1):
        line = lines[number - 1]
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + f" [... {len(line) - MAX_LINE_CHARS} more characters]"
        out.append(f"{number:>4} | {line}")
    return "\n".join(out)


def _elide(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    head, tail = limit // 2, limit // 2
    return f"{text[:head]}\n[... {len(text) - head - tail} characters omitted ...]\n{text[-tail:]}"


_SUMMARY = re.compile(r"^=+ (.+?) =+$", re.M)


def parse_summary(output: str) -> dict[str, int]:
    """The counts in the runner's last summary line: {"passed": n, "failed": n, "error": n}."""
    lines = _SUMMARY.findall(output)
    counts = {"passed": 0, "failed": 0, "error": 0}
    if lines and lines[-1] != "FAILURES":
        for number, label in re.findall(r"(\d+) (passed|failed|error)", lines[-1]):
            counts[label] = int(number)
    return counts


# ---- the environment ---------------------------------------------------------------------------


class BugFixEnv(TextEnv):
    """Fix the injected bug of a generated repository; see the module docstring for the rules."""

    toolset = "bugfix"  # in tools.yaml

    splits = BUGFIX_SPLITS
    max_observation_chars = 40_000

    def __init__(
        self,
        difficulty: str = "easy",
        limits: Limits | dict | None = None,
        sandbox_backend: str = "bwrap",
        render_mode: str | None = None,
    ) -> None:
        super().__init__(render_mode)
        if difficulty not in ("easy", "hard"):
            raise ValueError(f"difficulty must be 'easy' or 'hard', got {difficulty!r}")
        self.difficulty = difficulty
        self.limits = Limits(**limits) if isinstance(limits, dict) else limits or TEST_LIMITS
        self.sandbox_backend = sandbox_backend
        self.sandbox: Sandbox | None = None
        self.repo: Repo | None = None
        self._status = "The tests have not been run yet."
        self._last_run: tuple[str, bool] | None = None

    @property
    def action_syntax(self) -> str:
        return (
            "Use one tool per reply, on the line after 'Action:'. Tools:\n"
            "  ls [DIR]                   list a directory\n"
            "  cat FILE [START-END]       show a file with line numbers (a line range for long files)\n"
            "  search TEXT                find the lines of the repository that contain TEXT\n"
            "  write FILE                 then one fenced block: the file's whole new content\n"
            "  replace FILE               then two fenced blocks: the exact old text (it must occur once in FILE) "
            "and the new text\n"
            "  run_tests [FILE|NAME]      run the tests (all, or one test file, or tests whose name contains NAME)\n"
            "  submit                     finish: the whole test suite is run and judged\n"
            "A fenced block is a line of three backticks, the lines of text, and a closing line of three backticks. "
            "Example:\n"
            "Action: replace pkg/util.py\n```\n    if count > limit:\n```\n```\n    if count >= limit:\n```"
        )

    # ---- tasks ----

    def _generate(self, task_id: int) -> str:
        rng = self.task_rng(task_id, self.difficulty)
        repo = generate_repo(rng, self.difficulty == "hard", self.splits.split_of(task_id), self.splits)
        self.repo = repo
        if self.sandbox is not None:
            self.sandbox.close()
        self.sandbox = Sandbox(limits=self.limits, backend=self.sandbox_backend)
        for path, text in sorted(repo.broken_files().items()):
            self.sandbox.write_file(path, text)
        self._status = "The tests have not been run yet."
        self._last_run = None
        listing = "\n".join(f"  {path}" for path in sorted(repo.files))
        if self.difficulty == "easy":
            shown = repo.failing[:3] + (["..."] if len(repo.failing) > 3 else [])
            failing = "Failing tests: " + ", ".join(shown) + "."
        else:
            failing = "Some tests fail."
        return (
            f"The repository in {WORK} holds the Python package '{repo.package}' ({_first_line_of(repo)}) and its "
            f"tests. {failing} Find the bug in the package and fix it so that every test passes "
            "(python3 run_tests.py runs them). Do not change the tests or run_tests.py. "
            f"Files:\n{listing}"
        )

    def _describe(self) -> str:
        return self._status

    # ---- acting ----

    def extract_action(self, reply: str) -> str:
        return extract_tool_call(reply)

    def _execute(self, command: str) -> str:
        assert self.sandbox is not None and self.repo is not None
        head, _, rest = command.partition("\n")
        head = head.strip()
        if not head:
            raise InvalidAction("the reply names no tool; write e.g. 'Action: ls'.")
        run = _RUN_TESTS.match(head)
        if run:
            return self._run_tests(run.group(1).split())
        word, _, argument = head.partition(" ")
        tool = _TOOLS.get(word.lower().rstrip(".:"))
        argument = argument.strip()
        if tool is None:
            raise InvalidAction(
                f"unknown tool {quote(word, 40)}; use ls, cat, search, write, replace, run_tests or submit."
            )
        if tool == "submit":
            return self._submit()
        if tool == "ls":
            return self._ls(argument or ".")
        if tool == "search":
            return self._search(argument.strip("'\""))
        if not argument:
            raise InvalidAction(f"{tool} needs a file path, e.g. '{tool} {self.repo.mutated_path}'.")
        if tool == "cat":
            return self._cat(argument)
        path = argument.split()[0].strip("'\"`")
        if tool == "write":
            return self._write(path, rest)
        return self._replace(path, rest)

    def _host_path(self, path: str) -> Any:
        assert self.sandbox is not None
        try:
            return self.sandbox.path(path)
        except (SandboxError, ValueError, OSError) as error:
            raise InvalidAction(f"{quote(path, 100)} is not a path in the repository ({error}).") from None

    def _read(self, path: str) -> str:
        """The text of a repository file, for the agent (bad paths are invalid actions)."""
        host = self._host_path(path)
        if host.is_dir():
            raise InvalidAction(f"{quote(path, 100)} is a directory; use ls.")
        if not host.exists():
            raise InvalidAction(f"there is no file {quote(path, 100)}.")
        data = _read_regular(host)
        if data is None:
            raise InvalidAction(f"cannot read {quote(path, 100)}: not a regular file, or over {MAX_READ_BYTES} bytes.")
        return data.decode("utf-8", "replace")

    def _ls(self, path: str) -> str:
        host = self._host_path(path)
        try:
            names = sorted(host.iterdir(), key=lambda entry: entry.name)
        except NotADirectoryError:
            raise InvalidAction(f"{quote(path, 100)} is a file; use cat.") from None
        except OSError as error:
            raise InvalidAction(f"cannot list {quote(path, 100)}: {error.strerror}") from None
        entries = [entry.name + ("/" if entry.is_dir() and not entry.is_symlink() else "") for entry in names]
        shown = entries[:200] + ([f"... and {len(entries) - 200} more"] if len(entries) > 200 else [])
        return f"$ ls {path}\n" + ("\n".join(shown) if shown else "(empty)")

    def _cat(self, argument: str) -> str:
        parts = argument.split()
        path = parts[0].strip("'\"`")
        text = self._read(path)
        total = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        first, last = 1, MAX_CAT_LINES
        if len(parts) > 1:
            bounds = re.fullmatch(r"(\d+)(?:\s*[-:,]\s*(\d+)|\s+(\d+))?", " ".join(parts[1:]))
            if not bounds:
                raise InvalidAction("a line range is START-END, e.g. 'cat file.py 40-80'.")
            first = max(1, int(bounds.group(1)))
            end = bounds.group(2) or bounds.group(3)
            last = int(end) if end else first + MAX_CAT_LINES - 1
            last = min(last, first + MAX_CAT_LINES - 1)
        if total == 0:
            return f"{path} is empty."
        if first > total:
            raise InvalidAction(f"{quote(path, 100)} has only {total} lines.")
        body = _numbered(text, first, last)
        note = ""
        if first > 1 or last < total:
            note = f"\n(lines {first}-{min(last, total)} of {total}; 'cat {path} START-END' shows other lines)"
        return f"{path}:\n{_elide(body, 20_000)}{note}"

    def _search(self, text: str) -> str:
        assert self.sandbox is not None
        if not text:
            raise InvalidAction("search needs the text to look for, e.g. 'search def median'.")
        root = str(self.sandbox.workdir)
        hits, files = [], 0
        for directory, subdirectories, names in os.walk(root):  # never follows links
            subdirectories.sort()
            for name in sorted(names):
                files += 1
                data = _read_regular(os.path.join(directory, name)) if files <= MAX_SEARCH_FILES else None
                if data is None:
                    continue
                relative = os.path.relpath(os.path.join(directory, name), root)
                for number, line in enumerate(data.decode("utf-8", "replace").split("\n"), 1):
                    if text in line:
                        hits.append(f"{relative}:{number}: {line.strip()[:200]}")
        if not hits:
            return f"No line contains {quote(text, 100)}."
        shown = hits[:MAX_SEARCH_HITS]
        more = f"\n... and {len(hits) - len(shown)} more" if len(hits) > len(shown) else ""
        return f"{len(hits)} lines contain {quote(text, 100)}:\n" + "\n".join(shown) + more

    def _write(self, path: str, rest: str) -> str:
        assert self.sandbox is not None
        blocks = fenced_blocks(rest)
        if len(blocks) != 1:
            raise InvalidAction(f"write takes exactly one fenced block with the new content (found {len(blocks)}).")
        content = blocks[0] + "\n" if blocks[0] else ""
        if len(content.encode("utf-8", "surrogatepass")) > MAX_WRITE_BYTES:
            raise InvalidAction(f"the content is larger than {MAX_WRITE_BYTES} bytes.")
        host = self._host_path(path)
        if host.is_dir():
            raise InvalidAction(f"{quote(path, 100)} is a directory.")
        try:
            self.sandbox.write_file(path, content.encode("utf-8", "replace"))
        except (SandboxError, OSError, ValueError) as error:
            raise InvalidAction(f"cannot write {quote(path, 100)}: {error}") from None
        return f"Wrote {path} ({content.count(chr(10))} lines)."

    def _replace(self, path: str, rest: str) -> str:
        assert self.sandbox is not None
        pair = _SEARCH_REPLACE.search(rest)
        if pair:
            old, new = pair.group(1), pair.group(2)
        else:
            blocks = fenced_blocks(rest)
            if len(blocks) != 2:
                raise InvalidAction(
                    f"replace takes two fenced blocks, the old text and the new text (found {len(blocks)})."
                )
            old, new = blocks
        if not old.strip():
            raise InvalidAction("the old text is empty.")
        text = self._read(path)
        count = text.count(old)
        if count == 0:
            raise InvalidAction(
                f"the old text does not occur in {path}; it must match exactly, indentation included "
                f"(use 'cat {path}' and copy the lines)."
            )
        if count > 1:
            raise InvalidAction(f"the old text occurs {count} times in {path}; add lines around it to pick one.")
        updated = text.replace(old, new)
        try:
            self.sandbox.write_file(path, updated.encode("utf-8", "replace"))
        except (SandboxError, OSError, ValueError) as error:
            raise InvalidAction(f"cannot write {quote(path, 100)}: {error}") from None
        line = text[: text.index(old)].count("\n") + 1
        return f"Replaced {old.count(chr(10)) + 1} line(s) at line {line} of {path} with {new.count(chr(10)) + 1}."

    def _run_suite(self, arguments: list[str]) -> tuple[str, dict[str, int], bool]:
        """Run the runner; (output, counts, whether it exited cleanly)."""
        assert self.sandbox is not None
        result = self.sandbox.run(["python3", "run_tests.py", *arguments], limits=self.limits)
        output = result.stdout + (("\n[stderr]\n" + result.stderr) if result.stderr.strip() else "")
        if result.limit_hit:
            output += f"\n[the test run was stopped: the {result.limit_hit} limit was hit]"
        counts = parse_summary(result.stdout)
        return output, counts, result.exit_code == 0 and result.limit_hit is None

    def _run_tests(self, arguments: list[str]) -> str:
        if any("\x00" in argument for argument in arguments) or len(arguments) > 20:
            raise InvalidAction("run_tests takes a few test files or name parts.")
        selection = []
        for argument in arguments:
            path, _, name = argument.partition("::")  # a pytest node id: tests/test_x.py::test_y
            if path.endswith(".py") or "/" in path:
                selection += [path] + (["-k", name] if name else [])
            else:
                selection += ["-k", argument]
        output, counts, clean = self._run_suite(selection)
        summary = ", ".join(f"{counts[label]} {label}" for label in ("failed", "passed", "error") if counts[label])
        self._status = f"Last test run: {summary or 'no tests ran'}."
        if not arguments:
            self._last_run = (self._files_digest(), clean and counts["passed"] == self.repo.test_count)
        return f"$ python3 run_tests.py {' '.join(selection)}".rstrip() + "\n" + _elide(output.rstrip())

    def _submit(self) -> str:
        assert self.repo is not None
        repo = self.repo
        changed = [path for path in repo.protected if self._current(path) != repo.files[path]]
        if changed:
            self.success = False
            verdict = f"Not accepted: these files were changed: {', '.join(changed)}."
        else:
            output, counts, clean = self._run_suite(repo.test_files)
            self.success = clean and counts["passed"] == repo.test_count and not counts["failed"] + counts["error"]
            if self.success:
                verdict = f"Accepted: all {repo.test_count} tests pass."
            else:
                verdict = f"Not accepted: {counts['failed']} failed, {counts['passed']} of {repo.test_count} passed."
        self.score = 1.0 if self.success else 0.0
        self.terminated = True
        self._status = "The episode is over."
        return verdict

    # ---- oracle ----

    def _current(self, path: str) -> str | None:
        """The text of ``path`` in the work dir now, or ``None`` if it is not a readable regular file."""
        assert self.sandbox is not None
        try:
            data = _read_regular(self.sandbox.path(path))
        except (SandboxError, OSError, ValueError):
            return None
        return None if data is None else data.decode("utf-8", "replace")

    def _files_digest(self) -> str:
        assert self.repo is not None
        digest = hashlib.sha256()
        for path in sorted(self.repo.files):
            digest.update(f"{path}\0{self._current(path)}\0".encode("utf-8", "replace"))
        return digest.hexdigest()

    def oracle_action(self) -> str:
        """Undo the mutation (or rewrite whatever differs from the correct repository), run the tests, submit."""
        if self.repo is None or self.sandbox is None:
            return "submit"
        repo = self.repo
        paths = [repo.mutated_path] + sorted(path for path in repo.files if path != repo.mutated_path)
        for path in paths:
            current = self._current(path)
            if current == repo.files[path]:
                continue
            if path == repo.mutated_path and current == repo.mutated_source:
                old, new = repo.fix_old, repo.fix_new
                fence = _fence_for(old + new)
                return f"Action: replace {path}\n{fence}\n{old}\n{fence}\n{fence}\n{new}\n{fence}"
            content = repo.files[path]
            fence = _fence_for(content)
            return f"Action: write {path}\n{fence}\n{content.removesuffix(chr(10))}\n{fence}"
        if self._last_run is None or self._last_run[0] != self._files_digest():
            return "Action: run_tests"
        return "Action: submit"

    def random_action(self, rng: random.Random) -> str:
        """A look around: ls, cat of a repository file, a search, or a test run (the "random" baseline)."""
        if self.repo is None:
            return "ls"
        files = sorted(self.repo.files)
        choice = rng.randrange(5)
        if choice == 0:
            return rng.choice(("ls", "ls tests", f"ls {self.repo.package}"))
        if choice == 1:
            return "run_tests"
        if choice == 2:
            return f"search {rng.choice(('def ', 'return', 'import', 'assert'))}"
        return f"cat {rng.choice(files)}"

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None
        super().close()


def _first_line_of(repo: Repo) -> str:
    domain = next(domain for domain in DOMAINS if domain.name == repo.domain)
    return domain.description
