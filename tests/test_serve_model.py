"""The OpenAI-compatible model server (``agentgym.llm.serve_model``), over real HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgi import serving_in_thread

pytest.importorskip("transformers")
pytest.importorskip("fastapi")

import httpx

from agentgym.llm.generation import Batcher, Generator, Request, SamplingParams
from agentgym.llm.policies.base import Episode
from agentgym.llm.policies.openai_compat import OpenAIPolicy
from agentgym.llm.serve_model import create_app

MODEL = "tiny-llama"
CHAT = [{"role": "system", "content": "Move up, down, left or right."}, {"role": "user", "content": "Where next?"}]


@pytest.fixture(scope="module")
def generator(tiny_model_path: Path) -> Generator:
    return Generator.from_pretrained(tiny_model_path, device="cpu")


@pytest.fixture(scope="module")
def server(generator: Generator) -> Iterator[tuple[str, Batcher]]:
    """A live server on a free loopback port; yields its base URL and batcher."""
    app = create_app(generator, MODEL, max_batch_size=8, batch_wait_ms=50)
    with serving_in_thread(app) as url:
        yield url, app.state.batcher


def post(server: tuple[str, Batcher], path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(server[0] + path, json=body, timeout=30)


def test_models_and_health(server: tuple[str, Batcher]) -> None:
    assert httpx.get(server[0] + "/health").status_code == 200
    models = httpx.get(server[0] + "/v1/models").json()
    assert models["object"] == "list"
    assert [(model["id"], model["object"], model["max_model_len"]) for model in models["data"]] == [
        (MODEL, "model", 256)
    ]


def test_chat_completion(server: tuple[str, Batcher], generator: Generator) -> None:
    body = {"model": MODEL, "messages": CHAT, "temperature": 0, "max_tokens": 6, "logprobs": True}
    response = post(server, "/v1/chat/completions", body)
    assert response.status_code == 200
    reply = response.json()
    assert reply["id"].startswith("chatcmpl-") and reply["object"] == "chat.completion"
    assert reply["model"] == MODEL and isinstance(reply["created"], int)
    (choice,) = reply["choices"]
    (expected,) = generator.generate([Request(CHAT, SamplingParams(temperature=0, max_new_tokens=6))])
    assert choice["index"] == 0 and choice["finish_reason"] == "length"
    assert choice["message"] == {"role": "assistant", "content": expected.text}
    tokens = choice["logprobs"]["content"]
    assert [entry["logprob"] for entry in tokens] == pytest.approx(expected.logprobs, abs=1e-4)
    assert "".join(entry["token"] for entry in tokens) == generator.tokenizer.decode(expected.token_ids)
    assert reply["usage"] == {
        "prompt_tokens": expected.prompt_tokens,
        "completion_tokens": 6,
        "total_tokens": expected.prompt_tokens + 6,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    # max_completion_tokens wins over max_tokens; no logprobs unless asked.
    reply = post(server, "/v1/chat/completions", body | {"max_completion_tokens": 3, "logprobs": False}).json()
    assert reply["usage"]["completion_tokens"] == 3 and reply["choices"][0]["logprobs"] is None


def test_chat_completion_streams_the_reply_as_it_is_sampled(server: tuple[str, Batcher], generator: Generator) -> None:
    """``stream: true`` (what verifiers' chat harness always sends) gets OpenAI's chunks while the reply is sampled;
    the SDK reassembles them into the reply a plain request gets."""
    import openai

    client = openai.OpenAI(base_url=server[0] + "/v1", api_key="unused")
    (expected,) = generator.generate([Request(CHAT, SamplingParams(temperature=0, max_new_tokens=12))])
    chunks = list(
        client.chat.completions.create(
            model=MODEL,
            messages=CHAT,  # type: ignore[arg-type]
            temperature=0,
            max_tokens=12,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert all(chunk.object == "chat.completion.chunk" for chunk in chunks)
    contents = [chunk.choices[0].delta.content for chunk in chunks if chunk.choices and chunk.choices[0].delta.content]
    assert "".join(contents) == expected.text and len(contents) > 1, "the reply arrives in pieces"
    finishes = [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices]
    assert finishes[-1] == "length" and not any(finishes[:-1])
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 12
    # A stop string never shows, not even its first characters while it was still being sampled.
    stop = expected.text[4:7]
    streamed = client.chat.completions.create(
        model=MODEL,
        messages=CHAT,
        temperature=0,
        max_tokens=12,
        stop=stop,
        stream=True,  # type: ignore[arg-type]
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices)
    assert text == expected.text[: expected.text.find(stop)]
    # An error before the first token is an HTTP error, as without streaming.
    too_long = {"messages": [{"role": "user", "content": "up " * 400}], "stream": True, "max_tokens": 4}
    response = post(server, "/v1/chat/completions", too_long)
    assert response.status_code == 400 and "context length" in response.json()["error"]["message"]


def test_streamed_text_holds_back_what_may_still_change() -> None:
    from agentgym.llm.streaming import StreamedText

    pieces = {1: "Act", 2: "ion: go\ufffd", 3: "ion: go é", 4: "ion: go é ST", 5: "ion: go é STOP now"}
    text = StreamedText(lambda ids: "".join(pieces[i] for i in ids[:1]) + pieces[ids[-1]] * (len(ids) > 1), ["STOP"])
    assert [text.delta([1]), text.delta([1, 2]), text.delta([1, 3]), text.delta([1, 4])] == [
        "Act",
        "ion: go",
        " é",
        " ",
    ]
    assert text.delta([1, 5]) == "" and text.rest("Action: go é ") == ""
    assert text.sent == "Action: go é "


def test_completion(server: tuple[str, Batcher], generator: Generator) -> None:
    prompt = "Action: up"
    (expected,) = generator.generate([Request(prompt, SamplingParams(temperature=0, max_new_tokens=8))])
    for form in (prompt, [prompt]):
        reply = post(server, "/v1/completions", {"prompt": form, "temperature": 0, "max_tokens": 8}).json()
        assert reply["id"].startswith("cmpl-") and reply["object"] == "text_completion"
        assert reply["choices"] == [{"index": 0, "text": expected.text, "logprobs": None, "finish_reason": "length"}]
        assert reply["usage"] == {
            "prompt_tokens": expected.prompt_tokens,
            "completion_tokens": 8,
            "total_tokens": expected.prompt_tokens + 8,
            "prompt_tokens_details": {"cached_tokens": 0},
        }
    stop = expected.text[3:5]
    reply = post(server, "/v1/completions", {"prompt": prompt, "temperature": 0, "max_tokens": 8, "stop": stop}).json()
    (choice,) = reply["choices"]
    assert choice["text"] == expected.text[: expected.text.index(stop)] and choice["finish_reason"] == "stop"


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("/v1/chat/completions", b'{"messages": [', 400, "JSON"),
        ("/v1/chat/completions", {"model": MODEL}, 400, "messages"),
        ("/v1/chat/completions", {"messages": []}, 400, "messages"),
        ("/v1/chat/completions", {"messages": [{"role": "robot", "content": "hi"}]}, 400, "role"),
        ("/v1/chat/completions", {"messages": CHAT, "n": 2}, 400, "n=1"),
        ("/v1/chat/completions", {"messages": CHAT, "temperature": -1}, 400, "temperature"),
        ("/v1/chat/completions", {"messages": CHAT, "top_logprobs": 5}, 400, "top_logprobs"),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "up " * 300}]}, 400, "context length"),
        ("/v1/chat/completions", {"messages": CHAT, "model": "gpt-4"}, 404, "gpt-4"),
        ("/v1/completions", {"prompt": "up", "stream": True}, 400, "streaming"),
        ("/v1/completions", {"prompt": []}, 400, "prompt"),
        ("/v1/completions", {"prompt": "up", "max_tokens": 0}, 400, "max_tokens"),
        ("/v1/completions", [1, 2], 400, "invalid request"),
        ("/v1/nothing", {}, 404, "Not Found"),
    ],
)
def test_bad_requests_get_4xx_json_errors(
    server: tuple[str, Batcher], path: str, body: Any, status: int, words: str
) -> None:
    if isinstance(body, bytes):
        response = httpx.post(server[0] + path, content=body, headers={"content-type": "application/json"})
    else:
        response = post(server, path, body)
    assert response.status_code == status
    error = response.json()["error"]
    assert words in error["message"]
    assert error["code"] == status and error["type"].endswith("Error")


def test_concurrent_requests_are_batched(server: tuple[str, Batcher]) -> None:
    batcher = server[1]
    batches, requests = batcher.batches, batcher.requests

    async def run() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server[0], timeout=30) as client:
            chats = [
                {"messages": CHAT + [{"role": "user", "content": f"try {i}"}], "max_tokens": 4, "temperature": 0}
                for i in range(6)
            ]
            completions = [{"prompt": f"Action: {move}", "max_tokens": 4, "temperature": 0} for move in ("up", "down")]
            return await asyncio.gather(
                *(client.post("/v1/chat/completions", json=body) for body in chats),
                *(client.post("/v1/completions", json=body) for body in completions),
            )

    responses = asyncio.run(run())
    assert [response.status_code for response in responses] == [200] * 8
    assert all(response.json()["usage"]["completion_tokens"] == 4 for response in responses)
    assert batcher.requests - requests == 8
    assert batcher.batches - batches < 8


def test_a_model_failure_is_a_500_json_error(
    server: tuple[str, Batcher], generator: Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object) -> None:
        raise RuntimeError("CUDA out of memory (pretend)")

    monkeypatch.setattr(server[1].generator, "generate_tokens", broken)
    response = post(server, "/v1/completions", {"prompt": "up", "max_tokens": 2})
    assert response.status_code == 500
    error = response.json()["error"]
    assert error["type"] == "InternalServerError" and "out of memory" in error["message"]
    assert "Traceback" not in response.text
    monkeypatch.undo()
    assert post(server, "/v1/completions", {"prompt": "up", "max_tokens": 2}).status_code == 200


def test_the_openai_policy_talks_to_the_server(server: tuple[str, Batcher], generator: Generator) -> None:
    policy = OpenAIPolicy(MODEL, server[0] + "/v1", temperature=0.0, max_tokens=5)

    async def act() -> Any:
        try:
            return await policy.act(CHAT, Episode(key="e", seed=0, env=None))  # type: ignore[arg-type]
        finally:
            await policy.aclose()

    reply = asyncio.run(act())
    (expected,) = generator.generate([Request(CHAT, SamplingParams(temperature=0, max_new_tokens=5))])
    assert (reply.text, reply.prompt_tokens, reply.completion_tokens) == (expected.text, expected.prompt_tokens, 5)


def test_token_id_prompts_return_the_sampled_ids_and_logprobs(
    server: tuple[str, Batcher], generator: Generator
) -> None:
    """vLLM's fields for RL: a prompt of token ids, ``logprobs: 0`` and ``return_token_ids``."""
    prompt = generator.encode(Request(CHAT))
    body = {"prompt": prompt, "temperature": 0, "max_tokens": 5, "logprobs": 0, "return_token_ids": True}
    choice = post(server, "/v1/completions", body).json()["choices"][0]
    (expected,) = generator.generate_tokens([prompt], [SamplingParams(temperature=0, max_new_tokens=5)])
    assert choice["token_ids"] == expected.token_ids and choice["prompt_token_ids"] == prompt
    assert choice["logprobs"]["token_logprobs"] == pytest.approx(expected.logprobs, abs=1e-4)
    assert len(choice["logprobs"]["tokens"]) == 5 and choice["text"] == expected.text
    batch = post(server, "/v1/completions", body | {"prompt": [prompt, prompt[:3]]}).json()["choices"]
    assert [len(entry["prompt_token_ids"]) for entry in batch] == [len(prompt), 3]
    for bad, needle in (([10**9], "token ids"), (prompt * 50, "context length")):
        response = post(server, "/v1/completions", body | {"prompt": bad})
        assert response.status_code == 400 and needle in response.json()["error"]["message"]
    response = post(server, "/v1/completions", body | {"logprobs": 2})
    assert response.status_code == 400 and "logprobs=0" in response.json()["error"]["message"]


def test_lora_adapters_load_serve_and_unload(server: tuple[str, Batcher], generator: Generator, tmp_path: Path) -> None:
    """``/v1/load_lora_adapter`` as in vLLM: the adapter is served under its name until unloaded."""
    peft = pytest.importorskip("peft")
    import copy

    import torch

    model = peft.get_peft_model(copy.deepcopy(generator.model), peft.LoraConfig(r=4, target_modules="all-linear"))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.5, generator=torch.Generator().manual_seed(0))
    model.save_pretrained(tmp_path / "adapter")
    merged = Generator(model.merge_and_unload(), generator.tokenizer)
    prompt = generator.encode(Request(CHAT))
    params = SamplingParams(temperature=0, max_new_tokens=6)
    (expected,) = merged.generate_tokens([prompt], [params])
    (base,) = generator.generate_tokens([prompt], [params])
    assert expected.token_ids != base.token_ids, "the adapter should change the model's output"

    load = {"lora_name": "policy", "lora_path": str(tmp_path / "adapter")}
    assert post(server, "/v1/load_lora_adapter", load).status_code == 200
    assert post(server, "/v1/load_lora_adapter", load).status_code == 400  # already loaded, as in vLLM
    assert [entry["id"] for entry in httpx.get(server[0] + "/v1/models").json()["data"]] == [MODEL, "policy"]
    body = {"prompt": prompt, "temperature": 0, "max_tokens": 6, "return_token_ids": True}
    assert post(server, "/v1/completions", body | {"model": "policy"}).json()["choices"][0]["token_ids"] == (
        expected.token_ids
    )
    assert post(server, "/v1/completions", body).json()["choices"][0]["token_ids"] == base.token_ids
    assert post(server, "/v1/unload_lora_adapter", {"lora_name": "policy"}).status_code == 200
    assert post(server, "/v1/completions", body | {"model": "policy"}).status_code == 404
    assert post(server, "/v1/unload_lora_adapter", {"lora_name": "policy"}).status_code == 404
    missing = post(server, "/v1/load_lora_adapter", {"lora_name": "x", "lora_path": str(tmp_path / "none")})
    assert missing.status_code == 400 and "adapter_config.json" in missing.json()["error"]["message"]
