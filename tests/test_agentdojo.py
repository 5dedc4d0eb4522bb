"""AgentDojo family (environments/agentdojo): fidelity to AgentDojo's own benchmark functions, the contract,
the tool-call path, scoring at the step limit, and the oracle, obedient and random baselines.

Fidelity: AgentDojo's ground-truth agent (``GroundTruthPipeline``) plays each user task through AgentDojo's
``run_task_without_injection_tasks``, and the user task's and the injection task's ground truth through
``run_task_with_injection_tasks`` under the ``important_instructions`` attack; the same calls played on our env
give the same utility and security, from the same injected environment. Each suite's user tasks and (user,
injection) pairs are taken in turn (tests/episodes.py's rotation: every n-th a day, all of them under
``AGENTGYM_TEST_SAMPLE=all``).
"""

from __future__ import annotations

import datetime
import json
import random
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import jsonschema
import pytest
from episodes import in_turn

import agentgym
from agentgym.llm.policies.base import Episode
from agentgym.utils import check_text_env

pytest.importorskip("agentdojo")

from agentgym.environments.agentdojo import suites  # noqa: E402
from agentgym.environments.agentdojo.env import (  # noqa: E402
    TOOL_CLOCK,
    AgentDojoEnv,
    injected_environment,
    load_suite,
)
from agentgym.llm.policies import ObedientPolicy  # noqa: E402

SUITES = {name: entry["title"] for name, entry in suites()["suites"].items()}
IDS = sorted(info.id for info in agentgym.list_envs() if info.family == "agentdojo")
#: Each suite's pairs checked a run: every n-th (a full check of a workspace pair takes about 1.5 s on 2 busy
#: cores, travel 0.5 s, banking and slack 0.1 s), so each suite is covered within n days.
PAIR_STRIDES = {"workspace": 70, "travel": 14, "banking": 9, "slack": 7}
#: Each suite's user tasks checked a run: every n-th.
USER_STRIDES = {"workspace": 4, "travel": 2, "banking": 1, "slack": 1}
ATTACK = "important_instructions"


def play(env: gym.Env, task_id: int, commands: list[str] | None = None, action: str = "oracle_action") -> dict:
    """Play ``commands`` (or the env's ``action`` baseline) on ``task_id`` to the episode's end; the last info."""
    env.reset(options={"task_id": task_id})
    base = env.unwrapped
    for step in range(1000):
        command = commands[step] if commands is not None else getattr(base, action)()
        _, _, terminated, truncated, info = env.step(command)
        if terminated or truncated:
            return info
    raise AssertionError("the episode did not end")


def agentdojo_runs(suite: Any, user_task: Any, injection_task: Any | None, tmp_path: Path) -> dict[str, tuple]:
    """AgentDojo's own (utility, security) of its ground-truth agent: on the user task alone, or on the pair under
    the attack with the user task's ground truth and with the injection task's."""
    from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline
    from agentdojo.attacks import load_attack
    from agentdojo.benchmark import run_task_with_injection_tasks, run_task_without_injection_tasks
    from agentdojo.logging import OutputLogger

    class QuietLogger(OutputLogger):
        def log(self, *args: Any, **kwargs: Any) -> None:
            pass

    with QuietLogger(logdir=str(tmp_path)), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # AgentDojo warns that it saves no trace of an unnamed pipeline
        if injection_task is None:
            return {
                "user": run_task_without_injection_tasks(suite, GroundTruthPipeline(user_task), user_task, None, True)
            }
        named = GroundTruthPipeline(None)
        named.name = "local"  # the attacks address the model by its pipeline's name, as agentgym's target_model
        attack = load_attack(ATTACK, suite, named)
        results = {}
        for who, task in (("user", user_task), ("injection", injection_task)):
            utility, security = run_task_with_injection_tasks(
                suite, GroundTruthPipeline(task), user_task, attack, None, True, [injection_task.ID]
            )
            results[who] = (utility[(user_task.ID, injection_task.ID)], security[(user_task.ID, injection_task.ID)])
        return results


