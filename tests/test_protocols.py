"""Published protocols as suites, their reference numbers on the leaderboard, metric definitions, and rescore.

The protocol suites are checked against their sources' lists and rules (BrowserGym's 125 MiniWoB task
names and its seed draw, WebShop's 500 test goals, ALFWorld's valid_seen games, AgentEval's sizes, RAGEN's
settings), and every published number belongs to a protocol's env and metric; ``agentgym rescore`` replays a
real run of fast families (a quick-suite-like run) and must reproduce every record, then flag a record edited
by hand.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy
import pytest
from browsers import needs_chromium
from leaderboard_runs import episode, write_folder

import agentgym
from agentgym import cli
from agentgym.contract.registry import env_info
from agentgym.evaluation.leaderboard import collect, format_terminal, write_html
from agentgym.evaluation.leaderboard.published import published_results
from agentgym.evaluation.metrics import env_metrics, metric_definitions
from agentgym.evaluation.plan import plan
from agentgym.evaluation.rescore import format_report, rescore
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.evaluation.suites import load_suite, parse_suite, suite_names
from agentgym.llm.policies import make_policy

#: BrowserGym's MiniWoB benchmark tasks: the task_name column of
#: browsergym/experiments/src/browsergym/experiments/benchmark/metadata/miniwob.csv (ServiceNow/BrowserGym
#: 9e779f08), in file order, without the "miniwob." prefix.
BROWSERGYM_MINIWOB_CSV = """
ascending-numbers bisect-angle book-flight book-flight-nodelay buy-ticket choose-date choose-date-easy
choose-date-medium choose-date-nodelay choose-list circle-center click-button click-button-sequence
click-checkboxes click-checkboxes-large click-checkboxes-soft click-checkboxes-transfer click-collapsible
click-collapsible-2 click-collapsible-2-nodelay click-collapsible-nodelay click-color click-dialog
click-dialog-2 click-link click-menu click-menu-2 click-option click-pie click-pie-nodelay click-scroll-list
click-shades click-shape click-tab click-tab-2 click-tab-2-easy click-tab-2-hard click-tab-2-medium
click-test click-test-2 click-test-transfer click-widget copy-paste copy-paste-2 count-shape count-sides
daily-calendar drag-box drag-circle drag-cube drag-items drag-items-grid drag-shapes drag-shapes-2
drag-single-shape drag-sort-numbers draw-circle draw-line email-inbox email-inbox-delete email-inbox-forward
email-inbox-forward-nl email-inbox-forward-nl-turk email-inbox-important email-inbox-nl-turk
email-inbox-noscroll email-inbox-reply email-inbox-star-reply enter-date enter-password enter-text
enter-text-2 enter-text-dynamic enter-time find-greatest find-midpoint find-word focus-text focus-text-2
form-sequence form-sequence-2 form-sequence-3 generate-number grid-coordinate guess-number highlight-text
highlight-text-2 hot-cold identify-shape login-user login-user-popup multi-layouts multi-orderings
navigate-tree number-checkboxes odd-or-even order-food phone-book read-table read-table-2 resize-textarea
right-angle scroll-text scroll-text-2 search-engine sign-agreement simple-algebra simple-arithmetic
social-media social-media-all social-media-some stock-market terminal text-editor text-transform tic-tac-toe
unicode-test use-autocomplete use-autocomplete-nodelay use-colorwheel use-colorwheel-2 use-slider
use-slider-2 use-spinner visual-addition
"""
BROWSERGYM_MINIWOB = BROWSERGYM_MINIWOB_CSV.split()
ROOT = Path(__file__).resolve().parents[1]
#: Each family's docs page (a family added later adds its page here).
FAMILY_PAGES = {
    family: f"envs/{family}.md"
    for family in (
        "alfworld",
        "babyai",
        "code",
        "desktop",
        "frozenlake",
        "grounding",
        "household",
        "maze",
        "miniwob",
        "multiagent",
        "scienceworld",
        "sokoban",
        "textcraft",
        "textworld",
        "wordle",
    )
} | {"search": "search.md", "webapps": "webapps.md", "webshop": "webshop.md"}
PROTOCOL_SUITES = ("agentgym-rl", "browsergym-miniwob", "ragen", "verl-agent-gigpo")
#: Fast deterministic families of the quick suite: what the rescore test runs and replays.
QUICK_LIKE = ("Sokoban-v0", "Maze-Partial-v0", "TextCraft-v0", "BabyAI-Text-GoTo-v0", "Household-v0")
#: Games against scripted opponents. Their oracle once drew from the opponent's random stream, so consulting it
#: changed the opponent's later moves and oracle-played episodes did not replay (rescore found it); it has its own now.
GAMES = ("TicTacToe-vs-Random-v0", "KuhnPoker-vs-Random-v0")


def by_env(suite_name: str) -> dict[str, EvalItem]:
    return {item.label: item for item in load_suite(suite_name).items}


def test_every_protocol_suite_loads_and_states_its_source() -> None:
    assert set(PROTOCOL_SUITES) <= set(suite_names())
    for name in PROTOCOL_SUITES:
        suite = load_suite(name)
        assert suite.protocol is not None and suite.protocol["differences"] and suite.protocol["metrics"]
        assert suite.protocol["source"]["repository"] and suite.protocol["citation"]
        assert plan(suite.items, seed=0)  # every item plans (ids registered, task ids in their splits)
    assert load_suite("quick").protocol is None


def test_every_published_number_is_one_of_its_protocols_envs_and_metrics_with_a_pinned_source() -> None:
    """published.yaml: each number compares with an env of its protocol's suite, in a metric the protocol reports."""
    suites = {load_suite(name).protocol["name"]: load_suite(name) for name in PROTOCOL_SUITES}  # type: ignore[index]
    results = published_results()
    assert {result.protocol for result in results} == set(suites)  # every protocol has verified numbers
    for result in results:
        suite = suites[result.protocol]
        envs = [item.env for item in suite.items]
        assert fnmatch.filter(envs, result.env), f"{result.env} is not an env of {result.protocol}'s suite"
        assert result.metric in suite.protocol["metrics"]  # type: ignore[index]
        assert 0 <= result.value <= 100
        assert re.search(r"@[0-9a-f]{8}", result.citation), "the citation pins the source's commit"
        assert re.search(r"arXiv:\d{4}\.\d{5}", result.citation)


