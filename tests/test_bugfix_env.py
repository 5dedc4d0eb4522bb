"""BugFix-v0 / BugFix-Hard-v0: generated repositories, mutations, tools, the judge and the oracle."""

from __future__ import annotations

import ast
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
import pytest
from episodes import EpisodeResult, play_oracle
from gymnasium.utils.env_checker import check_env

import agentgym
from agentgym.environments.code import BUGFIX_SPLITS
from agentgym.sandbox import available

pytestmark = pytest.mark.skipif(available("bwrap") is not None, reason=f"no bwrap sandbox: {available('bwrap')}")

from agentgym.environments.code.bugfix import (  # noqa: E402
    DOMAINS,
    TEMPLATES,
    extract_tool_call,
    fenced_blocks,
    generate_repo,
    module_mutations,
)

IDS = ("BugFix-v0", "BugFix-Hard-v0")
#: Oracle episodes per id, spread over the splits.
ORACLE_TASKS = 100


def spread_ids(count: int) -> list[int]:
    """``count`` task ids: half from test, a quarter each from dev and train."""
    quarter = count // 4
    return (
        list(BUGFIX_SPLITS.ids("test")[: count - 2 * quarter])
        + list(BUGFIX_SPLITS.ids("dev")[:quarter])
        + list(BUGFIX_SPLITS.ids("train")[:quarter])
    )


def in_threads(env_id: str, task_ids: list[int], work, threads: int = 4) -> list:
    """``work(env, task_id)`` for every task, each thread with its own env (tests run in subprocesses)."""
    chunks = [task_ids[index::threads] for index in range(threads)]

    def run(chunk: list[int]) -> list:
        env = gym.make(env_id)
        try:
            return [work(env, task_id) for task_id in chunk]
        finally:
            env.close()

    with ThreadPoolExecutor(threads) as pool:
        return [result for results in pool.map(run, chunks) for result in results]


def made(env_id: str = "BugFix-v0", task_id: int = 0) -> gym.Env:
    env = gym.make(env_id)
    env.reset(options={"task_id": task_id})
    return env


def failing_tests(output: str) -> set[str]:
    return set(re.findall(r"^_____ (\w+) _____$", output, re.M))


# ---- generation ------------------------------------------------------------------------------


def test_registered_with_step_limits() -> None:
    assert agentgym.env_info("BugFix-v0").max_episode_steps == 30
    assert agentgym.env_info("BugFix-Hard-v0").max_episode_steps == 50
    assert gym.make("BugFix-Hard-v0").unwrapped.difficulty == "hard"


def test_repositories_are_deterministic_per_id() -> None:
    for env_id in IDS:
        first, second = made(env_id, 10_400), made(env_id, 10_400)
        assert first.unwrapped.repo.broken_files() == second.unwrapped.repo.broken_files()
        third = made(env_id, 10_401)
        assert third.unwrapped.repo.broken_files() != first.unwrapped.repo.broken_files()
        for env in (first, second, third):
            env.close()


def test_sizes_and_bug_depth_by_difficulty() -> None:
    kinds: Counter[str] = Counter()
    domains: Counter[str] = Counter()
    for hard in (False, True):
        for task_id in range(90):
            rng = random.Random(f"check|{task_id}|{hard}")
            repo = generate_repo(rng, hard, BUGFIX_SPLITS.split_of(task_id), BUGFIX_SPLITS)
            low, high = (4, 6) if hard else (2, 3)
            assert low <= len(repo.modules) <= high
            owner = repo.mutation.function.split(".")[0]
            assert (owner in repo.direct) != hard, repo.mutation  # hard: a helper the tests never call
            assert repo.failing and repo.mutated_source != repo.files[repo.mutated_path]
            kinds[repo.mutation.kind] += 1
            domains[repo.domain] += 1
    assert len(kinds) == 8 and min(kinds.values()) >= 5, kinds
    assert set(domains) == {domain.name for domain in DOMAINS}