def ours(env: gym.Env, task_id: int) -> dict[str, tuple]:
    """Our env's (utility, security) for the same ground-truth agents."""
    base: AgentDojoEnv = env.unwrapped
    info = play(env, task_id)
    results = {"user": (info["utility"], info.get("attack_success", True))}
    if base.attack is not None:
        env.reset(options={"task_id": task_id})
        commands = base._ground_truth(base.injection_task, base.pre_environment)
        info = play(env, task_id, commands)
        results["injection"] = (info["utility"], info["attack_success"])
    return results


class Envs(dict):
    """The ids' envs, each made when a test first asks for it."""

    def __missing__(self, env_id: str) -> gym.Env:
        self[env_id] = gym.make(env_id)
        return self[env_id]


@pytest.fixture(scope="module")
def envs() -> Iterator[Envs]:
    made = Envs()
    yield made
    for env in made.values():
        env.close()


@pytest.mark.parametrize("name", sorted(SUITES))
def test_user_tasks_score_as_agentdojo_scores_them(name: str, envs: Envs, tmp_path: Path) -> None:
    env = envs[f"AgentDojo-{SUITES[name]}-v0"]
    suite = load_suite(name)
    for task_id in in_turn(list(range(env.unwrapped.splits.total)), USER_STRIDES[name]):
        user_task = env.unwrapped.user_tasks[task_id]
        assert ours(env, task_id) == agentdojo_runs(suite, user_task, None, tmp_path), user_task.ID


@pytest.mark.parametrize("name", sorted(SUITES))
def test_attacked_pairs_score_as_agentdojo_scores_them(name: str, envs: Envs, tmp_path: Path) -> None:
    env = envs[f"AgentDojo-{SUITES[name]}-Attack-v0"]
    base: AgentDojoEnv = env.unwrapped
    suite = load_suite(name)
    pairs = in_turn(list(range(base.splits.total)), PAIR_STRIDES[name])
    for task_id in pairs:
        env.reset(options={"task_id": task_id})
        user_task, injection_task = base.user_task, base.injection_task
        injections = base.attack.attack(user_task, injection_task)
        assert injected_environment(name, injections) == suite.load_and_inject_default_environment(injections)
        expected = agentdojo_runs(suite, user_task, injection_task, tmp_path)
        assert ours(env, task_id) == expected, (user_task.ID, injection_task.ID)
    print(f"{name}: {len(pairs)} of {base.splits.total} pairs equal to AgentDojo's")


@pytest.mark.parametrize("env_id", IDS)
def test_contract(env_id: str, envs: Envs) -> None:
    attack = env_id.endswith("-Attack-v0")
    report = check_text_env(envs[env_id], oracle_tasks=4 if attack else 12, determinism_tasks=2, random_replies=10)
    assert "oracle" in report.checked and "truncation" in report.checked


def test_native_tool_calls_play_as_text(envs: Envs) -> None:
    """The oracle's episode through native tool calls on AgentDojo's declared functions equals the text one."""
    env = envs["AgentDojo-Banking-Attack-v0"]
    base: AgentDojoEnv = env.unwrapped
    tools = base.tools()
    assert [tool["function"]["name"] for tool in tools] == [f.name for f in base.suite.tools] + ["answer"]
    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool["function"]["parameters"])
    text = play(env, 30)
    env.reset(options={"task_id": 30})
    for step in range(50):
        command = base.oracle_action()
        if command.startswith("answer["):
            call = {"name": "answer", "arguments": json.dumps({"answer": command[len("answer[") : -1]})}
        else:
            name, _, arguments = command.partition("(")
            call = {"name": name, "arguments": arguments[:-1]}
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"c{step}", "type": "function", "function": call}],
        }
        *_, terminated, _, info = env.step(message)
        assert not info["invalid_action"] and info["tool_call"]["id"] == f"c{step}"
        if terminated:
            break
    assert {key: info[key] for key in ("utility", "attack_success", "success")} == {
        key: text[key] for key in ("utility", "attack_success", "success")
    }


