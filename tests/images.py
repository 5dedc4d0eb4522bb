"""The web-apps image that the README's test command builds in the background, and the docker backend's containers.

``bash containers/setup-host.sh --background-images`` builds :data:`TEST_IMAGE` (one web-apps site, in turn
by the tests' rotation) while the venv is installed and the tests run; the job's state is in a status file
("building PID", then "ok" or "failed EXIT") and its output in a log, both under ``$AGENTGYM_CACHE`` (or the
paths in ``$IMAGES_STATUS`` and ``$IMAGES_LOG``, as the script reads them).
Tests that need the image wait for the job here.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

#: The tests' web-apps image: containers/webapps/build.sh with SITES=turn:<rotation> TAG=tests.
TEST_IMAGE = "agentgym/webapps:tests"
CACHE = Path(os.environ.get("AGENTGYM_CACHE", Path.home() / ".cache" / "agentgym"))
STATUS = Path(os.environ.get("IMAGES_STATUS", CACHE / "webapps-image.status"))
LOG = Path(os.environ.get("IMAGES_LOG", CACHE / "webapps-image.log"))
#: How long a test waits for the background build (seconds; ``$AGENTGYM_IMAGE_WAIT_S``).
WAIT_S = float(os.environ.get("AGENTGYM_IMAGE_WAIT_S", "3600"))


def log_tail(lines: int = 30) -> str:
    try:
        return "\n".join(LOG.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {LOG})"


def wait_for_background_build() -> None:
    """Return once no background build of the web-apps image is running (at once when none was started).

    A build that failed, or whose job is gone without saying how it ended, fails the calling test with
    the end of the build's log; one still running after :data:`WAIT_S` fails it too.
    """
    deadline = time.monotonic() + WAIT_S
    build = "the background build of agentgym/webapps"
    while True:
        try:
            state, *rest = STATUS.read_text().split() or ["building"]  # an empty file: being written
        except FileNotFoundError:
            return  # no background build (setup-host.sh without --background-images, or none at all)
        if state == "ok":
            return
        if state == "failed":
            pytest.fail(f"{build} failed (exit {rest[0]}); {LOG} ends:\n{log_tail()}")
        if rest and not Path(f"/proc/{rest[0]}").exists() and STATUS.read_text().split()[:1] == ["building"]:
            pytest.fail(f"{build} (job {rest[0]}) ended without a status; {LOG} ends:\n{log_tail()}")
        if time.monotonic() > deadline:
            pytest.fail(f"{build} still runs after {WAIT_S:.0f} s; {LOG} ends:\n{log_tail()}")
        time.sleep(5)


def existing_containers(names: list[str]) -> list[str]:
    """Those of the docker backend's containers named ``names`` that still exist (running or not).

    By name, never by image: a test on the other pytest worker may hold a container of the same image."""
    command = ["docker", "ps", "--all", "--format", "{{.Names}}", "--filter", "label=agentgym.backend=docker"]
    listed = subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()
    return [name for name in names if name in listed]