def test_bug_sites_never_cross_splits() -> None:
    sites: dict[str, set[str]] = {}
    for split in ("train", "dev", "test"):
        sites[split] = set()
        for task_id in BUGFIX_SPLITS.ids(split)[:60]:
            repo = generate_repo(random.Random(task_id), False, split, BUGFIX_SPLITS)
            sites[split].add(repo.mutation.key(repo.domain))
    assert not sites["train"] & sites["test"] and not sites["train"] & sites["dev"] and not sites["dev"] & sites["test"]


def test_every_module_has_mutation_candidates() -> None:
    for domain in DOMAINS:
        for name in domain.modules:
            assert len(module_mutations(domain, name)) >= 20, (domain.name, name)


def test_template_files_are_the_domains_modules_and_package_data() -> None:
    """Every template file is a module of its domain (or the runner), valid Python, and in the wheel's globs."""
    declared = {f"{domain.name}/{name}.py" for domain in DOMAINS for name in domain.modules}
    found = {path.relative_to(TEMPLATES).as_posix() for path in TEMPLATES.rglob("*.py")}
    assert found == declared | {"run_tests.py", "close.py"}
    for path in TEMPLATES.rglob("*.py"):
        ast.parse(path.read_text(encoding="utf-8"), str(path))
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(Path(__file__).parents[1] / "pyproject.toml", "rb") as handle:
        globs = tomllib.load(handle)["tool"]["setuptools"]["package-data"]["agentgym.environments.code.bugfix"]
    assert {path for pattern in globs for path in map(str, Path(TEMPLATES.parent).glob(pattern))} == {
        str(path) for path in TEMPLATES.rglob("*.py")
    }


# ---- the mutation really breaks tests, and the fix restores them -------------------------------


@pytest.mark.parametrize("env_id", IDS)
def test_mutation_breaks_the_predicted_tests_and_the_original_passes(env_id: str) -> None:
    def check(env: gym.Env, task_id: int) -> None:
        base = env.unwrapped
        env.reset(options={"task_id": task_id})
        output, counts, clean = base._run_suite([])
        predicted = {name.split("::")[1] for name in base.repo.failing}
        assert not clean and failing_tests(output) == predicted and counts["failed"] == len(predicted) > 0, task_id
        assert counts["passed"] + counts["failed"] == base.repo.test_count
        base.sandbox.write_file(base.repo.mutated_path, base.repo.files[base.repo.mutated_path])
        output, counts, clean = base._run_suite([])
        assert clean and counts == {"passed": base.repo.test_count, "failed": 0, "error": 0}, output

    in_threads(env_id, spread_ids(24), check)


def test_generated_tests_also_run_under_pytest(tmp_path) -> None:
    pytest_ok = subprocess.run([sys.executable, "-m", "pytest", "--version"], capture_output=True).returncode == 0
    if not pytest_ok:
        pytest.skip("pytest is not importable here")
    repo = generate_repo(random.Random("pytest"), True, "train", BUGFIX_SPLITS)
    environment = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    for broken in (False, True):
        root = tmp_path / str(broken)
        for path, text in (repo.broken_files() if broken else repo.files).items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
        result = subprocess.run(command, cwd=root, capture_output=True, text=True, env=environment)
        assert (result.returncode != 0) == broken, result.stdout[-2000:]
        expected = f"{len(repo.failing)} failed, {repo.test_count - len(repo.failing)} passed" if broken else "passed"
        assert expected in result.stdout


# ---- the oracle ------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", IDS)
def test_oracle_solves_tasks(env_id: str) -> None:
    start = time.perf_counter()
    results: list[EpisodeResult] = in_threads(env_id, spread_ids(ORACLE_TASKS), play_oracle)
    elapsed = time.perf_counter() - start
    failures = [result.task_id for result in results if not result.success]
    assert not failures, f"oracle failed on {failures[:10]}"
    assert all(result.score == 1.0 and result.total_reward == 1.0 and result.steps == 3 for result in results)
    print(f"{env_id} oracle: {len(results)} episodes in {elapsed:.1f}s ({elapsed / len(results) * 1000:.0f} ms each)")


