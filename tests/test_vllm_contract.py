"""vLLM's own contract, on CPU: what agentgym sends to an OpenAI-compatible server and what
``agentgym serve-model`` answers, checked by vLLM's own protocol models and hermes tool parser.

vLLM's wheel (a CUDA build pinning torch and transformers) cannot be installed here, so the checks
(``tests/vllm_cases.py``) run in a side venv that this test makes once and caches
(:mod:`agentgym.integrations.venvs`: ``vllm==0.33.0`` with ``--no-deps`` and five pure-Python packages;
torch, transformers, pydantic and agentgym come from this environment). Making it needs PyPI the first
time (a 336 MB wheel; about a minute).

No JSON here is hand-written for the checks. serve-model's app serves tiny models on loopback behind
:class:`WireRecorder`, which keeps every request and response as they crossed the wire, while our
clients play real episodes:

* the ``openai:`` policy through ``agentgym eval``'s runner on FrozenLake-v0 (text replies) and on
  Sokoban-Visual-v0 (screenshots as ``image_url`` parts, to a tiny Qwen2-VL), and through the
  ChatWrapper on Sokoban-v0 with native tool calls, served by the tiny tool model trained (by
  ``tests/test_generated_tool_calls.py``'s fixture) to call ``move``;
* the trainer's ``openai`` rollout backend (:class:`~agentgym.train.rollout.ServerSampler`): token-id
  prompts with ``logprobs: 0`` and ``return_token_ids``, LoRA hot-loading, in text and tools mode;
* probes for what those clients never ask for (chat logprobs, streaming, ``/v1/models``, errors, a call
  cut by ``max_tokens``).

Every text that serve-model's chat endpoint and the trainer's rollout parsed for tool calls is recorded at
the call (:func:`agentgym.contract.tool_parsing.parse_tool_calls`,
:func:`~agentgym.contract.tool_parsing.assistant_message`), with what our parser made of it,
for vLLM's hermes parser to parse again.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from asgi import serving_in_thread

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("fastapi")
peft = pytest.importorskip("peft")

import gymnasium as gym  # noqa: E402
import httpx  # noqa: E402
from test_generated_tool_calls import ENV_ID as TOOLS_ENV_ID  # noqa: E402
from test_generated_tool_calls import tool_caller  # noqa: E402, F401  (the trained tool model, a fixture)
from tiny_vlm import build_tiny_qwen2_vl  # noqa: E402

import agentgym.llm.serve_model as serve_model  # noqa: E402
import agentgym.train.rollout as rollout  # noqa: E402
from agentgym.evaluation.runner import EvalItem, run_eval  # noqa: E402
from agentgym.images import ImageOptions  # noqa: E402
from agentgym.integrations import venvs  # noqa: E402
from agentgym.llm.generation import Generator, SamplingParams  # noqa: E402
from agentgym.llm.policies.base import Episode  # noqa: E402
from agentgym.llm.policies.openai_compat import OpenAIPolicy  # noqa: E402
from agentgym.llm.vision import load_generator  # noqa: E402
from agentgym.train.config import RolloutConfig  # noqa: E402
from agentgym.train.rollout import ChatTokens, ServerSampler, chat_env, make_slots, play_episodes  # noqa: E402
from agentgym.wrappers.chat import ChatWrapper  # noqa: E402

TESTS = Path(__file__).parent


class WireRecorder:
    """ASGI middleware: keeps each HTTP exchange (path, JSON body, status, content type, response body).

    ``client`` labels the exchanges recorded from now on (who sent them).
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.client = "probe"
        self.exchanges: list[dict[str, Any]] = []

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body, answer, start = bytearray(), bytearray(), {}

        async def receiving() -> dict[str, Any]:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
            return message

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                answer.extend(message.get("body", b""))
            await send(message)

        await self.app(scope, receiving, sending)
        content_type = dict(start.get("headers", [])).get(b"content-type", b"").decode()
        text = answer.decode()
        self.exchanges.append(
            {
                "client": self.client,
                "method": scope["method"],
                "path": scope["path"],
                "request": json.loads(body) if body else None,
                "status": start.get("status"),
                "content_type": content_type.split(";")[0],
                "response": json.loads(text) if content_type.startswith("application/json") else text,
            }
        )


