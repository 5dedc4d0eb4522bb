"""The env server's OpenAPI document: complete, saved in docs/openapi.json, and true to the server.

schemathesis (installed from PyPI by the ``test`` extra) runs with every check (``--checks all``)
against a real server on loopback: schema-valid and schema-violating requests, undeclared
methods, and stateful sequences that follow the document's links from a created session to
its calls. Zero failures are allowed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from asgi import serving_in_thread
from doc_examples import python_block

from agentgym.serving import api as server_api
from agentgym.serving.calls import CALLS
from agentgym.serving.server import create_app

pytest.importorskip("schemathesis")

ROOT = Path(__file__).resolve().parents[1]
SAVED = ROOT / "docs" / "openapi.json"
CONFIG = Path(__file__).with_name("schemathesis.toml")
#: The env behind the saved document and the schemathesis run (the document does not depend on it).
ENV_IDS = ["Sokoban-v0"]


def test_saved_document_is_up_to_date() -> None:
    document = create_app(ENV_IDS).openapi()
    saved = json.loads(SAVED.read_text()) if SAVED.exists() else None
    command = f"python -m agentgym.serving.server --openapi {' '.join(ENV_IDS)} > {SAVED}"
    assert saved == document, f"docs/openapi.json is stale: {command}"


def test_every_route_declares_its_bodies_and_errors() -> None:
    document = create_app(ENV_IDS).openapi()
    assert set(CALLS) <= set(server_api.CALL_ROUTES), "a session call has no request/response models"
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            success = next(status for status in responses if status.startswith("2"))
            assert "$ref" in responses[success]["content"]["application/json"]["schema"], (method, path)
            for status, response in responses.items():
                if not status.startswith("2"):
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorResponse"}, (method, path, status)
            if path.startswith("/sessions/{session_id}"):
                assert "404" in responses, (method, path)
    step = document["paths"]["/sessions/{session_id}/step"]["post"]
    assert step["requestBody"]["required"] and {"400", "409", "413", "422"} <= set(step["responses"])
    action = document["components"]["schemas"]["StepRequest"]["properties"]["action"]
    assert {"type": "string"} in action["anyOf"] and {"type": "object", "additionalProperties": True} in action["anyOf"]
    assert "Retry-After" in document["paths"]["/sessions"]["post"]["responses"]["429"]["headers"]


def test_the_cli_prints_the_document() -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "agentgym.serving.server", "--openapi", *ENV_IDS],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(printed) == json.loads(SAVED.read_text())


def test_refusals_answer_the_declared_error_model() -> None:
    app = create_app(ENV_IDS)
    with serving_in_thread(app) as url:
        session = httpx.post(f"{url}/sessions", json={"env_id": "Sokoban-v0"}).json()["session_id"]
        cases = [
            ("post", f"/sessions/{session}/step", {"json": {"action": 7}}, 422, "InvalidRequest"),
            ("post", f"/sessions/{session}/reset", {"json": {"options": []}}, 422, "InvalidRequest"),
            ("post", f"/sessions/{session}/reset", {"json": {"options": {"colour": 1}}}, 422, "InvalidArgument"),
            ("post", f"/sessions/{session}/reset", {"json": {"seed": 2.5}}, 422, "InvalidRequest"),
            ("post", f"/sessions/{session}/reset", {"json": {"options": {"task_id": 10**9}}}, 422, "InvalidArgument"),
            ("post", "/sessions", {"json": {"env_id": "Sokoban-v0", "max_episode_steps": 0}}, 422, "InvalidRequest"),
            ("put", "/sessions", {}, 405, "MethodNotAllowed"),
        ]
        for method, path, kwargs, status, kind in cases:
            response = httpx.request(method, url + path, **kwargs)
            assert response.status_code == status and response.json()["error"]["type"] == kind, response.text
        assert httpx.put(f"{url}/sessions").headers["allow"] == "GET, POST"
        # Integral floats are JSON Schema integers: accepted as ints.
        reset = httpx.post(f"{url}/sessions/{session}/reset", json={"seed": 3.0, "options": {"task_id": 2}})
        assert reset.status_code == 200 and reset.json()["info"]["task_id"] == 2


def test_schemathesis_finds_no_failure_with_every_check(tmp_path: Path) -> None:
    st = shutil.which("st", path=str(Path(sys.executable).parent)) or shutil.which("st")
    assert st, "schemathesis's `st` command is missing (pip install -e '.[test]')"
    # With a key, as a server reachable from other machines runs: every check sends it, and schemathesis's
    # ignored_auth check finds each operation the document secures refusing requests without it.
    with serving_in_thread(create_app(ENV_IDS, max_sessions=64, api_keys=["schemathesis-key"])) as url:
        command = [
            *(st, "--config-file", str(CONFIG), "run", f"{url}/openapi.json"),
            *("--header", "Authorization: Bearer schemathesis-key"),
            *("--checks", "all", "--max-examples", "25", "--seed", "1", "--workers", "1"),
            *("--report", "junit", "--report-dir", str(tmp_path)),
        ]
        # In tmp_path: schemathesis keeps a cache of past failures (.schemathesis/) where it runs.
        run = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "generated" in run.stdout and " failed" not in run.stdout.split("SUMMARY")[-1]


def test_the_plain_http_example_in_docs_runs(capsys: pytest.CaptureFixture[str]) -> None:
    example = python_block(ROOT / "docs" / "serving.md", "import httpx")
    with serving_in_thread(create_app(ENV_IDS)) as url:
        exec(compile(example.replace("http://127.0.0.1:8000", url), "docs/serving.md", "exec"), {})
    reward, score = capsys.readouterr().out.split()
    assert float(reward) == float(score) == 0.0


def test_answers_fit_their_models_for_text_and_dict_observations() -> None:
    """The response models describe what the server writes, for a text env and a screenshot env's spaces."""
    app = create_app(["Sokoban-v0", "MiniWoB-click-button-v0"])
    with serving_in_thread(app) as url:
        created = httpx.post(f"{url}/sessions", json={"env_id": "Sokoban-v0"}).json()
        server_api.SessionCreated.model_validate(created)
        session = created["session_id"]
        server_api.ResetResponse.model_validate(httpx.post(f"{url}/sessions/{session}/reset", json={}).json())
        step = httpx.post(f"{url}/sessions/{session}/step", json={"action": "Action: up"}).json()
        server_api.StepResponse.model_validate(step)
        server_api.Metrics.model_validate(httpx.get(f"{url}/metrics").json())
        server_api.SessionList.model_validate(httpx.get(f"{url}/sessions").json())
        visual = {"env_id": "MiniWoB-click-button-v0", "kwargs": {"screenshot": True}}
        described = server_api.SessionCreated.model_validate(httpx.post(f"{url}/sessions", json=visual).json())
        assert isinstance(described.env.observation_space, server_api.DictSpace)
        assert isinstance(described.env.observation_space.spaces["screenshot"], server_api.BoxSpace)
