"""The web apps' image (containers/webapps/): build time, size per site, container start to first reset.

* build (``--build``: ``FORCE=1 bash containers/webapps/build.sh``; ``--from-scratch`` also rebuilds
  the debootstrap base and downloads a new wheelhouse): the whole time and its steps, and each
  site's install + golden seeding + first start inside the build, as the build prints them;
* size: the image, its debootstrap base (Debian packages: Chromium, PostgreSQL, PHP, MediaWiki,
  Roundcube, Dovecot, ...), and each site's layers (its venv, its seeded state) from ``docker history``,
  next to WebArena's published image sizes (``webapps_image_webarena.yaml``, with sources);
* start: ``gym.make(ID, backend="docker")`` (a new container answering on its socket, the sites'
  state copied in), the first ``reset`` (the site's servers started, a tenant reset, Chromium's
  first page) and a second ``reset``; medians over ``--repeats`` containers per site id.

    python benchmarks/webapps_image.py                     # size and start; writes results/webapps_image.{md,json}
    python benchmarks/webapps_image.py --build --from-scratch
    bash containers/webapps/build.sh 2> build.log; python benchmarks/webapps_image.py --build-log build.log
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import yaml
from recording import record

import agentgym

REPO = Path(__file__).resolve().parent.parent
IMAGE = "agentgym/webapps:latest"
SITES = ("shop", "forum", "wiki", "forge", "mail")
WEBARENA = yaml.safe_load((Path(__file__).parent / "webapps_image_webarena.yaml").read_text())


def build(from_scratch: bool) -> dict[str, Any]:
    """Rebuild the image (and with ``from_scratch`` the base and the wheelhouse); the times the build printed."""
    env = {**os.environ, "FORCE": "1"}
    with tempfile.TemporaryDirectory() as wheelhouse:
        if from_scratch:
            env |= {"FORCE_BASE": "1", "WEBAPPS_WHEELHOUSE": wheelhouse}
        started = time.monotonic()
        result = subprocess.run(
            ["bash", str(REPO / "containers/webapps/build.sh")], env=env, capture_output=True, text=True
        )
        total_s = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(f"the build failed:\n{result.stderr[-4000:]}")
    return {"from_scratch": from_scratch, **build_times(result.stdout + result.stderr), "total_s": round(total_s)}


def build_times(log: str) -> dict[str, Any]:
    """The steps' and sites' times that a log of containers/webapps/build.sh holds."""
    # In a log of containers/setup-host.sh, the web apps' part (the core image's base and wheelhouse come first).
    log = log[max(log.find("[containers/webapps/build.sh]"), 0) :]
    steps = {
        "base image (debootstrap)": re.search(r"\[build\.sh\] built \S+ in (\d+) s", log),
        # The first is the sites image's (the download, when there is one); the second build only makes the wheel.
        "wheelhouse": re.search(r"wheelhouse ready in (\d+) s", log),
        "sites image (docker build)": re.search(r"built agentgym/webapps-sites:\S+ in (\d+) s", log),
        "current agentgym on top (docker build)": re.search(r"built agentgym/webapps:\S+ in (\d+) s", log),
    }
    sites = {
        match[1]: {"ready_s": float(match[2]), "state_mb": float(match[3]), "venv_mb": float(match[4])}
        for match in re.finditer(
            r"\[webapps-image\] (\w+): ready .*? in ([\d.]+) s; state ([\d.]+) MB, venv ([\d.]+) MB", log
        )
    }
    total = re.search(r"\[containers/webapps/build\.sh\] done in (\d+) s", log)
    return {
        "total_s": int(total[1]) if total else None,
        "steps_s": {name: int(match[1]) for name, match in steps.items() if match},
        "sites": sites,
    }


def inspect(image: str) -> dict[str, Any]:
    output = subprocess.run(["docker", "image", "inspect", image], capture_output=True, check=True).stdout
    return json.loads(output)[0]


def sizes() -> dict[str, Any]:
    """The image's size, its base's, and each site's layers (bytes -> MB)."""
    config = inspect(IMAGE)
    history = subprocess.run(
        ["docker", "history", "--no-trunc", "--human=false", "--format", "{{.CreatedBy}}\t{{.Size}}", IMAGE],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    layers = [(line.rsplit("\t", 1)[0], int(line.rsplit("\t", 1)[1])) for line in history]
    per_site: dict[str, dict[str, float]] = {site: {} for site in SITES}
    named: dict[str, float] = {}
    for created_by, size in layers:
        found = re.search(r"/opt/agentgym/(venvs|webapps)/(\w+)\s*$", created_by)
        if found and found[2] in per_site:
            per_site[found[2]]["venv_mb" if found[1] == "venvs" else "state_mb"] = size / 1e6
        elif "/opt/agentgym/webapps/" in created_by:
            named["PostgreSQL cluster (shop + forum golden databases) and the rest"] = size / 1e6
        elif "/opt/agentgym/lib" in created_by:
            named["agentgym venv (agentgym[server,webapps], Playwright)"] = size / 1e6
        elif "--force-reinstall" in created_by or "/tmp/agentgym-wheels" in created_by:
            key = "the current agentgym over the sites image's (its wheels, then the install)"
            named[key] = named.get(key, 0.0) + size / 1e6
    base = base_of(config)
    return {
        "image_mb": config["Size"] / 1e6,
        "base": base,
        "base_mb": inspect(base)["Size"] / 1e6,
        "sites": {site: {**values, "total_mb": sum(values.values())} for site, values in per_site.items()},
        "other_layers_mb": named,
    }


def base_of(config: dict[str, Any]) -> str:
    """The webapps base image the image was built FROM: the one whose layers begin the image's."""
    output = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "agentgym/webapps-base"],
        capture_output=True,
        text=True,
        check=True,
    )
    layers = config["RootFS"]["Layers"]
    for tag in output.stdout.split():
        base_layers = inspect(tag)["RootFS"]["Layers"]
        if layers[: len(base_layers)] == base_layers:
            return tag
    raise SystemExit(f"no agentgym/webapps-base image here is {IMAGE}'s base")


