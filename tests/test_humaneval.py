"""HumanEval-v0: the problems, the splits, the feedback, the attempts, and the oracle on all 164 problems."""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import agentgym
from agentgym.environments.code.humaneval import (
    HumanEvalEnv,
    extract_code,
    fenced,
    load_problems,
    split_order,
    task_id_of,
)
from agentgym.sandbox import available

ENV_ID = "HumanEval-v0"
#: HumanEval/0 is task 0 (train); HumanEval/38 (decode_cyclic, tests draw random inputs) is task 9.
CLOSE_ELEMENTS, CYCLIC = task_id_of(0), task_id_of(38)
DOCKER_PROBLEM = available("docker")


def make(**kwargs: object) -> gym.Env:
    return gym.make(ENV_ID, **kwargs)


def submit(env: gym.Env, body: str, header: str | None = None) -> tuple:
    """Submit ``header`` (default: the prompt's signature line) plus ``body`` as a fenced block."""
    base = env.unwrapped
    if header is None:
        header = base.problem.prompt
    return env.step(f"Here is my solution:\n{fenced(header + body)}\nI hope it works.")


def test_registered_with_metadata() -> None:
    info = agentgym.env_info(ENV_ID)
    assert info.family == "code" and info.max_episode_steps == 10
    assert info.splits.counts() == {"train": 64, "dev": 20, "test": 80} and info.splits.total == 164


def test_check_env_passes() -> None:
    check_env(make().unwrapped)
    check_env(make(render_mode="ansi").unwrapped)


def test_164_problems_and_a_fixed_partition_into_splits() -> None:
    problems = load_problems()
    assert len(problems) == 164 and problems[0].problem_id == "HumanEval/0"
    assert problems is load_problems()  # read once per process
    order = split_order()
    assert sorted(order) == list(range(164))
    assert hashlib.sha256(str(order).encode()).hexdigest()[:16] == "36f61caeda048f57"  # the partition never changes
    splits = agentgym.env_info(ENV_ID).splits
    for split in ("train", "dev", "test"):
        numbers = [order[task_id] for task_id in splits.ids(split)]
        assert numbers == sorted(numbers)
    assert task_id_of(0) == 0 and order[task_id_of(163)] == 163


def test_first_observation_holds_the_prompt_and_the_reply_format() -> None:
    env = make()
    observation, info = env.reset(options={"task_id": CLOSE_ELEMENTS})
    problem = env.unwrapped.problem
    assert problem.prompt.strip() in observation and "```python" in observation
    assert "last code block" in observation and "3 attempts" in observation
    assert info["problem_id"] == "HumanEval/0" and info["entry_point"] == "has_close_elements"
    assert info["attempts"] == 0 and info["passed_at_attempt"] is None and info["outcomes"] == []


def test_oracle_passes_every_problem_within_a_minute() -> None:
    """The canonical solution of each of the 164 problems passes its tests (8 envs in threads)."""
    local = threading.local()

    def play(task_id: int) -> tuple[int, bool, str]:
        if not hasattr(local, "env"):
            local.env = make()
        env = local.env
        env.reset(options={"task_id": task_id})
        _, reward, terminated, _, info = env.step(env.unwrapped.oracle_action())
        assert terminated and reward == 1.0 and info["passed_at_attempt"] == 1
        return task_id, info["success"], info["test_output"]

    start = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(play, range(164)))
    elapsed = time.monotonic() - start
    print(f"oracle on 164 HumanEval problems: {elapsed:.1f} s")
    failures = [(task_id, output) for task_id, success, output in results if not success]
    assert not failures, failures[:3]
    assert elapsed < 60


def test_wrong_answers_use_attempts_and_say_why() -> None:
    env = make()
    env.reset(options={"task_id": CLOSE_ELEMENTS})
    observation, reward, terminated, _, info = submit(env, "    return False\n")
    assert (reward, terminated, info["attempts"], info["outcome"]) == (0.0, False, 1, "failed")
    assert "A test failed:\n    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True" in observation
    assert "candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) returned False" in observation
    assert "2 attempts left" in observation and info["test_output"] in observation

    observation, reward, terminated, _, info = submit(env, "    return numbers[99] < threshold\n")
    assert info["outcome"] == "error" and not terminated
    assert 'File "solution.py", line 12, in has_close_elements' in observation
    assert "IndexError: list index out of range" in observation

    observation, reward, terminated, _, info = submit(env, "    return (\n", header="def has_close_elements(n, t):\n")
    assert info["outcome"] == "syntax_error" and "Your code has a syntax error" in observation
    assert terminated and reward == 0.0 and info["score"] == 0.0 and not info["success"]
    assert info["outcomes"] == ["failed", "error", "syntax_error"] and info["passed_at_attempt"] is None
    assert "No attempts left" in observation


