"""A first run with nothing errored (issue 32): envs are prepared before episodes, infrastructure
failures are retried and recorded (never scored as the policy's), families keep to their
concurrency limits in the runner and the server, and the leaderboard says why it ranks a policy apart.

The slow preparation is simulated (a sleep standing in for a site install); the page that does not
answer is a real HTTP server on loopback that stalls its first requests.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import agentgym
from agentgym.contract.core import INFRA_ERROR_KEY, InfrastructureError, InvalidAction, TaskSplits, TextEnv
from agentgym.contract.registry import parse_limits
from agentgym.evaluation.leaderboard import collect, format_terminal
from agentgym.evaluation.leaderboard.terminal import apart_reason
from agentgym.evaluation.preparation import family_limits, interleave, prepare_items
from agentgym.evaluation.records import EpisodeRecord, episode_from_json, to_json
from agentgym.evaluation.results import EPISODES_FILE, read_episodes
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies import OraclePolicy
from agentgym.llm.policies.base import Episode, Message, Policy, Reply

# ---- a family whose first use installs something slow ------------------------------------------

#: Seconds the simulated install takes: longer than the episodes' env timeout below.
INSTALL_S = 1.5
ENV_TIMEOUT_S = 0.5
_installed: dict[str, float] = {}
_install_lock = threading.Lock()


def install(reason: str) -> None:
    """The family's slow one-time setup (a site install stand-in); idempotent and thread-safe."""
    with _install_lock:
        if "done" not in _installed:
            time.sleep(INSTALL_S)
            _installed["done"] = time.time()
            _installed[reason] = _installed.get(reason, 0) + 1


def prepare_slow(env_id: str, kwargs: dict[str, Any], report: Any) -> None:
    """The registered preparation hook of family ``slowprep``."""
    report("installing the site (simulated) ...")
    install("prepare")
    report("installed")


class SayGoEnv(TextEnv):
    """Say 'go' twice to win. ``SlowFirstEnv`` installs on first use, like a self-hosted site."""

    splits = TaskSplits(train=10, dev=2, test=10)

    @property
    def action_syntax(self) -> str:
        return "Say 'go'."

    def _generate(self, task_id: int) -> str:
        self.left = 2
        return f"Task {task_id}: say go twice."

    def _describe(self) -> str:
        return f"{self.left} to go."

    def _execute(self, command: str) -> str:
        if command != "go":
            raise InvalidAction("say go")
        self.left -= 1
        self.score = (2 - self.left) / 2
        self.terminated = self.success = self.left == 0
        return "Going."

    def oracle_action(self) -> str:
        return "go"


class SlowFirstEnv(SayGoEnv):
    def _generate(self, task_id: int) -> str:
        install("first episode")  # what the site did before: install inside the first env call
        return super()._generate(task_id)


# ---- a family whose "site" is a real HTTP server that stalls -----------------------------------


class StallingSite:
    """A loopback HTTP server that answers ``GET /`` with ``ok`` after stalling its first ``stalls`` requests."""

    def __init__(self) -> None:
        self.stalls = 0
        self.requests = 0
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                site.requests += 1
                if site.requests <= site.stalls:
                    time.sleep(1.0)  # longer than the env's page timeout: "the page did not answer"
                body = b"ok"
                try:
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # the client gave up
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


SITE: StallingSite | None = None


class PageEnv(SayGoEnv):
    """Each 'go' loads the site's page; a page that does not answer within 0.3 s ends the episode
    with ``info["infra_error"]`` (as the browser env does)."""

    def _execute(self, command: str) -> str:
        assert SITE is not None
        try:
            httpx.get(SITE.url, timeout=0.3)
        except httpx.TimeoutException:
            self.terminated, self.success = True, False
            self.failure = "the page did not answer within 0.3 s"
            return "The page did not answer; the episode is over."
        return super()._execute(command)

    def _generate(self, task_id: int) -> str:
        self.failure: str | None = None
        return super()._generate(task_id)

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super()._info(command, invalid)
        if self.failure:
            info[INFRA_ERROR_KEY] = self.failure
        return info


