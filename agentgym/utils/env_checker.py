"""``check_text_env``: agentgym's environment contract, checked by code.

The contract (see :mod:`agentgym.contract.core` and the README) is a list of rules, :data:`RULES`;
:func:`check_text_env` plays short episodes on an env and raises :class:`ContractViolation`
naming the first rule it finds broken, with what it saw. It needs only what the contract
promises: ``reset(seed=..., options={"task_id": N})``, ``step(reply)``, the info keys, and
on the unwrapped env ``splits`` (a :class:`~agentgym.contract.core.TaskSplits`), ``oracle_action()``
with ``has_oracle``, and optionally ``action_syntax``, ``available_actions()`` and
``random_action(rng)``. Any :class:`~agentgym.contract.core.TextEnv` subclass has them all.

Every transition it sees (reset or step, in every phase) is checked for the rules
``spaces``, ``info-keys``, ``score``, ``invalid-action`` and ``json``; the phases add
``gymnasium``, ``splits``, ``first-observation``, ``never-raises``, ``determinism``,
``tasks-differ``, ``oracle`` and ``truncation``.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.wrappers import TimeLimit

from agentgym.contract.core import SPLIT_NAMES, TaskSplits, observation_text, quote

#: Each rule of the contract, by the name a :class:`ContractViolation` reports.
RULES: dict[str, str] = {
    "gymnasium": "gymnasium.utils.env_checker.check_env passes",
    "splits": "the env has train, dev and test splits, each with tasks; task N is in the split that holds N",
    "spaces": "the observation space contains every observation (a str, or a dict whose 'text' is a str) "
    "and the action space contains the oracle's replies",
    "info-keys": "info holds task_id, split, instruction, action, invalid_action, success (bool), score and steps "
    "after every reset and step, and available_actions where the action set is enumerable",
    "first-observation": "the first observation contains the instruction and the action syntax",
    "never-raises": "step never raises on any reply (empty, huge, control characters, unicode, "
    "fake Action: lines, bytes)",
    "invalid-action": "a reply that cannot be parsed or executed gives info['invalid_action'] = True and reward 0",
    "score": "info['score'] is a number in [0, 1] and each reward is the change of the score "
    "(so an episode's return is its final score)",
    "json": "the observation's text, the reward and info are JSON-serialisable",
    "determinism": "the same task_id, seed and replies give the same observations, rewards and infos",
    "tasks-differ": "different task ids give different episodes",
    "oracle": "the oracle (oracle_action, where has_oracle) reaches success with score 1 on the tasks it plays",
    "truncation": "with max_episode_steps registered, an episode that does not end is truncated at exactly "
    "that many steps, not before",
}

#: The keys ``info`` holds after every reset and step.
REQUIRED_INFO = ("task_id", "split", "instruction", "action", "invalid_action", "success", "score", "steps")
#: A reply no env can execute (the default ``invalid_reply``).
INVALID_REPLY = "this is not an action"


def _hostile_replies() -> tuple[str | bytes, ...]:
    """Replies that have broken parsers: empty, huge, control characters, odd unicode, fake action lines."""
    return (
        "",
        " ",
        "\x00",
        "\x00" * 1000,
        "\r\n\t\x0b\x0c\x1b[31mred\x1b[0m",
        "Action:",
        "Action: \n",
        "Action: Action: Action:",
        "Action: up\nAction: \x00",
        "**Action:** `` ",
        "```\nAction: rm -rf /\n```",
        "<think>Action: left</think>",
        "<think>" * 100_000,
        "</think>" * 1000 + "Action: ",
        "a" * 1_000_000,
        "\n" * 1_000_000,
        "Action: " + "up " * 350_000,
        "Action: " + "ä" * 70_000,
        "Action: click[" + "]" * 1000,
        "\ud800\udfff",
        "\ud800",
        "Ünïcödé 中文 🙂 \u202e\u200b\ufeff",
        "%s %n {0} {{}} \\ $(echo) `id` ' OR 1=1; --",
        "<script>alert(1)</script>",
        "Action: ../../../../etc/passwd",
        '{"name": "act", "arguments": {"command": null}}',
        "Action: " + "9" * 400,
        "Action: -1",
        b"Action: \xff\xfe\x00",
        b"",
    )


#: The fixed bank of hostile replies every check sends (``str`` and ``bytes``).
HOSTILE_REPLIES: tuple[str | bytes, ...] = _hostile_replies()

_CHARACTER_RANGES = ((0x20, 0x7E), (0x00, 0x1F), (0x80, 0x2FFF), (0x3000, 0xD7FF), (0xE000, 0xFFFF), (0x10000, 0x1FAFF))


class ContractViolation(AssertionError):
    """An env breaks a rule of the contract.

    ``rule`` is a key of :data:`RULES`; the message names the env and the rule, says what
    the rule asks and what was seen instead.
    """

    def __init__(self, env_name: str, rule: str, detail: str) -> None:
        self.env_name, self.rule, self.detail = env_name, rule, detail
        super().__init__(f"{env_name} breaks the contract rule {rule!r} ({RULES[rule]}): {detail}")


@dataclass
class CheckReport:
    """What :func:`check_text_env` checked, and what it skipped and why."""

    env_name: str
    checked: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    episodes: int = 0
    steps: int = 0
    seconds: float = 0.0


def _env_name(env: gym.Env) -> str:
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else type(env.unwrapped).__name__


def _time_limit(env: gym.Env) -> TimeLimit | None:
    """The ``TimeLimit`` wrapper in ``env``'s chain, if any."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, TimeLimit):
            return env
        env = env.env
    return None


