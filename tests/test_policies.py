"""Policy specs, scripted replies taken at once (``act_now``), and the OpenAI-compatible client's retries,
limits and usage accounting."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.evaluation.results import read_episodes
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies import OraclePolicy, RandomPolicy, make_policy, parse_spec
from agentgym.llm.policies.base import Episode, Reply
from agentgym.llm.policies.openai_compat import OpenAIPolicy, PolicyError


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("oracle", ("oracle", "", None)),
        ("random", ("random", "", None)),
        ("hf:/models/tiny", ("hf", "/models/tiny", None)),
        ("openai:Qwen/Qwen2.5-7B@http://127.0.0.1:8000/v1", ("openai", "Qwen/Qwen2.5-7B", "http://127.0.0.1:8000/v1")),
        ("openai:gpt-4o@https://api.example.com/v1", ("openai", "gpt-4o", "https://api.example.com/v1")),
        ("openai:org/model@v2", ("openai", "org/model@v2", "http://127.0.0.1:8000/v1")),
    ],
)
def test_parse_spec(spec: str, parsed: tuple[str, str, str | None], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert parse_spec(spec) == parsed


@pytest.mark.parametrize("spec", ["", "openai", "openai:", "hf:", "vllm:x", "oracle:x"])
def test_bad_specs_are_rejected(spec: str) -> None:
    with pytest.raises(ValueError, match="bad policy spec"):
        parse_spec(spec)


def test_make_policy_builds_baselines() -> None:
    assert isinstance(make_policy("oracle"), OraclePolicy)
    assert isinstance(make_policy("random"), RandomPolicy)


def test_scripted_replies_come_at_once_and_a_subclass_act_is_never_bypassed(tmp_path: Path) -> None:
    """``act_now`` gives what ``act`` gives; a class that overrides ``act`` only answers None there, so
    the runner (which asks ``act_now`` first for inline envs) still plays its ``act``."""
    env = gym.make("Sokoban-v0")
    env.reset(seed=0, options={"task_id": 3})
    for policy in (OraclePolicy(), RandomPolicy()):
        episode = Episode("k", 7, env.unwrapped)
        now = policy.act_now([], episode)
        assert now is not None and now == asyncio.run(policy.act([], Episode("k", 7, env.unwrapped)))
    assert OpenAIPolicy("m", "http://127.0.0.1:9/v1").act_now([], Episode("k", 7, env.unwrapped)) is None

    class Shouting(OraclePolicy):
        async def act(self, messages: list, episode: Episode) -> Reply:
            reply = await super().act(messages, episode)
            return Reply(f"Action: {reply.text}")

    assert Shouting().act_now([], Episode("k", 7, env.unwrapped)) is None
    stats = asyncio.run(run_eval("shouting", Shouting(), [EvalItem("Sokoban-v0", 2, split="dev")], tmp_path))
    (record, _) = read_episodes(tmp_path).values()
    assert stats.errored == 0 and record.success and record.messages[2]["content"].startswith("Action: ")


class ScriptedServer(ThreadingHTTPServer):
    """A loopback Chat Completions endpoint that answers with scripted statuses."""

    def __init__(self, statuses: list[int], delay_s: float = 0.0) -> None:
        super().__init__(("127.0.0.1", 0), ScriptedHandler)
        self.statuses = statuses
        self.delay_s = delay_s
        self.requests: list[dict] = []
        self.headers_seen: list[dict] = []
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        #: The assistant message every 200 answer carries.
        self.message: dict = {"role": "assistant", "content": "Action: up"}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class ScriptedHandler(BaseHTTPRequestHandler):
    server: ScriptedServer

    def do_POST(self) -> None:
        server = self.server
        with server.lock:
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
            status = server.statuses.pop(0) if server.statuses else 200
            server.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            server.headers_seen.append(dict(self.headers))
        time.sleep(server.delay_s)
        with server.lock:  # done before the answer leaves: a client that has it may send its next request at once
            server.in_flight -= 1
        if status == 200:
            body = {
                "choices": [{"index": 0, "message": server.message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 17, "completion_tokens": 3, "total_tokens": 20},
            }
        else:
            body = {"error": {"message": f"scripted {status}", "type": "test", "code": status}}
        data = json.dumps(body).encode()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client past its timeout has gone
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def serve() -> Iterator:
    servers = []

    def start(statuses: list[int], delay_s: float = 0.0) -> ScriptedServer:
        server = ScriptedServer(statuses, delay_s)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def episode(seed: int = 7) -> Episode:
    return Episode(key="Test-v0/test/0/0", seed=seed, env=None)  # type: ignore[arg-type]


def act(policy: OpenAIPolicy, count: int = 1) -> list:
    async def main() -> list:
        try:
            messages = [{"role": "user", "content": "hi"}]
            return await asyncio.gather(*(policy.act(messages, episode(seed)) for seed in range(count)))
        finally:
            await policy.aclose()

    return asyncio.run(main())


def test_reply_usage_sampling_seed_and_api_key(serve, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve([])
    monkeypatch.setenv("MY_KEY", "sk-test")
    policy = OpenAIPolicy("tiny", server.url, api_key_env="MY_KEY", temperature=0.7, max_tokens=64, stop=["\n\n"])
    (reply,) = act(policy)
    assert reply.text == "Action: up" and (reply.prompt_tokens, reply.completion_tokens) == (17, 3)
    request = server.requests[0]
    assert request["model"] == "tiny" and request["seed"] == 0 and request["temperature"] == 0.7
    assert request["max_tokens"] == 64 and request["stop"] == ["\n\n"] and request["messages"][0]["content"] == "hi"
    assert server.headers_seen[0]["Authorization"] == "Bearer sk-test"


def test_retries_on_overload_then_succeeds(serve) -> None:
    server = serve([503, 429, 500])
    (reply,) = act(OpenAIPolicy("tiny", server.url, backoff_s=0.01))
    assert reply.text == "Action: up" and len(server.requests) == 4


def test_client_errors_are_not_retried(serve) -> None:
    server = serve([400])
    with pytest.raises(PolicyError, match="HTTP 400.*scripted 400"):
        act(OpenAIPolicy("tiny", server.url, backoff_s=0.01))
    assert len(server.requests) == 1


def test_gives_up_after_retries(serve) -> None:
    server = serve([503] * 10)
    with pytest.raises(PolicyError, match="failed after 3 attempts.*HTTP 503"):
        act(OpenAIPolicy("tiny", server.url, max_retries=2, backoff_s=0.01))


def test_a_request_without_an_answer_in_time_is_sent_once_more_then_says_what_to_change(serve) -> None:
    server = serve([], delay_s=0.5)
    with pytest.raises(PolicyError, match=r"no answer within 0.1 s, 2 times.*--concurrency.*--request-timeout"):
        act(OpenAIPolicy("tiny", server.url, timeout_s=0.1, max_retries=6, backoff_s=0.01))
    assert len(server.requests) == 2


def test_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(PolicyError, match="ConnectError"):
        act(OpenAIPolicy("tiny", "http://127.0.0.1:9/v1", max_retries=1, backoff_s=0.01))


def test_concurrency_limit(serve) -> None:
    server = serve([], delay_s=0.05)
    replies = act(OpenAIPolicy("tiny", server.url, concurrency=3), count=12)
    assert len(replies) == 12 and server.max_in_flight <= 3
    assert sorted(request["seed"] for request in server.requests) == list(range(12))