class ParseRecorder:
    """Records every text our tool-call parsing read, where, and what it made of it."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def parse_tool_calls(self, function: Callable) -> Callable:
        """``serve-model``'s parser, recording."""

        def recording(text: str) -> Any:
            parsed = function(text)
            self.add("serve-model", text, parsed.content, parsed.tool_calls)
            return parsed

        return recording

    def assistant_message(self, function: Callable) -> Callable:
        """The trainer rollout's parser, recording."""

        def recording(text: str) -> dict[str, Any]:
            message = function(text)
            self.add("trainer", text, message["content"], message.get("tool_calls") or [])
            return message

        return recording

    def add(self, where: str, text: str, content: str | None, calls: list[dict[str, Any]]) -> None:
        self.records.append({"where": where, "text": text, "content": content, "tool_calls": calls})


def play_policy(policy: OpenAIPolicy, env: ChatWrapper, task_id: int, turns: int) -> list[Any]:
    """The ``openai:`` policy plays ``turns`` turns of ``env`` (its tools offered when it has them); its replies."""

    async def play() -> list[Any]:
        replies = []
        messages, _ = env.reset(seed=0, options={"task_id": task_id})
        try:
            for turn in range(turns):
                reply = await policy.act(messages, Episode(f"episode-{task_id}", turn, env, tools=env.tools))
                replies.append(reply)
                messages, _, terminated, truncated, _ = env.step(reply.action)
                if terminated or truncated:
                    break
        finally:
            await policy.aclose()
        return replies

    return asyncio.run(play())


async def evaluate(policy: OpenAIPolicy, items: list[EvalItem], out: Path, **options: Any) -> Any:
    """``agentgym eval`` with the ``openai:`` policy (closed afterwards, in the same event loop)."""
    try:
        return await run_eval(f"openai:{policy.model}", policy, items, out, concurrency=2, **options)
    finally:
        await policy.aclose()


def trainer_rollout(url: str, model: str, generator: Generator, env_id: str, task_id: int, **kwargs: Any) -> list:
    """The trainer's ``openai`` backend (``ServerSampler``) plays one episode of two turns against ``url``."""
    config = RolloutConfig(**kwargs)
    params = SamplingParams(temperature=config.temperature, top_p=config.top_p, max_new_tokens=64)
    sampler = ServerSampler(f"{url}/v1", model, params, generator.context_length)
    chat_tokens = ChatTokens(generator.tokenizer, sorted(generator.eos_token_ids))
    env = chat_env(env_id, {}, config.system_prompt, config.action_format)
    try:
        slots = make_slots([env], [(env_id, task_id, 0)], random.Random(0))
        return play_episodes(slots, sampler, chat_tokens, 2, lambda slot, turn: 100 + turn)
    finally:
        env.close()