class RaisingEnv(SayGoEnv):
    """Raises :class:`InfrastructureError` (a dead engine) on the first episodes it is made for."""

    failures_left = 0

    def _generate(self, task_id: int) -> str:
        if RaisingEnv.failures_left > 0:
            RaisingEnv.failures_left -= 1
            raise InfrastructureError("the engine's container died")
        return super()._generate(task_id)


class CappedEnv(SayGoEnv):
    """A family that holds two copies at once."""


class FreeEnv(SayGoEnv):
    """A family without a limit."""


ENVS = {
    "SlowPrep-v0": (SlowFirstEnv, "slowprep", {"prepare": f"{__name__}:prepare_slow"}),
    "StallingPage-v0": (PageEnv, "stallingpage", {}),
    "DeadEngine-v0": (RaisingEnv, "deadengine", {}),
    "Capped-v0": (CappedEnv, "capped", {"max_concurrency": 2}),
    "Free-v0": (FreeEnv, "free", {}),
}


@pytest.fixture(scope="module", autouse=True)
def registered_envs() -> Iterator[None]:
    global SITE
    SITE = StallingSite()
    for env_id, (env_class, family, extra) in ENVS.items():
        agentgym.register(
            env_id,
            entry_point=f"{__name__}:{env_class.__name__}",
            family=family,
            description="first-run test env",
            splits=env_class.splits,
            max_episode_steps=6,
            **extra,
        )
    yield
    for env_id in ENVS:
        agentgym.contract.registry.unregister(env_id)
    SITE.close()


def evaluate(policy: Policy, items: list[EvalItem], out: Path, **options: Any):
    return asyncio.run(run_eval(policy.name, policy, items, out, **options))


# ---- preparation ---------------------------------------------------------------------------------


def test_slow_first_preparation_runs_before_episodes_and_errors_none(tmp_path: Path) -> None:
    _installed.clear()
    lines: list[str] = []
    stats = evaluate(
        OraclePolicy(),
        [EvalItem("SlowPrep-v0", 4)],
        tmp_path,
        concurrency=4,
        env_timeout_s=ENV_TIMEOUT_S,  # shorter than the install: inside an episode it would time out
        on_prepare=lines.append,
    )
    assert stats.errored == 0 and stats.played == 4
    episodes = read_episodes(tmp_path).values()
    assert all(record.status == "ok" and record.success and not record.retries for record in episodes)
    assert _installed.get("prepare") == 1 and "first episode" not in _installed  # installed once, up front
    assert lines[0] == "preparing SlowPrep-v0 ..."
    assert "  SlowPrep-v0: installing the site (simulated) ..." in lines
    assert lines[-1].startswith("SlowPrep-v0 ready in ")
    assert max(record.wall_s for record in episodes) < INSTALL_S  # the install is no episode's time


def test_prepare_items_once_per_env_and_only_where_the_env_runs_here() -> None:
    _installed.clear()
    lines: list[str] = []
    items = [EvalItem("SlowPrep-v0", 1), EvalItem("SlowPrep-v0", 2, split="dev"), EvalItem("Capped-v0", 1)]
    assert prepare_items(items, None, lines.append) == {"SlowPrep-v0": None, "Capped-v0": None}
    assert sum(line.startswith("preparing") for line in lines) == 1
    assert prepare_items([EvalItem("SlowPrep-v0", 1)], "docker", lines.append) == {"SlowPrep-v0": None}
    assert sum(line.startswith("preparing") for line in lines) == 1  # a container prepares itself


def test_agentgym_prepare_command_prepares_a_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentgym.cli import main

    _installed.clear()
    assert main(["prepare", "--env", "SlowPrep-v0", "--env", "Free-v0"]) == 0
    out = capsys.readouterr().out
    assert "preparing SlowPrep-v0 ..." in out and "2 of 2 envs ready" in out
    assert _installed.get("prepare") == 1


