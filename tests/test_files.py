"""agentgym.utils.files: the lock, the folder written aside and the build done by one process (real processes)."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from agentgym.utils.files import build_once, file_lock, remove_stale_builds, written_aside


def test_written_aside_renames_on_success_and_leaves_nothing_on_error(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "folder"
    with written_aside(target) as work:
        assert work.parent == target.parent and work != target and not target.exists()
        (work / "data.txt").write_text("one")
    assert (target / "data.txt").read_text() == "one"
    with written_aside(target) as work:  # replaces what was there
        (work / "data.txt").write_text("two")
    assert (target / "data.txt").read_text() == "two"
    with pytest.raises(ValueError, match="half"), written_aside(target) as work:
        (work / "data.txt").write_text("half-written")
        raise ValueError("half-written")
    assert (target / "data.txt").read_text() == "two"  # the old folder is kept
    assert sorted(p.name for p in target.parent.iterdir()) == ["folder"]  # no temporary copy left


def test_remove_stale_builds_removes_only_copies(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / ".folder-killed").mkdir()
    (tmp_path / ".other-killed").mkdir()
    remove_stale_builds(tmp_path / "folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other-killed", "folder"]


def _load(folder: Path) -> str | None:
    marker = folder / "value.txt"
    return marker.read_text() if marker.exists() else None


def _build(folder: Path) -> str:
    time.sleep(0.3)  # long enough for the other process to reach the lock
    with written_aside(folder) as work:
        (work / "value.txt").write_text("built")
    with open(folder.parent / "builds.log", "a") as log:
        log.write("build\n")
    return "built"


def _build_once_in_child(folder: Path) -> None:
    assert build_once(folder, _load, _build) == "built"


def test_build_once_builds_once_across_processes(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_build_once_in_child, args=(folder,)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    assert (tmp_path / "builds.log").read_text() == "build\n"  # the second process loaded the first one's folder
    assert build_once(folder, _load, _build) == "built"
    assert (tmp_path / "builds.log").read_text() == "build\n"


def test_file_lock_excludes_another_process(tmp_path: Path) -> None:
    lock = tmp_path / "deep" / "x.lock"
    context = multiprocessing.get_context("spawn")
    with file_lock(lock):
        assert lock.exists()
        worker = context.Process(target=_hold_lock_briefly, args=(lock,))
        worker.start()
        worker.join(1.0)
        assert worker.is_alive()  # waiting for the lock this process holds
    worker.join(60)
    assert worker.exitcode == 0


def _hold_lock_briefly(lock: Path) -> None:
    with file_lock(lock):
        pass
