"""A VLM trained with server-side sampling: the trainer's ``openai`` rollout backend against
``agentgym serve-model`` (its own process, on loopback) serving the tiny Qwen2-VL.

Token-id prompts carry their images beside the ids (``multi_modal_data``); the server computes the same
image inputs, samples, and returns ids and logprobs that the trainer's own forward pass reproduces, over
multi-turn episodes on FrozenLake-Visual-v0 (a new image each turn). Bad image payloads are 400s.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("peft")

import gymnasium as gym  # noqa: E402
import httpx  # noqa: E402
import torch  # noqa: E402
from tiny_vlm import build_tiny_qwen2_vl  # noqa: E402

import agentgym  # noqa: E402
from agentgym.images import ImageOptions  # noqa: E402
from agentgym.llm.vision import load_processor  # noqa: E402
from agentgym.train.config import TrainConfig, from_dict  # noqa: E402
from agentgym.train.rollout import VisionChatTokens  # noqa: E402
from agentgym.train.trainer import Trainer  # noqa: E402

ENV = "FrozenLake-Visual-v0"


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen2_vl(tmp_path_factory.mktemp("vlm") / "tiny-qwen2-vl", context_length=4096)


@pytest.fixture(scope="module")
def server(model_path: Path) -> Iterator[str]:
    """``agentgym serve-model`` on the tiny VLM in its own process; yields its base URL (…/v1)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "agentgym.cli", "serve-model", str(model_path), "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--device", "cpu", "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        for _ in range(600):
            if process.poll() is not None:
                pytest.fail(f"serve-model exited: {process.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            pytest.fail("serve-model did not answer /health in 60 s")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()


def test_one_grpo_iteration_samples_on_the_server_with_images(model_path: Path, server: str, tmp_path: Path) -> None:
    config = from_dict(
        TrainConfig,
        {
            "model": {"path": str(model_path), "device": "cpu", "lora": {"r": 4, "alpha": 8}},
            "envs": [{"id": ENV}],
            # Random replies earn nothing here: the entropy bonus makes the update move the weights.
            "algorithm": {"name": "grpo", "group_size": 2, "entropy_weight": 0.01},
            "rollout": {
                "backend": "openai",
                "base_url": server,
                "adapter_name": "policy",
                "max_new_tokens": 4,
                "max_turns": [[0, 2]],
                "observation": "screenshot",
                "system_prompt": None,
            },
            "out": str(tmp_path / "run"),
            "iterations": 2,
            "groups_per_iteration": 1,
            "minibatch_size": 2,
            "learning_rate": 0.01,
            "checkpoint_every": 2,
            "tensorboard": False,
        },
    )
    trainer = Trainer(config)
    try:
        trajectories = trainer.rollout()
        image_token = trainer.processor.image_token_id
        for trajectory in trajectories:
            # Every observation the model acted on brought its image: the first prompt, then each env reply.
            assert trajectory.turns >= 1 and len(trajectory.image_urls) == len(trajectory.images) == trajectory.turns
            assert sum(token == image_token for token in trajectory.token_ids) > 0
            assert sum(trajectory.loss_mask) > 0
        adapter = {name: p.detach().clone() for name, p in trainer.model.named_parameters() if p.requires_grad}
        first = trainer.step()  # rollout on the server (base model), score, update
        # The server's logprobs are the trainer's, token for token, with the images in the prompts.
        assert first["logprob_mismatch_mean"] < 1e-4 and first["logprob_mismatch_max"] < 1e-3
        assert any(not torch.equal(p, adapter[name]) for name, p in trainer.model.named_parameters() if name in adapter)
        second = trainer.step()  # the updated adapter hot-loaded into the server samples this one
        assert second["logprob_mismatch_mean"] < 1e-4 and second["model_tokens"] > 0
    finally:
        trainer.close()
    served = [entry["id"] for entry in httpx.get(server + "/models").json()["data"]]
    assert "policy" in served


def _image_prompt(model_path: Path) -> tuple[list[int], list[str]]:
    """A FrozenLake-Visual-v0 first prompt as the trainer encodes it: ids (images expanded) and the image URL."""
    env = agentgym.ChatWrapper(gym.make(ENV), images=ImageOptions("screenshot"), system_prompt=None)
    messages, _ = env.reset(seed=0, options={"task_id": 0})
    env.close()
    tokens = VisionChatTokens(load_processor(model_path), [])
    prompt = tokens.prompt(messages)
    return list(prompt), prompt.image_urls


def test_image_payloads_the_server_cannot_use_are_400s(model_path: Path, server: str) -> None:
    ids, urls = _image_prompt(model_path)
    assert len(urls) == 1 and urls[0].startswith("data:image/png;base64,")
    body = {"prompt": ids, "max_tokens": 2, "logprobs": 0, "return_token_ids": True, "seed": 1}
    answer = httpx.post(f"{server}/completions", json=body | {"multi_modal_data": {"image": urls}}, timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["prompt_token_ids"] == ids
    image_token = load_processor(model_path).image_token_id
    shorter = ids[: ids.index(image_token)] + ids[ids.index(image_token) + 1 :]  # one image token fewer
    cases = {
        "no images": (ids, None, "image tokens but no images"),
        "a token short": (shorter, {"image": urls}, "image tokens; its 1 images take"),
        "not base64": (ids, {"image": ["data:image/png;base64,@@@"]}, "not valid base64"),
        "not an image": (ids, {"image": ["data:image/png;base64,aGVsbG8="]}, "not a readable image"),
        "a video": (ids, {"video": urls}, "takes only 'image'"),
        "a text prompt": ("hello", {"image": urls}, "one prompt of token ids"),
    }
    for case, (prompt, media, message) in cases.items():
        answer = httpx.post(
            f"{server}/completions", json=body | {"prompt": prompt, "multi_modal_data": media}, timeout=60
        )
        assert answer.status_code == 400, case
        assert message in answer.json()["error"]["message"], (case, answer.text)


def test_a_server_that_would_ignore_the_images_is_refused(model_path: Path, server: str) -> None:
    """vLLM's completions ignore unknown fields: sampling a VLM there would silently drop the images.
    The sampler asks ``/v1/models`` who serves and refuses anything but serve-model, before any request."""
    from asgi import serving_in_thread
    from fastapi import FastAPI

    from agentgym.llm.generation import SamplingParams
    from agentgym.train.rollout import ServerSampler

    other = FastAPI()
    completions: list[dict] = []
    other.get("/v1/models")(lambda: {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "vllm"}]})
    other.post("/v1/completions")(lambda body: completions.append(body))
    _, urls = _image_prompt(model_path)
    prompt = VisionChatTokens(load_processor(model_path), []).prompt(
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": urls[0]}}]}]
    )
    params = SamplingParams(temperature=1.0, max_new_tokens=2)
    refused = pytest.raises(RuntimeError, match="owned_by \\['vllm'\\].*only agentgym serve-model")
    with serving_in_thread(other) as url, refused:
        ServerSampler(f"{url}/v1", "m", params, None).sample([prompt], [0])
    assert not completions
    # serve-model passes the check and samples.
    (sample,) = ServerSampler(server, "tiny-qwen2-vl", params, None).sample([prompt], [0])
    assert len(sample.token_ids) == len(sample.logprobs) >= 1