def test_browsergym_miniwob_is_its_125_tasks_with_browsergyms_seeds_and_step_limit() -> None:
    suite = load_suite("browsergym-miniwob")
    assert len(BROWSERGYM_MINIWOB) == 125
    assert [item.env for item in suite.items] == [f"MiniWoB-{task}-v0" for task in BROWSERGYM_MINIWOB]
    # BrowserGym's make_env_args_list_from_repeat_tasks: RandomState(42), 5 seeds per task in order, high=SEED_MAX
    # (loop.py: SEED_MAX = 2 ^ 32, a XOR, so 34).
    rng = numpy.random.RandomState(42)
    for item in suite.items:
        assert item.task_ids == tuple(int(seed) for seed in rng.randint(low=0, high=2 ^ 32, size=5))
        assert item.max_turns == 10 and item.kwargs == {"page_seeds": "browsergym"} and item.split == "train"
    episodes = plan(suite.items, seed=0)
    assert len(episodes) == 625 and len({episode.key for episode in episodes}) == 625  # repeated seeds are repeats
    # Our ids 5 tasks BrowserGym's benchmark leaves out
    assert len([info for info in agentgym.list_envs() if info.family == "miniwob"]) == 130


def test_miniwob_page_seeds_follow_browsergyms_task_setup() -> None:
    from agentgym.environments.miniwob.env import MiniWoBEnv

    browsergym = SimpleNamespace(page_seeds="browsergym")
    # AbstractMiniwobTask: self.random = RandomState(task seed); Math.seedrandom(self.random.randint(0, 1000000))
    assert MiniWoBEnv.page_seed(browsergym, 7) == numpy.random.RandomState(7).randint(0, 1_000_000)  # type: ignore[arg-type]
    assert MiniWoBEnv.page_seed(SimpleNamespace(page_seeds="task_id"), 7) == 7  # type: ignore[arg-type]


def test_verl_agent_protocol_is_alfworld_valid_seen_and_webshops_500_test_goals() -> None:
    suite = load_suite("verl-agent-gigpo")
    items = by_env("verl-agent-gigpo")
    assert suite.history_window == 2
    webshop = [episode.task_id for episode in plan([items["WebShop-v0"]], seed=0)]
    test_goals = env_info("WebShop-v0").splits.ids("test")  # the original convention: test = goals 0..499
    assert webshop == list(test_goals) and len(webshop) == 500 and items["WebShop-v0"].max_turns == 15
    alfworld = items["ALFWorld-v0"]
    # verl-agent evaluates eval_in_distribution = json_2.1.1/valid_seen (140 games): ALFWorld-v0's dev split
    assert (alfworld.split, alfworld.episodes, alfworld.max_turns) == ("dev", 140, 50)


