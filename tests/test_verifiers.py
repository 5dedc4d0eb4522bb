"""agentgym envs as verifiers (0.4) environments, run by verifiers' own eval entry point against ``serve-model``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verifiers.v1", reason="needs the verifiers extra (Python >= 3.11)")
pytest.importorskip("fastapi")

import gymnasium as gym  # noqa: E402
from asgi import serving_in_thread  # noqa: E402

from agentgym.contract.registry import env_info  # noqa: E402
from agentgym.llm.generation import Generator  # noqa: E402
from agentgym.llm.serve_model import create_app  # noqa: E402

MODEL = "tiny-llama"


def test_load_environment_lists_the_split_tasks() -> None:
    from agentgym.integrations.verifiers import AgentGymEnv, load_environment

    env = load_environment("Sokoban-v0", num_tasks=3, split="dev", max_turns=2)
    assert isinstance(env, AgentGymEnv)
    tasks = list(env.taskset)
    assert [task.data.task_id for task in tasks] == list(env_info("Sokoban-v0").splits.ids("dev")[:3])
    assert {task.data.max_turns for task in tasks} == {2} and all(task.data.prompt is None for task in tasks)
    with pytest.raises(Exception, match="Sokobn"):
        load_environment("Sokobn-v0")


@pytest.fixture(scope="module")
def bin_path() -> str:
    """``PATH`` with this environment's scripts first (``vf-eval``, ``uv``)."""
    path = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    if shutil.which("uv", path=path) is None:
        pytest.skip("verifiers' null harness prepares its chat program with uv: pip install uv")
    return path


def test_vf_eval_finds_the_installed_taskset_package() -> None:
    """verifiers' own loader resolves the id to the top-level module the agentgym distribution installs."""
    from verifiers.v1.utils.loaders import environment_class, taskset_class

    from agentgym.integrations.verifiers import TASKSET_ID, AgentGymEnv, AgentGymTaskset

    assert taskset_class(TASKSET_ID) is AgentGymTaskset
    assert environment_class(TASKSET_ID) is AgentGymEnv


def test_vf_eval_plays_agentgym_tasks_against_serve_model(
    tiny_model_with_long_context_path: Path, tmp_path: Path, bin_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentgym.integrations.verifiers import prepare_chat_program

    # Ahead of the run (this step may download the chat program's dependencies once) ...
    monkeypatch.setenv("PATH", bin_path)
    (script,) = prepare_chat_program()
    assert script.with_name(script.name + ".lock").is_file()
    # ... so that the run itself reaches no index: every proxy is a closed port, loopback excepted.
    dead = "http://127.0.0.1:9"
    proxies = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
    offline = {name: dead for name in proxies}
    offline |= {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    app = create_app(Generator.from_pretrained(tiny_model_with_long_context_path, device="cpu"), MODEL)
    num_tasks, max_turns = 2, 2
    with serving_in_thread(app) as url:
        # verifiers' own console script, as its users run it.
        command = [str(Path(sys.executable).with_name("vf-eval")), "agentgym-verifiers"]
        command += ["--env.taskset.env", "Sokoban-v0", "--env.taskset.num-tasks", str(num_tasks)]
        command += ["--env.taskset.max-turns", str(max_turns), "--model", MODEL, "--client.base-url", url + "/v1"]
        command += ["--sampling.max-tokens", "12", "--sampling.temperature", "1.0", "--no-push", "--no-rich"]
        command += ["-o", str(tmp_path), "--run.dir", "run"]
        environment = {**os.environ, **offline, "PATH": bin_path}
        done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-4000:]
    episodes = [json.loads(line) for line in (tmp_path / "run" / "traces.jsonl").read_text().splitlines()]
    assert len(episodes) == num_tasks
    played = set()
    for episode in episodes:
        (trace,) = episode["traces"]
        assert trace["ok"] and not trace["errors"], trace["errors"]
        data = trace["task"]["data"]
        played.add(data["task_id"])
        messages = [node["message"] for node in trace["nodes"]]
        assert messages[0]["role"] == "system" and "Action:" in messages[0]["content"]
        observations = [m["content"] for m in messages if m["role"] == "user"]
        replies = [m["content"] or "" for m in messages if m["role"] == "assistant"]
        assert len(replies) == max_turns and trace["stop_condition"] == "max_turns"
        # Replay the episode locally with the model's replies: same observations, same score.
        env = gym.make("Sokoban-v0")
        observation, info = env.reset(options={"task_id": data["task_id"]})
        seen = [observation]
        for reply in replies:
            observation, _, terminated, truncated, info = env.step(reply.strip())
            seen.append(observation)
        env.close()
        assert observations == seen[: len(observations)] and len(observations) == max_turns
        assert trace["rewards"] == {"score": {"score": info["score"], "weight": 1.0}}
        assert trace["metrics"] == {"success": float(info["success"]), "steps": float(max_turns)}
        assert trace["info"]["agentgym"]["task_id"] == data["task_id"]
    assert played == set(env_info("Sokoban-v0").splits.ids("test")[:num_tasks])
