"""The web-apps image's wheelhouse, in one run: a site's wheels by one ``pip wheel`` against the former three steps.

For each site with a ``requirements.txt``, from an empty pip cache and an empty wheel folder each time, alternating:

* ``pip wheel`` (``containers/build.sh`` since 06eaa88, the host's Python being the image's version): one
  resolution that fetches the wheels and builds those of sdist-only packages, then an offline ``pip download
  --no-index`` that checks the folder resolves for the target Python;
* before: a binary-only ``pip download`` for the target Python (which fails where a package has no wheel: Misago's
  docopt, the shop's django-haystack), then ``pip wheel``, then the download again with the built wheels at hand.

The target is this Python's version on this machine's glibc. Reports the pip processes' CPU seconds and wall time per
site each way, the ratios, and whether both ways leave the same files.

    python benchmarks/webapps_wheelhouse.py            # writes results/webapps_wheelhouse.{md,json}
    python benchmarks/webapps_wheelhouse.py --sites forge --no-write
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recording import record

REPO = Path(__file__).resolve().parent.parent
SITES = ("shop", "forum", "forge")


def child_cpu_s() -> float:
    """CPU seconds of the child processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def download_options(dest: Path) -> list[str]:
    """``pip download``'s options for this Python and glibc, binary wheels only (as containers/build.sh sets them)."""
    glibc_minor = int(platform.libc_ver()[1].split(".")[1])
    machine = platform.machine()
    platforms = [f"manylinux_2_{minor}_{machine}" for minor in range(glibc_minor, 4, -1)]
    platforms += [f"{legacy}_{machine}" for legacy in ("manylinux2014", "manylinux2010", "manylinux1")]
    options = ["download", "--quiet", "--dest", str(dest), "--only-binary=:all:", "--implementation", "cp"]
    options += ["--python-version", platform.python_version(), "--abi", f"cp{sys.version_info[0]}{sys.version_info[1]}"]
    return options + [option for name in platforms for option in ("--platform", name)]


def pip(cache: Path, *arguments: str, check: bool = True) -> bool:
    """Run pip with its own cache; whether it succeeded (``check``: a failure raises)."""
    env = {**os.environ, "PIP_CACHE_DIR": str(cache), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    command = [sys.executable, "-m", "pip", *arguments]
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if check and done.returncode:
        raise RuntimeError(f"pip {' '.join(arguments[:2])} failed: {done.stderr[-2000:]}")
    return done.returncode == 0


def one_pip_wheel(requirements: Path, wheels: Path, cache: Path) -> None:
    pip(cache, "wheel", "--quiet", "--wheel-dir", str(wheels), "-r", str(requirements))
    pip(cache, *download_options(wheels), "--no-index", "--find-links", str(wheels), "-r", str(requirements))


def three_steps(requirements: Path, wheels: Path, cache: Path) -> None:
    if not pip(cache, *download_options(wheels), "-r", str(requirements), check=False):
        pip(cache, "wheel", "--quiet", "--wheel-dir", str(wheels), "-r", str(requirements))
        pip(cache, *download_options(wheels), "--find-links", str(wheels), "-r", str(requirements))


def measured(way, requirements: Path, scratch: Path) -> tuple[float, float, list[str]]:  # noqa: ANN001
    """CPU seconds, wall seconds and the files ``way`` leaves, from an empty cache and wheel folder."""
    wheels, cache = Path(tempfile.mkdtemp(dir=scratch)), Path(tempfile.mkdtemp(dir=scratch))
    cpu, wall = child_cpu_s(), time.perf_counter()
    way(requirements, wheels, cache)
    return child_cpu_s() - cpu, time.perf_counter() - wall, sorted(path.name for path in wheels.iterdir())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", default=",".join(SITES), help="comma-separated sites with a requirements.txt")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for site in args.sites.split(","):
            requirements = REPO / "environments" / "webapps" / site / "requirements.txt"
            new_cpu, new_wall, new_files = measured(one_pip_wheel, requirements, Path(scratch))
            old_cpu, old_wall, old_files = measured(three_steps, requirements, Path(scratch))
            rows.append(
                {
                    "site": site,
                    "pip_wheel_cpu_s": round(new_cpu, 2),
                    "pip_wheel_wall_s": round(new_wall, 2),
                    "three_steps_cpu_s": round(old_cpu, 2),
                    "three_steps_wall_s": round(old_wall, 2),
                    "files": len(new_files),
                    "same_files": new_files == old_files,
                }
            )
            print(rows[-1], flush=True)
    totals = {key: sum(row[key] for row in rows) for key in rows[0] if key.endswith("_s")}
    result = {
        "sites": rows,
        **{f"total_{key}": round(value, 2) for key, value in totals.items()},
        "cpu_ratio_pip_wheel_to_three_steps": round(totals["pip_wheel_cpu_s"] / totals["three_steps_cpu_s"], 3),
        "wall_ratio_pip_wheel_to_three_steps": round(totals["pip_wheel_wall_s"] / totals["three_steps_wall_s"], 3),
        "all_same_files": all(row["same_files"] for row in rows),
    }
    print(result)
    if args.no_write:
        return
    lines = "\n".join(
        f"| {row['site']} | {row['pip_wheel_cpu_s']:.1f} / {row['pip_wheel_wall_s']:.1f} | "
        f"{row['three_steps_cpu_s']:.1f} / {row['three_steps_wall_s']:.1f} | {row['files']} | {row['same_files']} |"
        for row in rows
    )
    table = (
        "CPU / wall seconds per site, each from an empty pip cache (pip's child processes' CPU).\n\n"
        "| site | one pip wheel + offline check | download, pip wheel, download | files | same files |\n"
        f"|---|---:|---:|---:|---|\n{lines}\n\n"
        f"Ratios, pip wheel / three steps: CPU **{result['cpu_ratio_pip_wheel_to_three_steps']}**, "
        f"wall **{result['wall_ratio_pip_wheel_to_three_steps']}**."
    )
    record("webapps_wheelhouse", "The web-apps wheelhouse: one pip wheel against three steps", "one run", table, result)


if __name__ == "__main__":
    main()
