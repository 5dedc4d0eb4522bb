"""OpenRLHF's multi-turn agent executor playing agentgym envs, in OpenRLHF's own venv.

OpenRLHF 0.11.2 cannot be installed next to the CPU torch (its wheel requires flash-attn
and deepspeed, CUDA builds, and pins transformers), so this test makes a venv holding
``openrlhf`` installed with ``--no-deps`` (plus ``pylatexenc``), with this environment's
torch, transformers and agentgym visible through a ``.pth`` file
(:mod:`agentgym.integrations.venvs`, entry ``openrlhf``; made once, cached under
``~/.cache/agentgym/venvs``), and runs tests/openrlhf_cases.py there.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentgym.integrations.venvs import ensure, spec

OPENRLHF_VERSION = next(p for p in spec("openrlhf")["packages"] if p.startswith("openrlhf==")).split("==")[1]

TESTS = Path(__file__).parent


def test_openrlhf_agent_executor_plays_agentgym_envs(tmp_path: Path) -> None:
    try:
        python = ensure("openrlhf")
    except subprocess.CalledProcessError as error:
        pytest.fail(f"could not make OpenRLHF {OPENRLHF_VERSION}'s venv: {error}")
    command = [str(python), "-m", "pytest", "openrlhf_cases.py", "-q", "-p", "no:cacheprovider"]
    result = subprocess.run(
        [*command, f"--basetemp={tmp_path / 'inner'}"], cwd=TESTS, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "9 passed" in result.stdout, result.stdout[-2000:]
    version = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('openrlhf'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.strip() == OPENRLHF_VERSION
