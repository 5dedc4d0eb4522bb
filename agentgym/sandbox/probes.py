"""Whether a backend can run here: each probe runs once per process and says how to fix what is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from typing import Any

from agentgym.sandbox.errors import SandboxUnavailable
from agentgym.sandbox.limits import BACKENDS, Backend

DEFAULT_IMAGE = os.environ.get("AGENTGYM_SANDBOX_IMAGE", "agentgym/base:bookworm")

_checked: dict[tuple[str, ...], str | None] = {}
_checked_lock = threading.Lock()


def _check_once(key: tuple[str, ...], probe: Any) -> None:
    """Run ``probe()`` (which returns an error message or None) once per key; raise what it said."""
    with _checked_lock:
        if key not in _checked:
            _checked[key] = probe()
        problem = _checked[key]
    if problem:
        raise SandboxUnavailable(problem)


def run_quietly(argv: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run a short host command (docker's CLI), output captured, no stdin."""
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _probe_bwrap() -> str | None:
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    if shutil.which("prlimit") is None:
        return "prlimit is not installed: apt-get install util-linux"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "setpriv is not installed (needed to drop root before bwrap): apt-get install util-linux"
    return None


def _probe_docker(image: str) -> str | None:
    if shutil.which("docker") is None:
        return "docker is not installed: apt-get install docker.io (and start dockerd)"
    try:
        info = run_quietly(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=30)
    except subprocess.TimeoutExpired:
        return "dockerd does not answer (docker info timed out)"
    if info.returncode != 0:
        return f"cannot reach dockerd ({info.stderr.strip()[:200]}); start it, e.g. 'dockerd > /tmp/dockerd.log 2>&1 &'"
    if run_quietly(["docker", "image", "inspect", image]).returncode != 0:
        return f"docker image {image!r} not found: build it with containers/base/build.sh"
    return None


def available(backend: Backend = "bwrap", image: str = DEFAULT_IMAGE) -> str | None:
    """``None`` when ``backend`` can run here, else why not (and how to fix it)."""
    try:
        check_backend(backend, image)
    except SandboxUnavailable as error:
        return str(error)
    return None


def check_backend(backend: Backend, image: str) -> None:
    """Raise :class:`SandboxUnavailable` (why, and how to fix it) unless ``backend`` can run here."""
    if backend == "bwrap":
        _check_once(("bwrap",), _probe_bwrap)
    elif backend == "docker":
        _check_once(("docker", image), lambda: _probe_docker(image))
    else:
        raise ValueError(f"unknown sandbox backend {backend!r}; expected one of {BACKENDS}")
