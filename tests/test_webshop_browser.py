"""WebShop-Browser-v0: WebShop's site in Chromium scores exactly as WebShop-v0."""

from __future__ import annotations

import gymnasium as gym
import pytest
from browsers import needs_chromium

import agentgym  # noqa: F401  (registers the ids)

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def envs():
    browser, text = gym.make("WebShop-Browser-v0"), gym.make("WebShop-v0")
    yield browser.unwrapped, text.unwrapped
    browser.close()
    text.close()


def play(env, task_id: int, limit: int) -> dict:
    env.reset(options={"task_id": task_id})
    for _ in range(limit):
        *_, terminated, _, info = env.step(env.oracle_action())
        if terminated:
            break
    return info


@pytest.mark.parametrize("task_id", [0, 7, 600, 1700, 5000, 12_000])
def test_oracle_reward_equals_webshop_v0(envs, task_id: int) -> None:
    browser, text = envs
    in_browser, in_text = play(browser, task_id, 30), play(text, task_id, 15)
    assert in_browser["instruction"] == in_text["instruction"]
    assert in_browser["score"] == in_text["score"] and in_browser["success"] == in_text["success"]
    assert in_browser["browser_error"] is None


def test_buying_the_first_result_scores_as_webshop_v0(envs) -> None:
    browser, text = envs
    observation, info = browser.reset(options={"task_id": 3})
    box = next(line for line in observation["text"].splitlines() if "placeholder" in line).split("]")[0].split("[")[1]
    browser.step(f'type({box}, "shampoo")')
    observation, *_ = browser.step("press(Enter)")
    product = next(
        line
        for line in observation["text"].splitlines()
        if "button" in line and "Next" not in line and "Back" not in line and "Search" not in line
    )
    bid = product.split("]")[0].split("[")[1]
    observation, *_ = browser.step(f"click({bid})")
    buy = next(line for line in observation["text"].splitlines() if '"Buy Now"' in line).split("]")[0].split("[")[1]
    *_, terminated, _, info = browser.step(f"click({buy})")
    asin = browser.site.session(browser.session_id).purchase.asin
    assert terminated and 0.0 <= info["score"] <= 1.0
    text.reset(options={"task_id": 3})
    text.step("search[shampoo]")
    text.step(f"click[{asin}]")
    *_, text_info = text.step("click[Buy Now]")
    assert text_info["score"] == info["score"]