def start_times(repeats: int) -> dict[str, Any]:
    """Per site id: container start (gym.make), first reset, second reset, close; medians in seconds."""
    results: dict[str, Any] = {}
    for info in agentgym.list_envs("webapps"):
        if len(info.kwargs.get("sites", [])) != 1:
            continue
        samples: dict[str, list[float]] = {"start_s": [], "first_reset_s": [], "second_reset_s": [], "close_s": []}
        task = info.splits.ids("test").start
        for _ in range(repeats):
            started = time.monotonic()
            env = gym.make(info.id, backend="docker", docker_image=IMAGE)
            samples["start_s"].append(time.monotonic() - started)
            for key in ("first_reset_s", "second_reset_s"):
                started = time.monotonic()
                env.reset(options={"task_id": task})
                samples[key].append(time.monotonic() - started)
            started = time.monotonic()
            env.close()
            samples["close_s"].append(time.monotonic() - started)
        results[info.id] = {key: round(statistics.median(values), 2) for key, values in samples.items()}
    return results


def table(data: dict[str, Any]) -> str:
    size = data["size"]
    lines = [
        f"Image `{IMAGE}`: **{size['image_mb'] / 1000:.2f} GB** in all, of which the debootstrap base "
        f"`{size['base']}` (Debian: Chromium, PostgreSQL, PHP, MediaWiki, Roundcube, Dovecot, git) is "
        f"{size['base_mb'] / 1000:.2f} GB. WebArena's images, as users measured them (sources in "
        "`benchmarks/webapps_image_webarena.yaml`): "
        + ", ".join(f"{name} {gb} GB" for name, gb in WEBARENA["images_gb"].items())
        + f"; {WEBARENA['total_note']}.",
        "",
        "| site | venv layer (MB) | seeded state layer (MB) | site total (MB) |",
        "|---|---:|---:|---:|",
    ]
    for site, values in size["sites"].items():
        lines.append(
            f"| {site} | {values.get('venv_mb', 0):.1f} | {values.get('state_mb', 0):.1f} | {values['total_mb']:.1f} |"
        )
    for name, mb in size["other_layers_mb"].items():
        lines.append(f"| ({name}) | | | {mb:.1f} |")
    if data.get("build"):
        built = data["build"]
        steps = ", ".join(f"{name} {seconds} s" for name, seconds in built["steps_s"].items())
        lines += [
            "",
            f"Build ({'with its debootstrap base' if built['from_scratch'] else 'image only, base cached'}): "
            f"**{built['total_s']} s** ({steps}). Per site inside the build (install + golden seed + first start):",
            "",
            "| site | seconds | state (MB) | venv (MB) |",
            "|---|---:|---:|---:|",
        ]
        for site, values in built["sites"].items():
            lines.append(f"| {site} | {values['ready_s']:.1f} | {values['state_mb']:.1f} | {values['venv_mb']:.1f} |")
    lines += [
        "",
        'Container start to first reset (medians, seconds): `gym.make(ID, backend="docker")` starts the '
        "container (as nobody: its state linked in, not copied) until the server answers; the first reset starts the "
        "site's servers; "
        "the second is a warm reset.",
        "",
        "| env | start | first reset | second reset | close |",
        "|---|---:|---:|---:|---:|",
    ]
    for env_id, values in data["start"].items():
        lines.append(
            f"| {env_id} | {values['start_s']} | {values['first_reset_s']} | {values['second_reset_s']} "
            f"| {values['close_s']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="store_true", help="rebuild the image first and time it")
    parser.add_argument("--from-scratch", action="store_true", help="with --build: the base and wheelhouse too")
    parser.add_argument("--build-log", help="instead of --build: the times in this log of containers/webapps/build.sh")
    parser.add_argument("--repeats", type=int, default=3, help="containers per site id for the start times")
    parser.add_argument("--no-write", action="store_true", help="print, do not record")
    args = parser.parse_args()
    data: dict[str, Any] = {"build": build(args.from_scratch) if args.build else None}
    if args.build_log:
        log = Path(args.build_log).read_text(errors="replace")
        data["build"] = {"from_scratch": "debootstrap" in log, **build_times(log)}
    data["size"] = sizes()
    data["start"] = start_times(args.repeats)
    data["webarena"] = WEBARENA
    text = table(data)
    print(text)
    if not args.no_write:
        command = "python benchmarks/webapps_image.py" + (" --build" if args.build else "")
        command += " --from-scratch" if args.from_scratch else ""
        command += " --build-log LOG" if args.build_log else ""
        title = "The web apps' image: build, size per site, start"
        record("webapps_image", title, "docker backend", text, data, command)


if __name__ == "__main__":
    main()
