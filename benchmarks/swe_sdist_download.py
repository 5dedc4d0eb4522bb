"""The SWE family's sdist download, in one run: straight from the index's JSON listing against ``pip download``.

For each repository sampled from ``repositories.yaml``, its pinned sdist is downloaded both ways into empty folders,
alternating: from the index (``download_sdist``'s first way, in this process: its CPU time) and with
``pip download --no-deps --no-binary`` (the fallback, a child process: its CPU time), which builds the sdist's
metadata in a build environment it installs first. Reports CPU seconds per sdist each way, the ratio, and whether
both files are the same bytes.

    python benchmarks/swe_sdist_download.py            # writes results/swe_sdist_download.{md,json}
    python benchmarks/swe_sdist_download.py --repositories 2 --no-write
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from recording import record

from agentgym.environments.swe import repositories as swe_repositories


def child_cpu_s() -> float:
    """CPU seconds of the child processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repositories", type=int, default=6, help="repositories sampled (every n-th of the list)")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()
    every = list(swe_repositories.repositories().values())
    sample = every[:: max(1, len(every) // args.repositories)][: args.repositories]
    index = os.environ.get("PIP_INDEX_URL") or swe_repositories.DEFAULT_INDEX
    rows, index_cpu, pip_cpu = [], 0.0, 0.0
    with tempfile.TemporaryDirectory() as scratch:
        for repository in sample:
            by_index, by_pip = Path(scratch, repository.key, "index"), Path(scratch, repository.key, "pip")
            by_index.mkdir(parents=True)
            by_pip.mkdir(parents=True)
            started = time.process_time()
            ours = swe_repositories._download_from_index(repository, by_index, index)
            index_s = time.process_time() - started
            started = child_cpu_s()
            swe_repositories._pip(
                "download", "--no-deps", "--no-binary", repository.name, "-d", str(by_pip), repository.requirement
            )
            pip_s = child_cpu_s() - started
            (theirs,) = by_pip.glob("*.tar.gz")
            same = ours.read_bytes() == theirs.read_bytes()
            rows.append({"repository": repository.key, "index_cpu_s": index_s, "pip_cpu_s": pip_s, "same_bytes": same})
            index_cpu, pip_cpu = index_cpu + index_s, pip_cpu + pip_s
    result = {
        "index": index,
        "repositories": rows,
        "index_cpu_s_per_sdist": round(index_cpu / len(rows), 3),
        "pip_cpu_s_per_sdist": round(pip_cpu / len(rows), 3),
        "ratio_index_to_pip": round(index_cpu / pip_cpu, 3),
        "all_same_bytes": all(row["same_bytes"] for row in rows),
    }
    print(result)
    if args.no_write:
        return
    lines = "\n".join(
        f"| {row['repository']} | {row['index_cpu_s']:.2f} | {row['pip_cpu_s']:.2f} | {row['same_bytes']} |"
        for row in rows
    )
    table = (
        f"Index: {index}. CPU seconds per sdist, this process for the index's way, pip's child process for pip's.\n\n"
        "| repository | from the index | pip download | same bytes |\n|---|---:|---:|---|\n"
        f"{lines}\n\nMean per sdist: {result['index_cpu_s_per_sdist']} against {result['pip_cpu_s_per_sdist']}; "
        f"ratio index / pip **{result['ratio_index_to_pip']}**."
    )
    record(
        "swe_sdist_download", "SWE sdists: from the index against pip download", "one run, alternating", table, result
    )


if __name__ == "__main__":
    main()
