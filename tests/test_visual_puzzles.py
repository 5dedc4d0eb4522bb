"""The visual puzzles (Sokoban-Visual-v0, FrozenLake-Visual-v0, Maze-Visual-v0) and the core tile renderer.

The image must show exactly the text family's grid after every move (read back tile by tile),
the rules and oracle must be the text family's, and a chat for a VLM must carry the image.
(The contract checker and the fingerprints run on these ids in tests/test_contract.py.)
"""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np
import pytest

import agentgym
from agentgym.images import ImageOptions, decode_image
from agentgym.utils.grid_image import Shape, Tile, TileSet

#: Each visual id, the text id whose tasks and rules it shares, and its image size.
PUZZLES = {
    "Sokoban-Visual-v0": ("Sokoban-v0", (144, 144, 3)),
    "FrozenLake-Visual-v0": ("FrozenLake-v0", (96, 96, 3)),
    "Maze-Visual-v0": ("Maze-v0", (240, 240, 3)),
}


def _grid(text: str) -> list[list[str]]:
    """The grid at the end of a text observation (the last block of lines)."""
    return [line.split(" ") for line in text.rsplit("\n\n", 1)[-1].split("\n")]


@pytest.mark.parametrize("visual_id", sorted(PUZZLES))
def test_the_image_shows_the_text_envs_grid_after_every_move(visual_id: str) -> None:
    text_id, shape = PUZZLES[visual_id]
    visual, text = gym.make(visual_id), gym.make(text_id)
    rng = random.Random(0)
    for task_id in (0, 10_500, 11_500):  # train, dev, test
        observation, info = visual.reset(seed=task_id, options={"task_id": task_id})
        text_observation, text_info = text.reset(seed=task_id, options={"task_id": task_id})
        assert info["instruction"] == text_info["instruction"]
        tiles = visual.unwrapped.tileset
        for _ in range(15):
            assert observation["screenshot"].shape == shape and observation["screenshot"].dtype == np.uint8
            assert visual.observation_space.contains(observation)
            assert tiles.read(observation["screenshot"]) == _grid(text_observation)
            assert text_observation.rsplit("\n\n", 1)[-1] not in observation["text"]  # the map is only in the image
            action = rng.choice(["up", "down", "left", "right", "jump"])
            observation, reward, terminated, _, info = visual.step(f"Action: {action}")
            text_observation, text_reward, text_terminated, _, text_info = text.step(f"Action: {action}")
            assert (reward, terminated, info["invalid_action"]) == (
                text_reward,
                text_terminated,
                text_info["invalid_action"],
            )
            assert observation["text"].split("\n\n")[0] == text_observation.split("\n\n")[0]  # the same feedback
            if terminated:
                break
    visual.close()
    text.close()


@pytest.mark.parametrize("visual_id", sorted(PUZZLES))
def test_the_oracle_solves_every_split(visual_id: str) -> None:
    env = gym.make(visual_id)
    for split in ("train", "dev", "test"):
        for task_id in env.unwrapped.splits.ids(split)[:8]:
            env.reset(seed=task_id, options={"task_id": task_id})
            for _ in range(200):
                _, _, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
                if terminated or truncated:
                    break
            assert info["success"] and info["score"] == 1.0, (split, task_id)
    env.close()


def test_the_first_observation_explains_the_image_and_bad_replies_are_explained() -> None:
    env = gym.make("Sokoban-Visual-v0")
    observation, info = env.reset(seed=0, options={"task_id": 5})
    text = observation["text"]
    assert info["instruction"] in text and "Actions: up, down, left, right" in text
    assert "box (X): a brown square on light grey" in text and "(The room is in the image.)" in text
    observation, reward, terminated, _, info = env.step("fly away")
    assert info["invalid_action"] and reward == 0 and not terminated
    assert observation["text"].startswith("Invalid action 'fly away': expected one of up, down, left, right")
    assert observation["screenshot"].shape == (144, 144, 3)
    env.close()


def test_tile_size_render_modes_and_the_partial_maze() -> None:
    env = gym.make("FrozenLake-Visual-v0", tile_size=10, render_mode="rgb_array", size=6)
    observation, _ = env.reset(seed=1, options={"task_id": 1})
    assert observation["screenshot"].shape == (60, 60, 3) and env.observation_space.contains(observation)
    assert np.array_equal(env.render(), observation["screenshot"])
    slippery = gym.make("FrozenLake-Visual-v0", is_slippery=True)
    assert "slippery" in slippery.reset(seed=0)[0]["text"]
    ansi = gym.make("Sokoban-Visual-v0", render_mode="ansi")
    ansi.reset(seed=0, options={"task_id": 0})
    assert "P" in ansi.render() and "#" in ansi.render()
    partial = gym.make("Maze-Visual-v0", view="partial")
    observation, _ = partial.reset(seed=0, options={"task_id": 0})
    symbols = {symbol for row in partial.unwrapped.tileset.read(observation["screenshot"]) for symbol in row}
    assert {"?", "P", "#"} <= symbols
    for made in (env, slippery, ansi, partial):
        made.close()


def test_a_chat_for_a_vlm_carries_the_image_and_a_text_chat_does_not() -> None:
    env = agentgym.ChatWrapper(gym.make("Maze-Visual-v0"), images=ImageOptions("screenshot"))
    messages, _ = env.reset(seed=0, options={"task_id": 2})
    image, text = messages[-1]["content"]
    shown = np.asarray(decode_image(image["image_url"]["url"]))
    assert np.array_equal(shown, env.unwrapped.tileset.render(env.unwrapped.grid_rows()))
    assert "(The maze is in the image.)" in text["text"]
    blind = agentgym.ChatWrapper(gym.make("Maze-Visual-v0"))
    messages, _ = blind.reset(seed=0, options={"task_id": 2})
    assert isinstance(messages[-1]["content"], str)
    env.close()
    blind.close()


def test_tile_sets_reject_what_they_cannot_draw_or_tell_apart() -> None:
    with pytest.raises(ValueError, match="unknown colour 'mauve'"):
        Tile("floor", "mauve")
    with pytest.raises(ValueError, match="unknown shape 'star'"):
        Shape("star", "red")
    with pytest.raises(ValueError, match="the same tile"):
        TileSet({"a": Tile("one", "white"), "b": Tile("two", "white")}, 8)
    with pytest.raises(ValueError, match="tile size"):
        TileSet({"a": Tile("one", "white")}, 2)
    tiles = TileSet({"a": Tile("one", "white"), "b": Tile("two", "white", (Shape("cross", "red"),))}, 8)
    assert tiles.read(tiles.render([["a", "b"], ["b", "a"]])) == [["a", "b"], ["b", "a"]]
    with pytest.raises(ValueError, match="no tile for symbol 'c'"):
        tiles.render([["a", "c"]])
    assert tiles.legend() == "one (a): a plain white tile; two (b): a red cross on white"
