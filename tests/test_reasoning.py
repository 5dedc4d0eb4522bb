"""The reasoning family (docs/reasoning.md) and the Python interpreter tool it offers (agentgym.sandbox.interpreter).

Scores equal reasoning-gym's own ``score_answer`` on every generator (its answer and a wrong one);
the interpreter keeps state, enforces its limits and recovers from a dead kernel; math-verify judges
equivalent forms equal and wrong answers wrong; users' files of the usual formats load; every new
id keeps the contract.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest

from agentgym.sandbox import Limits, available
from agentgym.utils import check_text_env

reasoning_gym = pytest.importorskip("reasoning_gym")
pytest.importorskip("math_verify")

from agentgym.environments.reasoning.generators import (  # noqa: E402 (after the skips)
    SPLIT_SEED_OFFSETS,
    ReasoningGymEnv,
    curriculum_config,
    generator_names,
    metadata_oracles,
    solution,
)
from agentgym.environments.reasoning.math_env import (  # noqa: E402
    MathEnv,
    MathFileEnv,
    MathSetupError,
    math_equal,
)
from agentgym.sandbox.cgroup import memory_groups  # noqa: E402
from agentgym.sandbox.interpreter import Interpreter  # noqa: E402

needs_bwrap = pytest.mark.skipif(available("bwrap") is not None, reason=str(available("bwrap")))
NEW_IDS = ["ReasoningGym-v0", "ReasoningGym-Python-v0", "Math-v0", "Math-Python-v0"]
#: Items per generator in the score-equality test (the first dev tasks).
ITEMS = 2


# ---- reasoning-gym: every generator scores as reasoning-gym does ----------------------------------


def reference_score(dataset: object, answer: str, item: dict) -> float:
    """reasoning-gym's own score (0 where its scorer raises on the answer)."""
    try:
        return float(dataset.score_answer(answer, item))
    except Exception:  # noqa: BLE001
        return 0.0


@pytest.mark.parametrize("name", generator_names())
def test_scores_equal_reasoning_gyms_own(name: str) -> None:
    env = ReasoningGymEnv(dataset=name)
    dev = env.splits.ids("dev")
    dataset = reasoning_gym.create_dataset(name, seed=SPLIT_SEED_OFFSETS["dev"], size=dev.stop - dev.start)
    try:
        for index in range(ITEMS):
            item = dataset[index]
            expected = solution(item, metadata_oracles().get(name))
            for answer in ([expected] if expected is not None else []) + ["wrong answer 12345"]:
                observation, _ = env.reset(options={"task_id": dev[index]})
                assert str(item["question"]).strip() in observation
                *_, info = env.step(f"Action: answer[{answer}]")
                assert info["score"] == pytest.approx(min(reference_score(dataset, answer, item), 1.0))
            if expected is not None:  # the oracle plays the generator's answer
                env.reset(options={"task_id": dev[index]})
                *_, info = env.step(env.oracle_action())
                assert info["success"], (name, index, expected)
    finally:
        env.close()


def test_config_passes_through_and_bad_names_fail() -> None:
    env = ReasoningGymEnv(dataset="basic_arithmetic", config={"min_terms": 5, "max_terms": 5, "operators": ["+"]})
    observation, _ = env.reset(options={"task_id": 0})
    assert observation.split("\n")[0].count("+") == 4
    with pytest.raises(ValueError, match="unknown reasoning-gym generator"):
        ReasoningGymEnv(dataset="no_such_generator")


def test_generators_are_all_there_while_another_thread_still_imports_reasoning_gym() -> None:
    """Episodes start on threads at once: one that finds reasoning_gym.factory loaded while another thread is still
    importing the package (which fills its registry) waits for it instead of seeing part of the registry."""
    script = """
import sys, threading, time
from agentgym.environments.reasoning.generators import generator_names
seen = []
def importer():
    import reasoning_gym
def reader():
    while "reasoning_gym.factory" not in sys.modules:
        time.sleep(0.0005)
    seen.append(len(generator_names()))
threads = [threading.Thread(target=importer), threading.Thread(target=reader)]
[thread.start() for thread in threads]
[thread.join() for thread in threads]
print(seen[0], len(generator_names()))
"""
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    during, after = shown.stdout.split()
    assert during == after and int(after) > 100


