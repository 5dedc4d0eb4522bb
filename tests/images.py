"""The images that the README's test command builds in the background, and the docker backend's containers.

``bash containers/setup-host.sh --background-images`` starts ``containers/test-images.sh``, which builds
agentgym/core (:data:`CORE_BUILD`: the docker backend's and the docker sandbox's image, with the base image) and
then :data:`TEST_IMAGE` (:data:`WEBAPPS_BUILD`: one web-apps site, in turn by the tests' rotation) while the venv
is installed and the tests run. Each build's state is in a status file ("building PID", then "ok" or
"failed EXIT") and its output in a log, both under ``$AGENTGYM_CACHE`` (or the paths in ``$CORE_STATUS``,
``$CORE_LOG``, ``$IMAGES_STATUS`` and ``$IMAGES_LOG``, as the scripts read them). Tests wait for them here.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

#: The tests' web-apps image: containers/webapps/build.sh with SITES=turn:<rotation> TAG=tests.
TEST_IMAGE = "agentgym/webapps:tests"
CACHE = Path(os.environ.get("AGENTGYM_CACHE", Path.home() / ".cache" / "agentgym"))
#: How long a background build may run, counted from the job's start (its status file's time), before the tests
#: that wait for it fail with its log (seconds; ``$AGENTGYM_IMAGE_WAIT_S``). The job starts with the test command,
#: so a build that hangs fails the tests well within CI's 90 minutes; both builds took 17 minutes on a new
#: 2-core machine beside pip and the tests (docs/testing.md).
WAIT_S = float(os.environ.get("AGENTGYM_IMAGE_WAIT_S", "2700"))
#: The mark of the tests that wait for a background build: the test's own time limit (pyproject.toml's
#: ``timeout``) on top of the wait, so that a slow build fails with its log rather than with a stack dump.
WAITS_FOR_BUILD = pytest.mark.timeout(WAIT_S + 900)


@dataclass(frozen=True)
class BackgroundBuild:
    """One image build of the background job: what it builds, its status file and its log."""

    image: str
    status: Path
    log: Path

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return f"(no log at {self.log})"

    def problem(self) -> str | None:
        """Wait until the build is not running (at once when none was started); why it failed, or None.

        A build that failed, or whose job is gone without saying how it ended, is a problem (with the end of
        its log); so is one still running :data:`WAIT_S` after its job started.
        """
        build = f"the background build of {self.image}"
        while True:
            try:
                state, *rest = self.status.read_text().split() or ["building"]  # an empty file: being written
                running_s = time.time() - self.status.stat().st_mtime  # written once as the job starts, then at its end
            except FileNotFoundError:
                return None  # no background build (setup-host.sh without --background-images, or none at all)
            if state == "ok":
                return None
            if state == "failed":
                return f"{build} failed (exit {rest[0]}); {self.log} ends:\n{self.log_tail()}"
            if rest and not Path(f"/proc/{rest[0]}").exists() and self.status.read_text().split()[:1] == ["building"]:
                return f"{build} (job {rest[0]}) ended without a status; {self.log} ends:\n{self.log_tail()}"
            if running_s > WAIT_S:
                return (
                    f"{build} still runs {running_s:.0f} s after its job started; {self.log} ends:\n{self.log_tail()}"
                )
            time.sleep(5)

    def wait(self) -> None:
        """Return once the build is done; fail the calling test with :meth:`problem` when it did not succeed."""
        problem = self.problem()
        if problem is not None:
            pytest.fail(problem)


CORE_BUILD = BackgroundBuild(
    "agentgym/core",
    Path(os.environ.get("CORE_STATUS", CACHE / "core-image.status")),
    Path(os.environ.get("CORE_LOG", CACHE / "core-image.log")),
)
WEBAPPS_BUILD = BackgroundBuild(
    TEST_IMAGE,
    Path(os.environ.get("IMAGES_STATUS", CACHE / "webapps-image.status")),
    Path(os.environ.get("IMAGES_LOG", CACHE / "webapps-image.log")),
)


def existing_containers(names: list[str]) -> list[str]:
    """Those of the docker backend's containers named ``names`` that still exist (running or not).

    By name, never by image: a test on the other pytest worker may hold a container of the same image."""
    command = ["docker", "ps", "--all", "--format", "{{.Names}}", "--filter", "label=agentgym.backend=docker"]
    listed = subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()
    return [name for name in names if name in listed]
