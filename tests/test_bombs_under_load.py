"""Each resource bomb, in the shell family and in the Python interpreter, played while other sessions play.

The same code path as ``benchmarks/bombs_under_load.py``, small: 16 background sessions on a real
``agentgym serve`` process and every bomb once in ``Bash-v0`` and once in ``Math-Python-v0``, with short
limits so that the loops end in seconds.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from agentgym.sandbox import available
from agentgym.serving.backends.process import ServerProcess
from benchmarks.bombs_under_load import BACKGROUND_ID, BOMBED_IDS, BOMBS, SANDBOX_ID, bombs_under_load

pytestmark = pytest.mark.skipif(available("bwrap") is not None, reason=f"bwrap: {available('bwrap')}")

BACKGROUND = {BACKGROUND_ID: 14, SANDBOX_ID: 2}
#: The ids' own limits, but seconds instead of ten for wall and CPU time, and smaller memory and disk quota.
SHORT = {"wall_s": 2.5, "cpu_s": 2.0, "memory_mb": 256, "disk_mb": 128, "run_memory_mb": 512}
KWARGS = {
    "Bash-v0": {"limits": {**SHORT, "processes": 128, "output_bytes": 1_000_000}},
    "Math-Python-v0": {"interpreter_limits": {**SHORT, "processes": 16, "file_size_mb": 16, "output_bytes": 8000}},
}
#: Each background session's pause between its steps (seconds).
THINK_S = 0.5


def test_each_bomb_contained_while_other_sessions_play() -> None:
    server = ServerProcess(sorted({*BACKGROUND, *BOMBED_IDS}), max_sessions=64, session_ttl_s=600)
    try:
        run = asyncio.run(
            bombs_under_load(
                server.url,
                server.pid,
                BACKGROUND,
                BOMBS,
                window_s=1.0,
                think_s=THINK_S,
                warmup_s=3.0,
                bomb_kwargs=KWARGS,
            )
        )
        assert httpx.get(f"{server.url}/health").status_code == 200
        assert server.process.poll() is None
    finally:
        server.stop()
    outcomes = {(outcome["env_id"], outcome["bomb"]): outcome for outcome in run["outcomes"]}
    assert set(outcomes) == {(env_id, bomb.name) for env_id in BOMBED_IDS for bomb in BOMBS[env_id]}
    for (env_id, bomb), outcome in outcomes.items():
        # The offending step ends, its observation saying which limit stopped it; the episode goes on.
        assert outcome["says_what_happened"], (env_id, bomb, outcome["observation"][-500:])
        assert not outcome["terminated"] and outcome["bomb_step_s"] < 8, (env_id, bomb, outcome["bomb_step_s"])
        assert outcome["next_observation"] and "died" not in outcome["next_observation"], outcome["next_observation"]
        # The others kept playing, without an error, before, during and after. A bomb stopped in less than
        # two think times (the output flood: 0.1 s) may end before any of the 14 sessions' next step does
        # (in CI once), so steps during it are counted only for a bomb that lasted that long.
        for name in ("before", "during", "after"):
            assert outcome["windows"][name]["errors"] == [], (env_id, bomb, name, outcome["windows"][name])
            if name != "during" or outcome["bomb_step_s"] >= 2 * THINK_S:
                steps = outcome["windows"][name][BACKGROUND_ID]["steps"]
                assert steps > 0, (env_id, bomb, name, outcome["windows"][name])
        # The server still answers, and serves a new session of the bombed id.
        assert outcome["health_s"] is not None and outcome["health_s"] < 5, outcome["health_s"]
        assert outcome["new_session_ok"], (env_id, bomb)
    assert run["all_errors"] == []
    assert run["whole_run"][SANDBOX_ID]["steps"] > 0
    # The server's tree (its sandboxes included) never held more than the bombs' own limits allow, and then some.
    assert run["server_tree_peak_rss_mib"] < 2048, run["server_tree_peak_rss_mib"]
    # A cell that floods its output gets its traceback after the output, and the interpreter lives on.
    flood = outcomes["Math-Python-v0", "output flood"]
    assert "[the cell's output stopped after" in flood["observation"] and "OSError" in flood["observation"]
    assert "fresh cell" in flood["next_observation"]
