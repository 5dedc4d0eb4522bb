"""verl 0.9.1's rollout worker drives agentgym's agent loop (agentgym.integrations.verl) on CPU.

verl cannot be installed next to this environment's transformers (it requires
transformers<5.11, and hydra-core pins omegaconf<2.4), so the checks in
tests/verl_cases.py run in a side venv that this test makes once and caches
(``agentgym.integrations.venvs``: verl and the few packages its agent loop imports,
``--no-deps``; torch, ray and agentgym itself come from this environment through a
``.pth`` file). Making it needs PyPI the first time (about a minute).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agentgym.integrations import venvs

TESTS = Path(__file__).parent


def test_verl_cases_pass_in_verls_venv() -> None:
    python = venvs.ensure("verl")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    run = subprocess.run(
        [str(python), "-m", "pytest", str(TESTS / "verl_cases.py"), "-q", "-p", "no:cacheprovider"],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    sys.stdout.write(run.stdout[-6000:])
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout


def test_import_agentgym_does_not_import_verl() -> None:
    code = "import sys, agentgym, agentgym.integrations; assert 'verl' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