def test_passing_on_a_later_attempt() -> None:
    env = make(max_attempts=2)
    env.reset(options={"task_id": CLOSE_ELEMENTS})
    observation, reward, terminated, _, info = submit(env, "    return True\n")
    assert not terminated and info["outcome"] == "failed" and "1 attempt left" in observation
    observation, reward, terminated, _, info = env.step(env.unwrapped.oracle_action())
    assert reward == 1.0 and terminated and info["success"] and info["passed"]
    assert info["passed_at_attempt"] == 2 and info["outcomes"] == ["failed", "passed"]
    assert "All tests passed" in observation


def test_replies_without_the_function_are_invalid_and_use_no_attempt() -> None:
    env = make()
    env.reset(options={"task_id": CLOSE_ELEMENTS})
    for reply in ("I don't know.", "```python\nprint('hello')\n```", "def other(x):\n    return x"):
        observation, reward, terminated, _, info = env.step(reply)
        assert info["invalid_action"] and reward == 0.0 and not terminated and info["attempts"] == 0
        assert "does not define the function `has_close_elements`" in observation


def test_helpers_of_the_prompt_are_available_to_the_submission() -> None:
    """decode_cyclic's tests call encode_cyclic, defined in the prompt: a reply with decode_cyclic alone passes."""
    env = make()
    env.reset(options={"task_id": CYCLIC})
    _, reward, _, _, info = submit(
        env, "    return encode_cyclic(encode_cyclic(s))\n", header="def decode_cyclic(s):\n"
    )
    assert reward == 1.0 and info["success"]


def test_failures_on_random_inputs_are_reported_with_their_inputs_deterministically() -> None:
    env = make()
    runs = []
    for _ in range(2):
        env.reset(options={"task_id": CYCLIC})
        runs.append(submit(env, "    return s[::-1]\n", header="def decode_cyclic(s):\n"))
    assert runs[0] == runs[1]
    observation = runs[0][0]
    assert "assert candidate(encoded_str) == str" in observation and "where encoded_str = '" in observation


def test_timeouts_are_reported_with_the_test_that_was_running() -> None:
    env = make(timeout_s=1)
    env.reset(options={"task_id": CLOSE_ELEMENTS})
    observation, _, _, _, info = submit(env, "    while True:\n        pass\n")
    assert info["outcome"] == "timeout" and "Time limit exceeded" in observation
    assert "assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True" in observation
    assert "It was running line" in observation
    observation, _, _, _, info = env.step(
        "```python\ndef has_close_elements(n, t):\n    pass\nwhile True:\n    pass\n```"
    )
    assert info["outcome"] == "timeout" and "when it was loaded" in observation


def test_a_submission_swallowing_the_alarm_still_times_out() -> None:
    env = make(timeout_s=1)
    env.reset(options={"task_id": CLOSE_ELEMENTS})
    body = (
        "    while True:\n        try:\n            while True:\n                pass\n        except BaseException:\n"
    )
    observation, _, _, _, info = submit(env, body + "            pass\n")
    assert info["outcome"] == "timeout" and "Time limit exceeded" in observation


@pytest.mark.parametrize(
    "body",
    [
        "    import sys\n    sys.exit(0)\n",
        "    import os\n    os._exit(0)\n",
        "    raise SystemExit(0)\n",
        "    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n",
        "    print('All tests passed.')\n    import os\n    os._exit(0)\n",
    ],
    ids=["sys.exit", "os._exit", "SystemExit", "SIGKILL", "fake-message"],
)
def test_exiting_early_never_passes(body: str) -> None:
    env = make()
    env.reset(options={"task_id": CLOSE_ELEMENTS})
    observation, reward, _, _, info = submit(env, body)
    assert reward == 0.0 and not info["success"] and info["outcome"] == "error", observation


def test_files_written_by_a_submission_do_not_survive_it() -> None:
    env = make()
    env.reset(options={"task_id": CLOSE_ELEMENTS})
    body = "    import os\n    seen = os.path.exists('note')\n    open('note', 'w').write('x')\n    return seen\n"
    first = submit(env, body)
    assert (env.unwrapped.sandbox().workdir / "note").exists()
    env.reset(options={"task_id": CLOSE_ELEMENTS})
    assert submit(env, body) == first  # the second run did not see the first run's note


