"""Shared fixtures."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from processes import alive
from ray_cluster import RAY_NODE, RAY_TEST_MODULES, ray_processes, start_ray_node

#: One thread for each pytest worker's math libraries (torch's OpenMP pool), as ``-n 2`` gives each worker one of two
#: cores. A pool sized for the machine spins for cores that the other worker and the browsers hold: a tiny model's
#: GRPO test took 118 s instead of 24 beside two busy processes. Every process a test starts inherits it; a value
#: set by the user is kept.
for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a tiny random chat model and tokenizer (see ``tests/tiny_model.py``)."""
    pytest.importorskip("transformers")
    from tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-llama")


@pytest.fixture(scope="session")
def tiny_model_with_long_context_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with a 2,048-token context: room for whole agent episodes."""
    pytest.importorskip("transformers")
    from tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-llama-2k", context_length=2048)


@pytest.fixture(scope="session")
def tiny_tool_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with a Qwen2.5-style chat template that renders tools and tool calls, 4,096-token context."""
    pytest.importorskip("transformers")
    from tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-tools", context_length=4096, tools=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """The headless Chromium agentgym's browser envs launch, driven by Playwright with their flags (Playwright's own
    browser download does not work offline)."""
    from agentgym.browser.page import CHROMIUM, LAUNCH_ARGS  # here: numpy after the thread settings above

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium-headless-shell)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is missing (pip install playwright)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def alfworld_games(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny set of genuine ALFWorld-format games (the real ones cannot be downloaded here), written once."""
    from agentgym.environments.alfworld.tiny import write_tiny_games

    return write_tiny_games(tmp_path_factory.mktemp("alfworld"))


