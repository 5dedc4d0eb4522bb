"""Task-set fingerprints (agentgym/evaluation/fingerprint.py, agentgym/evaluation/fingerprints.json).

Every id's fingerprint is recomputed on the env the contract test already made
(tests/test_contract.py::test_contract_and_fingerprint); these tests check the record, that a
changed generator is caught with a message saying what to do, stability across processes, and
that results record the fingerprints.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import agentgym
from agentgym.environments.sokoban.env import SokobanEnv
from agentgym.evaluation import fingerprint
from agentgym.evaluation.fingerprint import (
    FingerprintChanged,
    check_fingerprint,
    env_fingerprint,
    recorded_fingerprint,
    recorded_fingerprints,
    task_sample,
)
from agentgym.evaluation.results import read_run
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies import RandomPolicy

HEX = re.compile(r"[0-9a-f]{64}")


def test_every_registered_id_is_recorded() -> None:
    data = json.loads(fingerprint.FINGERPRINTS_FILE.read_text())
    assert data["format"] == fingerprint.FORMAT
    sample = {"tasks_per_split": fingerprint.TASKS_PER_SPLIT, "max_oracle_steps": fingerprint.MAX_ORACLE_STEPS}
    assert data["sample"] == sample
    registered = {info.id for info in agentgym.list_envs()}
    assert set(data["fingerprints"]) == registered, "run `agentgym fingerprint --write NEW_ID` for a new id"
    for env_id, value in data["fingerprints"].items():
        if env_id in data["exempt"]:
            assert value is None and data["exempt"][env_id] == fingerprint.exemption(env_id)
        else:
            assert HEX.fullmatch(value), env_id
    assert set(data["exempt"]) == {"ALFWorld-v0"}
    assert len(set(recorded_fingerprints().values()) - {None}) == len(registered) - 1, "two ids share a fingerprint"


def test_the_sample_covers_each_split() -> None:
    splits = agentgym.env_info("Sokoban-v0").splits
    assert task_sample(splits) == [0, 1, 10_000, 10_001, 11_000, 11_001]


def test_a_changed_generator_is_reported(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """Sokoban's task 10000 (the first dev task) made differently: the check names the id and what to do."""
    assert check_fingerprint("Sokoban-v0") == recorded_fingerprint("Sokoban-v0")
    generate = SokobanEnv._generate
    monkeypatch.setattr(SokobanEnv, "_generate", lambda self, task_id: generate(self, task_id + (task_id == 10_000)))
    with pytest.raises(FingerprintChanged) as caught:
        check_fingerprint("Sokoban-v0")
    message = str(caught.value)
    assert caught.value.env_id == "Sokoban-v0" and caught.value.recorded == recorded_fingerprint("Sokoban-v0")
    assert "Sokoban-v0's task set changed" in message
    assert "new version (Sokoban-v1)" in message and "keep Sokoban-v0 registered" in message
    assert "agentgym fingerprint --write Sokoban-v0" in message
    assert fingerprint.main(["--check", "Sokoban-v0", "Maze-v0"]) == 1
    captured = capsys.readouterr()
    assert "Sokoban-v0\tCHANGED" in captured.err and f"Maze-v0\t{recorded_fingerprint('Maze-v0')}" in captured.out


def test_bump_version() -> None:
    assert fingerprint.bump_version("Sokoban-v0") == "Sokoban-v1"
    assert fingerprint.bump_version("BabyAI-Text-GoTo-v12") == "BabyAI-Text-GoTo-v13"
    assert fingerprint.bump_version("Custom") == "Custom-v1"


def test_fingerprints_do_not_depend_on_the_process() -> None:
    """A fresh interpreter with another hash seed computes the recorded fingerprints (and loads no env at import)."""
    ids = ["Sokoban-v0", "Wordle-v0", "TicTacToe-vs-Minimax-v0", "TextCraft-v0"]
    code = (
        "import sys\nfrom agentgym.evaluation.fingerprint import env_fingerprint\n"
        "for env_id in sys.argv[1:]: print(env_fingerprint(env_id))"
    )
    output = subprocess.run(
        [sys.executable, "-c", code, *ids],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    ).stdout
    assert output.split() == [recorded_fingerprint(env_id) for env_id in ids]


def test_write_records_new_ids_and_exemptions(tmp_path: Path) -> None:
    path = tmp_path / "fingerprints.json"
    path.write_text(fingerprint.FINGERPRINTS_FILE.read_text())
    data = json.loads(path.read_text())
    data["fingerprints"]["Maze-v0"] = "stale"
    data["fingerprints"]["Gone-v0"] = "0" * 64
    path.write_text(json.dumps(data))
    written = fingerprint.write(["Maze-v0", "ALFWorld-v0"], path=path)
    assert written["fingerprints"]["Maze-v0"] == env_fingerprint("Maze-v0") == recorded_fingerprint("Maze-v0")
    assert written["fingerprints"]["ALFWorld-v0"] is None and "ALFWORLD_DATA" in written["exempt"]["ALFWorld-v0"]
    assert "Gone-v0" not in written["fingerprints"]
    assert json.loads(path.read_text()) == written


def test_results_record_the_fingerprints(tmp_path: Path) -> None:
    """run.json names each env's committed fingerprint (null where exempt) next to the agentgym version."""
    items = [EvalItem("Sokoban-v0", episodes=1), EvalItem("Wordle-v0", episodes=1)]
    asyncio.run(run_eval("random", RandomPolicy(), items, tmp_path / "run"))
    run = read_run(tmp_path / "run")
    assert run["agentgym_version"] == agentgym.__version__
    assert run["env_fingerprints"] == {
        "Sokoban-v0": recorded_fingerprint("Sokoban-v0"),
        "Wordle-v0": recorded_fingerprint("Wordle-v0"),
    }
    assert recorded_fingerprint("ALFWorld-v0") is None and recorded_fingerprint("Unknown-v0") is None