def test_curriculum_levels_are_reasoning_gyms() -> None:
    """level= plays the generator at its curriculum's level; config= entries override it; every generator with a
    curriculum gives a config its own config class takes."""
    easy, hard = (ReasoningGymEnv(dataset="basic_arithmetic", level=level) for level in (0, 2))
    assert json.loads(easy.config_json)["max_terms"] < json.loads(hard.config_json)["max_terms"]
    hard_item = hard._item(hard.splits.ids("test")[0])
    assert hard_item["metadata"]["num_terms"] <= json.loads(hard.config_json)["max_terms"]
    override = ReasoningGymEnv(dataset="basic_arithmetic", level=2, config={"max_terms": 2, "min_terms": 2})
    assert json.loads(override.config_json)["max_terms"] == 2
    with pytest.raises(ValueError, match="no curriculum"):
        curriculum_config("composite", 1)
    for name in generator_names():
        if reasoning_gym.factory.has_curriculum(name):
            config_class = reasoning_gym.factory.DATASETS[name][1]
            config_class(**curriculum_config(name, 1))


def test_answers_in_tags_and_several_lines() -> None:
    env = ReasoningGymEnv(dataset="rotate_matrix")
    env.reset(options={"task_id": 10_000})
    answer = env.expected_answer()
    assert answer is not None and "\n" in answer
    *_, info = env.step(f"Thinking...\n<answer>\n{answer}\n</answer>")
    assert info["success"]


def test_a_flexible_env_reads_a_prose_reply_as_its_last_number() -> None:
    config = {"min_terms": 2, "max_terms": 2, "min_digits": 4, "max_digits": 4, "operators": ["+"]}
    strict = ReasoningGymEnv(config=config)
    flexible = ReasoningGymEnv(config=config, flexible_answer=True)
    for env in (strict, flexible):
        env.reset(options={"task_id": 10_000})
    answer = flexible.expected_answer()
    assert answer is not None and answer == strict.expected_answer()
    prose = f"First the thousands, 1000 + 3000 = 4000, then the rest: the sum is {int(answer):,}."  # 12,345
    assert strict.step(prose)[-1]["invalid_action"]
    *_, info = flexible.step(prose)
    assert info["success"] and flexible.last_answer == answer
    flexible.reset(options={"task_id": 10_000})
    assert not flexible.step(f"answer[{int(answer) + 1}] (not {answer})")[-1]["success"]  # the format comes first
    flexible.reset(options={"task_id": 10_000})
    assert flexible.step("I cannot add these.")[-1]["invalid_action"]
    assert "last number" in flexible.action_syntax and "last number" not in strict.action_syntax


# ---- the interpreter -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def python() -> Iterator[Interpreter]:
    if available("bwrap") is not None:
        pytest.skip(str(available("bwrap")))
    with Interpreter(Limits(wall_s=1.0, cpu_s=1.0, memory_mb=256, output_bytes=1000)) as interpreter:
        yield interpreter


def test_state_persists_across_cells(python: Interpreter) -> None:
    assert python.run("import math\nx = math.factorial(10)\ndef double(n):\n    return 2 * n").status == "ok"
    result = python.run("double(x)")
    assert (result.status, result.output) == ("ok", "7257600\n")
    assert python.run("print('a'); import sys; print('b', file=sys.stderr); print('c')").output == "a\nb\nc\n"
    error = python.run("1 / 0")
    assert error.status == "error" and "ZeroDivisionError" in error.output and "<cell" in error.output


def test_limits_are_enforced(python: Interpreter) -> None:
    python.run("kept = 41")
    started = time.monotonic()
    assert python.run("while True:\n    pass").status == "time"
    assert time.monotonic() - started < 1.0 + 1.5
    assert python.run("sum(i * i for i in range(10**9))").status in ("time", "cpu")
    assert python.run("block = bytearray(512 * 2**20)").status == "memory"
    big = python.run("print('x' * 100_000)")
    assert big.status == "ok" and big.omitted > 98_000 and len(big.output) < 1100
    assert python.run("kept + 1").output == "42\n"  # interrupted cells leave the session as it was


