"""Bash-v0: generated shell tasks, the sandboxed shell, the checker and the oracle."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import pytest
from episodes import EpisodeResult, play_oracle
from gymnasium.utils.env_checker import check_env

from agentgym.environments.code import BASH_SPLITS
from agentgym.sandbox import available

pytestmark = pytest.mark.skipif(available("bwrap") is not None, reason=f"no bwrap sandbox: {available('bwrap')}")

from agentgym.environments.code.bash import TEMPLATES, BashEnv, answer_matches, extract_command  # noqa: E402

#: Oracle episodes per template (all 41 templates, ids spread over the three splits).
PER_TEMPLATE = 3


def template_task_ids(per_template: int) -> dict[str, list[int]]:
    """The first ``per_template`` task ids of every template, alternating test, dev and train ids."""
    env = BashEnv()
    found: dict[str, list[int]] = {name: [] for name in TEMPLATES}
    pools = [iter(BASH_SPLITS.ids(split)) for split in ("test", "dev", "train")]
    turn = 0
    while any(len(ids) < per_template for ids in found.values()):
        task_id = next(pools[turn % 3])
        turn += 1
        ids = found[env.template_of(task_id)]
        if len(ids) < per_template:
            ids.append(task_id)
    return found


def play_many(env_id: str, task_ids: list[int], threads: int = 4) -> list[EpisodeResult]:
    """Oracle episodes, each thread with its own env (the shell commands run in subprocesses)."""
    chunks = [task_ids[index::threads] for index in range(threads)]

    def play(chunk: list[int]) -> list[EpisodeResult]:
        env = gym.make(env_id)
        try:
            return [play_oracle(env, task_id, seed=task_id) for task_id in chunk]
        finally:
            env.close()

    with ThreadPoolExecutor(threads) as pool:
        return [result for results in pool.map(play, chunks) for result in results]


def first_task(kind: str, template: str | None = None) -> tuple[gym.Env, int]:
    """A made env reset on the first task that is a question (``kind="answer"``) or a file-system task."""
    env = gym.make("Bash-v0")
    base = env.unwrapped
    for task_id in range(500):
        if template is not None and base.template_of(task_id) != template:
            continue
        env.reset(options={"task_id": task_id})
        if (base.task.answer is not None) == (kind == "answer"):
            return env, task_id
    raise AssertionError(f"no {kind} task found")


# ---- generation ------------------------------------------------------------------------------


def test_many_templates_of_both_kinds() -> None:
    env = BashEnv()
    kinds = {"answer": set(), "state": set()}
    for task_id in range(300):
        task, _ = env.make_task(task_id)
        assert task.template == env.template_of(task_id)
        kinds["answer" if task.answer is not None else "state"].add(task.template)
    assert len(TEMPLATES) >= 40
    assert len(kinds["answer"]) >= 15 and len(kinds["state"]) >= 20


def test_tasks_are_deterministic_per_id_and_differ_across_ids() -> None:
    first, second = gym.make("Bash-v0"), gym.make("Bash-v0")
    observations = []
    for task_id in (0, 5, 10_500, 11_500):
        observation = first.reset(seed=1, options={"task_id": task_id})[0]
        assert observation == second.reset(seed=2, options={"task_id": task_id})[0]
        a, b = first.unwrapped, second.unwrapped
        assert a.tree.tarball() == b.tree.tarball() and a.task.commands == b.task.commands
        assert sorted(os.listdir(a.sandbox.workdir)) == sorted(os.listdir(b.sandbox.workdir))
        observations.append(first.unwrapped.tree.tarball())
    assert len(set(observations)) == 4
    first.close()
    second.close()


def test_check_env() -> None:
    env = gym.make("Bash-v0")
    check_env(env.unwrapped)
    env.close()


# ---- the oracle ------------------------------------------------------------------------------


def test_oracle_solves_every_template() -> None:
    found = template_task_ids(PER_TEMPLATE)
    task_ids = sorted(task_id for ids in found.values() for task_id in ids)
    assert len(task_ids) >= 100
    start = time.perf_counter()
    results = play_many("Bash-v0", task_ids)
    elapsed = time.perf_counter() - start
    failures = [result.task_id for result in results if not result.success]
    assert not failures, f"oracle failed on {failures[:10]}"
    assert all(result.score == 1.0 and result.total_reward == 1.0 for result in results)
    print(f"Bash-v0 oracle: {len(results)} episodes in {elapsed:.1f}s ({elapsed / len(results) * 1000:.0f} ms each)")


def test_oracle_restores_a_changed_tree_and_returns_home() -> None:
    env = gym.make("Bash-v0")
    base = env.unwrapped
    solved = 0
    for task_id in range(40):
        env.reset(options={"task_id": task_id})
        if base.task.answer is not None:
            continue
        env.step("Action: rm -rf data docs; mkdir -p junk/x && touch junk/x/f && chmod 000 junk/x; cd src")
        assert base.cwd == "/work/src"
        actions = []
        for _ in range(10):
            actions.append(base.oracle_action())
            _, reward, terminated, _, info = env.step(actions[-1])
            if terminated:
                break
        assert info["success"] and reward == 1.0, (task_id, actions)
        assert actions[0].startswith("cd /work && ") and "AGENTGYM_EOF" in actions[0]  # restore, then the plan
        solved += 1
        if solved == 6:
            break
    env.close()
    assert solved == 6


# ---- the checker -----------------------------------------------------------------------------


def test_wrong_answers_are_rejected_and_spellings_accepted() -> None:
    assert answer_matches("int", "12", "12", "/work") and answer_matches("int", " 12 files", "12", "/work")
    assert not answer_matches("int", "13", "12", "/work") and not answer_matches("int", "twelve", "12", "/work")
    assert answer_matches("money", "$1234.50", "1234.50", "/work") and not answer_matches(
        "money", "1234.6", "1234.50", "/work"
    )
    assert answer_matches("path", "./logs/a.log", "logs/a.log", "/work")
    assert answer_matches("path", "/work/logs/a.log", "logs/a.log", "/work")
    assert not answer_matches("path", "logs/a.log logs/b.log", "logs/a.log", "/work")
    assert answer_matches("paths", "b/x, ./a/y", "a/y b/x", "/work")
    assert not answer_matches("paths", "a/y", "a/y b/x", "/work") and not answer_matches(
        "paths", "a/y b/x c", "a/y b/x", "/work"
    )
    assert answer_matches("text", "'Ada'", "Ada", "/work") and not answer_matches("text", "ada", "Ada", "/work")
    env, _ = first_task("answer")
    truth = env.unwrapped.task.answer
    observation, reward, terminated, _, info = env.step(f"Action: submit {truth}x")
    assert terminated and reward == 0.0 and not info["success"] and info["score"] == 0.0 and "wrong" in observation
    env.close()


def test_submitting_an_untouched_or_wrong_tree_fails() -> None:
    env, task_id = first_task("state")
    observation, reward, terminated, _, info = env.step("submit")
    assert terminated and not info["success"] and reward == 0.0 and "not as asked" in observation
    # The plan's commands plus one stray file: still wrong.
    env.reset(options={"task_id": task_id})
    for command in env.unwrapped.task.commands:
        env.step(command)
    env.step("Action: echo leftover > scratch.txt")
    observation, reward, terminated, _, info = env.step("submit")
    assert terminated and not info["success"] and "unexpected: scratch.txt" in observation
    env.close()


def test_permission_tasks_compare_modes() -> None:
    env, _ = first_task("state", template="make_executable")
    env.step("Action: find scripts -name '*.sh' -exec chmod u+x {} +")  # user only: not what was asked
    observation, _, terminated, _, info = env.step("submit")
    assert terminated and not info["success"] and "mode" in observation
    env.close()


# ---- the shell ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    ["", "   ", "\x00", "Action:", "this is not a command", "Action: " + "x" * 200_000, "\n" * 1000, "\ud800\udfff"],
)
def test_garbage_is_an_invalid_action_that_explains(reply: str) -> None:
    env = gym.make("Bash-v0")
    env.reset(options={"task_id": 1})
    observation, reward, terminated, truncated, info = env.step(reply)
    assert info["invalid_action"] and reward == 0.0 and not terminated and not truncated
    assert observation.startswith("Invalid action") and "Current directory: /work" in observation
    env.close()


def test_question_submit_needs_an_answer() -> None:
    env, _ = first_task("answer")
    observation, _, terminated, _, info = env.step("Action: submit")
    assert info["invalid_action"] and not terminated and "submit <answer>" in observation
    env.close()


def test_cd_persists_output_is_cut_and_limits_are_reported() -> None:
    env = gym.make("Bash-v0")
    env.reset(options={"task_id": 2})
    observation, *_ = env.step("```bash\ncd src\npwd\n```")
    assert observation.startswith("/work/src\n[exit code 0]") and observation.endswith("Current directory: /work/src")
    observation, *_ = env.step("Action: seq 1 50000")
    assert "characters omitted" in observation and len(observation) < 6_000 and "\n50000\n[exit code 0]" in observation
    observation, *_ = env.step("Action: yes")
    assert "[stopped: the output limit was hit]" in observation
    observation, *_, info = env.step("Action: exit 3")
    assert "[exit code 3]" in observation and not info["invalid_action"] and env.unwrapped.cwd == "/work/src"
    observation, *_ = env.step("Action: cat /etc/shadow; ls /root")
    assert "No such file" in observation
    env.close()


def test_wall_limit_stops_a_command() -> None:
    from agentgym.sandbox import Limits

    env = gym.make("Bash-v0", limits=Limits(wall_s=1.0))
    env.reset(options={"task_id": 2})
    start = time.perf_counter()
    observation, _, terminated, _, info = env.step("Action: sleep 30")
    assert time.perf_counter() - start < 5 and "wall limit" in observation and not terminated
    env.close()


def test_extract_command() -> None:
    assert extract_command("Action: find . -name '*.log'") == "find . -name '*.log'"
    assert extract_command("I'll look.\nAction: `ls -la`") == "ls -la"
    assert extract_command('Plan:\n```bash\nfor f in *.txt; do\n  wc -l "$f"\ndone\n```') == (
        'for f in *.txt; do\n  wc -l "$f"\ndone'
    )
    assert extract_command("```sh\nls\n```\nAction: pwd") == "pwd"
    assert extract_command("Action:\n```\nls\n```") == "ls"
    assert extract_command("<think>Action: rm -rf /</think>\nAction: ls") == "ls"
    assert extract_command("  du -sh .  ") == "du -sh ."


def test_close_removes_the_work_dir_and_reset_starts_afresh() -> None:
    env = gym.make("Bash-v0")
    env.reset(options={"task_id": 3})
    first = env.unwrapped.sandbox.workdir
    env.step("Action: touch marker")
    env.reset(options={"task_id": 3})
    second = env.unwrapped.sandbox.workdir
    assert not os.path.exists(first) and not os.path.exists(second / "marker")
    env.close()
    assert not os.path.exists(second)