# ---- infrastructure failures -----------------------------------------------------------------------


def test_a_page_that_does_not_answer_is_retried_and_recorded_never_scored(tmp_path: Path) -> None:
    assert SITE is not None
    SITE.requests, SITE.stalls = 0, 2  # the first two page loads stall
    stats = evaluate(OraclePolicy(), [EvalItem("StallingPage-v0", 1)], tmp_path, concurrency=1, infra_retries=2)
    (record,) = read_episodes(tmp_path).values()
    assert stats.errored == 0
    assert record.status == "ok" and record.success and record.score == 1.0
    assert record.retries == ["the env's infrastructure failed: the page did not answer within 0.3 s"] * 2
    line = json.loads((tmp_path / EPISODES_FILE).read_text().splitlines()[0])
    assert line["retries"] == record.retries  # written into episodes.jsonl


def test_a_persistent_infrastructure_failure_errors_the_episode_not_the_policy(tmp_path: Path) -> None:
    assert SITE is not None
    SITE.requests, SITE.stalls = 0, 1_000
    evaluate(OraclePolicy(), [EvalItem("StallingPage-v0", 1)], tmp_path, concurrency=1, infra_retries=1)
    (record,) = read_episodes(tmp_path).values()
    assert record.status == "error" and "did not answer" in (record.error or "")
    assert len(record.retries) == 1
    board = collect([tmp_path])
    (row,) = board.rows
    assert row.errored == 1 and row.episodes == 0 and row.success_rate is None  # no failure counted
    SITE.stalls = 0


def test_an_env_raising_infrastructure_error_is_retried(tmp_path: Path) -> None:
    RaisingEnv.failures_left = 1
    stats = evaluate(OraclePolicy(), [EvalItem("DeadEngine-v0", 2)], tmp_path, concurrency=1)
    episodes = list(read_episodes(tmp_path).values())
    assert stats.errored == 0 and all(record.success for record in episodes)
    (retried,) = [record for record in episodes if record.retries]
    assert retried.retries == ["env raised InfrastructureError: the engine's container died"]


def test_records_keep_retries_and_old_records_read_without_them() -> None:
    record = EpisodeRecord(key="k", env="E-v0", retries=["a page timed out"])
    assert episode_from_json(to_json(record)).retries == ["a page timed out"]
    assert "retries" not in to_json(EpisodeRecord(key="k", env="E-v0"))
    assert episode_from_json({"key": "k", "env": "E-v0"}).retries == []


# ---- per-family concurrency ----------------------------------------------------------------------


class CountingPolicy(Policy):
    """The oracle, slowed down, counting the episodes of each env in flight at once."""

    name = "counting"

    def __init__(self) -> None:
        self.now: dict[str, set[str]] = {}
        self.most: dict[str, int] = {}

    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        env_id = type(episode.env).__name__
        active = self.now.setdefault(env_id, set())
        active.add(episode.key)
        self.most[env_id] = max(self.most.get(env_id, 0), len(active))
        await asyncio.sleep(0.1)
        if episode.env.left == 1:  # the last step: this episode leaves
            active.discard(episode.key)
        return Reply("Action: go")


def test_a_family_limit_holds_at_default_concurrency_and_the_user_can_override_it(tmp_path: Path) -> None:
    items = [EvalItem("Capped-v0", 8), EvalItem("Free-v0", 8)]
    policy = CountingPolicy()
    stats = evaluate(policy, items, tmp_path / "default", concurrency=64)
    assert stats.errored == 0
    assert policy.most["CappedEnv"] == 2  # the family's max_concurrency, whatever --concurrency says
    assert policy.most["FreeEnv"] == 8  # other families are not held up
    policy = CountingPolicy()
    evaluate(policy, items, tmp_path / "override", concurrency=64, family_concurrency={"capped": 4})
    assert policy.most["CappedEnv"] == 4