def test_a_dead_kernel_is_replaced(python: Interpreter) -> None:
    python.run("before = 1")
    starts = python.starts
    died = python.run("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert died.status == "died" and "SIGKILL" in died.reason
    assert "NameError" in python.run("before").output
    assert python.starts == starts + 1
    stubborn = python.run(
        "import time\nwhile True:\n    try:\n        time.sleep(60)\n    except BaseException:\n        pass"
    )
    assert stubborn.status == "died" and "stopped" in stubborn.reason
    assert python.run("1 + 1").output == "2\n"


def test_a_cell_filling_the_work_dir_is_stopped_at_the_disk_quota() -> None:
    if available("bwrap") is not None:
        pytest.skip(str(available("bwrap")))
    limits = Limits(wall_s=20.0, cpu_s=20.0, memory_mb=256, file_size_mb=8, disk_mb=24)
    with Interpreter(limits) as interpreter:
        started = time.monotonic()
        filled = interpreter.run(
            "i = 0\nwhile True:\n    with open(f'fill{i}', 'wb') as out:\n        out.write(bytes(4 << 20))\n    i += 1"
        )
        assert filled.status == "died" and "24 MB disk quota" in filled.reason, filled
        assert time.monotonic() - started < 15
        # The files stay; a fresh kernel may delete them (it does not grow the work dir).
        cleaned = interpreter.run("import os\nfor name in os.listdir('.'):\n    os.remove(name)\nlen(os.listdir('.'))")
        assert (cleaned.status, cleaned.output) == ("ok", "0\n"), cleaned


def test_a_cell_whose_processes_pass_the_memory_of_the_run_together_is_stopped() -> None:
    if available("bwrap") is not None or isinstance(memory_groups(), str):
        pytest.skip(str(available("bwrap") or memory_groups()))
    limits = Limits(wall_s=20.0, cpu_s=20.0, memory_mb=256, processes=16, run_memory_mb=300)
    with Interpreter(limits) as interpreter:
        forked = interpreter.run(
            "import os, time\nfor _ in range(4):\n    if os.fork() == 0:\n        x = bytearray(150 << 20)\n"
            "        time.sleep(3)\n        os._exit(0)\nx = bytearray(150 << 20)\ntime.sleep(4)"
        )
        # The OOM killer ends the largest: the kernel (died), or children only (the cell's status is memory).
        assert forked.status in ("died", "memory") and "more than 300 MB together" in forked.reason, forked
        assert interpreter.run("1 + 1").output == "2\n"


def test_a_session_outlives_the_thread_that_started_it(python: Interpreter) -> None:
    """bwrap dies with the thread that forked it: kernels are spawned from one long-lived thread."""
    python.restart()
    thread = threading.Thread(target=python.run, args=("from_thread = 7",))
    thread.start()
    thread.join()
    assert python.run("from_thread").output == "7\n"


@needs_bwrap
def test_the_env_runs_code_and_says_when_the_interpreter_died() -> None:
    with gym.make("Math-Python-v0") as env:
        env.reset(options={"task_id": 5})
        observation, reward, terminated, _, info = env.step("```python\nfrom fractions import Fraction as F\n```")
        assert not terminated and not info["invalid_action"] and reward == 0
        call = {"id": "c1", "type": "function", "function": {"name": "python", "arguments": '{"code": "F(1, 3) * 3"}'}}
        observation, *_, info = env.step(call)
        assert "Fraction(1, 1)" in observation and info["tool_call"]["name"] == "python"
        observation, *_ = env.step("Action: python\nimport os\nos._exit(1)")
        assert "interpreter died" in observation and "fresh interpreter" in observation
        observation, *_ = env.step("```python\nF\n```")
        assert "NameError" in observation
        *_, terminated, _, info = env.step(env.unwrapped.oracle_action())
        assert terminated and info["success"]
        env.reset(options={"task_id": 5})  # a new episode: a fresh session
        assert "NameError" in env.step("```python\nF\n```")[0]


def test_single_turn_ids_run_no_code() -> None:
    with gym.make("ReasoningGym-v0") as env:
        env.reset(options={"task_id": 0})
        assert [tool["function"]["name"] for tool in env.unwrapped.tools()] == ["answer"]
        *_, truncated, info = env.step("```python\nprint(1)\n```")
        assert info["invalid_action"] and truncated


# ---- math-verify judging and the user's files -----------------------------------------------------


@pytest.mark.parametrize(
    ("reference", "answer", "equal"),
    [
        ("\\frac{1}{2}", "0.5", True),
        ("\\frac{1}{2}", "1/2", True),
        ("\\frac{1}{2}", "\\dfrac{2}{4}", True),
        ("0.5", "\\frac{1}{2}", True),
        ("72", "72.0", True),
        ("1234", "1,234", True),
        ("\\frac{1}{2}", "0.6", False),
        ("72", "27", False),
        ("3", "10^{10^{10}}", False),
        ("3", "", False),
        ("3", "not a number", False),
    ],
)
def test_math_verify_judges(reference: str, answer: str, equal: bool) -> None:
    started = time.monotonic()
    assert math_equal(reference, answer) is equal
    assert time.monotonic() - started < 5


def test_math_answers_in_boxed_and_final_lines() -> None:
    env = MathEnv()
    env.reset(options={"task_id": 0})
    answer = env.reference
    assert env.step(f"So the result is \\boxed{{{answer}}}.")[-1]["success"]
    env.reset(options={"task_id": 0})
    assert env.step(f"Some reasoning.\nFinal answer: {answer}")[-1]["success"]
    env.reset(options={"task_id": 0})
    assert not env.step("Final answer: -999999")[-1]["success"]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_user_files_in_the_usual_formats(tmp_path: Path) -> None:
    gsm8k = write_jsonl(
        tmp_path / "gsm8k.jsonl",
        [{"question": "Tom has 3 apples and buys 4 more. How many?", "answer": "3 + 4 = <<3+4=7>>7\n#### 7"}],
    )
    math = write_jsonl(
        tmp_path / "math.jsonl",
        [{"problem": "What is $1/4 + 1/4$?", "solution": "Adding, we get $\\boxed{\\frac{1}{2}}$."}],
    )
    dapo = write_jsonl(
        tmp_path / "dapo.jsonl",
        [
            {
                "prompt": [{"role": "user", "content": "Compute 2^5."}],
                "reward_model": {"ground_truth": "32", "style": "rule"},
            }
        ],
    )
    with pytest.raises(MathSetupError, match="no field"):  # MATH's fields are problem and solution
        MathFileEnv(train=gsm8k, dev=math)
    env = MathFileEnv(test=math, question_field="problem", answer_field="solution")
    observation, _ = env.reset(options={"task_id": 0})
    assert "1/4 + 1/4" in observation
    assert env.step("Action: answer[0.5]")[-1]["success"]
    env = MathFileEnv(train=dapo, question_field="prompt", answer_field="reward_model.ground_truth")
    assert "2^5" in env.reset(options={"task_id": 0})[0]
    assert env.step("\\boxed{32}")[-1]["success"]
    env = MathFileEnv(train=gsm8k, test=gsm8k)
    assert env.splits.counts() == {"train": 1, "dev": 0, "test": 1}
    env.reset(options={"task_id": 1})
    assert env.step("<answer>7</answer>")[-1]["success"]
    with pytest.raises(MathSetupError, match="give train="):
        MathFileEnv()


def test_user_parquet_files(tmp_path: Path) -> None:
    parquet = pytest.importorskip("pyarrow.parquet")
    import pyarrow

    path = tmp_path / "aime.parquet"
    parquet.write_table(pyarrow.table({"problem": ["Find 6 * 7."], "answer": ["42"]}), path)
    env = MathFileEnv(test=path, question_field="problem")
    env.reset(options={"task_id": 0})
    assert env.step("Action: answer[42]")[-1]["success"]


# ---- the contract ---------------------------------------------------------------------------------


@needs_bwrap
@pytest.mark.parametrize("env_id", NEW_IDS)
def test_contract(env_id: str) -> None:
    with gym.make(env_id) as env:
        report = check_text_env(env, oracle_tasks=20)
    assert "oracle" in report.checked
