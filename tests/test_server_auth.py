"""API keys and per-client quotas of ``agentgym serve`` and ``agentgym serve-model`` (docs/security.md)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import httpx
import psutil
import pytest
from asgi import serving_in_thread
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from agentgym.cli import main as cli_main
from agentgym.serving.app import RENICE_EVERY_S
from agentgym.serving.auth import (
    API_KEYS_ENV,
    POLICY_VIOLATION,
    RequestQuotas,
    SessionQuotas,
    check_exposure,
    is_loopback,
    load_api_keys,
)
from agentgym.serving.client import API_KEY_ENV, RemoteEnv, RemoteEnvError
from agentgym.serving.server import ChannelsFirst, create_app
from agentgym.serving.server import main as server_main
from agentgym.serving.vector_client import RemoteVectorEnv

KEY, OTHER_KEY = "k-" + "a" * 40, "k-" + "b" * 40
ENV_ID = "Sokoban-v0"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def keyed() -> Iterator[tuple[str, Any]]:
    """A server with two keys, run as ``agentgym serve`` runs it (channels first); its URL and app."""
    app = create_app([ENV_ID], api_keys=[KEY, OTHER_KEY])
    with serving_in_thread(ChannelsFirst(app)) as url:
        yield url, app


def new_session(url: str, key: str = KEY) -> str:
    response = httpx.post(f"{url}/sessions", json={"env_id": ENV_ID}, headers=bearer(key))
    assert response.status_code == 201, response.text
    return response.json()["session_id"]


def every_route(app: Any) -> tuple[list[tuple[str, str]], list[str]]:
    """Every (method, path) the app answers over HTTP, and every WebSocket path: read from its routes, so a
    route added later is checked too (a mount is reached below its path)."""
    from starlette.routing import Mount, WebSocketRoute

    http, sockets = [], []
    for route in app.routes:
        if isinstance(route, WebSocketRoute):
            sockets.append(route.path)
        elif isinstance(route, Mount):
            http.append(("GET", f"{route.path}/{ENV_ID}/health"))
        else:
            http += [(method, route.path) for method in sorted(route.methods)]
    return http, sockets


def test_every_route_refuses_a_missing_or_wrong_key_and_takes_the_right_one(keyed: tuple[str, Any]) -> None:
    url, app = keyed
    http, _ = every_route(app)
    assert len(http) > 15 and ("POST", "/sessions/{session_id}/step") in http
    for method, path in http:
        concrete = path.replace("{session_id}", new_session(url))
        body = {"json": {}} if method in ("POST", "PUT", "PATCH") else {}
        for headers in ({}, bearer("wrong"), {"Authorization": KEY}, {"Authorization": "Basic x"}):
            response = httpx.request(method, url + concrete, headers=headers, **body)
            if path == "/health":
                assert response.status_code == 200
                continue
            assert response.status_code == 401, (method, path, headers, response.status_code)
            assert response.headers["www-authenticate"].startswith("Bearer"), (method, path)
            if method != "HEAD":
                assert response.json()["error"]["type"] == "Unauthorized"
        if path.startswith("/openenv/"):
            continue  # with the key: test_the_openenv_client_sends_its_key (OpenEnv takes a while to import)
        for key in (KEY, OTHER_KEY):
            response = httpx.request(method, url + concrete, headers=bearer(key), timeout=60, **body)
            assert response.status_code != 401, (method, path, response.text)
    assert app.state.server.errors["Unauthorized"] > 0


def test_every_channel_refuses_a_missing_or_wrong_key_with_1008_and_takes_the_right_one(
    keyed: tuple[str, Any],
) -> None:
    url, app = keyed
    _, sockets = every_route(app)
    assert set(sockets) == {"/sessions/{session_id}/channel", "/batch"}
    for path in sockets:
        address = "ws" + url.removeprefix("http") + path.replace("{session_id}", new_session(url))
        for headers in ({}, bearer("wrong")):
            with connect(address, additional_headers=headers, proxy=None) as channel:
                reply = json.loads(channel.recv(timeout=10))
                assert reply["status"] == 401 and reply["error"]["type"] == "Unauthorized"
                assert reply["type"] == "error" and reply["data"]["code"] == "Unauthorized"  # OpenEnv's shape
                with pytest.raises(ConnectionClosed) as closed:
                    channel.recv(timeout=10)
                assert closed.value.rcvd.code == POLICY_VIOLATION
        with connect(address, additional_headers=bearer(OTHER_KEY), proxy=None) as channel:
            channel.send(json.dumps({"call": "reset", "calls": []}))
            assert json.loads(channel.recv(timeout=10)).get("status", 200) == 200


def test_the_openapi_document_declares_the_key(keyed: tuple[str, Any]) -> None:
    document = keyed[1].openapi()
    scheme = document["components"]["securitySchemes"]["bearer"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer"
    assert document["security"] == [{"bearer": []}]
    for operations in document["paths"].values():
        for operation in operations.values():
            if operation["operationId"] == "health":
                assert operation["security"] == [] and "401" not in operation["responses"]
            else:
                assert "401" in operation["responses"], operation["operationId"]


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_remote_env_plays_with_its_key_and_is_refused_without(
    keyed: tuple[str, Any], websocket: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = keyed
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    with pytest.raises(RemoteEnvError, match="Unauthorized") as refused:
        RemoteEnv(url, ENV_ID, retries=0)
    assert refused.value.status == 401
    local = gym.make(ENV_ID)
    for env in (RemoteEnv(url, ENV_ID, api_key=KEY, websocket=websocket), None):
        if env is None:  # the key from the environment
            monkeypatch.setenv(API_KEY_ENV, OTHER_KEY)
            env = RemoteEnv(url, ENV_ID, websocket=websocket)
        assert "api_key" not in env.spec.kwargs
        assert env.reset(seed=1, options={"task_id": 3}) == local.reset(seed=1, options={"task_id": 3})
        assert env.step("Action: up") == local.step("Action: up")
        env.close()


def test_remote_vector_env_plays_with_its_key(keyed: tuple[str, Any]) -> None:
    url, _ = keyed
    envs = RemoteVectorEnv(url, ENV_ID, num_envs=3, api_key=KEY)
    local = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="sync")
    try:
        assert list(envs.reset(seed=0)[0]) == list(local.reset(seed=0)[0])
        assert envs.step(["Action: up"] * 3)[1].tolist() == local.step(["Action: up"] * 3)[1].tolist()
    finally:
        envs.close()
        local.close()


def test_the_openenv_client_sends_its_key(keyed: tuple[str, Any]) -> None:
    pytest.importorskip("openenv")
    from agentgym.integrations.openenv import AgentGymEnvClient

    url, _ = keyed

    async def play(key: str | None) -> str:
        async with AgentGymEnvClient(url, env_id=ENV_ID, api_key=key) as client:
            return (await client.reset(task_id=3)).observation.text

    assert asyncio.run(play(KEY)) == gym.make(ENV_ID).reset(options={"task_id": 3})[0]
    # The refusal arrives as a message, then a close: whichever the client reads first, it raises.
    with pytest.raises((ConnectionClosed, RuntimeError), match="API key"):
        asyncio.run(play(None))


def test_a_client_over_its_open_sessions_gets_429_with_retry_after() -> None:
    app = create_app([ENV_ID], api_keys=[KEY, OTHER_KEY], quotas=SessionQuotas(per_client=2, rate=0))
    with serving_in_thread(app) as url:
        first, _ = new_session(url), new_session(url)
        response = httpx.post(f"{url}/sessions", json={"env_id": ENV_ID}, headers=bearer(KEY))
        assert response.status_code == 429 and response.headers["retry-after"] == "1"
        error = response.json()["error"]
        assert error["type"] == "TooManySessions" and "--max-sessions-per-client" in error["message"]
        new_session(url, OTHER_KEY)  # each key has its own quota
        httpx.delete(f"{url}/sessions/{first}", headers=bearer(KEY))
        new_session(url)


def test_opening_sessions_too_fast_gets_429_with_retry_after() -> None:
    app = create_app([ENV_ID], quotas=SessionQuotas(rate=0.2, burst=2))  # no keys: the client's address
    with serving_in_thread(app) as url:
        for _ in range(2):
            assert httpx.post(f"{url}/sessions", json={"env_id": ENV_ID}).status_code == 201
        response = httpx.post(f"{url}/sessions", json={"env_id": ENV_ID})
        assert response.status_code == 429 and int(response.headers["retry-after"]) in range(3, 6)
        error = response.json()["error"]
        assert error["type"] == "SessionRateLimited" and "address 127.0.0.1" in error["message"]
        assert 3 < error["retry_after_s"] <= 5
        with pytest.raises(RemoteEnvError, match="SessionRateLimited"):
            RemoteEnv(url, ENV_ID, retries=0)


def test_the_token_bucket_refills_at_its_rate() -> None:
    now = [0.0]
    quotas = SessionQuotas(rate=2.0, burst=3, clock=lambda: now[0])
    for _ in range(3):
        quotas.admit("key 1", 0)
    with pytest.raises(Exception, match="retry in 0.50 s"):
        quotas.admit("key 1", 0)
    quotas.admit("key 2", 0)  # another client's bucket is full
    now[0] = 0.5
    quotas.admit("key 1", 0)
    now[0] = 100.0
    for _ in range(3):  # refilled to the burst, not beyond
        quotas.admit("key 1", 0)
    with pytest.raises(Exception, match="SessionRate|at most 2 sessions a second"):
        quotas.admit("key 1", 0)


def test_a_channel_message_over_the_limit_gets_413_naming_it() -> None:
    app = create_app([ENV_ID], api_keys=[KEY], max_message_bytes=1000)
    with serving_in_thread(ChannelsFirst(app)) as url:
        address = "ws" + url.removeprefix("http") + f"/sessions/{new_session(url)}/channel"
        with connect(address, additional_headers=bearer(KEY), proxy=None) as channel:
            channel.send(json.dumps({"call": "step", "body": {"action": "x" * 2000}}))
            error = json.loads(channel.recv(timeout=10))["error"]
            assert error["type"] == "PayloadTooLarge" and "--max-message-bytes" in error["message"]
            channel.send(json.dumps({"call": "reset"}))  # the channel stays open
            assert json.loads(channel.recv(timeout=10))["status"] == 200


def test_keys_come_from_flags_a_file_and_the_environment(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("# one a line\nfile-key\n\n  second-file-key  \n")
    environ = {API_KEYS_ENV: "env-key, file-key,"}
    assert load_api_keys(["flag-key"], str(keys), environ) == ["flag-key", "file-key", "second-file-key", "env-key"]
    assert load_api_keys([], None, {}) == []
    with pytest.raises(ValueError, match="printable"):
        load_api_keys(["two words"], None, {})


def test_listening_beyond_loopback_without_a_key_is_refused_unless_allowed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("")
    assert check_exposure("127.0.0.1", [], False) is None and check_exposure("0.0.0.0", [KEY], False) is None
    with pytest.raises(ValueError, match="--allow-unauthenticated"):
        check_exposure("0.0.0.0", [], False)
    assert "WARNING" in check_exposure("0.0.0.0", [], True)
    monkeypatch.delenv(API_KEYS_ENV, raising=False)
    assert server_main([ENV_ID, "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "refusing to listen on '0.0.0.0' without an API key" in capsys.readouterr().err


def test_serve_answers_metrics_on_its_metrics_port_with_its_keys() -> None:
    """``agentgym serve --metrics-port 0``: the listener's URL is printed, and it answers the key's scrape with the
    server's counters (tests/test_server.py shows it answering while the event loop stands still); its relay
    process keeps the server's CPU priority (the envs' processes go below it) and dies with the server, even one
    killed at once."""
    command = [sys.executable, "-m", "agentgym.serving.server", ENV_ID, "--port", "0", "--metrics-port", "0"]
    server = subprocess.Popen(
        [*command, "--no-prepare"], stdout=subprocess.PIPE, text=True, env={**os.environ, API_KEYS_ENV: KEY}
    )
    try:
        lines = [server.stdout.readline() for _ in range(2)]  # type: ignore[union-attr]
        metrics_url = lines[0].rpartition(" on ")[2].strip()
        url = lines[1].rpartition(" on ")[2].strip()
        assert metrics_url.endswith("/metrics") and metrics_url != f"{url}/metrics", lines
        session = new_session(url)
        assert httpx.get(metrics_url, timeout=30).status_code == 401
        scraped = httpx.get(metrics_url, headers=bearer(KEY), timeout=30).json()
        assert scraped["sessions"] == 1 and scraped["sessions_by_env"] == {ENV_ID: 1}
        assert httpx.delete(f"{url}/sessions/{session}", headers=bearer(KEY)).status_code == 200
        assert httpx.get(metrics_url, headers=bearer(KEY), timeout=30).json()["sessions_closed"] == 1
        (relay,) = [child for child in psutil.Process(server.pid).children() if "monitor" in " ".join(child.cmdline())]
        time.sleep(RENICE_EVERY_S + 1)  # the server has lowered its envs' processes since: not its relay
        assert relay.nice() == psutil.Process(server.pid).nice()
        server.send_signal(signal.SIGKILL)  # no cleanup in the server: its relay must not outlive it
        relay.wait(30)
    finally:
        server.kill()
        server.wait(30)


def test_the_process_backend_gives_its_server_a_key_of_its_own() -> None:
    env = gym.make(ENV_ID, backend="process")
    try:
        server = env.unwrapped.owned_server
        assert server.api_key and len(server.api_key) >= 32
        assert server.api_key.encode() not in Path(f"/proc/{server.pid}/cmdline").read_bytes()
        assert httpx.get(f"{server.url}/sessions").status_code == 401
        assert httpx.get(f"{server.url}/sessions", headers=bearer(server.api_key)).status_code == 200
        local = gym.make(ENV_ID)
        assert env.reset(options={"task_id": 2})[0] == local.reset(options={"task_id": 2})[0]
    finally:
        env.close()


def test_serve_model_refuses_without_its_key_and_the_openai_policy_sends_it(
    tiny_model_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("transformers")
    from agentgym.llm.generation import Generator
    from agentgym.llm.policies.base import Episode
    from agentgym.llm.policies.openai_compat import OpenAIPolicy, PolicyError
    from agentgym.llm.serve_model import create_app as model_app

    app = model_app(Generator.from_pretrained(tiny_model_path, device="cpu"), "tiny", api_keys=[KEY])
    with serving_in_thread(app) as url:
        assert httpx.get(f"{url}/health").status_code == 200
        for headers in ({}, bearer("wrong")):
            response = httpx.get(f"{url}/v1/models", headers=headers)
            assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")
            assert response.json()["error"]["type"] == "AuthenticationError"
        assert httpx.get(f"{url}/v1/models", headers=bearer(KEY)).json()["data"][0]["id"] == "tiny"
        messages = [{"role": "user", "content": "Where next?"}]

        async def act(key: str) -> Any:
            policy = OpenAIPolicy("tiny", f"{url}/v1", api_key=key, max_tokens=3, max_retries=0)
            try:
                return await policy.act(messages, Episode(key="e", seed=0, env=None))
            finally:
                await policy.aclose()

        assert asyncio.run(act(KEY)).completion_tokens == 3
        with pytest.raises(PolicyError, match="HTTP 401"):
            asyncio.run(act("wrong"))
    monkeypatch.delenv(API_KEYS_ENV, raising=False)  # it refuses before it loads the model
    assert cli_main(["serve-model", "nothing", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "refusing to listen on '0.0.0.0' without an API key" in capsys.readouterr().err


def test_serve_model_quotas_answer_429_per_key_and_a_big_body_413(tiny_model_path: Path) -> None:
    pytest.importorskip("transformers")
    from agentgym.llm.generation import Generator
    from agentgym.llm.serve_model import create_app as model_app

    now = [0.0]
    quotas = RequestQuotas(per_client=1, rate=1.0, burst=2, clock=lambda: now[0])
    generator = Generator.from_pretrained(tiny_model_path, device="cpu")
    app = model_app(generator, "tiny", api_keys=[KEY, "other-key"], quotas=quotas, max_body_bytes=2000)
    chat = {"model": "tiny", "messages": [{"role": "user", "content": "Where next?"}], "max_tokens": 2}
    with serving_in_thread(app) as url:
        for _ in range(2):
            assert httpx.post(f"{url}/v1/chat/completions", json=chat, headers=bearer(KEY)).status_code == 200
        refused = httpx.post(f"{url}/v1/chat/completions", json=chat, headers=bearer(KEY))
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        error = refused.json()["error"]
        assert (
            error["type"] == "RateLimitError" and "key 1" in error["message"] and "--request-rate" in error["message"]
        )
        assert KEY not in refused.text, "a client is named by its key's place, never the key"
        assert httpx.post(f"{url}/v1/chat/completions", json=chat, headers=bearer("other-key")).status_code == 200
        assert httpx.get(f"{url}/health").status_code == 200, "liveness probes pass every quota"
        now[0] = 1.0
        assert httpx.get(f"{url}/v1/models", headers=bearer(KEY)).status_code == 200, "the bucket refilled"
        big = chat | {"messages": [{"role": "user", "content": "x" * 5000}]}
        response = httpx.post(f"{url}/v1/chat/completions", json=big, headers=bearer("other-key"))
        assert response.status_code == 413 and response.json()["error"]["type"] == "PayloadTooLargeError"
    assert quotas.in_flight == {}, "every admitted request was released"


def test_a_client_over_its_requests_in_flight_gets_429() -> None:
    quotas = RequestQuotas(per_client=2)
    quotas.admit("key 1")
    quotas.admit("key 1")
    with pytest.raises(Exception, match="maximum of 2 requests in flight"):
        quotas.admit("key 1")
    quotas.admit("key 2")
    quotas.release("key 1")
    quotas.admit("key 1")
    assert quotas.in_flight == {"key 1": 2, "key 2": 1}
