"""WebApps-v0's oracle under `agentgym eval` at the default concurrency (64) succeeds on every episode
(issue 32): the sites are prepared before the first episode, outside its timeout, and the family's
``max_concurrency`` keeps the copies in flight to what the machine holds.

On the real sites (installed, seeded and started on first use: tests/test_webapps.py, which runs
before this file, has usually paid for that).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentgym.contract.registry import env_info
from agentgym.evaluation.results import read_episodes
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies import OraclePolicy

EPISODES = 6


def test_the_oracle_at_default_concurrency_succeeds_on_every_episode(tmp_path: Path) -> None:
    lines: list[str] = []
    stats = asyncio.run(
        run_eval("oracle", OraclePolicy(), [EvalItem("WebApps-v0", EPISODES)], tmp_path, on_prepare=lines.append)
    )
    episodes = list(read_episodes(tmp_path).values())
    failed = [(record.key, record.error, record.retries) for record in episodes if not record.success]
    print("retried:", [(record.key, record.retries) for record in episodes if record.retries])
    assert stats.played == EPISODES and stats.errored == 0 and not failed, failed
    assert lines[0] == "preparing WebApps-v0 ..." and lines[-1].startswith("WebApps-v0 ready in ")
    assert env_info("WebApps-v0").max_concurrency is not None  # what kept 64 from overloading the sites