def test_limits_parse_resolve_and_interleave() -> None:
    assert parse_limits(["capped=4", "Free-v0=1"]) == {"capped": 4, "Free-v0": 1}
    with pytest.raises(ValueError, match="FAMILY=N"):
        parse_limits(["capped"])
    assert family_limits(["Capped-v0", "Free-v0"]) == {"capped": 2}
    assert family_limits(["Capped-v0", "Free-v0"], {"Free-v0": 3}) == {"capped": 2, "Free-v0": 3}
    assert agentgym.env_info("WebApps-v0").max_concurrency >= 2
    assert interleave(["a1", "a2", "a3", "b1"], key=lambda name: name[0]) == ["a1", "b1", "a2", "a3"]


def test_the_server_holds_a_family_to_its_limit() -> None:
    from fastapi.testclient import TestClient

    from agentgym.serving.server import create_app

    for overrides, allowed in (({}, 2), ({"capped": 3}, 3)):
        with TestClient(create_app(["Capped-v0", "Free-v0"], family_concurrency=overrides)) as client:
            codes = [client.post("/sessions", json={"env_id": "Capped-v0"}).status_code for _ in range(allowed + 1)]
            assert codes == [201] * allowed + [429]
            refused = client.post("/sessions", json={"env_id": "Capped-v0"}).json()
            assert "max_concurrency" in json.dumps(refused)
            assert client.post("/sessions", json={"env_id": "Free-v0"}).status_code == 201


# ---- the ranking says why --------------------------------------------------------------------------


def test_a_policy_ranked_apart_says_why_on_its_line(tmp_path: Path) -> None:
    assert SITE is not None
    SITE.requests, SITE.stalls = 0, 1_000
    items = [EvalItem("StallingPage-v0", 2), EvalItem("Free-v0", 2)]
    evaluate(OraclePolicy(), items, tmp_path / "oracle", infra_retries=0)
    SITE.stalls = 0

    class Second(OraclePolicy):
        name = "second"

    evaluate(Second(), items, tmp_path / "second", infra_retries=0)
    board = collect([tmp_path])
    oracle = next(summary for summary in board.policies if summary.policy == "oracle")
    assert oracle.group == 1
    reason = apart_reason(board, oracle)
    assert reason == "no ok episode on StallingPage-v0; 2 errored there (agentgym eval --retry-errors replays them)"
    text = format_terminal(board)
    line = next(line for line in text.splitlines() if line.split()[1:2] == ["oracle"] and "%" in line)
    assert "no ok episode on StallingPage-v0" in line


def test_on_ray_the_limit_holds_per_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """``has_room`` on a two-node cluster (its topology simulated: one machine cannot hold two Ray nodes
    here): plenty of CPU and memory, but a node that holds two Capped actors has no room for a third."""
    from agentgym.serving.backends import ray as ray_backend

    nodes = [{"NodeID": name, "Alive": True, "Resources": {"CPU": 16.0, "memory": 64.0 * 2**30}} for name in "ab"]
    monkeypatch.setattr(ray_backend.ray, "nodes", lambda: nodes)
    two_on_a = [("a", "Capped-v0", {}), ("a", "Capped-v0", {})]
    assert ray_backend.has_room(two_on_a, "Capped-v0", {})  # node b has room
    full = [*two_on_a, ("b", "Capped-v0", {}), ("b", "Capped-v0", {})]
    assert not ray_backend.has_room(full, "Capped-v0", {})
    assert ray_backend.has_room(full, "Free-v0", {})  # other families are not held up
    assert ray_backend.has_room(full, "Capped-v0", {}, {"capped": 3})  # the user's override


def test_waiting_for_a_family_slot_is_not_episode_time(tmp_path: Path) -> None:
    policy = CountingPolicy()  # 0.1 s per reply, 2 replies: ~0.2 s an episode, 4 episodes queue for 2 slots
    evaluate(policy, [EvalItem("Capped-v0", 8)], tmp_path, concurrency=64)
    assert max(record.wall_s for record in read_episodes(tmp_path).values()) < 0.6
