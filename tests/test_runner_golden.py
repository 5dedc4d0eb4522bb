"""The runner records what it recorded before its per-step fast paths: the same episodes and turns.

The golden files (``tests/data/runner_golden/``) were written by the runner before the fast
paths (:mod:`tests.runner_golden`); every field that does not hold a time must match byte for byte.
"""

from __future__ import annotations

import pytest
from runner_golden import CASES, GOLDEN, golden_text, play_case


@pytest.mark.parametrize("case", sorted(CASES))
def test_records_match_the_golden_run(case: str) -> None:
    expected = (GOLDEN / f"{case}.jsonl").read_text()
    assert expected.count("\n") == CASES[case][2]
    assert golden_text(play_case(case)) == expected