def test_agentgym_rl_and_ragen_protocols_have_their_sizes_and_turn_limits() -> None:
    items = by_env("agentgym-rl").values()
    totals: dict[str, int] = {}
    for item in items:
        totals[env_info(item.env).family] = totals.get(env_info(item.env).family, 0) + item.episodes
    assert totals == {"babyai": 90, "scienceworld": 200, "textcraft": 100, "webshop": 200, "webapps": 20}
    turns = {env_info(item.env).family: item.max_turns for item in items}
    assert turns == {"babyai": 20, "scienceworld": 30, "textcraft": 30, "webshop": 15, "webapps": 15}
    ragen = by_env("ragen")
    assert set(ragen) == {"Sokoban-v0", "FrozenLake-v0[is_slippery=True]"}
    assert all(item.episodes == 256 and item.max_turns == 10 for item in ragen.values())


def test_suite_task_ids_are_checked() -> None:
    good = {"envs": [{"env": "Sokoban-v0", "task_ids": [11_001, 11_001]}]}
    (item,) = parse_suite("mine", good).items
    assert item.episodes == 2 and [episode.repeat for episode in plan([item], 0)] == [0, 1]
    with pytest.raises(ValueError, match="not tasks of its test split"):
        parse_suite("mine", {"envs": [{"env": "Sokoban-v0", "task_ids": [3]}]})
    with pytest.raises(ValueError, match="protocol block"):
        parse_suite("mine", {"protocol": {"name": "x"}, "envs": [{"env": "Sokoban-v0"}]})


