"""The runner's records with their timing fields removed: what a run writes that does not depend on the clock.

``tests/test_runner_golden.py`` plays :data:`CASES` and compares the result with the files in
``tests/data/runner_golden/`` (written by the runner before its per-step fast paths); regenerate
them only for an intended change of what is recorded::

    python tests/runner_golden.py --write
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies import OraclePolicy, RandomPolicy

GOLDEN = Path(__file__).parent / "data" / "runner_golden"
#: Record fields that hold times (the episode's and each turn's).
TIMED = ("started", "wall_s")
TIMED_TURN = ("policy_s", "env_s")
#: A tool-call id as :func:`agentgym.contract.tool_parsing.new_call_id` makes it (random).
CALL_ID = re.compile(r"chatcmpl-tool-[0-9a-f]+")
#: name -> (policy, env id, episodes, action format, history window)
CASES: dict[str, tuple[str, str, int, str, int | None]] = {
    "oracle-frozenlake": ("oracle", "FrozenLake-v0", 12, "text", None),
    "oracle-maze": ("oracle", "Maze-v0", 2, "text", None),
    "oracle-frozenlake-tools": ("oracle", "FrozenLake-v0", 8, "tools", None),
    "oracle-sokoban-window": ("oracle", "Sokoban-v0", 6, "text", 2),
    "random-frozenlake": ("random", "FrozenLake-v0", 12, "text", None),
}


def without_times(line: str) -> dict[str, Any]:
    """One ``episodes.jsonl`` record without the fields that hold times, its random tool-call ids numbered."""
    ids: dict[str, str] = {}
    line = CALL_ID.sub(lambda match: ids.setdefault(match.group(), f"call-{len(ids)}"), line)
    record = json.loads(line)
    for key in TIMED:
        record.pop(key, None)
    for turn in record["turns"]:
        for key in TIMED_TURN:
            turn.pop(key, None)
    return record


def play_case(name: str) -> list[dict[str, Any]]:
    """The case's records (timing fields removed), in key order."""
    policy_name, env_id, episodes, action_format, window = CASES[name]
    policy = OraclePolicy() if policy_name == "oracle" else RandomPolicy()
    with tempfile.TemporaryDirectory() as out:
        asyncio.run(
            run_eval(
                policy_name,
                policy,
                [EvalItem(env_id, episodes, split="dev")],
                out,
                concurrency=4,
                action_format=action_format,  # type: ignore[arg-type]
                history_window=window,
            )
        )
        lines = (Path(out) / "episodes.jsonl").read_text().splitlines()
    return sorted((without_times(line) for line in lines), key=lambda record: record["key"])


def golden_text(records: list[dict[str, Any]]) -> str:
    """The golden file's text: one record per line, keys sorted."""
    return "".join(json.dumps(record, sort_keys=True) + "\n" for record in records)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        (GOLDEN / f"{case}.jsonl").write_text(golden_text(play_case(case)))
