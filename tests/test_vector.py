"""Gymnasium vector envs (``gym.make_vec``) on one id of every family, sync and async with shared memory
(each family in one of the two modes a run, in turn).

Each sub-env of a vector env must play exactly what a plain ``gym.make`` env plays with the
same seed and actions (the oracle's), autoreset included; observations travel through
:mod:`agentgym.contract.vector`'s shared memory in async mode.
"""

from __future__ import annotations

import copy
import functools
import multiprocessing
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from episodes import in_turn
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

import agentgym
from agentgym.browser.page import CHROMIUM
from agentgym.contract.core import UnicodeText, observation_text
from agentgym.contract.vector import SharedTextBatch
from agentgym.sandbox import available

DESKTOP_TOOLS = ("Xvfb", "openbox", "xdotool", "wmctrl", "xterm", "mousepad", "pcmanfm", "gnumeric", "ssconvert")


def _missing(family: str) -> str | None:
    """Why a family's system components are missing here (as its own tests skip), or None."""
    if family in ("miniwob", "webshop-browser") and not Path(CHROMIUM).exists():
        return "needs Debian's chromium"
    if family == "desktop" and [tool for tool in DESKTOP_TOOLS if shutil.which(tool) is None]:
        return "missing desktop programs (containers/setup-host.sh)"
    if family == "scienceworld" and subprocess.run(["which", "java"], capture_output=True).returncode != 0:
        return "no Java runtime"
    if family in ("code", "swe") and available("bwrap") is not None:
        return f"no bwrap sandbox: {available('bwrap')}"
    return None


#: One id per family (with the kwargs that make its observation a dict where it has one), and
#: how many sub-envs: two where each sub-env is a browser, a desktop or a JVM.
CASES: dict[str, tuple[str, dict[str, Any], int]] = {
    "sokoban": ("Sokoban-v0", {}, 4),
    "frozenlake": ("FrozenLake-v0", {"is_slippery": True}, 4),
    "maze": ("Maze-Partial-v0", {}, 4),
    "wordle": ("Wordle-v0", {}, 4),
    "multiagent": ("KuhnPoker-vs-Nash-v0", {}, 4),
    "textarena": ("TextArena-TicTacToe-vs-Random-v0", {}, 4),
    "openspiel": ("OpenSpiel-Hanabi-vs-Random-v0", {}, 4),
    "textcraft": ("TextCraft-Depth1-v0", {}, 4),
    "babyai": ("BabyAI-Text-GoToLocal-v0", {}, 4),
    "household": ("Household-v0", {}, 4),
    "webshop": ("WebShop-v0", {}, 2),
    "search": ("Search-Easy-v0", {}, 2),
    "reasoning": ("ReasoningGym-Python-v0", {}, 4),
    "agentdojo": ("AgentDojo-Banking-Attack-v0", {}, 2),
    "code": ("Bash-v0", {}, 2),
    "swe": ("SWE-v0", {}, 2),
    "textworld": ("TextWorld-Cooking-Easy-v0", {}, 2),
    "alfworld": ("ALFWorld-v0", {}, 2),
    "scienceworld": ("ScienceWorld-v0", {}, 2),
    "miniwob": ("MiniWoB-click-button-v0", {"screenshot": True}, 2),
    "grounding": ("Grounding-v0", {}, 4),
    "webshop-browser": ("WebShop-Browser-v0", {}, 2),
    "desktop": ("Desktop-v0", {}, 2),
    "webapps": ("WebApps-Wiki-v0", {}, 2),
}
STEPS = 3
#: Families whose sub-envs are compared on fewer steps: real web apps put their own clock and transient
#: notices into pages an action opens (docs/webapps.md), so they are compared on the reset.
FEWER_STEPS = {"webapps": 0}
#: Families played with random legal moves instead of the oracle's: a game's oracle draws from the
#: opponent's generator, so calling it on the plain env alone would change that env's opponent.
RANDOM_MOVES = {"multiagent", "textarena", "openspiel"}
SEED = 7