def test_oracle_restores_edited_tests_and_files() -> None:
    env = made("BugFix-Hard-v0", 3)
    base = env.unwrapped
    repo = base.repo
    env.step(f"Action: write {repo.test_files[0]}\n```\ndef test_nothing():\n    pass\n```")
    other = next(path for path in sorted(repo.files) if path.endswith(".py") and path != repo.mutated_path)
    env.step(f"Action: write {other}\n```\nbroken = True\n```")
    actions = []
    for _ in range(8):
        actions.append(base.oracle_action())
        _, reward, terminated, _, info = env.step(actions[-1])
        if terminated:
            break
    assert info["success"] and reward == 1.0
    assert [action.split()[1] for action in actions] == ["replace", "write", "write", "run_tests", "submit"]
    env.close()


# ---- the judge -------------------------------------------------------------------------------


def test_submitting_the_broken_repository_fails() -> None:
    env = made()
    observation, reward, terminated, _, info = env.step("Action: submit")
    assert terminated and reward == 0.0 and not info["success"] and "Not accepted" in observation
    env.close()


def test_edited_tests_are_rejected_even_when_everything_passes() -> None:
    env = made("BugFix-v0", 5)
    base = env.unwrapped
    env.step(base.oracle_action())  # the real fix
    test_file = base.repo.test_files[0]
    env.step(f"Action: write {test_file}\n```\n{base.repo.files[test_file]}# reviewed\n```")
    observation, reward, terminated, _, info = env.step("Action: submit")
    assert terminated and not info["success"] and test_file in observation
    env.close()


def test_deleting_the_failing_test_is_not_a_fix() -> None:
    env = made("BugFix-v0", 6)
    base = env.unwrapped
    failing = base.repo.failing[0]
    path, name = failing.split("::")
    text = base.repo.files[path]
    start = text.index(f"def {name}():")
    end = text.find("\n\n\ndef ", start)
    gutted = text[:start] + f"def {name}():\n    pass" + (text[end:] if end >= 0 else "\n")
    _, _, _, _, info = env.step(f"Action: write {path}\n```\n{gutted.rstrip()}\n```")
    assert not info["invalid_action"] and base.sandbox.read_file(path) != text
    observation, reward, terminated, _, info = env.step("Action: submit")
    assert terminated and not info["success"] and "were changed" in observation
    env.close()


# ---- tools -------------------------------------------------------------------------------------


