"""A virtual environment where OpenRLHF's agent module imports on CPU, next to this one's torch.

OpenRLHF 0.11.2's wheel requires ``flash-attn`` and ``deepspeed`` (which do not build
without CUDA), pins ``transformers==5.15.0`` and pulls vLLM for rollouts, so it cannot be
installed into an environment with a CPU torch. Its agent interface
(``openrlhf.utils.agent``) needs none of that: it imports with torch, transformers,
sympy, aiohttp and pylatexenc. :func:`ensure_venv` makes a venv (default
``~/.cache/agentgym/venvs/openrlhf-<version>``) holding only ``openrlhf`` (``--no-deps``)
and ``pylatexenc``; a ``.pth`` file adds the current environment's site-packages after
its own, so torch, transformers and agentgym itself come from here (nothing is
downloaded but those two wheels). Run it as::

    python -m agentgym.integrations.openrlhf_venv     # prints the venv's python

This is for CPU tests and benchmarks of :mod:`agentgym.integrations.openrlhf`; training
with OpenRLHF needs its full install on GPUs (docs/train-with-openrlhf.md).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

#: The OpenRLHF release the adapter is tested against.
OPENRLHF_VERSION = "0.11.2"
#: Installed next to ``openrlhf`` (``--no-deps``): what ``openrlhf.utils`` imports that this env lacks.
EXTRA_PACKAGES = ("pylatexenc==2.11",)


def default_path(version: str = OPENRLHF_VERSION) -> Path:
    """Where the venv lives: ``$AGENTGYM_CACHE`` (default ``~/.cache/agentgym``) ``/venvs/openrlhf-<version>``."""
    cache = Path(os.environ.get("AGENTGYM_CACHE", Path.home() / ".cache" / "agentgym"))
    return cache / "venvs" / f"openrlhf-{version}"


def venv_python(path: Path) -> Path:
    return path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv(path: Path | None = None, version: str = OPENRLHF_VERSION) -> Path:
    """Make the venv (once; later calls reuse it) and return its python.

    Safe to call from several processes at once (a file lock); a venv whose making failed
    half-way is made again. Raises ``subprocess.CalledProcessError`` if pip fails.
    """
    path = path or default_path(version)
    path.parent.mkdir(parents=True, exist_ok=True)
    ready = path / ".agentgym-ready"
    python = venv_python(path)
    with open(path.parent / f".{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready.exists() and python.exists():
            return python
        venv.EnvBuilder(clear=True, with_pip=False).create(path)
        purelib = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        here = sysconfig.get_paths()["purelib"]
        # After the venv's own site-packages: its openrlhf wins, the rest comes from here.
        Path(purelib, "agentgym-parent-env.pth").write_text(f"import site; site.addsitedir({here!r})\n")
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps"]
            + [f"openrlhf=={version}", *EXTRA_PACKAGES],
            check=True,
        )
        subprocess.run([python, "-c", "import openrlhf.utils.agent"], check=True)
        ready.write_text(version)
    return python


if __name__ == "__main__":
    print(ensure_venv())
