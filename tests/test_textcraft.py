"""TextCraft: the recipe table, task generation, command validation and the planner oracle."""

from __future__ import annotations

import json
import random
from collections import Counter

import gymnasium as gym
import pytest

import agentgym
from agentgym.environments.textcraft import SPLITS
from agentgym.environments.textcraft.env import RECIPES_FILE, TextCraftEnv, crafting_book

IDS = ["TextCraft-v0", *(f"TextCraft-Depth{depth}-v0" for depth in (1, 2, 3, 4))]


def task_with_goal(goal: str) -> gym.Env:
    """A TextCraft env reset to the first task whose goal is ``goal``."""
    env = gym.make("TextCraft-v0")
    for task_id in range(SPLITS.total):
        env.reset(options={"task_id": task_id})
        if env.unwrapped.goal == goal:
            return env
    raise AssertionError(f"no task crafts {goal}")


def play(env: gym.Env, *commands: str) -> list[tuple]:
    return [env.step(command) for command in commands]


# ---- the recipe table --------------------------------------------------------------------


def test_recipe_table_is_minecraft_data_with_tags_and_a_source() -> None:
    table = json.loads(RECIPES_FILE.read_text())
    assert "minecraft-data" in table["source"] and "MIT" in table["source"]
    book = crafting_book()
    assert book.recipes["stick"].ingredients == (("planks", 2),) and book.recipes["stick"].count == 4
    assert book.recipes["oak planks"].ingredients == (("oak logs", 1),)
    assert {"oak planks", "birch planks", "spruce planks"} <= set(book.tags["planks"])
    assert book.recipes["wooden pickaxe"].ingredients == (("planks", 3), ("stick", 2))
    assert book.is_base("oak log") and book.is_base("iron ingot") and not book.is_base("iron block")
    assert [book.depth[item] for item in ("oak log", "oak planks", "stick", "wooden pickaxe")] == [0, 1, 2, 3]


def test_every_recipe_is_strictly_deeper_than_its_ingredients() -> None:
    """No recipe needs its own result, directly or through a tag: crafting always terminates."""
    book = crafting_book()
    depths = Counter(book.depth[item] for item in book.recipes)
    for recipe in book.recipes.values():
        for name, number in recipe.ingredients:
            assert number >= 1
            assert all(book.depth[member] < book.depth[recipe.result] for member in book.members(name))
    assert all(depths[depth] >= 25 for depth in (1, 2, 3, 4)), depths


def test_ids_and_depths() -> None:
    assert {info.id for info in agentgym.list_envs("textcraft")} == set(IDS)
    book = crafting_book()
    for depth in (1, 2, 3, 4):
        env = gym.make(f"TextCraft-Depth{depth}-v0")
        for task_id in range(0, 8000, 400):
            env.reset(options={"task_id": task_id})
            assert book.depth[env.unwrapped.goal] == depth
    with pytest.raises(ValueError):
        TextCraftEnv(depths=(5,))


# ---- tasks ----------------------------------------------------------------------------------


def test_first_observation_shows_goal_needed_recipes_distractors_and_tags() -> None:
    env = task_with_goal("wooden pickaxe")
    observation = env.reset(options={"task_id": env.unwrapped.task_id})[0]
    base = env.unwrapped
    wood = base.choices["planks"].removesuffix(" planks")
    assert "Goal: craft 1 wooden pickaxe." in observation
    assert "craft 1 wooden pickaxe using 3 " + base.choices["planks"] + ", 2 stick" in observation
    assert f"craft 4 stick using 2 {wood} planks" in observation
    assert f"craft 4 {wood} planks using 1 {base.choices[wood + ' logs']}" in observation
    assert "(planks: any of " in observation
    assert len(base.shown) == 3 + 5  # three needed recipes and five distractors
    assert observation.endswith("Inventory: empty")


def test_tasks_are_deterministic_and_goals_do_not_cross_splits() -> None:
    first, second = gym.make("TextCraft-v0"), gym.make("TextCraft-v0")
    goals = {}
    for split in ("train", "dev", "test"):
        goals[split] = set()
        for task_id in SPLITS.ids(split)[:150]:
            observation = first.reset(options={"task_id": task_id})[0]
            assert observation == second.reset(seed=5, options={"task_id": task_id})[0]
            goals[split].add(first.unwrapped.goal)
    assert not goals["train"] & goals["test"] and not goals["train"] & goals["dev"] and not goals["dev"] & goals["test"]
    assert len(goals["train"]) > 100


# ---- commands -------------------------------------------------------------------------------