def test_every_family_has_a_case() -> None:
    families = {info.family for info in agentgym.list_envs()}
    assert families == {agentgym.env_info(case[0]).family for case in CASES.values()}


@functools.cache
def plain_episodes(family: str) -> tuple[list[tuple], ...]:
    """For each sub-env of the family's case, what one plain env plays from the same seed: its reset and
    ``STEPS`` oracle (or random) steps, with the vector env's next-step autoreset after an episode ends;
    ``(action, observation, reward, terminated, truncated, info)`` each, the action None for the reset.
    Computed once for both modes, on one env (reset makes it as good as new)."""
    env_id, kwargs, num_envs = CASES[family]
    episodes = []
    with gym.make(env_id, **kwargs) as env:
        for index in range(num_envs):
            moves = random.Random(index)
            observation, info = env.reset(seed=SEED + index)
            transitions = [(None, observation, 0.0, False, False, info)]
            for _ in range(FEWER_STEPS.get(family, STEPS)):
                if transitions[-1][3] or transitions[-1][4]:  # next-step autoreset: the action is ignored
                    observation, info = env.reset()
                    transitions.append(("ignored", observation, 0.0, False, False, info))
                else:
                    base = env.unwrapped
                    action = base.random_action(moves) if family in RANDOM_MOVES else base.oracle_action()
                    transitions.append((action, *env.step(action)))
            episodes.append(transitions)
    return tuple(episodes)


def sub_observation(observations: Any, index: int) -> Any:
    """Sub-env ``index``'s item of a batch of observations (a tuple of str, or a dict of batches)."""
    if isinstance(observations, dict):
        return {key: value[index] for key, value in observations.items()}
    return observations[index]


def assert_same_observation(vector: Any, plain: Any) -> None:
    assert observation_text(vector) == observation_text(plain)
    assert isinstance(vector, dict) == isinstance(plain, dict)
    if isinstance(plain, dict):
        assert vector.keys() == plain.keys()
        for key, value in plain.items():
            if isinstance(value, np.ndarray):  # screenshots may differ by a pixel between two browsers
                assert vector[key].shape == value.shape and vector[key].dtype == value.dtype


def unbatch(infos: dict[str, Any], index: int) -> dict[str, Any]:
    """Sub-env ``index``'s info from a vector env's batched infos (``key`` plus its mask ``_key``)."""
    info = {}
    for key, value in infos.items():
        if not key.startswith("_") and infos[f"_{key}"][index]:
            info[key] = unbatch(value, index) if isinstance(value, dict) else value[index]
    return info