def _transition_differences(first: tuple, second: tuple) -> list[str]:
    names = ("observation", "reward", "terminated", "truncated", "info")
    if len(first) == 2:  # a reset: (observation, info)
        names = ("observation", "info")
    differences = [name for name, a, b in zip(names, first, second) if a != b]
    if "info" in differences:
        info_a, info_b = first[-1], second[-1]
        keys = sorted(key for key in info_a.keys() | info_b.keys() if info_a.get(key) != info_b.get(key))
        differences[differences.index("info")] = f"info keys {keys}"
    return differences


class _Checker:
    """One check of one env: the phases of :func:`check_text_env` and the per-transition rules."""

    def __init__(self, env: gym.Env, invalid_reply: str) -> None:
        self.env = env
        self.base = env.unwrapped
        self.name = _env_name(env)
        self.invalid_reply = invalid_reply
        self.report = CheckReport(self.name)
        self.score = 0.0
        self.enumerable = False

    def fail(self, rule: str, detail: str) -> ContractViolation:
        return ContractViolation(self.name, rule, detail)

    # ---- one transition ---------------------------------------------------------------

    def reset(self, task_id: int, seed: int | None = None) -> tuple[Any, dict[str, Any]]:
        try:
            observation, info = self.env.reset(seed=seed, options={"task_id": task_id})
        except Exception as error:
            raise self.fail("splits", f"reset(options={{'task_id': {task_id}}}) raised {error!r}") from error
        self.report.episodes += 1
        self.check_common(observation, info, f"reset to task {task_id}")
        if info["task_id"] != task_id:
            raise self.fail("info-keys", f"reset to task {task_id} reports info['task_id'] = {info['task_id']!r}")
        if info["score"] != 0:
            raise self.fail("score", f"reset to task {task_id} reports score {info['score']!r}, not 0")
        actions = self.available_actions()
        self.enumerable = actions is not None
        if self.enumerable and "available_actions" not in info:
            raise self.fail("info-keys", "available_actions() lists the actions but info has no 'available_actions'")
        self.score = float(info["score"])
        return observation, info

    def step(self, reply: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        try:
            transition = self.env.step(reply)
        except Exception as error:
            raise self.fail("never-raises", f"step({quote(str(reply))}) raised {error!r}") from error
        self.report.steps += 1
        observation, reward, terminated, truncated, info = transition
        where = f"step({quote(str(reply))})"
        self.check_common(observation, info, where)
        if not isinstance(reward, (int, float)) or isinstance(reward, bool) or not math.isfinite(reward):
            raise self.fail("score", f"{where} returned reward {reward!r}, not a finite number")
        if not isinstance(terminated, bool) or not isinstance(truncated, bool):
            raise self.fail("gymnasium", f"{where} returned terminated={terminated!r}, truncated={truncated!r}")
        delta = float(info["score"]) - self.score
        if not math.isclose(reward, delta, abs_tol=1e-9):
            raise self.fail(
                "score",
                f"{where} returned reward {reward!r} but the score went from {self.score!r} to {info['score']!r}",
            )
        if info["invalid_action"] and reward != 0:
            raise self.fail("invalid-action", f"{where} was invalid but returned reward {reward!r}")
        self.score = float(info["score"])
        return observation, float(reward), terminated, truncated, info

    def check_common(self, observation: Any, info: Any, where: str) -> None:
        space = self.env.observation_space
        if isinstance(observation, dict):
            if not isinstance(observation.get("text"), str):
                keys = sorted(observation)
                raise self.fail("spaces", f"{where}: a dict observation needs a str 'text', got keys {keys}")
        elif not isinstance(observation, str):
            raise self.fail("spaces", f"{where}: the observation is a {type(observation).__name__}, not a str or dict")
        if not space.contains(observation):
            text = observation_text(observation)
            raise self.fail("spaces", f"{where}: {space} does not contain the observation ({len(text)} characters)")
        if not isinstance(info, dict):
            raise self.fail("info-keys", f"{where}: info is a {type(info).__name__}, not a dict")
        missing = [key for key in REQUIRED_INFO if key not in info]
        if missing:
            raise self.fail("info-keys", f"{where}: info misses {missing} (it has {sorted(info)})")
        kinds = {"task_id": int, "split": str, "instruction": str, "action": str, "invalid_action": bool}
        kinds |= {"success": bool, "steps": int}
        for key, kind in kinds.items():
            if not isinstance(info[key], kind):
                raise self.fail("info-keys", f"{where}: info[{key!r}] is {info[key]!r}, not a {kind.__name__}")
        if info["split"] not in SPLIT_NAMES:
            raise self.fail("info-keys", f"{where}: info['split'] is {info['split']!r}, not one of {SPLIT_NAMES}")
        score = info["score"]
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= score <= 1.0:
            raise self.fail("score", f"{where}: info['score'] is {score!r}, not a number in [0, 1]")
        try:
            json.dumps({"observation": observation_text(observation), "info": info}, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise self.fail("json", f"{where}: {error}") from error

    def available_actions(self) -> list[str] | None:
        method = getattr(self.base, "available_actions", None)
        return method() if callable(method) else None

    def oracle_action(self) -> str:
        return self.base.oracle_action()

    # ---- phases -------------------------------------------------------------------------

    def check_gymnasium(self) -> None:
        from gymnasium.utils.env_checker import check_env

        try:
            check_env(self.base)
        except Exception as error:
            raise self.fail("gymnasium", f"check_env raised {error!r}") from error

    def check_splits(self) -> TaskSplits:
        splits = getattr(self.base, "splits", None)
        if not isinstance(splits, TaskSplits):
            raise self.fail("splits", f"env.unwrapped.splits is {splits!r}, not a TaskSplits")
        empty = [name for name, count in splits.counts().items() if count <= 0]
        if empty:
            raise self.fail("splits", f"the splits {empty} hold no tasks ({splits.counts()})")
        for split in SPLIT_NAMES:
            task_id = splits.ids(split)[0]
            _, info = self.reset(task_id, seed=task_id)
            if info["split"] != split:
                raise self.fail("splits", f"task {task_id} is in {split} but info['split'] is {info['split']!r}")
        return splits

    def check_first_observation(self) -> None:
        observation, info = self.reset(0)
        text = observation_text(observation)
        if not info["instruction"] or info["instruction"] not in text:
            raise self.fail("first-observation", f"instruction {quote(info['instruction'])} is not in {quote(text)}")
        syntax = getattr(self.base, "action_syntax", None)
        if isinstance(syntax, str) and syntax not in text:
            raise self.fail("first-observation", f"action syntax {quote(syntax)} is not in {quote(text)}")
        if not self.env.action_space.contains(self.oracle_action()):
            oracle = quote(self.oracle_action())
            raise self.fail("spaces", f"{self.env.action_space} does not contain the oracle's {oracle}")

    def check_invalid_action(self) -> None:
        self.reset(0)
        *_, info = self.step(self.invalid_reply)
        if not info["invalid_action"]:
            raise self.fail("invalid-action", f"{quote(self.invalid_reply)} was not reported as invalid")

    def check_replies(self, replies: Iterable[Any], task_id: int, seed: int = 0) -> None:
        self.reset(task_id, seed=seed)
        for reply in replies:
            *_, terminated, truncated, _ = self.step(reply)
            if terminated or truncated:
                self.reset(task_id, seed=seed)

    def reply_pool(self, rng: random.Random) -> list[str]:
        """Replies a seeded policy picks from: a legal action, the oracle's, garbage."""
        pool = [self.oracle_action(), "Action: " + self.oracle_action(), "garbage"]
        if self.enumerable:
            with contextlib.suppress(NotImplementedError):
                pool.append(self.base.random_action(rng))
        return pool

    def trajectory(self, task_id: int, seed: int, steps: int) -> list[tuple]:
        """Text-only transitions of ``steps`` seeded replies on ``task_id`` (screenshots may differ by a pixel)."""
        rng = random.Random(f"{task_id}|{seed}")
        observation, info = self.reset(task_id, seed=seed)
        transitions: list[tuple] = [(observation_text(observation), info)]
        for _ in range(steps):
            observation, *rest = self.step(rng.choice(self.reply_pool(rng)))
            transitions.append((observation_text(observation), *rest))
            if rest[1] or rest[2]:
                break
        return transitions

    def check_determinism(self, task_ids: Sequence[int], steps: int) -> None:
        for task_id in task_ids:
            first = self.trajectory(task_id, seed=task_id, steps=steps)
            second = self.trajectory(task_id, seed=task_id, steps=steps)
            for index, (a, b) in enumerate(zip(first, second)):
                if a != b:
                    what = "the reset" if index == 0 else f"step {index}"
                    raise self.fail(
                        "determinism",
                        f"task {task_id} replayed with seed {task_id} and the same replies differs at {what} in "
                        f"{', '.join(_transition_differences(a, b))}",
                    )
            if len(first) != len(second):
                lengths = f"{len(first) - 1}, then {len(second) - 1} steps"
                raise self.fail("determinism", f"task {task_id} ended after {lengths} when replayed")

    def check_tasks_differ(self) -> None:
        if self.trajectory(0, 0, 3) == self.trajectory(1, 0, 3):
            raise self.fail("tasks-differ", "tasks 0 and 1 give the same first observations and replies' outcomes")

    def check_oracle(self, task_ids: Sequence[int], must_win: bool, step_cap: int) -> None:
        for task_id in task_ids:
            self.reset(task_id, seed=task_id)
            total, steps, done, info = 0.0, 0, False, {}
            while not done:
                if steps >= step_cap:
                    detail = f"the oracle played {steps} steps of task {task_id} without the episode ending"
                    raise self.fail("oracle", detail)
                _, reward, terminated, truncated, info = self.step(self.oracle_action())
                total, steps, done = total + reward, steps + 1, terminated or truncated
            if must_win and not (info["success"] and info["score"] == 1.0):
                raise self.fail(
                    "oracle",
                    f"the oracle ended task {task_id} after {steps} steps with success={info['success']!r}, "
                    f"score={info['score']!r}",
                )
            if not math.isclose(total, info["score"], abs_tol=1e-9):
                detail = f"task {task_id}: the oracle's return {total!r} is not its score {info['score']!r}"
                raise self.fail("score", detail)

    def check_truncation(self, limit: int) -> None:
        self.reset(0)
        for step in range(1, limit + 1):
            _, _, terminated, truncated, info = self.step(self.invalid_reply)
            if not info["invalid_action"]:
                detail = f"{quote(self.invalid_reply)} was not reported as invalid at step {step}"
                raise self.fail("invalid-action", detail)
            if terminated:  # an env may end an episode on repeated invalid replies (a game's forfeit)
                if info["success"]:
                    raise self.fail("truncation", f"{step} invalid replies ended the episode with success")
                return
            if truncated != (step == limit):
                raise self.fail("truncation", f"truncated={truncated} at step {step} of max_episode_steps={limit}")


def spread_task_ids(splits: TaskSplits, count: int) -> list[int]:
    """``count`` task ids to play: half from test, a quarter each from dev and train (the first of each)."""
    quarter = count // 4
    return (
        list(splits.ids("test")[: count - 2 * quarter])
        + list(splits.ids("dev")[:quarter])
        + list(splits.ids("train")[:quarter])
    )


def check_replies(env: gym.Env, replies: Iterable[Any], *, task_id: int = 1, seed: int = 0) -> None:
    """Play ``replies`` on task ``task_id`` (resetting when an episode ends), checking every transition.

    The per-transition part of :func:`check_text_env`, for fuzzing with one's own replies
    (e.g. from hypothesis). Raises :class:`ContractViolation`.
    """
    _Checker(env, INVALID_REPLY).check_replies(replies, task_id, seed)


def check_text_env(
    env: gym.Env,
    *,
    oracle_tasks: int = 20,
    oracle_must_win: bool = True,
    determinism_tasks: int = 3,
    determinism_steps: int = 30,
    random_replies: int = 40,
    hostile_replies: Sequence[str | bytes] = HOSTILE_REPLIES,
    invalid_reply: str = INVALID_REPLY,
    gymnasium_check: bool = True,
    truncation: bool = True,
    seed: int = 0,
) -> CheckReport:
    """Check that ``env`` keeps agentgym's environment contract; raise :class:`ContractViolation` if not.

    ``env`` is best made with ``gym.make`` (then the registered ``max_episode_steps`` is
    checked too); it is reset many times and left open. The rules are :data:`RULES`. The
    budget arguments size the check:

    * ``oracle_tasks``: how many tasks the oracle plays (half test, a quarter each dev and
      train); ``oracle_must_win=False`` for envs whose oracle is a strong player rather
      than a solver (games against an opponent): then only its return is checked;
    * ``determinism_tasks`` tasks (the first of train, dev, test) are played twice with
      ``determinism_steps`` seeded replies each, and must replay identically;
    * every reply in ``hostile_replies`` and ``random_replies`` random strings (drawn with
      ``seed``) are sent, and must neither raise nor break a per-transition rule;
    * ``invalid_reply`` must be reported invalid; with ``truncation``, it is sent until
      the registered ``max_episode_steps``;
    * ``gymnasium_check`` runs Gymnasium's own ``check_env`` on ``env.unwrapped``.

    Returns a :class:`CheckReport` of what was checked and what was skipped and why.
    """
    started = time.perf_counter()
    checker = _Checker(env, invalid_reply)
    report = checker.report
    if gymnasium_check:
        checker.check_gymnasium()
        report.checked.append("gymnasium")
    else:
        report.skipped["gymnasium"] = "gymnasium_check=False"
    splits = checker.check_splits()
    checker.check_first_observation()
    checker.check_invalid_action()
    rng = random.Random(seed)
    replies = [*hostile_replies, *(_random_reply(rng, checker.oracle_action()) for _ in range(random_replies))]
    checker.check_replies(replies, task_id=min(1, splits.total - 1), seed=seed)
    report.checked += ["splits", "first-observation", "invalid-action", "never-raises"]
    if determinism_tasks > 0:
        firsts = [splits.ids(split)[0] for split in SPLIT_NAMES]
        checker.check_determinism(firsts[:determinism_tasks], determinism_steps)
        report.checked.append("determinism")
    if splits.total > 1:
        checker.check_tasks_differ()
        report.checked.append("tasks-differ")
    limit = env.spec.max_episode_steps if env.spec is not None else None
    if not getattr(checker.base, "has_oracle", True):
        report.skipped["oracle"] = "has_oracle is False"
    elif oracle_tasks > 0:
        cap = (limit or 1000) + 1
        checker.check_oracle(spread_task_ids(splits, oracle_tasks), oracle_must_win, cap)
        report.checked.append("oracle")
    if not truncation:
        report.skipped["truncation"] = "truncation=False"
    elif limit is None:
        report.skipped["truncation"] = "no max_episode_steps registered"
    elif _time_limit(env) is None:
        report.skipped["truncation"] = "the env is not wrapped in TimeLimit (make it with gym.make)"
    else:
        checker.check_truncation(limit)
        report.checked.append("truncation")
    report.checked += ["spaces", "info-keys", "score", "json"]
    report.seconds = time.perf_counter() - started
    return report


def _random_reply(rng: random.Random, oracle_action: str) -> str:
    """A random string: random code points, maybe around an ``Action:`` line or the oracle's command."""
    low, high = rng.choice(_CHARACTER_RANGES)
    noise = "".join(chr(rng.randint(low, high)) for _ in range(rng.choice((0, 1, 5, 40, 300))))
    shape = rng.randrange(4)
    if shape == 0:
        return noise
    if shape == 1:
        return f"Action: {noise}"
    if shape == 2:
        return f"{noise}\nAction: {oracle_action}{noise[:3]}"
    return oracle_action[: rng.randint(0, len(oracle_action))] + noise