def test_every_family_defines_its_metrics() -> None:
    families = {info.family for info in agentgym.list_envs() if info.family != "test"}
    assert families <= set(metric_definitions())
    webshop = env_metrics("WebShop-v0")
    assert webshop is not None and "Score" in webshop.published and webshop.deterministic
    assert not env_metrics("WebApps-v0").deterministic  # type: ignore[union-attr]
    docs = ROOT / "docs"
    protocols = (docs / "protocols.md").read_text()
    for definition in metric_definitions().values():  # the leaderboard links to these anchors
        assert f"{{#{definition.anchor}}}" in protocols
    for family, page in FAMILY_PAGES.items():  # each family's page states its definitions as metrics.yaml does
        text = (docs / page).read_text()
        definition = metric_definitions()[family]
        assert f"- **success**: {definition.success}" in text and f"- **score**: {definition.score}" in text, page
        assert f"protocols.md#{definition.anchor}" in text


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of the oracle and the random policy over fast families of the quick suite (3 episodes each)."""
    out = tmp_path_factory.mktemp("rescore")
    items = [EvalItem(env, 3) for env in (*QUICK_LIKE, *GAMES)]
    items.append(EvalItem("FrozenLake-v0", 3, kwargs={"is_slippery": True}))
    for spec in ("random", "oracle"):
        asyncio.run(run_eval(spec, make_policy(spec), items, out / spec, seed=3, concurrency=8))
    return out


def test_rescore_reproduces_a_quick_run_and_flags_an_altered_record(
    quick_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for policy, episodes in (("random", 24), ("oracle", 24)):
        report = rescore(quick_run / policy)
        assert report.ok and not report.live, format_report(report)
        assert sum(env.reproduced for env in report.envs) == sum(env.episodes for env in report.envs) == episodes
    # A record edited by hand: its score (and, in another, a turn's reward) no longer what the env gives.
    folder = tmp_path / "edited"
    folder.mkdir()
    (folder / "run.json").write_text((quick_run / "oracle" / "run.json").read_text())
    lines = (quick_run / "oracle" / "episodes.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    first, second = records[0], records[5]
    first["score"] = 0.5
    second["turns"][0]["reward"] = 7.0
    (folder / "episodes.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    report = rescore(folder)
    assert not report.ok
    mismatches = {mismatch.key: mismatch for env in report.envs for mismatch in env.mismatches}
    assert set(mismatches) == {first["key"], second["key"]}
    assert (mismatches[first["key"]].field, mismatches[first["key"]].replayed) == ("score", 1.0)
    assert (mismatches[second["key"]].field, mismatches[second["key"]].turn) == ("reward", 0)
    assert cli.main(["rescore", str(folder)]) == 1
    printed = capsys.readouterr().out
    assert "2 mismatches:" in printed and f"{first['key']}: score recorded 0.5, replayed 1.0" in printed
    assert "3/3 reproduced (100%)" in printed  # per env: the untouched envs still reproduce


def test_rescore_reports_live_families_apart(tmp_path: Path) -> None:
    records = [
        episode("Sokoban-v0", 10_000, "random", success=False, score=0.0, steps=1, tokens=None, wall_s=0.1),
        episode("WebApps-Shop-v0", 12_000, "random", success=False, score=0.0, steps=1, tokens=None, wall_s=0.1),
    ]
    folder = write_folder(tmp_path / "run", "random", "random", records)
    report = rescore(folder)
    (live,) = report.live
    assert live.env_id == "WebApps-Shop-v0" and live.replayed == 0 and live.episodes == 1
    assert "live envs (not deterministic)" in format_report(report) and "--live replays them" in format_report(report)


def published_run(tmp_path: Path) -> Path:
    """A run of the verl-agent protocol as run.json records it (protocol block from the suite)."""
    protocol = load_suite("verl-agent-gigpo").protocol
    records = [
        episode(
            "WebShop-v0",
            11_587 + task,
            "Qwen2.5-1.5B",
            success=task % 2 == 0,
            score=0.5,
            steps=2,
            tokens=(10, 5),
            wall_s=1.0,
        )
        for task in range(4)
    ]
    return write_folder(
        tmp_path / "results" / "qwen", "openai:Qwen2.5-1.5B", "Qwen2.5-1.5B", records, protocol=protocol
    )


def test_terminal_leaderboard_shows_the_protocol_and_its_published_numbers(tmp_path: Path) -> None:
    board = collect([published_run(tmp_path)])
    assert [run.protocol for run in board.runs] == ["GiGPO / verl-agent"]
    assert {(result.method, result.env, result.value) for result in board.published} >= {("GiGPO", "WebShop-v0", 67.4)}
    text = format_terminal(board)
    assert "Published results (from the papers; not run here)" in text and "arXiv:2505.10978" in text


def test_page_shows_published_numbers_beside_the_run_and_links_headers_to_definitions(
    browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    page_path = tmp_path / "site" / "board.html"
    write_html([published_run(tmp_path).parent], page_path)
    page = browser.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(page_path.as_uri())
    expect(page.locator("#runs tbody td").last).to_have_text("GiGPO / verl-agent")
    published = page.locator("#published tbody tr")
    expect(published).to_have_count(4)
    expect(page.locator("#published-section h2")).to_contain_text("published, not run here")
    cells = ["GiGPO / verl-agent", "Qwen2.5-1.5B-Instruct", "GiGPO", "WebShop-v0", "success", "67.4%"]
    expect(published.nth(2).locator("td")).to_contain_text([*cells, "arXiv:2505.10978"])  # published.yaml's order
    link = page.locator("#matrix th[data-key='f:webshop'] a.definition")
    expect(link).to_have_attribute("href", "#metrics-webshop")
    link.click()
    expect(page.locator("dt#metrics-webshop + dd")).to_contain_text("WebShop's reward of the purchase")
    expect(page.locator("dt#metrics-alfworld")).to_have_count(1)  # the published ALFWorld numbers' definitions too
    assert not problems
    page.close()


@needs_chromium
def test_browsergym_page_seeds_give_their_own_instances_in_chromium() -> None:
    """The same BrowserGym seed gives the same page instance every time, another one than task_id seeding."""
    pytest.importorskip("miniwob")
    from agentgym.environments.miniwob.env import MiniWoBEnv

    seeded, plain = MiniWoBEnv("enter-text", page_seeds="browsergym"), MiniWoBEnv("enter-text")
    try:
        first = seeded.reset(options={"task_id": 5})[1]["instruction"]
        again = (
            seeded.reset(options={"task_id": 6})[1]["instruction"],
            seeded.reset(options={"task_id": 5})[1]["instruction"],
        )
        assert again[1] == first and again[0] != first
        assert plain.reset(options={"task_id": 5})[1]["instruction"] != first
    finally:
        seeded.close()
        plain.close()
    with pytest.raises(ValueError, match="page_seeds"):
        MiniWoBEnv("enter-text", page_seeds="numpy")
