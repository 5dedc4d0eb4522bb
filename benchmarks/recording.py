"""Shared by the benchmark scripts: record a result table in ``benchmarks/results/``."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def record(name: str, title: str, setup: str, table: str, data: Any, command: str | None = None) -> None:
    """Write ``results/<name>.md`` (title, how it was run, machine, table) and ``results/<name>.json``.

    ``command`` is how the benchmark was run (default ``python benchmarks/<name>.py``).
    """
    RESULTS.mkdir(exist_ok=True)
    cores = os.cpu_count()
    machine = (
        f"{platform.processor() or platform.machine()}, {cores} cores, {platform.system()}, "
        f"Python {platform.python_version()}"
    )
    command = command or f"python benchmarks/{name}.py"
    (RESULTS / f"{name}.md").write_text(f"# {title}\n\n`{command}` ({setup}; {machine})\n\n{table}\n", encoding="utf-8")
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