def test_tools() -> None:
    env = made("BugFix-v0", 7)
    base = env.unwrapped
    repo = base.repo
    observation, *_, info = env.step("Action: ls")
    assert not info["invalid_action"] and f"{repo.package}/" in observation and "run_tests.py" in observation
    observation, *_ = env.step(f"Action: cat {repo.mutated_path} 2-3")
    assert observation.startswith(f"{repo.mutated_path}:\n   2 | ") and "(lines 2-3 of" in observation
    observation, *_ = env.step("search def ")
    assert re.match(r"\d+ lines contain 'def':\n", observation) and f"\n{repo.mutated_path}:" in observation
    observation, *_, info = env.step("Action: write notes/todo.txt\n```text\nfind the bug\n```")
    assert not info["invalid_action"] and base.sandbox.read_file("notes/todo.txt") == "find the bug\n"
    observation, *_, info = env.step(
        "Action: replace notes/todo.txt\n<<<<<<< SEARCH\nthe bug\n=======\nit\n>>>>>>> REPLACE"
    )
    assert not info["invalid_action"] and base.sandbox.read_file("notes/todo.txt") == "find it\n"
    observation, *_ = env.step(f"Action: run_tests {repo.test_files[0]}")
    assert observation.startswith(f"$ python3 run_tests.py {repo.test_files[0]}\n{repo.test_files[0]} ")
    observation, *_ = env.step("Action: run_tests no_such_test_name")
    assert "no tests ran" in observation
    env.close()


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        ("", "names no tool"),
        ("Action: rm -rf /", "unknown tool"),
        ("Action: cat ../../etc/passwd", "not a path in the repository"),
        ("Action: cat /etc/passwd", "not a path in the repository"),
        ("Action: cat nope.py", "no file"),
        ("Action: cat tests", "is a directory"),
        ("Action: ls README.md", "is a file"),
        ("Action: write x.py", "exactly one fenced block"),
        ("Action: write x.py\n```\nunclosed", "never closed"),
        ("Action: replace README.md\n```\nnot in the file\n```\n```\nx\n```", "does not occur"),
        ("Action: replace README.md\n```\n\n```\n```\nx\n```", "old text is empty"),
        ("Action: replace README.md\n```\n#\n```", "two fenced blocks"),
        ("Action: write\n```\nx\n```", "needs a file path"),
        ("Action: cat README.md lots", "line range"),
        ("Action: search", "needs the text"),
        ("\x00" * 100, "unknown tool"),
    ],
)
def test_bad_tool_calls_are_invalid_and_change_nothing(reply: str, says: str) -> None:
    env = made("BugFix-v0", 8)
    before = env.unwrapped._files_digest()
    observation, reward, terminated, truncated, info = env.step(reply)
    assert info["invalid_action"] and reward == 0.0 and not terminated and not truncated
    assert observation.startswith("Invalid action") and says in observation
    assert env.unwrapped._files_digest() == before
    env.close()


def test_replace_needs_a_unique_match() -> None:
    env = made("BugFix-v0", 9)
    observation, *_, info = env.step("Action: replace run_tests.py\n```\nimport\n```\n```\nexport\n```")
    assert info["invalid_action"] and "occurs" in observation and "times" in observation
    env.close()


def test_extract_tool_call_and_fences() -> None:
    assert extract_tool_call("Let me look.\nAction: `cat a.py`") == "cat a.py"
    reply = "Plan:\n```\nAction: not this\n```\nAction: replace a.py\n```python\nx = 1\n```\n````\ny = 2\n````"
    assert extract_tool_call(reply) == "replace a.py\n```python\nx = 1\n```\n````\ny = 2\n````"
    assert fenced_blocks("```python\nx = 1\n\n  y\n```\n````\na\n```\nb\n````") == ["x = 1\n\n  y", "a\n```\nb"]
    assert extract_tool_call("<think>Action: submit</think>run_tests") == "run_tests"
    assert extract_tool_call("\n\n  ls tests  \n") == "ls tests"


def test_check_env_on_both_levels() -> None:
    for env_id in IDS:
        env = gym.make(env_id)
        check_env(env.unwrapped)
        env.close()


def test_links_and_fifos_made_by_package_code_cannot_reach_the_host_or_hang() -> None:
    env = made("BugFix-v0", 11)
    base = env.unwrapped
    init = f"{base.repo.package}/__init__.py"
    hostile = "import os\nos.symlink('/', 'escape')\nos.symlink('/etc/passwd', 'passwd')\nos.mkfifo('pipe')"
    env.step(f"Action: write {init}\n```\n{hostile}\n```")
    env.step("Action: run_tests")  # imports the package, which plants the links and the FIFO
    assert (base.sandbox.workdir / "escape").is_symlink() and (base.sandbox.workdir / "pipe").exists()
    for reply in ("cat escape/etc/passwd", "cat passwd", "cat pipe", "ls escape"):
        observation, _, _, _, info = env.step(f"Action: {reply}")
        assert info["invalid_action"] and "root:" not in observation, reply
    observation, *_ = env.step("Action: search root:")
    assert observation.startswith("No line contains")
    for _ in range(5):  # the fix, the original __init__.py, run_tests, submit
        _, reward, terminated, _, info = env.step(base.oracle_action())
        if terminated:
            break
    assert info["success"] and reward == 1.0
    env.close()
