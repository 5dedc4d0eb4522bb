"""vLLM's own OpenAI-protocol models and hermes tool parser, checking agentgym's wire (run by
tests/test_vllm_contract.py in vLLM's side venv; not collected by the main test run).

``$AGENTGYM_VLLM_EXCHANGES`` names the record that test made: every request our clients (the
``openai:`` policy, the trainer's ``openai`` rollout backend) sent to ``agentgym serve-model`` and
every response it gave, as they crossed the wire, and every reply text our tool-call parsing read.

vLLM's protocol models allow fields they do not know (vLLM logs and ignores them), so validating
alone would pass a misspelt field: each check also asserts that nothing was left over
(:func:`unknown_fields`), that each chat message came through vLLM's message types whole, and that
the sampling parameters vLLM derives from a request are the ones the request meant.
"""

from __future__ import annotations

import copy
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import vllm
from pydantic import BaseModel
from transformers import AutoTokenizer
from vllm.entrypoints.generate.base.protocol import ToolCall
from vllm.entrypoints.openai.chat_completion.protocol import (
    ChatCompletionRequest,
    ChatCompletionResponse,
    ChatCompletionStreamResponse,
)
from vllm.entrypoints.openai.completion.protocol import CompletionRequest, CompletionResponse
from vllm.entrypoints.serve.engine.protocol import ErrorResponse, ModelList
from vllm.entrypoints.serve.lora.protocol import LoadLoRAAdapterRequest, UnloadLoRAAdapterRequest
from vllm.multimodal.utils import fetch_image
from vllm.renderers.chat_utils.chat_message import parse_chat_message_content_mm_part
from vllm.tool_parsers.hermes_tool_parser import Hermes2ProToolParser

from agentgym.contract.tool_parsing import parse_tool_calls
from agentgym.images import decode_image

VLLM_VERSION = "0.33.0"
RECORD = json.loads(Path(os.environ["AGENTGYM_VLLM_EXCHANGES"]).read_text(encoding="utf-8"))
EXCHANGES: list[dict[str, Any]] = RECORD["exchanges"]
REQUEST_MODELS = {
    "/v1/chat/completions": ChatCompletionRequest,
    "/v1/completions": CompletionRequest,
    "/v1/load_lora_adapter": LoadLoRAAdapterRequest,
    "/v1/unload_lora_adapter": UnloadLoRAAdapterRequest,
}
RESPONSE_MODELS = {"/v1/chat/completions": ChatCompletionResponse, "/v1/completions": CompletionResponse}
#: Reply texts beyond the recorded ones, for the parsers' corner cases (their calls are compared, not written here).
HERMES_TEXTS = [
    "Action: up",
    '<tool_call>\n{"name": "move", "arguments": {"direction": "up"}}\n</tool_call>',
    'I go up.\n<tool_call>\n{"name": "move", "arguments": {"direction": "up"}}\n</tool_call>',
    '<tool_call>{"name": "a", "arguments": {}}</tool_call>\n'
    '<tool_call>{"name": "b", "arguments": {"x": [1, 2]}}</tool_call>',  # two calls
    '<tool_call>\n{"name": "move", "arguments": {"direction": "up"}}',  # unclosed: generation stopped
    '<tool_call>\n{"name": "move", "arguments": {"direction": "up"}\n</tool_call>',  # not JSON
    '<tool_call>\n["move", "up"]\n</tool_call>',  # not an object
    '<tool_call>\n{"name": "move"}\n</tool_call>',  # no arguments
    '<tool_call>\n{"name": 3, "arguments": {}}\n</tool_call>',  # a name that is not a string
    '<tool_call>\n{"name": "type", "arguments": "héllo \\"world\\" 🙂"}\n</tool_call>',  # arguments as a string
    '<tool_call>\n{"name": "type", "arguments": {"text": "日本語 {nested}", "n": 1.5, "ok": true}}\n</tool_call>',
    '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>broken</tool_call>',  # one bad block
    "<tool_call>",
    "<tool_call></tool_call>",
]


