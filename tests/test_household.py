"""Household-v0: task types, preconditions, progress, oracle, determinism and splits."""

from __future__ import annotations

import collections
import copy
import math
import random
import time

import gymnasium as gym
import pytest
from episodes import play_oracle

from agentgym.contract.core import InvalidAction
from agentgym.environments.household import SPLITS
from agentgym.environments.household.engine import Receptacle, Thing, World
from agentgym.environments.household.env import HouseholdEnv
from agentgym.environments.household.tasks import TASK_TYPES, Goal, plan_step, progress


@pytest.fixture(scope="module")
def env() -> gym.Env:
    made = gym.make("Household-v0")
    yield made
    made.close()


def kitchen() -> World:
    """A small hand-made kitchen: a closed fridge, a microwave, a sink, a countertop, a desk with a lamp."""
    return World(
        [
            Receptacle("countertop 1", "countertop", contents=["apple 1", "mug 1"]),
            Receptacle("fridge 1", "fridge", contents=["apple 2"]),
            Receptacle("microwave 1", "microwave"),
            Receptacle("sinkbasin 1", "sinkbasin"),
            Receptacle("desk 1", "desk", contents=["desklamp 1", "book 1"]),
        ],
        [
            Thing("apple 1", "apple", "countertop 1"),
            Thing("mug 1", "mug", "countertop 1"),
            Thing("apple 2", "apple", "fridge 1"),
            Thing("desklamp 1", "desklamp", "desk 1"),
            Thing("book 1", "book", "desk 1"),
        ],
    )


def test_the_oracle_solves_at_least_100_tasks_of_every_type(env: gym.Env) -> None:
    task_ids = list(SPLITS.ids("train")[:100]) + list(SPLITS.ids("dev")[:50]) + list(SPLITS.ids("test")[:50])
    types = collections.Counter()
    for task_id in task_ids:
        result = play_oracle(env, task_id, seed=task_id)
        assert result.success and result.score == 1.0, f"task {task_id} ({env.unwrapped.goal})"
        assert math.isclose(result.total_reward, 1.0) and result.steps <= 20
        types[env.unwrapped.goal.task_type] += 1
    assert set(types) == set(TASK_TYPES) and min(types.values()) >= 15


def test_the_oracle_finishes_from_states_random_play_left(env: gym.Env) -> None:
    base, rng = env.unwrapped, random.Random(0)
    for task_id in range(40):
        env.reset(options={"task_id": task_id})
        for _ in range(15):
            env.step(base.random_action(rng))
        for _ in range(30):
            if base.success:
                break
            env.step(base.oracle_action())
        assert base.success, f"task {task_id}"


@pytest.mark.parametrize(
    ("commands", "reason"),
    [
        (["go to oven 1"], "'oven 1' is not in this room; the receptacles are: countertop 1, fridge 1"),
        (["go to apple 1"], "is an object, not a receptacle"),
        (["go to fridge 1", "go to fridge 1"], "you are already at the fridge 1"),
        (["open fridge 1"], "you are not at the fridge 1; go to it first"),
        (["go to countertop 1", "open countertop 1"], "cannot be opened; its contents are in plain view"),
        (["go to fridge 1", "open fridge 1", "open fridge 1"], "the fridge 1 is already open"),
        (["go to fridge 1", "close fridge 1"], "the fridge 1 is already closed"),
        (["go to fridge 1", "take apple 2 from fridge 1"], "the fridge 1 is closed; open it first"),
        (["go to countertop 1", "take apple 2 from countertop 1"], "there is no apple 2 in the countertop 1"),
        (["go to countertop 1", "take apple 1 from countertop 1", "take mug 1 from countertop 1"], "hands are full"),
        (["go to desk 1", "take desklamp 1 from desk 1"], "stays where it is; 'use desklamp 1' switches it"),
        (["go to countertop 1", "move apple 1 to countertop 1"], "you are not holding the apple 1 (your hands are"),
        (
            ["go to countertop 1", "take apple 1 from countertop 1", "go to fridge 1", "put apple 1 in fridge 1"],
            "closed",
        ),
        (
            ["go to countertop 1", "take apple 1 from countertop 1", "go to desk 1", "move apple 1 to desk 1"],
            "an apple",
        ),
        (["go to countertop 1", "take apple 1 from countertop 1", "heat apple 1 with fridge 1"], "with a microwave"),
        (["go to countertop 1", "take apple 1 from countertop 1", "heat apple 1 with microwave 1"], "not at the micro"),
        (["go to desk 1", "take book 1 from desk 1", "go to microwave 1", "heat book 1 with microwave 1"], "be heated"),
        (["go to countertop 1", "use mug 1"], "cannot be used; only lamps"),
        (["use desklamp 1"], "the desklamp 1 is not here; it is at the desk 1"),
        (["go to desk 1", "examine apple 2"], "you cannot see the apple 2 from here"),
        (["dance"], "unknown command"),
    ],
)
def test_every_failed_precondition_says_why(commands: list[str], reason: str) -> None:
    world = kitchen()
    for command in commands[:-1]:
        world.execute(command)
    before = (world.location, world.held, {name: list(r.contents) for name, r in world.receptacles.items()})
    with pytest.raises(InvalidAction) as error:
        world.execute(commands[-1])
    assert reason in str(error.value)
    assert before == (world.location, world.held, {name: list(r.contents) for name, r in world.receptacles.items()})