def plain(value: Any) -> Any:
    """``value`` with numpy values as Python ones and tuples as lists, for comparing."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return plain(value.tolist())
    return value


MODES = ["sync", "async"]
#: Each family in one vectorization mode a run, the modes in turn (half the families in each mode): both modes of
#: every family within 2 days, or in one run with AGENTGYM_TEST_SAMPLE=all.
VECTOR_CASES = [
    (family, mode)
    for index, family in enumerate(sorted(CASES))
    for mode in in_turn(MODES[index % 2 :] + MODES[: index % 2], len(MODES))
]


@pytest.mark.usefixtures("alfworld_data")
@pytest.mark.parametrize(("family", "mode"), VECTOR_CASES)
def test_make_vec_sub_envs_play_as_plain_envs(family: str, mode: str) -> None:
    reason = _missing(family)
    if reason:
        pytest.skip(reason)
    env_id, kwargs, num_envs = CASES[family]
    expected = plain_episodes(family)
    envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, **kwargs)
    try:
        assert envs.single_observation_space == gym.make(env_id, **kwargs).observation_space
        observations, infos = envs.reset(seed=SEED)
        for index in range(num_envs):
            assert_same_observation(sub_observation(observations, index), expected[index][0][1])
            assert plain(unbatch(infos, index)) == plain(expected[index][0][5])
        for step in range(1, FEWER_STEPS.get(family, STEPS) + 1):
            actions = [expected[index][step][0] for index in range(num_envs)]
            observations, rewards, terminated, truncated, infos = envs.step(actions)
            for index in range(num_envs):
                _, observation, reward, done, cut, info = expected[index][step]
                assert_same_observation(sub_observation(observations, index), observation)
                assert (rewards[index], terminated[index], truncated[index]) == (reward, done, cut)
                assert plain(unbatch(infos, index)) == plain(info)
    finally:
        envs.close()
    if family == "multiagent":  # one-hand poker: some sub-env's episode ends and is autoreset within STEPS
        assert any(action == "ignored" for episode in expected for action, *_ in episode)


def test_async_steps_take_a_tuple_of_replies_or_tool_calls() -> None:
    envs = gym.make_vec("Sokoban-v0", num_envs=4, vectorization_mode="async")
    try:
        observations, _ = envs.reset(seed=0)
        assert type(observations) is tuple and all("√" in text or "#" in text for text in observations)
        observations, rewards, *_ = envs.step(("Action: up",) * 4)
        assert len(observations) == 4 and rewards.shape == (4,)
        calls = [{"name": "move", "arguments": {"direction": "down"}}] * 4
        _, _, _, _, infos = envs.step(calls)
        assert list(infos["action"]) == ["down"] * 4
        assert envs.action_space.contains(tuple(calls)) and envs.action_space.contains(("up",) * 4)
    finally:
        envs.close()


SPECIAL = ["", "plain", "√ ✓ ⬛ 🙂 中文 \x00 nul", "lone \ud800 surrogate", "x" * 50]


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_shared_memory_round_trips_any_string_and_stays_live(ctx: str) -> None:
    space = UnicodeText(50)
    memory = create_shared_memory(space, n=len(SPECIAL), ctx=multiprocessing.get_context(ctx))
    batch = read_from_shared_memory(space, memory, n=len(SPECIAL))
    assert isinstance(batch, SharedTextBatch) and tuple(batch) == ("",) * len(SPECIAL)
    for index, text in enumerate(SPECIAL):
        write_to_shared_memory(space, index, text, memory)
    assert batch == SPECIAL and batch[1:3] == tuple(SPECIAL[1:3]) and batch[-1] == SPECIAL[-1]
    snapshot = copy.deepcopy(batch)
    assert type(snapshot) is tuple and snapshot == tuple(SPECIAL)
    write_to_shared_memory(space, 1, "changed, and shorter", memory)
    write_to_shared_memory(space, 1, "short", memory)
    assert batch[1] == "short" and snapshot[1] == "plain"  # the batch is live, a copy is not
    with pytest.raises(ValueError, match="max_length 50"):
        write_to_shared_memory(space, 0, "y" * 51, memory)
    with pytest.raises(TypeError, match="must be a str"):
        write_to_shared_memory(space, 0, b"bytes", memory)


def test_async_without_copy_hands_out_the_live_batch() -> None:
    envs = gym.make_vec("Wordle-v0", num_envs=2, vectorization_mode="async", vector_kwargs={"copy": False})
    try:
        first, _ = envs.reset(seed=0)
        assert isinstance(first, SharedTextBatch)
        before = tuple(first)
        envs.step(["Action: crane", "Action: slate"])
        assert tuple(first) != before and "CRANE" in first[0].upper()
    finally:
        envs.close()


def test_the_example_in_docs_runs(capsys: pytest.CaptureFixture[str]) -> None:
    page = Path(__file__).resolve().parents[1] / "docs" / "vector.md"
    example = page.read_text().split("```python\n")[1].split("```")[0]
    exec(compile(example, "docs/vector.md", "exec"), {})
    assert "[0. 0. 0. 0.]" in capsys.readouterr().out
