"""Vision-language models end to end: tiny random VLMs of two real architectures (Qwen2-VL, LLaVA) loaded
as a user's folder, the in-process policy, ``serve-model`` answering multimodal chats (and 400s for bad
images), and ``agentgym eval`` with the ``openai:`` policy against it on the screen families."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from asgi import serving_in_thread

pytest.importorskip("transformers")
pytest.importorskip("fastapi")
pytest.importorskip("PIL")

import httpx
from PIL import Image
from tiny_vlm import build_tiny_llava, build_tiny_qwen2_vl
from transformers import AutoModelForImageTextToText

import agentgym.images as vision
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.images import ImageOptions, encode_screenshot, image_part, text_part
from agentgym.llm.generation import Generator, Request, RequestError, SamplingParams
from agentgym.llm.policies.base import Episode
from agentgym.llm.policies.hf import HFPolicy
from agentgym.llm.policies.openai_compat import OpenAIPolicy
from agentgym.llm.serve_model import create_app
from agentgym.llm.vision import QwenVLProcessor, VisionGenerator, VisionProcessor, load_generator

MODEL = "tiny-qwen2-vl"


@pytest.fixture(scope="module")
def qwen_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen2_vl(tmp_path_factory.mktemp("vlm") / "tiny-qwen2-vl")


@pytest.fixture(scope="module")
def llava_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llava(tmp_path_factory.mktemp("vlm") / "tiny-llava")


@pytest.fixture(scope="module")
def qwen(qwen_path: Path) -> VisionGenerator:
    generator = load_generator(qwen_path, device="cpu")
    assert isinstance(generator, VisionGenerator)
    return generator


def screen(seed: int, width: int = 320, height: int = 240) -> str:
    """A random screenshot as a PNG data URL (sent as it is)."""
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return encode_screenshot(pixels, ImageOptions("screenshot", max_pixels=None))[0]


def chat(*urls: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "Act on the screen."},
        {"role": "user", "content": [*(image_part(url) for url in urls), text_part("Action: click(1)")]},
    ]


def test_both_architectures_load_as_auto_classes_do(qwen_path: Path, llava_path: Path, qwen: VisionGenerator) -> None:
    llava = load_generator(llava_path, device="cpu")
    assert type(AutoModelForImageTextToText.from_pretrained(qwen_path)).__name__ == "Qwen2VLForConditionalGeneration"
    assert type(llava.model).__name__ == "LlavaForConditionalGeneration"
    assert isinstance(qwen.processor, QwenVLProcessor) and type(llava.processor) is VisionProcessor
    # Each image becomes the model's image tokens: Qwen2-VL one per 2x2 merge of 14-px patches of the
    # resized image (its processor's budget: 28*28*64 pixels, so 320x240 becomes 252x168, 12x18 patches),
    # LLaVA one per patch of its 28x28 crop.
    for generator, per_image in ((qwen, 12 * 18 // 4), (llava, 4)):
        prompt = generator.encode(Request(chat(screen(0), screen(1)), SamplingParams(max_new_tokens=4)))
        image_token = generator.model.config.image_token_id
        if generator is qwen:
            assert prompt.inputs["image_grid_thw"].tolist() == [[1, 12, 18], [1, 12, 18]]
        assert prompt.count(image_token) == 2 * per_image
        text_only = generator.encode(Request([{"role": "user", "content": "Action: up"}], SamplingParams()))
        assert image_token not in text_only and not getattr(text_only, "inputs", None)


def test_generation_is_seeded_and_counts_image_tokens(qwen: VisionGenerator) -> None:
    messages = chat(screen(2))
    greedy = Request(messages, SamplingParams(temperature=0, max_new_tokens=6))
    sampled = Request(messages, SamplingParams(temperature=1.0, max_new_tokens=6, seed=7))
    first, again, sample, resample = qwen.generate([greedy, greedy, sampled, sampled])
    assert first.token_ids == again.token_ids and sample.token_ids == resample.token_ids
    assert first.prompt_tokens == len(qwen.encode(greedy)) > 12 and len(first.logprobs) == len(first.token_ids)
    # The image changes what the model sees: another screenshot, another greedy reply's logprobs.
    other = qwen.generate([Request(chat(screen(3)), SamplingParams(temperature=0, max_new_tokens=6))])[0]
    assert other.logprobs != first.logprobs


@pytest.mark.parametrize("architecture", ["qwen2-vl", "llava"])
def test_a_batch_decodes_as_each_prompt_alone(architecture: str, qwen: VisionGenerator, llava_path: Path) -> None:
    """Rows of different lengths and image counts (none, one, two) decoded together give each row's
    tokens and logprobs alone: left padding, concatenated image inputs and positions (M-RoPE for Qwen-VL)."""
    generator = qwen if architecture == "qwen2-vl" else load_generator(llava_path, device="cpu")
    requests = [
        Request(chat(screen(4)), SamplingParams(temperature=0, max_new_tokens=5)),
        Request(
            [{"role": "user", "content": "Action: up, then a longer text-only prompt"}],
            SamplingParams(temperature=0, max_new_tokens=5),
        ),
        Request(chat(screen(5), screen(6)), SamplingParams(temperature=1.0, max_new_tokens=5, seed=3)),
    ]
    together = generator.generate(requests)
    for request, batched in zip(requests, together):
        (alone,) = generator.generate([request])
        assert batched.token_ids == alone.token_ids
        assert batched.logprobs == pytest.approx(alone.logprobs, abs=1e-4)


def test_image_placeholders_are_never_sampled(qwen: VisionGenerator) -> None:
    """A sampled image placeholder would stand for features no image gives (a random model samples them)."""
    import torch

    image = qwen.model.config.image_token_id
    assert {image, qwen.model.config.video_token_id} <= set(qwen.banned_token_ids)
    logits = torch.zeros(2, qwen.model.config.get_text_config().vocab_size)
    logits[:, image], logits[:, 7] = 50.0, 1.0
    rows = [qwen._row(1, SamplingParams(temperature=0)), qwen._row(1, SamplingParams(temperature=1.0, seed=1))]
    tokens, logprobs = qwen._next_tokens(logits, rows)
    assert image not in tokens and tokens[0] == 7
    assert logprobs[0] == pytest.approx(torch.log_softmax(logits[0], -1)[7].item())  # the raw logits' logprob


def test_bad_images_are_request_errors(qwen: VisionGenerator, tiny_model_path: Path) -> None:
    with pytest.raises(RequestError, match="image 1 .*not valid base64"):
        qwen.encode(Request(chat("data:image/png;base64,@@"), SamplingParams()))
    text_model = Generator.from_pretrained(tiny_model_path, device="cpu")
    with pytest.raises(RequestError, match="takes no images"):
        text_model.encode(Request(chat(screen(0)), SamplingParams()))


def test_the_hf_policy_plays_a_screen_env_from_its_screenshots(qwen_path: Path) -> None:
    import gymnasium as gym

    from agentgym.wrappers.chat import ChatWrapper

    env = ChatWrapper(gym.make("MiniWoB-click-button-v0", screenshot=True), images=ImageOptions("screenshot"))
    policy = HFPolicy(qwen_path, device="cpu", max_new_tokens=8)

    async def play() -> list[int]:
        messages, _ = env.reset(seed=0, options={"task_id": 0})
        prompts = []
        for _ in range(2):
            reply = await policy.act(messages, Episode("e", 0, env.unwrapped))
            prompts.append(reply.prompt_tokens)
            messages, *_ = env.step(reply.text)
        await policy.aclose()
        return prompts

    try:
        prompts = asyncio.run(play())
    finally:
        env.close()
    assert policy.describe()["vision"] is True
    assert prompts[1] > prompts[0] > 12  # the second prompt holds both screenshots' tokens


# ---- serve-model ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(qwen: VisionGenerator) -> Iterator[str]:
    app = create_app(qwen, MODEL, max_batch_size=8, batch_wait_ms=20)
    with serving_in_thread(app) as url:
        yield url


def post_chat(url: str, messages: list[dict[str, Any]], **fields: Any) -> httpx.Response:
    body = {"model": MODEL, "messages": messages, "temperature": 0, "max_tokens": 6, **fields}
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=60)


def test_serve_model_answers_a_multimodal_chat(server: str, qwen: VisionGenerator) -> None:
    messages = chat(screen(4))
    response = post_chat(server, messages, logprobs=True)
    assert response.status_code == 200, response.text
    reply = response.json()
    local = qwen.generate([Request(messages, SamplingParams(temperature=0, max_new_tokens=6))])[0]
    assert reply["choices"][0]["message"]["content"] == local.text
    assert [entry["logprob"] for entry in reply["choices"][0]["logprobs"]["content"]] == pytest.approx(local.logprobs)
    assert reply["usage"]["prompt_tokens"] == local.prompt_tokens  # image tokens counted
    text_only = post_chat(server, [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]).json()
    assert text_only["usage"]["prompt_tokens"] < reply["usage"]["prompt_tokens"] - 12


def _png(size: tuple[int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (9, 9, 9)).save(buffer, format="PNG")
    return buffer.getvalue()


def test_serve_model_answers_bad_images_with_a_400(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vision, "MAX_IMAGE_PIXELS", 10_000)
    cases = {
        "data:image/png;base64,not base64!": "not valid base64",
        "data:image/png;base64," + base64.b64encode(b"GIF89a but not really").decode(): "not a readable image",
        "data:image/png;base64," + base64.b64encode(_png((200, 100))).decode(): "200x100 pixels",
        "https://example.com/screen.png": "data URLs",
    }
    for url, message in cases.items():
        response = post_chat(server, chat(url))
        assert response.status_code == 400, (url[:40], response.text)
        assert message in response.json()["error"]["message"]
    missing_url = [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]
    assert post_chat(server, missing_url).status_code == 400
    monkeypatch.setattr(vision, "MAX_IMAGE_BYTES", 100)
    too_big = "data:image/png;base64," + base64.b64encode(_png((60, 60)) + bytes(200)).decode()
    response = post_chat(server, chat(too_big))
    assert response.status_code == 400 and "larger than 100 bytes" in response.json()["error"]["message"]


# ---- agentgym eval with the openai: policy against serve-model -----------------------------

DESKTOP_TOOLS = ("Xvfb", "openbox", "xdotool", "wmctrl", "xterm")
SCREEN_IDS = ["MiniWoB-click-button-v0", "WebShop-Browser-v0", "WebApps-Wiki-v0"]
if all(shutil.which(tool) for tool in DESKTOP_TOOLS):
    SCREEN_IDS.append("Desktop-v0")


def test_eval_runs_a_vlm_on_the_screen_families(server: str, tmp_path: Path) -> None:
    policy = OpenAIPolicy(MODEL, server + "/v1", max_tokens=12, temperature=0.0)
    items = [EvalItem(env_id, episodes=1, max_turns=2) for env_id in SCREEN_IDS]
    images = ImageOptions("screenshot", max_pixels=320 * 240, keep_images=1)

    async def main() -> Any:
        try:
            return await run_eval(f"openai:{MODEL}", policy, items, tmp_path, concurrency=2, images=images)
        finally:
            await policy.aclose()

    stats = asyncio.run(main())
    records = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert stats.errored == 0 and len(records) == len(SCREEN_IDS)
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["observation"] == images.describe()
    for record in records:
        assert record["status"] == "ok", record["error"]
        assert 1 <= record["steps"] <= 2 and record["tokens"]["prompt"] > 0
        urls = [
            part["image_url"]["url"]
            for message in record["messages"]
            if isinstance(message["content"], list)
            for part in message["content"]
            if part["type"] == "image_url"
        ]
        # Every observation's screenshot went to the model; the record names the files, not data URLs.
        assert urls == record["screenshots"][: len(urls)] and len(urls) == record["steps"] + 1
        assert all((tmp_path / url).is_file() for url in urls)


# ---- a remote env's screenshot reaches the model unchanged -----------------------------------


class LastObservation(gym.Wrapper):
    """Keeps the observation the env (here: a RemoteEnv, after the wire) returned last."""

    def reset(self, **kwargs: Any) -> Any:
        self.seen, info = self.env.reset(**kwargs)
        return self.seen, info

    def step(self, action: Any) -> Any:
        self.seen, *rest = self.env.step(action)
        return (self.seen, *rest)


def test_a_remote_screenshot_round_trips_to_the_message_unchanged() -> None:
    from agentgym.serving.client import RemoteEnv
    from agentgym.serving.server import create_app as create_env_app
    from agentgym.wrappers.chat import ChatWrapper

    env_id = "MiniWoB-click-button-v0"
    local = gym.make(env_id, screenshot=True)
    expected, _ = local.reset(seed=0, options={"task_id": 3})
    local.close()
    with serving_in_thread(create_env_app([env_id])) as url:
        remote = LastObservation(RemoteEnv(url, env_id, screenshot=True))
        chat = ChatWrapper(remote, images=ImageOptions("both", max_pixels=None))
        try:
            messages, _ = chat.reset(seed=0, options={"task_id": 3})
            sent = np.asarray(vision.decode_image(vision.image_url(messages[1]["content"][0])))
            assert np.array_equal(sent, remote.seen["screenshot"])  # what came over the wire is what is sent
            assert np.array_equal(remote.seen["screenshot"], expected["screenshot"])  # and what the env rendered
            assert messages[1]["content"][1]["text"] == expected["text"]
        finally:
            chat.close()
