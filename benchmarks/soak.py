"""Soak and churn: hundreds of sessions on one ``agentgym serve`` for hours, leaks measured at rest, faults injected.

One server (a subprocess) serves the mix of ``benchmarks/soak.yaml`` (sessions per env id,
scaled to ``--sessions``); :func:`soak_harness.soak` churns it: sessions opened,
played, closed or abandoned (left to the server's idle TTL), reopened; half over HTTP, half
over the WebSocket channel. Every ``--cycle-min`` minutes the workers stop and the server's
process tree is measured once it holds no session (resident memory, threads, descriptors,
child processes): a leak is what grows from rest to rest. With ``--faults``, cycles 2, 4,
6, ... kill one process of the tree halfway through (Chromium, the Java engine, a sandbox, a
web-app site's server, in turn) and record what the sessions saw.

    python benchmarks/soak.py --hours 2                       # writes results/soak.{md,json,png}
    python benchmarks/soak.py --minutes 6 --sessions 64 --cycle-min 2 --no-write
    python benchmarks/soak.py --from-report /tmp/agentgym-soak.json   # a stopped run's report, as far as it got

The whole report is written to ``$TMPDIR/agentgym-soak.json`` after every rest, so a run that is stopped (or
whose server dies: the run then ends with an event) keeps what it measured.

Writes the curves (samples every 10 s under load) as an image and the rests as a table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from recording import RESULTS, record
from soak_harness import Churn, GrowthBounds, SoakReport, growth_failures, kill_children, soak

import agentgym
from agentgym.contract.registry import max_concurrency
from agentgym.serving.backends.process import ServerProcess
from agentgym.utils.sockets import free_port

MIX = Path(__file__).with_name("soak.yaml")
#: What the fault cycles kill, in turn: a process name in the server's tree (or a site's server, outside it). The
#: sandbox comes first: a two-hour run has three fault cycles, and its process lives only while a command runs.
FAULTS = ("bwrap", "chrom", "java", "site")


def scaled_mix(sessions: int, mix_file: Path = MIX) -> dict[str, int]:
    """The mix of ``mix_file`` (sessions per env id) scaled to ``sessions`` in all (at least one session per id).

    A family with a ``max_concurrency`` (the web apps: a few tabs on one shared site) gets at most that many
    sessions in all, shared among its ids; the sessions it cannot hold go to the largest unlimited id."""
    weights = yaml.safe_load(mix_file.read_text())
    total = sum(weights.values())
    mix = {env_id: max(1, round(weight * sessions / total)) for env_id, weight in weights.items()}
    by_family: dict[str, list[str]] = {}
    for env_id in mix:
        by_family.setdefault(agentgym.env_info(env_id).family, []).append(env_id)
    for family, env_ids in by_family.items():
        limit = max_concurrency(env_ids[0])
        if limit is not None and sum(mix[env_id] for env_id in env_ids) > limit:
            for index, env_id in enumerate(env_ids):  # the limit, shared in turn (at least one each)
                mix[env_id] = max(1, limit // len(env_ids) + (index < limit % len(env_ids)))
            print(f"{family}: {sum(mix[e] for e in env_ids)} sessions in all (its max_concurrency is {limit})")
    unlimited = [env_id for env_id in mix if max_concurrency(env_id) is None]
    largest = max(unlimited, key=mix.__getitem__)
    mix[largest] += sessions - sum(mix.values())
    return mix


#: How long a fault waits for its target to be alive (a sandbox lives only while a command runs).
FAULT_PATIENCE_S = 120.0


def fault(server_pid: int, target: str) -> Any:
    """The fault of one cycle: kill ``target`` (a process name in the server's tree, or a web-app site's server),
    waiting up to :data:`FAULT_PATIENCE_S` for one to be alive (run in a thread: it blocks)."""

    def inject() -> dict[str, Any]:
        asked, killed = time.monotonic(), None
        while killed is None and time.monotonic() < asked + FAULT_PATIENCE_S:
            if target == "site":
                killed = _kill_site_server()
            else:
                killed = next(iter(kill_children(server_pid, target, limit=1)), None)
            if killed is None:
                time.sleep(0.05)
        waited = round(time.monotonic() - asked, 2)
        print(f"fault: killed {target} (pid {killed}, after {waited} s)", flush=True)
        return {"fault": f"kill {target}", "pid": killed, "waited_s": waited}

    return inject


def _kill_site_server() -> int | None:
    """Kill the forum site's web server (a process the web-apps family started, outside the server's tree)."""
    found = subprocess.run(["pgrep", "-f", "gunicorn"], capture_output=True, text=True).stdout.split()
    if not found:
        return None
    os.kill(int(found[0]), signal.SIGKILL)
    return int(found[0])


def plot(report: SoakReport, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = report.samples
    hours = [sample["t"] / 3600 for sample in samples]
    figure, axes = plt.subplots(6, 1, figsize=(9, 13), sharex=True)
    series = [
        ("server RSS (MiB)", lambda s: s["rss_bytes"] / 2**20),
        ("tree RSS (MiB)", lambda s: s["tree_rss_bytes"] / 2**20),
        ("threads / fds", None),
        ("child processes", lambda s: s["children"]),
        ("open sessions", lambda s: float("nan") if s["sessions"] is None else s["sessions"]),
        ("latency (s)", None),
    ]
    for axis, (label, value) in zip(axes, series):
        if label == "latency (s)":
            for key, name in (
                ("metrics_s", "/metrics on the loop"),
                ("listener_metrics_s", "/metrics on --metrics-port"),
                ("server_lag_s", "server's loop lag (worst, last minute)"),
                ("client_lag_s", "client's loop lag (worst, last minute)"),
            ):
                axis.plot(hours, [_number(s.get(key)) for s in samples], label=name)
            axis.legend(loc="upper left")
        elif value is None:
            axis.plot(hours, [s["threads"] for s in samples], label="threads")
            axis.plot(hours, [s["fds"] for s in samples], label="file descriptors")
            axis.legend(loc="upper left")
        else:
            axis.plot(hours, [value(s) for s in samples])
        for rest in report.rests[1:]:
            axis.axvline(rest["t"] / 3600, color="grey", linewidth=0.5)
        for event in report.events:
            axis.axvline(event["t"] / 3600, color="red", linewidth=0.8)
        axis.set_ylabel(label)
    axes[-1].set_xlabel("hours (grey: rests between cycles; red: faults)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--hours", type=float, help="how long to churn (default 2)")
    length.add_argument("--minutes", type=float, help="how long to churn, in minutes")
    parser.add_argument("--sessions", type=int, default=256, help="concurrent sessions (workers)")
    parser.add_argument("--mix", type=Path, default=MIX, help="YAML: sessions per env id (scaled to --sessions)")
    parser.add_argument("--cycle-min", type=float, default=10.0, help="minutes per cycle between rests")
    parser.add_argument("--ttl", type=float, default=20.0, help="the server's idle-session TTL, seconds")
    parser.add_argument("--faults", action="store_true", help="kill a process of the tree in every second cycle")
    parser.add_argument(
        "--max-python-calls", type=int, help="the server's `agentgym serve --max-python-calls` (default: its own)"
    )
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    parser.add_argument("--from-report", type=Path, help="write the results of a saved report instead of running")
    parser.add_argument("--results", default="soak", help="the results' name: results/NAME.{md,json,png}")
    args = parser.parse_args()
    seconds = 60 * args.minutes if args.minutes else 3600 * (args.hours or 2.0)
    cycles = max(2, round(seconds / (60 * args.cycle_min)))
    raw = Path(tempfile.gettempdir()) / "agentgym-soak.json"
    if args.from_report:
        saved = json.loads(args.from_report.read_text())
        report = SoakReport.from_json(saved["report"])
        write_results(report, saved["setup"], saved.get("healthy"), None if args.no_write else args.results)
        return
    mix = scaled_mix(args.sessions, args.mix)
    setup = {
        "sessions": args.sessions,
        "hours": seconds / 3600,
        "cycles": cycles,
        "ttl": args.ttl,
        "faults": args.faults,
        "cores": os.cpu_count(),
        "max_python_calls": args.max_python_calls,
    }

    def keep(report: SoakReport, healthy: bool | None = None) -> None:
        raw.write_text(json.dumps({"setup": setup, "healthy": healthy, "report": report.as_json()}, indent=1))

    metrics_port = free_port()
    server_args = ["--metrics-port", str(metrics_port)]
    server_args += [] if args.max_python_calls is None else ["--max-python-calls", str(args.max_python_calls)]
    server = ServerProcess(
        list(mix),
        max_sessions=4 * args.sessions,
        session_ttl_s=args.ttl,
        startup_timeout_s=600,
        server_args=server_args,
    )
    faults = {cycle: fault(server.pid, FAULTS[(cycle // 2 - 1) % len(FAULTS)]) for cycle in range(2, cycles, 2)}
    try:
        report = asyncio.run(
            soak(
                server.url,
                server.pid,
                mix,
                cycles=cycles,
                cycle_s=seconds / cycles,
                rest_timeout_s=max(180.0, 6 * args.ttl),
                sample_every_s=10.0,
                churn=Churn(),
                faults=faults if args.faults else None,
                progress=lambda line: print(line, flush=True),
                checkpoint=keep,
                metrics_url=f"http://127.0.0.1:{metrics_port}/metrics",
            )
        )
        healthy = server.process.poll() is None
    finally:
        server.stop()
    keep(report, healthy)  # kept whatever the summary does
    print(f"the whole report: {raw}")
    write_results(report, setup, healthy, None if args.no_write else args.results)


def write_results(report: SoakReport, setup: dict[str, Any], healthy: bool | None, name: str | None) -> None:
    """Print the summary of ``report``; with a ``name``, record it in results/NAME.{md,json} and plot NAME.png."""
    failures = growth_failures(report, GrowthBounds())
    table = summary(report, failures, healthy)
    print(table)
    if name is None:
        return
    churned = report.rests[-1]["t"] / 3600
    turns = "" if setup.get("max_python_calls") is None else f", --max-python-calls {setup['max_python_calls']}"
    description = (
        f"{setup['sessions']} sessions, {len(report.mix)} env ids, {churned:.2f} h measured in {len(report.rests) - 1} "
        f"of {setup['cycles']} cycles planned ({setup['hours']:.2f} h), idle TTL {setup['ttl']:g} s"
        f"{', faults injected' if setup['faults'] else ''}{turns}; image: results/{name}.png"
    )
    title = "Soak: hundreds of sessions for hours, measured at rest"
    command = "python benchmarks/soak.py" + (f" --results {name}" if name != "soak" else "")
    record(name, title, description, table, {**setup, **report.as_json()}, command=command)
    plot(report, RESULTS / f"{name}.png")


def summary(report: SoakReport, failures: list[str], healthy: bool | None) -> str:
    rows = [
        f"| {_after_cycle(rest)} | {rest['t'] / 60:.0f} | "
        f"{rest['rss_bytes'] / 2**20:.0f} | {rest['tree_rss_bytes'] / 2**20:.0f} | {rest['threads']} | "
        f"{rest['fds']} | {rest['children']} | {rest['sessions_left']} |"
        for rest in report.rests
    ]
    per_env = [
        f"| {env_id} | {count} | {report.sessions_opened[env_id]} | {report.sessions_abandoned[env_id]} | "
        f"{report.sessions_refused[env_id]} | {report.episodes[env_id]} | {report.steps[env_id]} | "
        f"{sum(n for key, n in report.errors.items() if key.startswith(env_id + ':'))} |"
        for env_id, count in report.mix.items()
    ]
    errors = [f"- {key}: {count} (e.g. {report.error_examples[key]!r})" for key, count in report.errors.items()]
    events = [f"- at {event['t'] / 60:.1f} min: {event['fault']}{_killed(event)}" for event in report.events]
    verdict = "no growth past the bounds" if not failures else "GROWTH: " + "; ".join(failures)
    return "\n".join(
        [
            "The server's process tree at rest (no session open) after each cycle:",
            "",
            "| after cycle | minute | server RSS MiB | tree RSS MiB | threads | fds | children | sessions left |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"Leak check ({GrowthBounds()}): {verdict}. Server still serving at the end: "
            f"{'not known (the run was stopped)' if healthy is None else healthy}.",
            "",
            "| env id | sessions at once | opened | abandoned | refused (family full) | episodes | steps | errors |",
            "|---|---|---|---|---|---|---|---|",
            *per_env,
            "",
            "Errors:" if errors else "Errors: none.",
            *errors,
            *(["", "Faults:", *events] if events else []),
            *latency_summary(report),
            *memory_summary(report),
        ]
    )


def latency_summary(report: SoakReport) -> list[str]:
    """How long ``/metrics`` took under load, and how late each side's event loop ran (samples every 10 s)."""
    rows = []
    for key, name in (
        ("metrics_s", "`/metrics`, asked to answered (timed in a process of its own)"),
        ("listener_metrics_s", "`/metrics` on `--metrics-port`, off the event loop (the same, asked at the same time)"),
        ("server_lag_s", "the server's event loop lag (worst in the minute before each sample)"),
        ("client_lag_s", "the soak client's event loop lag (the same)"),
    ):
        values = sorted(value for sample in report.samples if (value := sample.get(key)) is not None)
        if values:
            p50, p99 = values[len(values) // 2], values[min(len(values) - 1, int(0.99 * len(values)))]
            rows.append(f"| {name} | {len(values)} | {p50:.3f} | {p99:.3f} | {values[-1]:.3f} |")
    # The channel's open_timeout is the one TimeoutError (an older report's key has no "at ..." after it).
    timeouts = sum(count for key, count in report.errors.items() if key.split(": ", 1)[1].startswith("TimeoutError"))
    return [
        "",
        "Latency under load (seconds):",
        "",
        "| measured | samples | p50 | p99 | max |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"Channel opening handshakes timed out (60 s): {timeouts}.",
    ]


def _killed(event: dict[str, Any]) -> str:
    """What a fault event killed, and how long it waited for it to be alive."""
    if "pid" not in event:
        return ""
    waited = f", found after {event['waited_s']} s" if "waited_s" in event else ""
    return f" (pid {event['pid']}{waited})"


def _number(value: Any) -> float:
    return float("nan") if value is None else value


def memory_summary(report: SoakReport) -> list[str]:
    """Where the server's memory was at each rest (its ``/memory``): malloc's heap and Python's objects, and the
    object types that grew most from the first rest to the last."""
    rests = [rest for rest in report.rests if rest.get("memory")]
    if not rests:
        return []
    rows = [
        f"| {_after_cycle(rest)} | {rest['rss_bytes'] / 2**20:.0f} | "
        f"{_heap_mib(rest, 'held')} | {_heap_mib(rest, 'in_use')} | {_heap_mib(rest, 'free')} | "
        f"{rest['memory']['python_blocks']} | {rest['memory']['gc_objects']} |"
        for rest in rests
    ]
    first, last = rests[0]["memory"]["objects_by_type"], rests[-1]["memory"]["objects_by_type"]
    grown = sorted(((last[name] - first.get(name, 0), name) for name in last), reverse=True)[:8]
    return [
        "",
        "Where the server's memory was at each rest (`GET /memory`):",
        "",
        "| after cycle | server RSS MiB | malloc held MiB | malloc in use MiB | malloc free MiB | Python blocks "
        "| GC objects |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        "Object types grown most from the first of these rests to the last: "
        + (", ".join(f"{name} {change:+d}" for change, name in grown if change > 0) or "none")
        + ".",
    ]


def _after_cycle(rest: dict[str, Any]) -> str:
    """A rest's row label: the cycle it followed (1-based), or ``start``."""
    return str(rest["cycle"] + 1) if rest["cycle"] >= 0 else "start"


def _heap_mib(rest: dict[str, Any], key: str) -> str:
    heap = rest["memory"]["malloc"]
    return f"{heap[key] / 2**20:.0f}" if heap else "-"


if __name__ == "__main__":
    main()