@pytest.fixture
def alfworld_data(alfworld_games: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$ALFWORLD_DATA`` set to the tiny games for one test, so that ``gym.make("ALFWorld-v0")`` finds them.

    Requested by the tests that make every registered id (``@pytest.mark.usefixtures("alfworld_data")``).
    """
    monkeypatch.setenv("ALFWORLD_DATA", str(alfworld_games))
    return alfworld_games


@pytest.fixture(scope="session")
def cluster() -> Iterator[Any]:
    """One local Ray cluster for the test run (a head and a worker node, 1 CPU each), this process the driver.

    Session-scoped, and every test that uses it runs on one pytest worker (:func:`pytest_xdist_make_scheduler`),
    so it is started once; starts are retried (:func:`start_ray_node`). The teardown checks that
    every Ray process it started is gone.
    """
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    def start() -> Any:
        cluster = Cluster(initialize_head=True, head_node_args={**RAY_NODE, "include_dashboard": False})
        try:
            cluster.add_node(**RAY_NODE)
            ray.init(address=cluster.address, log_to_driver=False)
            cluster.wait_for_nodes()
        except Exception:
            ray.shutdown()
            cluster.shutdown()
            raise
        return cluster

    cluster = start_ray_node(start, "the head and worker nodes")
    try:
        yield cluster
    finally:
        started = ray_processes()
        ray.shutdown()
        cluster.shutdown()
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in started) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in started if alive(pid)], "Ray processes outlived the cluster"


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n N``'s default distribution (tests handed out one by one, in collection order), except that the
    tests of :data:`RAY_TEST_MODULES` are one unit of work, given to one worker where the first of them is
    collected, so that a single local Ray cluster is started for the run. Not first, as xdist would place the
    largest unit: a new machine's first minutes share the CPUs with the background builds (docs/testing.md)."""
    if config.getvalue("dist") != "load":
        return None  # the user chose a distribution with --dist
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # the units in collection order

    class OneWorkerForRay(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "ray" if nodeid.split("::", 1)[0] in RAY_TEST_MODULES else nodeid

    return OneWorkerForRay(config, log)


#: A single test (its setup, call and teardown together) that takes longer than this many seconds is
#: named in a warning section at the end of the run (AGENTGYM_TEST_BUDGET_S overrides): the suite's time
#: is a budget (docs/testing.md), and a slow newcomer should be noticed when it lands, not later.
TEST_BUDGET_S = float(os.environ.get("AGENTGYM_TEST_BUDGET_S", "60"))
_test_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _test_seconds[report.nodeid] = _test_seconds.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: Any) -> None:
    over = sorted(((s, nodeid) for nodeid, s in _test_seconds.items() if s > TEST_BUDGET_S), reverse=True)
    if over:
        terminalreporter.section(f"tests over the {TEST_BUDGET_S:g} s budget per test", sep="-", yellow=True)
        for seconds, nodeid in over:
            terminalreporter.line(f"{seconds:8.1f} s  {nodeid}")


def pytest_report_header() -> str:
    from episodes import rotation, sample_everything

    if sample_everything():
        return "agentgym sampling: none (AGENTGYM_TEST_SAMPLE=all: every id, template and split)"
    return f"agentgym sampling: rotation {rotation()} (AGENTGYM_TEST_ROTATION={rotation()} replays this run's sample)"


#: What a new machine builds once and caches, minutes of work (a grounding source's screenshots: MiniWoB++'s are
#: about 1,800 pages loaded; the web apps' five sites, installed from PyPI, seeded and started), prepared by
#: background processes from the session's start (``agentgym prepare``), so that it overlaps the tests instead of
#: stalling the first test that needs it; such a test meanwhile waits on the family's own lock. Output:
#: ``$AGENTGYM_CACHE/tests-prepare-<name>.log``.
_background_prepare: list[subprocess.Popen] = []
#: The nice value of the ``data`` preparation: it and its browsers take the CPU time the workers leave idle, and a
#: worker that waits for them leaves them its core.
BACKGROUND_NICENESS = 10
#: Set for the processes a test session starts: a pytest session among them is nested in this one.
NESTED_SESSION = "AGENTGYM_TESTS_SESSION"


def background_prepares(whole_suite: bool) -> dict[str, tuple[int, list[str]]]:
    """The session's background preparations, one process each: name -> (nice value, the ids it prepares in turn).

    ``data``, at :data:`BACKGROUND_NICENESS`: the search world and the shop's catalog index (seconds of CPU each,
    which the contract checks early in the run need), then every screenshot of the run's grounding source, in turn
    (tests/episodes.py). ``installs``, a run of the whole suite only, at the normal priority, since the sites'
    servers it starts serve every worker: the five web apps (``WebApps-v0``: installed, seeded and started), then
    the SWE repositories' venvs (``SWE-v0``'s 28), installs from PyPI that mostly wait on downloads."""
    from episodes import grounding_sources_in_full

    grounding = [f"Grounding-{source}-v0" for source in grounding_sources_in_full()]
    prepares = {"data": (BACKGROUND_NICENESS, ["Search-v0", "WebShop-v0", *grounding])}
    if whole_suite:
        prepares["installs"] = (0, ["WebApps-v0", "SWE-v0"])
    return prepares


def pytest_sessionstart(session: pytest.Session) -> None:
    from images import CACHE, CORE_BUILD

    # The controller (or a run without xdist) starts the background processes; a session that a test runs inside
    # this one (the side venvs' cases: tests/test_verl.py, ...) inherits NESTED_SESSION and starts none, so the
    # outer session's processes and their logs are the only ones.
    if not hasattr(session.config, "workerinput") and NESTED_SESSION not in os.environ:
        os.environ[NESTED_SESSION] = "1"
        CACHE.mkdir(parents=True, exist_ok=True)
        whole_suite = session.config.args_source == pytest.Config.ArgsSource.TESTPATHS
        for name, (niceness, env_ids) in background_prepares(whole_suite).items():
            command = [sys.executable, "-m", "agentgym.cli", "prepare", *(f"--env={env_id}" for env_id in env_ids)]
            if niceness and shutil.which("nice"):
                command = ["nice", "-n", str(niceness), *command]
            with (CACHE / f"tests-prepare-{name}.log").open("w") as log:
                _background_prepare.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT))
    # The docker tests decide at collection whether agentgym/core exists: wait for its background build
    # (setup-host.sh --background-images) to end first; test_docker_backend.py fails with its log if it failed.
    CORE_BUILD.problem()


def pytest_sessionfinish(session: pytest.Session) -> None:
    for process in _background_prepare:
        if process.poll() is None:  # the run ended first (-x, a selection): the cache is kept as far as built
            process.terminate()
            process.wait(timeout=60)