def test_get_and_craft_with_a_tag_or_one_of_its_items() -> None:
    env = task_with_goal("wooden pickaxe")
    (observation, reward, terminated, _, info), *_ = play(env, "get 2 oak log")
    assert observation.startswith("Got 2 oak log.") and observation.endswith("Inventory: [oak log] 2")
    assert not info["invalid_action"] and reward == 0.0
    observation = play(env, "craft 8 oak planks using 2 oak logs")[0][0]  # the tag name
    assert observation.startswith("Crafted 8 oak planks.") and "[oak planks] 8" in observation
    observation = play(env, "Action: craft 4 sticks using 2 planks")[0][0]  # plural, tag name
    assert "[stick] 4" in observation and "[oak planks] 6" in observation
    observation, reward, terminated, _, info = env.step("craft 1 minecraft:wooden_pickaxe using 3 oak_planks, 2 stick")
    assert terminated and reward == 1.0 and info["success"] and info["score"] == 1.0
    assert "You crafted the goal, wooden pickaxe!" in observation


def test_a_tag_uses_several_kinds_of_its_items() -> None:
    env = task_with_goal("wooden pickaxe")
    play(env, "get 1 oak log", "get 1 birch log", "craft 4 oak planks using 1 oak log")
    play(env, "craft 4 birch planks using 1 birch log", "craft 4 stick using 2 oak planks")
    assert env.unwrapped.inventory == Counter({"birch planks": 4, "oak planks": 2, "stick": 4})
    observation = play(env, "craft 4 stick using 2 birch planks", "craft 1 wooden pickaxe using 3 planks, 2 stick")[-1][
        0
    ]
    # Three planks from two birch (alphabetically first) and one oak.
    assert observation.endswith("Inventory: [oak planks] 1, [stick] 6, [wooden pickaxe] 1")


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("get 1 stick", "stick is not a base item; craft it: craft 4 stick using 2 planks"),
        ("get 1 unobtainium", "there is no item called 'unobtainium'"),
        ("get 2 planks", "planks are craftable, not base items; craft one of acacia planks, bamboo planks"),
        ("get 0 oak log", "the count must be between 1 and 10000"),
        ("craft 1 oak log using 1 oak planks", "oak log has no crafting recipe; it is a base item: get it"),
        ("craft 3 stick using 2 planks", "one craft makes 4 stick; craft a multiple of 4"),
        ("craft 8 stick using 2 planks", "wrong ingredients for 8 stick; the recipe is: craft 8 stick using 4 planks"),
        ("craft 4 stick using 2 cobblestone", "wrong ingredients for 4 stick"),
        ("craft 4 stick using 2 oak planks, 1 dirt", "dirt is not in the recipe; the recipe is: craft 4 stick using"),
        ("craft 4 stick using two planks", "cannot read the ingredient 'two planks'"),
        ("craft 4 stick", "expected 'craft N item using N1 ingredient1, N2 ingredient2, ...'"),
        ("craft 4 stick using 2 oak planks", "not enough oak planks: you need 2 and have 0"),
        ("mine 3 diamonds", "expected 'get N item', 'craft N item using N1 ingredient1, ...' or 'inventory'"),
    ],
)
def test_invalid_commands_explain_and_change_nothing(command: str, reason: str) -> None:
    env = gym.make("TextCraft-v0")
    env.reset(options={"task_id": 3})
    env.step("get 1 oak log")
    inventory = Counter(env.unwrapped.inventory)
    observation, reward, terminated, _, info = env.step(command)
    assert info["invalid_action"] and reward == 0.0 and not terminated
    assert reason in observation
    assert env.unwrapped.inventory == inventory


def test_get_with_a_tag_takes_its_first_base_item() -> None:
    env = gym.make("TextCraft-v0")
    env.reset(options={"task_id": 3})
    assert env.step("get 2 oak logs")[0].startswith("Got 2 oak log.")


def test_inventory_command_is_valid_and_changes_nothing() -> None:
    env = gym.make("TextCraft-v0")
    env.reset(options={"task_id": 3})
    env.step("get 3 oak log")
    observation, _, _, _, info = env.step("inventory")
    assert not info["invalid_action"] and observation.endswith("Inventory: [oak log] 3")


# ---- oracle ---------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", IDS)
def test_oracle_solves_tasks_of_every_split(env_id: str) -> None:
    env = gym.make(env_id)
    for split in ("train", "dev", "test"):
        for task_id in SPLITS.ids(split)[:60]:
            env.reset(options={"task_id": task_id})
            for _ in range(env.spec.max_episode_steps):
                *_, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
                if terminated or truncated:
                    break
            assert info["success"], f"{env_id} task {task_id} ({env.unwrapped.goal})"


def test_oracle_finishes_after_random_detours() -> None:
    """Random gets and crafts (valid or not) at the start; the planner continues from any inventory."""
    env = gym.make("TextCraft-Depth4-v0")
    for task_id in SPLITS.ids("test")[:40]:
        rng = random.Random(task_id)
        env.reset(options={"task_id": task_id})
        base = env.unwrapped
        for _ in range(8):
            *_, terminated, _, _ = env.step(base.random_action(rng))
        steps = 0
        while not terminated:
            *_, terminated, _, info = env.step(base.oracle_action())
            assert not info["invalid_action"], info["action"]
            steps += 1
            assert steps <= 30
        assert info["success"]