def test_printed_output_is_shown_with_a_failure() -> None:
    env = make()
    env.reset(options={"task_id": CLOSE_ELEMENTS})
    observation, *_ = submit(env, "    print('debug:', numbers)\n    return False\n")
    assert "Your code printed:\ndebug: [1.0, 2.0, 3.9, 4.0, 5.0, 2.2]" in observation


HOSTILE_SUBMISSIONS = [
    "def has_close_elements(",
    "def has_close_elements(x):\n" + "(" * 100_000,
    "def has_close_elements(x):\n    return " + "1+" * 100_000 + "1",
    "def has_close_elements(x):\n    return '\x00'\n\x00",
    "def has_close_elements(x):\n    return '\ud800'",
    "def has_close_elements(x, y):\n    print('x' * 10**7)",
    "def has_close_elements(x, y):\n    return bytearray(10**10)",
    "def has_close_elements(x, y):\n    return has_close_elements(x, y)",
    "def has_close_elements(x, y):\n    raise KeyboardInterrupt",
    "import os\nos.close(1)\ndef has_close_elements(x, y):\n    return True",
    "import sys\nsys.stdout = None\ndef has_close_elements(x, y):\n    return True",
    "def has_close_elements(x, y):\n    class Bad:\n        def __eq__(self, o): raise ValueError\n"
    "        def __repr__(self): raise ValueError\n    return Bad()",
    "def has_close_elements(x, y):\n    import os\n    while True:\n        os.fork()",
]


@pytest.mark.parametrize("code", HOSTILE_SUBMISSIONS, ids=range(len(HOSTILE_SUBMISSIONS)))
def test_hostile_or_broken_submissions_never_raise(code: str) -> None:
    env = make(timeout_s=2)
    env.reset(options={"task_id": CLOSE_ELEMENTS})
    observation, reward, terminated, truncated, info = env.step(fenced(code))
    assert isinstance(observation, str) and env.observation_space.contains(observation)
    assert reward == 0.0 and not info["success"] and info["outcome"] in ("error", "failed", "timeout", "syntax_error")
    json.dumps({"observation": observation, "info": info})


def test_extract_code() -> None:
    assert extract_code("a\n```python\nx = 1\n```\nb\n```py\ny = 2\n```\nc") == "y = 2"
    assert extract_code("```\nz = 3\n```") == "z = 3"
    assert extract_code("Action: ```python\nw = 4\n```") == "w = 4"
    assert extract_code("text\n```python\ndef f():\n    return 1") == "def f():\n    return 1"  # cut off
    assert extract_code("<think>```python\nwrong\n```</think>def f(): pass") == "def f(): pass"
    assert extract_code("def f():\n    pass\n\n") == "def f():\n    pass"
    assert extract_code("```" * 100_000) == "```" * 100_000  # no block: the whole reply, in linear time


def test_same_replies_give_the_same_episode() -> None:
    def episode() -> list:
        env = make()
        rng = random.Random(7)
        transitions = [env.reset(seed=3, options={"task_id": 84})]
        for _ in range(3):
            transitions.append(env.step(env.unwrapped.random_action(rng)))
        env.close()
        return transitions

    assert episode() == episode()


def test_random_baseline_is_deterministic_and_rarely_passes() -> None:
    env = make(max_attempts=1)
    passed = 0
    for task_id in range(0, 164, 8):
        env.reset(options={"task_id": task_id})
        replies = [env.unwrapped.random_action(random.Random(task_id)) for _ in range(2)]
        assert replies[0] == replies[1] and replies[0].startswith("```python\n")
        passed += env.step(replies[0])[4]["success"]
    assert passed <= 2


def test_close_removes_the_sandbox() -> None:
    env = make()
    env.reset(options={"task_id": 0})
    env.step(env.unwrapped.oracle_action())
    sandbox = env.unwrapped._sandbox
    assert sandbox is not None and sandbox.workdir.exists()
    env.close()
    assert sandbox.closed and not sandbox.workdir.exists()


def test_bad_configuration_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        HumanEvalEnv(max_attempts=0)
    with pytest.raises(ValueError, match="timeout_s"):
        HumanEvalEnv(timeout_s=0)


@pytest.mark.skipif(bool(DOCKER_PROBLEM), reason=f"docker: {DOCKER_PROBLEM}")
def test_docker_backend_gives_the_same_feedback() -> None:
    observations = []
    for backend in ("bwrap", "docker"):
        env = make(sandbox_backend=backend)
        env.reset(options={"task_id": CLOSE_ELEMENTS})
        observations.append(submit(env, "    return False\n")[0])
        _, reward, *_ = env.step(env.unwrapped.oracle_action())
        assert reward == 1.0
        env.close()
    assert observations[0] == observations[1]