def save_adapter(generator: Generator, folder: Path) -> Path:
    """A LoRA adapter of ``generator``'s model (random B matrices, so it changes the output), saved by peft."""
    import copy

    model = peft.get_peft_model(copy.deepcopy(generator.model), peft.LoraConfig(r=4, target_modules="all-linear"))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.5, generator=torch.Generator().manual_seed(0))
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def recorded(
    tiny_model_with_long_context_path: Path,
    tool_caller: tuple[Path, int, str, list[int]],  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    """Every exchange of our clients with serve-model, and every parsed reply text, as recorded."""
    out = tmp_path_factory.mktemp("vllm-contract")
    parses = ParseRecorder()
    exchanges: list[dict[str, Any]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(serve_model, "parse_tool_calls", parses.parse_tool_calls(serve_model.parse_tool_calls))
        patch.setattr(rollout, "assistant_message", parses.assistant_message(rollout.assistant_message))
        exchanges += text_model_exchanges(tiny_model_with_long_context_path, out)
        exchanges += tool_model_exchanges(*tool_caller)
        exchanges += vision_model_exchanges(out)
    tokenizer = str(tool_caller[0])
    return {"exchanges": exchanges, "parsed": parses.records, "tokenizer": tokenizer, "call_reply": tool_caller[3]}


def text_model_exchanges(path: Path, out: Path) -> list[dict[str, Any]]:
    generator = Generator.from_pretrained(path, device="cpu")
    model = path.name
    recorder = WireRecorder(serve_model.create_app(generator, model, batch_wait_ms=1))
    with serving_in_thread(recorder) as url:
        recorder.client = "openai-policy"
        policy = OpenAIPolicy(model, f"{url}/v1", max_tokens=8, stop=["\n\n"])
        items = [EvalItem("FrozenLake-v0", episodes=2, max_turns=2)]
        stats = asyncio.run(evaluate(policy, items, out / "text-eval"))
        assert stats.errored == 0

        recorder.client = "trainer"
        trainer_rollout(url, model, generator, "FrozenLake-v0", 0)
        sampler = ServerSampler(f"{url}/v1", model, SamplingParams(max_new_tokens=4), generator.context_length)
        sampler.load_adapter("policy", str(save_adapter(generator, out / "adapter")))
        trainer_rollout(url, "policy", generator, "FrozenLake-v0", 1)

        recorder.client = "probe"
        chat = [{"role": "system", "content": "Move."}, {"role": "user", "content": "Where next?"}]
        probes = [
            ("/v1/chat/completions", {"model": model, "messages": chat, "max_tokens": 5, "logprobs": True}),
            ("/v1/chat/completions", {"messages": chat, "max_tokens": 5, "stream": True}),
            ("/v1/chat/completions", {"messages": chat, "stream": True, "stream_options": {"include_usage": True}}),
            ("/v1/completions", {"prompt": ["Action:", "Move"], "max_tokens": 3, "logprobs": 0}),
            ("/v1/chat/completions", {"messages": chat, "n": 2}),
            ("/v1/chat/completions", {"messages": []}),
            ("/v1/completions", {"model": "no-such-model", "prompt": "x"}),
        ]
        for route, body in probes:
            httpx.post(url + route, json=body | {"temperature": 0, "max_tokens": body.get("max_tokens", 4)}, timeout=60)
        httpx.get(f"{url}/v1/models", timeout=10)
        httpx.post(f"{url}/v1/unload_lora_adapter", json={"lora_name": "policy"}, timeout=10)
    return recorder.exchanges


def tool_model_exchanges(model_dir: Path, task_id: int, direction: str, reply: list[int]) -> list[dict[str, Any]]:
    generator = Generator.from_pretrained(model_dir, device="cpu")
    model = model_dir.name
    recorder = WireRecorder(serve_model.create_app(generator, model, batch_wait_ms=1))
    with serving_in_thread(recorder) as url:
        recorder.client = "openai-policy"
        env = ChatWrapper(gym.make(TOOLS_ENV_ID), action_format="tools")
        try:
            replies = play_policy(OpenAIPolicy(model, f"{url}/v1", max_tokens=64), env, task_id, turns=2)
        finally:
            env.close()
        assert [call["function"]["name"] for call in replies[0].tool_calls or []] == ["move"]

        recorder.client = "trainer"
        (trajectory,) = trainer_rollout(
            url, model, generator, TOOLS_ENV_ID, task_id, action_format="tools", temperature=0.0
        )
        assert trajectory.turns >= 1

        recorder.client = "probe"
        env = ChatWrapper(gym.make(TOOLS_ENV_ID), action_format="tools")
        messages, _ = env.reset(options={"task_id": task_id})
        env.close()
        body = {"model": model, "messages": messages, "tools": env.tools, "temperature": 0}
        # The whole call but the end of turn: cut by max_tokens, the reply keeps its call and says "length".
        cut = httpx.post(f"{url}/v1/chat/completions", json=body | {"max_tokens": len(reply) - 1}, timeout=60).json()
        assert cut["choices"][0]["finish_reason"] == "length" and cut["choices"][0]["message"]["tool_calls"]
        httpx.post(f"{url}/v1/chat/completions", json=body | {"max_tokens": 64, "stream": True}, timeout=60)
        httpx.post(f"{url}/v1/chat/completions", json=body | {"max_tokens": 64, "logprobs": True}, timeout=60)
    return recorder.exchanges


def vision_model_exchanges(out: Path) -> list[dict[str, Any]]:
    path = build_tiny_qwen2_vl(out / "tiny-qwen2-vl")
    generator = load_generator(path, device="cpu")
    recorder = WireRecorder(serve_model.create_app(generator, path.name, batch_wait_ms=1))
    with serving_in_thread(recorder) as url:
        recorder.client = "openai-policy"
        policy = OpenAIPolicy(path.name, f"{url}/v1", max_tokens=6)
        items = [EvalItem("Sokoban-Visual-v0", episodes=1, max_turns=2)]
        images = ImageOptions("screenshot", max_pixels=160 * 120)
        stats = asyncio.run(evaluate(policy, items, out / "vlm-eval", images=images))
        assert stats.errored == 0
    return recorder.exchanges


def test_what_we_send_and_serve_meets_vllms_own_models_and_hermes_parser(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    exchanges = recorded["exchanges"]
    clients = {(exchange["client"], exchange["path"]) for exchange in exchanges}
    assert {
        ("openai-policy", "/v1/chat/completions"),
        ("trainer", "/v1/completions"),
        ("trainer", "/v1/load_lora_adapter"),
        ("trainer", "/v1/unload_lora_adapter"),
        ("probe", "/v1/models"),
    } <= clients
    sent = [exchange["request"] for exchange in exchanges if exchange["client"] == "openai-policy"]
    assert any(body.get("tools") for body in sent), "no request offered tools"
    assert any(message.get("role") == "tool" for body in sent for message in body["messages"])
    assert any(isinstance(m["content"], list) for body in sent for m in body["messages"]), "no image was sent"
    parsed = recorded["parsed"]
    assert {record["where"] for record in parsed if record["tool_calls"]} == {"serve-model", "trainer"}
    assert {record["where"] for record in parsed if not record["tool_calls"]} == {"serve-model", "trainer"}

    record = tmp_path / "exchanges.json"
    record.write_text(json.dumps(recorded), encoding="utf-8")
    python = venvs.ensure("vllm")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "AGENTGYM_VLLM_EXCHANGES": str(record)}
    run = subprocess.run(
        [str(python), "-m", "pytest", str(TESTS / "vllm_cases.py"), "-q", "-p", "no:cacheprovider"],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    sys.stdout.write(run.stdout[-6000:])
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout


def test_a_tool_call_cut_by_max_tokens_says_length(
    recorded: dict[str, Any],
) -> None:
    """vLLM's rules, which serve-model follows: ``finish_reason`` ``tool_calls`` only when the model stopped."""
    chats = [e for e in recorded["exchanges"] if e["path"] == "/v1/chat/completions" and e["status"] == 200]
    for exchange in chats:
        if exchange["content_type"] != "application/json":
            continue
        choice = exchange["response"]["choices"][0]
        if choice["message"].get("tool_calls"):
            cut = exchange["request"].get("max_tokens") == len(recorded["call_reply"]) - 1
            assert choice["finish_reason"] == ("length" if cut else "tool_calls")
        else:
            assert choice["finish_reason"] in ("stop", "length")


def test_import_agentgym_does_not_import_vllm() -> None:
    code = "import sys, agentgym, agentgym.integrations, agentgym.llm; assert 'vllm' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