def test_commands_change_the_world_as_alfworld_does() -> None:
    world = kitchen()
    assert world.execute("go to fridge 1") == "You arrive at fridge 1. The fridge 1 is closed."
    assert world.execute("open fridge 1") == "You open the fridge 1. The fridge 1 is open. In it, you see an apple 2."
    assert world.execute("take apple 2 from fridge 1") == "You pick up the apple 2 from the fridge 1."
    assert "cool apple 2 with fridge 1" in world.admissible() and "move apple 2 to fridge 1" in world.admissible()
    world.execute("go to microwave 1")
    assert world.execute("heat apple 2 with microwave 1").endswith("The apple 2 is now hot.")
    world.execute("go to fridge 1")
    world.execute("cool apple 2 with fridge 1")
    assert world.execute("examine apple 2") == "The apple 2 is cool."  # cooling undid the heat
    assert world.execute("inventory") == "You are carrying: an apple 2."
    world.execute("go to desk 1")
    assert world.execute("use desklamp 1") == "You turn on the desklamp 1."
    assert world.execute("look") == "You are facing the desk 1. On the desk 1, you see a desklamp 1, and a book 1."


def every_command(world: World) -> set[str]:
    """Every command the vocabulary can form over the room's names."""
    receptacles, things = list(world.receptacles), list(world.things)
    commands = {"look", "inventory"}
    for receptacle in receptacles:
        commands |= {f"go to {receptacle}", f"open {receptacle}", f"close {receptacle}", f"examine {receptacle}"}
        for thing in things:
            commands |= {f"{verb} {thing} with {receptacle}" for verb in ("clean", "heat", "cool")}
            commands |= {f"take {thing} from {receptacle}", f"move {thing} to {receptacle}"}
    return commands | {f"{verb} {thing}" for thing in things for verb in ("use", "examine")}


def test_available_actions_are_exactly_the_commands_that_succeed(env: gym.Env) -> None:
    base, rng = env.unwrapped, random.Random(3)
    for task_id in (0, 1, 2, 3, 4, 5):
        env.reset(options={"task_id": task_id})
        for _ in range(8):
            admissible = set(base.available_actions())
            for command in sorted(every_command(base.world)):
                if command in admissible:
                    copy.deepcopy(base.world).execute(command)
                else:
                    with pytest.raises(InvalidAction):
                        base.world.execute(command)
            env.step(rng.choice(sorted(admissible)))


def test_progress_rewards_each_subgoal_and_undoing_costs_it(env: gym.Env) -> None:
    base = env.unwrapped
    task_id = next(t for t in range(100) if base.task(t)[0].task_type == "pick_clean_then_place_in_recep")
    env.reset(options={"task_id": task_id})
    rewards, undone = [], False
    while not base.success:
        command = base.oracle_action()
        _, reward, _, _, _ = env.step(command)
        if reward:
            rewards.append((command.split()[0], reward))
        if command.startswith("take") and not undone:
            thing, receptacle = command.removeprefix("take ").split(" from ")
            _, undo, *_ = env.step(f"move {thing} to {receptacle}")
            assert undo == pytest.approx(-1 / 3)
            rewards.append(("undo", undo))
            undone = True
    assert [verb for verb, _ in rewards] == ["take", "undo", "take", "clean", "move"]
    assert sum(reward for _, reward in rewards) == pytest.approx(1.0)


def test_put_in_is_accepted_for_move_to() -> None:
    world = kitchen()
    world.execute("go to countertop 1")
    world.execute("take apple 1 from countertop 1")
    assert world.execute("put apple 1 in/on countertop 1") == "You move the apple 1 to the countertop 1."


def test_look_at_object_in_light_needs_the_object_held_at_the_lit_lamp() -> None:
    world, goal = kitchen(), Goal("look_at_obj_in_light", "bedroom", "book", lamp="desklamp")
    commands = []
    while progress(world, goal) < 1.0:
        commands.append(plan_step(world, goal))
        world.execute(commands[-1])
    assert commands == ["go to desk 1", "take book 1 from desk 1", "use desklamp 1"]


def test_tasks_are_deterministic_and_differ() -> None:
    first, second = HouseholdEnv(), HouseholdEnv()
    for task_id in (0, 7, 10_003, 11_500):
        assert first.reset(options={"task_id": task_id}) == second.reset(options={"task_id": task_id})
        for _ in range(10):
            command = first.oracle_action()
            assert first.step(command) == second.step(command)
    observations = {first.reset(options={"task_id": task_id})[0] for task_id in range(50)}
    assert len(observations) == 50


def test_splits_never_share_a_goal() -> None:
    env = HouseholdEnv()
    goals = {
        split: {env.task(task_id)[0].content_key for task_id in SPLITS.ids(split)[:300]}
        for split in ("train", "dev", "test")
    }
    assert not goals["train"] & goals["dev"] and not goals["train"] & goals["test"] and not goals["dev"] & goals["test"]
    assert all(len(keys) > 20 for keys in goals.values())


def test_steps_are_pure_python_and_fast() -> None:
    env = HouseholdEnv()
    assert env.metadata["inline_safe"]
    start, steps = time.perf_counter(), 0
    for task_id in range(100):
        env.reset(options={"task_id": task_id})
        while not env.terminated:
            env.step(env.oracle_action())
            steps += 1
    assert (time.perf_counter() - start) / (steps + 100) < 0.002
