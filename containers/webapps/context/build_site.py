"""Build one web-apps site into the image, or pack the built state (run by containers/webapps/Dockerfile).

    python build_site.py SITE SITES          install SITE, seed its golden snapshot, start it once, stop it
                                             (a SITE not in SITES, comma-separated, gets an empty folder only)
    python build_site.py --pack PARTS VENVS  move $AGENTGYM_WEBAPPS_HOME's <site> folders to PARTS/<site> and the
                                             rest (the PostgreSQL cluster) to PARTS/shared, each <site>/venv to
                                             VENVS/<site> with a link left in its place, readable by every uid,
                                             without what a running site leaves behind (pid files, sockets)

Prints what each step took and the sizes, for benchmarks/webapps_image.py to read from the build log.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

from agentgym.environments.webapps.env import registry, site_class
from agentgym.environments.webapps.postgres import Postgres
from agentgym.environments.webapps.site import webapps_home


def size_mb(path: Path) -> float:
    """Disk use of ``path`` in MB (``du``: links not followed)."""
    output = subprocess.run(["du", "-s", "--block-size=1", str(path)], capture_output=True, text=True, check=True)
    return int(output.stdout.split()[0]) / 1e6


def build(name: str, wanted: list[str]) -> None:
    """Install, seed, start and stop site ``name`` (or only make its folder when it is not wanted)."""
    home = webapps_home()
    if name not in wanted:
        (home / name).mkdir(parents=True, exist_ok=True)
        print(f"[webapps-image] {name}: not built (not in SITES)", flush=True)
        return
    site = site_class(name)()
    start = time.monotonic()
    site.ensure_ready()
    ready_s = time.monotonic() - start
    site.stop()
    Postgres().stop()
    venv = site.home / "venv"
    venv_mb = size_mb(venv) if venv.exists() else 0.0
    print(
        f"[webapps-image] {name}: ready (install + golden + first start) in {ready_s:.1f} s; "
        f"state {size_mb(site.home) - venv_mb:.1f} MB, venv {venv_mb:.1f} MB, "
        f"postgres {size_mb(home / 'postgres') if (home / 'postgres').exists() else 0.0:.1f} MB",
        flush=True,
    )


def pack(parts: Path, venvs: Path) -> None:
    """Move the built home to ``parts`` and the venvs to ``venvs`` (see the module docstring)."""
    home = webapps_home()
    # What running sites leave behind: pid files, locks, sockets and FIFOs, the run folders, the tenant leases.
    for folder in [*home.glob("*/run"), home / "tenants"]:
        if folder.is_dir():
            shutil.rmtree(folder)
    for path in list(home.rglob("*")):
        mode = path.lstat().st_mode
        if (
            path.suffix in (".pid", ".lock")
            or path.name == "postmaster.pid"
            or stat.S_ISSOCK(mode)
            or stat.S_ISFIFO(mode)
        ):
            path.unlink()
    parts.mkdir(parents=True)
    shutil.move(home, parts / "shared")
    for name in registry()["sites"]:
        site = parts / name
        shutil.move(parts / "shared" / name, site)
        target = venvs / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (site / "venv").is_dir() and not (site / "venv").is_symlink():
            shutil.move(site / "venv", target)
            # Its scripts name $AGENTGYM_WEBAPPS_HOME/<site>/venv/...: the link in the copied state leads here.
            (site / "venv").symlink_to(target)
        else:
            target.mkdir()  # a site without a venv of its own (PHP): an empty layer
    for root in (parts, venvs):
        subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
    sizes = ", ".join(f"{part.name} {size_mb(part):.1f} MB" for part in sorted(parts.iterdir()))
    print(f"[webapps-image] packed state: {sizes}; venvs {size_mb(venvs):.1f} MB", flush=True)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--pack"] and len(argv) == 3:
        pack(Path(argv[1]), Path(argv[2]))
    elif len(argv) == 2 and not argv[0].startswith("-"):
        build(argv[0], argv[1].split(","))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    os.umask(0o022)
    main(sys.argv[1:])