def unknown_fields(value: Any, where: str = "") -> list[str]:
    """The fields of ``value`` (a validated vLLM model) that its models kept as unknown extras."""
    found: list[str] = []
    if isinstance(value, BaseModel):
        found += [f"{where}.{name}" for name in value.model_extra or {}]
        for name in type(value).model_fields:
            found += unknown_fields(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found += unknown_fields(item, f"{where}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            found += unknown_fields(item, f"{where}.{key}")
    return found


def validated(model: type[BaseModel], data: Any) -> Any:
    """``data`` validated by vLLM's ``model`` (a copy: vLLM's validators fill in defaults), with no unknown field."""
    instance = model.model_validate(copy.deepcopy(data))
    assert not unknown_fields(instance), f"{model.__name__} does not know {unknown_fields(instance)}: {str(data)[:300]}"
    return instance


def exchanges(path: str, *, client: str | None = None, status: int | None = 200) -> list[dict[str, Any]]:
    found = [e for e in EXCHANGES if e["path"] == path and (client is None or e["client"] == client)]
    return [e for e in found if status is None or e["status"] == status]


def test_the_installed_vllm_is_the_one_tested() -> None:
    assert vllm.__version__ == VLLM_VERSION


def test_every_request_our_clients_sent_is_a_valid_vllm_request() -> None:
    checked = 0
    for exchange in EXCHANGES:
        if exchange["method"] != "POST":
            continue
        if exchange["client"] == "probe" and exchange["status"] >= 400:
            continue  # the probes of errors
        validated(REQUEST_MODELS[exchange["path"]], exchange["request"])
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("client", ["openai-policy", "probe"])
def test_chat_requests_mean_to_vllm_what_they_mean_to_us(client: str) -> None:
    """Each message comes through vLLM's message types whole; vLLM's sampling parameters are the request's."""
    sent = [e["request"] for e in exchanges("/v1/chat/completions", client=client)]
    assert sent
    for body in sent:
        request = validated(ChatCompletionRequest, body)
        assert [dict(message) for message in request.messages] == body["messages"]
        params = request.to_sampling_params(body.get("max_tokens") or 16, {})
        assert params.temperature == body.get("temperature", 1.0) and params.seed == body.get("seed")
        assert params.stop == ([body["stop"]] if isinstance(body.get("stop"), str) else body.get("stop", []))
        assert params.logprobs == (0 if body.get("logprobs") else None)
        if body.get("tools"):
            assert request.tool_choice == "auto"
            assert [tool.function.name for tool in request.tools] == [t["function"]["name"] for t in body["tools"]]
            assert [tool.function.parameters for tool in request.tools] == [
                t["function"].get("parameters") for t in body["tools"]
            ]


def test_images_in_requests_are_what_vllm_reads_from_them() -> None:
    """Each ``image_url`` part is one vLLM parses as an image URL, and vLLM decodes the same pixels we do."""
    parts = [
        part
        for exchange in exchanges("/v1/chat/completions", client="openai-policy")
        for message in exchange["request"]["messages"]
        if isinstance(message["content"], list)
        for part in message["content"]
    ]
    images = [part for part in parts if part["type"] == "image_url"]
    assert images
    for part in parts:
        kind, content = parse_chat_message_content_mm_part(part)
        assert kind == part["type"]
        assert content == (part["image_url"]["url"] if kind == "image_url" else part["text"])
    for part in images[:4]:
        url = part["image_url"]["url"]
        assert np.array_equal(np.asarray(fetch_image(url)), np.asarray(decode_image(url)))


def test_the_trainers_completion_requests_ask_vllm_for_the_sampled_ids_and_logprobs() -> None:
    sent = [e["request"] for e in exchanges("/v1/completions", client="trainer")]
    assert len(sent) >= 4
    for body in sent:
        request = validated(CompletionRequest, body)
        assert request.prompt == body["prompt"] and all(isinstance(token, int) for token in body["prompt"])
        assert request.return_token_ids is True
        params = request.to_sampling_params(body["max_tokens"])
        assert params.logprobs == 0 and params.seed == body["seed"]
        assert (params.temperature, params.top_p) == (body["temperature"], body["top_p"])
    assert {body["model"] for body in sent} >= {"policy"}  # the hot-loaded adapter, named as vLLM serves it


def test_every_json_response_is_a_valid_vllm_response() -> None:
    checked = set()
    for exchange in EXCHANGES:
        response, path = exchange["response"], exchange["path"]
        if exchange["status"] >= 400:
            error = validated(ErrorResponse, response)
            assert error.error.code == exchange["status"] and error.error.message
        elif path in RESPONSE_MODELS and exchange["content_type"] == "application/json":
            validated(RESPONSE_MODELS[path], response)
        elif path == "/v1/models":
            validated(ModelList, response)
        else:
            continue
        checked.add((path, exchange["status"]))
    assert {("/v1/chat/completions", 200), ("/v1/completions", 200), ("/v1/models", 200)} <= checked
    assert {status for _, status in checked} >= {400, 404}


def test_logprobs_and_token_ids_are_in_vllms_shapes() -> None:
    completions = [e for e in exchanges("/v1/completions") if e["request"].get("logprobs") == 0]
    assert any(e["client"] == "trainer" for e in completions)
    for exchange in completions:
        for choice in validated(CompletionResponse, exchange["response"]).choices:
            logprobs = choice.logprobs
            assert len(logprobs.tokens) == len(logprobs.token_logprobs) == len(logprobs.top_logprobs)
            # logprobs: 0 gives, as vLLM, each position's one best candidate: the sampled token with its logprob.
            assert logprobs.top_logprobs == [{t: lp} for t, lp in zip(logprobs.tokens, logprobs.token_logprobs)]
            offsets = [sum(len(token) for token in logprobs.tokens[:i]) for i in range(len(logprobs.tokens))]
            assert logprobs.text_offset == offsets
            if exchange["request"].get("return_token_ids"):
                assert len(choice.token_ids) == len(logprobs.tokens) and choice.prompt_token_ids
    chats = [
        e for e in exchanges("/v1/chat/completions") if e["request"].get("logprobs") and not e["request"].get("stream")
    ]
    assert chats
    for exchange in chats:
        (choice,) = validated(ChatCompletionResponse, exchange["response"]).choices
        for entry in choice.logprobs.content:
            assert entry.bytes == list(entry.token.encode()) and entry.top_logprobs == []


def test_streamed_chunks_are_valid_vllm_stream_responses() -> None:
    streams = [e for e in exchanges("/v1/chat/completions") if e["content_type"] == "text/event-stream"]
    assert streams
    for exchange in streams:
        events = [
            line.removeprefix("data: ") for line in exchange["response"].splitlines() if line.startswith("data: ")
        ]
        assert events[-1] == "[DONE]"
        chunks = [validated(ChatCompletionStreamResponse, json.loads(event)) for event in events[:-1]]
        finish = [choice.finish_reason for chunk in chunks for choice in chunk.choices if choice.finish_reason]
        assert len(finish) == 1
        usage = (exchange["request"].get("stream_options") or {}).get("include_usage")
        assert (chunks[-1].usage is not None) == bool(usage)


def test_lora_answers_are_vllms_words() -> None:
    for path, verb in (("/v1/load_lora_adapter", "added"), ("/v1/unload_lora_adapter", "removed")):
        for exchange in exchanges(path):
            name = exchange["request"]["lora_name"]
            assert exchange["response"] == f"Success: LoRA adapter '{name}' {verb} successfully."


@pytest.fixture(scope="module")
def hermes() -> Hermes2ProToolParser:
    """vLLM's hermes tool parser (``--tool-call-parser hermes``) over the tiny tool model's tokenizer."""
    return Hermes2ProToolParser(AutoTokenizer.from_pretrained(RECORD["tokenizer"]))


@cache
def tools_request() -> ChatCompletionRequest:
    """A chat request with tools, as the ``openai:`` policy sent it (what vLLM's parser is given)."""
    body = next(
        e["request"] for e in exchanges("/v1/chat/completions", client="openai-policy") if e["request"].get("tools")
    )
    return validated(ChatCompletionRequest, body)


def assert_same_calls(
    hermes: Hermes2ProToolParser, text: str, content: str | None, calls: list[dict[str, Any]]
) -> None:
    """vLLM's hermes parser finds in ``text`` the calls we found (``calls``, and our ``content``)."""
    theirs = hermes.extract_tool_calls(text, tools_request())
    assert theirs.tools_called == bool(calls), text
    assert [(c.type, c.function.name, c.function.arguments) for c in theirs.tool_calls] == [
        (c["type"], c["function"]["name"], c["function"]["arguments"]) for c in calls
    ], text
    for call in calls:
        validated(ToolCall, call)
    if not calls:
        assert content == theirs.content == text
    else:
        # vLLM keeps the text before the first block; we keep all text outside the blocks, stripped.
        assert (content or "").startswith((theirs.content or "").strip())


def test_hermes_parses_the_texts_serve_model_and_the_trainer_parsed_into_our_calls(
    hermes: Hermes2ProToolParser,
) -> None:
    records = RECORD["parsed"]
    assert {r["where"] for r in records if r["tool_calls"]} == {"serve-model", "trainer"}
    for record in records:
        content = record["content"]
        if record["where"] == "serve-model" and not record["tool_calls"]:
            content = record["text"]  # serve-model sends the text unchanged when it holds no call
        assert_same_calls(hermes, record["text"], content, record["tool_calls"])


@pytest.mark.parametrize("text", HERMES_TEXTS)
def test_hermes_and_our_parser_agree_on_corner_cases(hermes: Hermes2ProToolParser, text: str) -> None:
    ours = parse_tool_calls(text)
    assert_same_calls(hermes, text, ours.content if ours.tool_calls else text, ours.tool_calls)