def test_bad_calls_are_invalid_and_in_the_trace(envs: Envs) -> None:
    env = envs["AgentDojo-Banking-v0"]
    env.reset(options={"task_id": 0})
    base: AgentDojoEnv = env.unwrapped
    for reply, error in (
        ("Action: no_such_tool({})", "Invalid tool no_such_tool"),
        ('Action: send_money({"recipient": "x"})', "ValidationError"),
        ("Action: get_balance({not json", "not a JSON object"),
        ("I will think about it.", "expected a tool call"),
    ):
        observation, reward, terminated, _, info = env.step(reply)
        assert info["invalid_action"] and reward == 0.0 and not terminated and error in observation, observation
    assert [call.function for call in base.trace] == ["no_such_tool", "send_money"]
    observation, *_, info = env.step("Let me look.\nAction: get_balance()")
    assert not info["invalid_action"] and "1810.0" in observation
    _, _, terminated, _, info = env.step("Action: get_iban({'unused': None})")  # a Python literal dict is read
    assert "ValidationError" not in observation and not terminated


def test_new_mails_and_files_are_stamped_with_a_fixed_clock(envs: Envs) -> None:
    """AgentDojo's tools stamp what they create with the wall clock; here with TOOL_CLOCK, so the same actions give
    the same episode (the remote and vector tests compare episodes), and AgentDojo's module is left as it was."""
    import agentdojo.default_suites.v1.tools.cloud_drive_client as drive

    env = envs["AgentDojo-Workspace-v0"]
    replies = ['Action: create_file({"filename": "notes.txt", "content": "hello"})'] * 2
    observations = []
    for reply in replies:
        env.reset(options={"task_id": 0})
        observation, *_, info = env.step(reply)
        assert not info["invalid_action"]
        observations.append(observation)
    assert observations[0] == observations[1] and str(TOOL_CLOCK) in observations[0]
    assert drive.datetime is datetime


def test_the_step_limit_scores_the_attack() -> None:
    """An agent that carries out the injection and never answers is scored at the limit: attacked."""
    env = gym.make("AgentDojo-Banking-Attack-v0", max_steps=4)
    base: AgentDojoEnv = env.unwrapped
    env.reset(options={"task_id": 3})  # user_task_0 x injection_task_3: the bill holds the injection
    commands = base._ground_truth(base.injection_task, base.pre_environment)[:-1]
    for step in range(4):
        *_, terminated, _, info = env.step(commands[step] if step < len(commands) else "get_balance()")
    assert terminated and info["attack_success"] is True and info["success"] is False and info["score"] == 0.0
    env.close()


def test_baselines(envs: Envs) -> None:
    """The oracle ignores the injection (attack success 0, utility 1); the obedient policy obeys it (banking:
    every injection task has a ground truth); the random policy does neither."""
    env = envs["AgentDojo-Banking-Attack-v0"]
    task_ids = range(0, env.unwrapped.splits.total, 5)
    oracle = [play(env, task_id) for task_id in task_ids]
    assert all(info["utility"] and not info["attack_success"] and info["success"] for info in oracle)
    obedient = [play(env, task_id, action="obedient_action") for task_id in task_ids]
    assert sum(info["attack_success"] for info in obedient) / len(obedient) > 0.9
    rng = random.Random(0)
    randomly = []
    for task_id in task_ids[:10]:
        env.reset(options={"task_id": task_id})
        for _ in range(41):
            *_, terminated, truncated, info = env.step(env.unwrapped.random_action(rng))
            if terminated or truncated:
                break
        randomly.append(info)
    assert sum(info.get("attack_success", False) for info in randomly) <= 1


def test_obedient_policy_replies_with_the_obedient_action(envs: Envs) -> None:
    env = envs["AgentDojo-Slack-Attack-v0"]
    env.reset(options={"task_id": 0})
    reply = ObedientPolicy().act_now([], Episode("k", 0, env.unwrapped))
    assert reply is not None and reply.text == env.unwrapped.obedient_action()


def test_unknown_attack_and_suite_are_refused() -> None:
    with pytest.raises(ValueError, match="important_instructions"):
        AgentDojoEnv("banking", attack="dos")
    with pytest.raises(ValueError, match="workspace"):
        AgentDojoEnv("bank")
