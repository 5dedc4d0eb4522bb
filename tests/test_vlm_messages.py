"""Screenshots as chat content (agentgym.images, ChatWrapper's ``images=``): image parts for
screen observations, none for text envs (their messages byte for byte as before), the pixel budget,
the coordinate note, the element list, kept images, tools mode, and decoding with clear errors."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import agentgym  # noqa: F401  (registers the ids)
from agentgym.contract.core import UnicodeText, observation_text
from agentgym.images import (
    ELIDED_IMAGE,
    ImageError,
    ImageOptions,
    count_images,
    decode_image,
    elide_images,
    fit_pixels,
    image_url,
    replace_images,
    without_element_list,
)
from agentgym.wrappers.chat import DEFAULT_SYSTEM_PROMPT, ChatWrapper, MessagesSpace

pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

TEXT_IDS = ["Sokoban-v0", "Wordle-v0", "FrozenLake-v0", "Maze-v0"]


class ScreenEnv(gym.Env):
    """A screen env in miniature: each step paints the screen a new grey; the text lists elements like a browser's."""

    element_list_heading = "Page:\n"

    def __init__(self, width: int = 400, height: int = 300) -> None:
        self.shape = (height, width, 3)
        self.observation_space = spaces.Dict(
            {"text": UnicodeText(10_000), "screenshot": spaces.Box(0, 255, self.shape, np.uint8)}
        )
        self.action_space = UnicodeText(100)
        self.steps = 0

    def _observation(self, text: str) -> dict[str, Any]:
        pixels = np.full(self.shape, 20 * self.steps, dtype=np.uint8)
        pixels[: self.shape[0] // 2, : self.shape[1] // 2] = 255  # a white top-left quarter: the aspect shows
        return {"text": f"{text}\n\nPage:\n[1] button 'OK'", "screenshot": pixels}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.steps = 0
        return self._observation("Click OK."), {"task_id": 0, "instruction": "Click OK."}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.steps += 1
        return self._observation(f"You did {action!r}."), 0.0, self.steps >= 5, False, {}


def play_text(env_id: str, chat: ChatWrapper) -> list[str]:
    """Three turns of ``env_id`` (random legal actions), each prompt serialised."""
    messages, _ = chat.reset(seed=0, options={"task_id": 1})
    dumps = [json.dumps(messages)]
    for turn in range(3):
        action = chat.unwrapped.random_action(__import__("random").Random(turn))
        messages, _, terminated, truncated, _ = chat.step(action)
        dumps.append(json.dumps(messages))
        if terminated or truncated:
            break
    return dumps


@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_text_envs_messages_are_byte_identical(env_id: str) -> None:
    """Text envs: every image mode gives the same bytes as plain text mode, and those are the
    messages ChatWrapper always built (system prompt, then each observation's text as a string)."""
    plain = ChatWrapper(gym.make(env_id))
    expected = play_text(env_id, plain)
    first = json.loads(expected[0])
    env = gym.make(env_id)
    observation, _ = env.reset(seed=0, options={"task_id": 1})
    assert first == [
        {"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": observation_text(observation)},
    ]
    for mode in ("screenshot", "both"):
        chat = ChatWrapper(gym.make(env_id), images=ImageOptions(mode, max_pixels=100, keep_images=0))
        assert play_text(env_id, chat) == expected


def png_size(url: str) -> tuple[int, int]:
    return decode_image(url).size


def test_screen_observations_become_image_and_text_parts() -> None:
    chat = ChatWrapper(ScreenEnv(), images=ImageOptions("both"))
    messages, _ = chat.reset(seed=0)
    assert MessagesSpace().contains(messages)
    image, text = messages[1]["content"]
    assert image["type"] == "image_url" and image_url(image).startswith("data:image/png;base64,")
    assert png_size(image_url(image)) == (400, 300)  # within the default budget: sent as it is
    assert text == {"type": "text", "text": "Click OK.\n\nPage:\n[1] button 'OK'"}
    pixels = np.asarray(decode_image(image_url(image)))
    assert pixels[0, 0].tolist() == [255, 255, 255] and pixels[-1, -1].tolist() == [0, 0, 0]  # lossless PNG

    messages, *_ = chat.step("click(1)")
    assert [message["role"] for message in messages] == ["system", "user", "assistant", "user"]
    assert count_images(messages) == 2
    # Text mode on the same env: strings, as for a text model.
    text_chat = ChatWrapper(ScreenEnv())
    assert text_chat.reset(seed=0)[0][1] == {"role": "user", "content": "Click OK.\n\nPage:\n[1] button 'OK'"}


def test_screenshot_mode_drops_the_element_list() -> None:
    chat = ChatWrapper(ScreenEnv(), images=ImageOptions("screenshot"))
    messages, _ = chat.reset(seed=0)
    assert messages[1]["content"][1] == {"type": "text", "text": "Click OK."}
    assert without_element_list("Page:\n[1] a", "Page:\n") == ""
    assert without_element_list("Done.\nPage:\n[1] a", None) == "Done.\nPage:\n[1] a"


def test_the_pixel_budget_keeps_the_aspect_and_tells_the_scale() -> None:
    assert fit_pixels(1024, 768, 1024 * 768) == (1024, 768)
    assert fit_pixels(1024, 768, 512 * 384) == (512, 384)
    width, height = fit_pixels(1280, 720, 300_000)
    assert width * height <= 300_000 and abs(width / height - 16 / 9) < 0.01
    chat = ChatWrapper(ScreenEnv(400, 300), images=ImageOptions("both", max_pixels=200 * 150))
    messages, _ = chat.reset(seed=0)
    image, text = messages[1]["content"]
    assert png_size(image_url(image)) == (200, 150)
    assert chat.image_sizes == ((400, 300), (200, 150))
    assert text["text"].endswith(
        "(The screenshot is shown at 200x150, scaled down from the 400x300 screen: "
        "a point (x, y) on it is (2*x, 2*y) on the screen.)"
    )
    jpeg = ChatWrapper(ScreenEnv(), images=ImageOptions("screenshot", image_format="jpeg"))
    assert image_url(jpeg.reset(seed=0)[0][1]["content"][0]).startswith("data:image/jpeg;base64,")


def test_only_the_last_k_images_are_sent() -> None:
    chat = ChatWrapper(ScreenEnv(), images=ImageOptions("screenshot", keep_images=2))
    chat.reset(seed=0)
    for turn in range(3):
        messages, *_ = chat.step(f"click({turn})")
    assert count_images(chat.transcript) == 4  # the transcript keeps them all
    assert count_images(messages) == 2
    elided = [part for message in messages[1:] if message["role"] == "user" for part in message["content"]]
    assert [part.get("text") for part in elided if part["type"] == "text"][:2] == [ELIDED_IMAGE, "Click OK."]
    # The newest two are the last two observations' own images.
    users = [message for message in messages if message["role"] == "user"]
    kept = [image_url(part) for message in users for part in message["content"] if part["type"] == "image_url"]
    assert kept == [image_url(message["content"][0]) for message in chat.transcript[-3::2]]
    assert elide_images(chat.transcript, None) is chat.transcript
    assert count_images(ChatWrapper(ScreenEnv(), images=ImageOptions("both", keep_images=0)).reset()[0]) == 0
    # With a history window, the budget applies to what the window keeps.
    windowed = ChatWrapper(ScreenEnv(), history_window=1, images=ImageOptions("both", keep_images=1))
    windowed.reset(seed=0)
    windowed.step("a")
    messages, *_ = windowed.step("b")
    assert count_images(messages) == 1 and messages[1]["content"][0] == {"type": "text", "text": ELIDED_IMAGE}


def test_tools_mode_sends_the_screenshot_after_the_tool_result() -> None:
    env = gym.make("MiniWoB-click-button-v0", screenshot=True)
    chat = ChatWrapper(env, action_format="tools", images=ImageOptions("screenshot"))
    try:
        messages, _ = chat.reset(seed=0, options={"task_id": 0})
        call = {"role": "assistant", "content": None, "tool_calls": [_click_call()]}
        messages, *_ = chat.step(call)
    finally:
        chat.close()
    tool, screen = messages[-2:]
    assert tool["role"] == "tool" and isinstance(tool["content"], str)
    assert screen["role"] == "user" and [part["type"] for part in screen["content"]] == ["image_url"]
    assert MessagesSpace().contains(messages)


def _click_call() -> dict[str, Any]:
    return {"id": "call_1", "type": "function", "function": {"name": "click", "arguments": json.dumps({"id": 1})}}


def test_records_name_screenshot_files_instead_of_data_urls() -> None:
    chat = ChatWrapper(ScreenEnv(), images=ImageOptions("both"))
    chat.reset(seed=0)
    chat.step("a")
    recorded = replace_images(chat.transcript, ["screenshots/e/0.png"])
    assert recorded[1]["content"][0] == {"type": "image_url", "image_url": {"url": "screenshots/e/0.png"}}
    assert recorded[3]["content"][0]["image_url"]["url"].startswith("data:")  # past the end of the list: kept
    assert chat.transcript[1]["content"][0]["image_url"]["url"].startswith("data:")  # the transcript is untouched


def _data_url(data: bytes, kind: str = "png") -> str:
    return f"data:image/{kind};base64," + base64.b64encode(data).decode()


def test_decoding_says_what_is_wrong() -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), (1, 2, 3)).save(buffer, format="PNG")
    assert decode_image(_data_url(buffer.getvalue())).size == (8, 6)
    cases = {
        "https://example.com/a.png": "data URLs",
        "data:image/png,abc": "base64 encoded",
        "data:image/png;base64,***": "not valid base64",
        _data_url(b"this is not an image"): "not a readable image",
    }
    for url, message in cases.items():
        with pytest.raises(ImageError, match=message):
            decode_image(url)
    with pytest.raises(ImageError, match="larger than 100 bytes"):
        decode_image(_data_url(buffer.getvalue() * 10), max_bytes=100)
    with pytest.raises(ImageError, match="8x6 pixels"):
        decode_image(_data_url(buffer.getvalue()), max_pixels=20)
    with pytest.raises(ValueError, match="observation mode"):
        ImageOptions("pixels")  # type: ignore[arg-type]


def test_the_leaderboard_labels_runs_by_what_the_model_saw() -> None:
    from agentgym.evaluation.leaderboard.collect import action_format

    assert action_format({"action_format": "tools"}) == "tools"
    assert action_format({"observation": ImageOptions().describe()}) == "text"  # text mode: as before
    assert action_format({"observation": ImageOptions("screenshot").describe()}) == "text+screenshot[786432px]"
    both = ImageOptions("both", max_pixels=None, keep_images=3).describe()
    assert action_format({"action_format": "tools", "observation": both}) == "tools+both[full size,keep 3]"
