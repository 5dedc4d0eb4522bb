"""Soak and churn on an env server: many sessions for a long time, and whether anything leaks.

:func:`soak` drives a running ``agentgym serve`` with one worker per session slot. Each worker
opens a session of its env id, plays episodes (the env's own random legal action, or its
oracle's, drawn by the worker's seeded generator), and after each episode goes on, closes
the session, or abandons it (drops its connection without closing, so that only the server's
idle TTL reclaims it), then opens the next. Half the workers make their calls over plain HTTP,
half over the session's WebSocket channel. The run is cut into cycles; at the end of each,
every worker stops (an episode it has reset takes its first step first, so that an env whose
reset outlasts a cycle on a loaded machine is still exercised), the abandoned sessions are left
to the reaper, and once the server holds no session its process tree is measured at rest:
resident memory, threads, open file descriptors and child processes. A leak is what grows from
one rest to the next (:func:`growth_failures`); samples taken every few seconds under load make
the curves.

Errors are counted by env id and type, never raised: an env that fails ends its session with a
clear error, and the worker opens a new one. :func:`kill_children` kills processes of the
server's tree by name (Chromium, Java, a sandbox) in the middle of a run, for the fault runs.

Linux only (it reads ``/proc``). ``benchmarks/soak.py`` runs it for hours; ``tests/test_soak.py``
for a few minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from agentgym.serving.sessions import GONE_BECAUSE, LoopLag
from agentgym.utils.processes import descendants


@dataclass
class TreeStats:
    """A process and its descendants, at one moment."""

    rss_bytes: int
    tree_rss_bytes: int
    threads: int
    fds: int
    children: int
    child_names: dict[str, int] = field(default_factory=dict)


def _status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as status:
        return dict(line.split(":", 1) for line in status.read().splitlines() if ":" in line)


class ServerGone(RuntimeError):
    """The measured process has exited (or is a zombie): there is nothing left to measure."""


def tree_stats(pid: int) -> TreeStats:
    """Resident memory, threads and descriptors of ``pid``; its descendants' count, names and memory.
    :class:`ServerGone` when ``pid`` has exited."""
    try:
        status = _status(pid)
        rss = int(status["VmRSS"].split()[0]) * 1024  # a zombie has no VmRSS
    except (OSError, KeyError):
        raise ServerGone(f"process {pid} has exited") from None
    tree_rss, names = rss, Counter[str]()
    children = descendants(pid)
    for child in children:
        try:
            child_status = _status(child)
        except OSError:
            continue
        names[child_status["Name"].strip()] += 1
        tree_rss += int(child_status.get("VmRSS", "0 kB").split()[0]) * 1024
    return TreeStats(
        rss_bytes=rss,
        tree_rss_bytes=tree_rss,
        threads=int(status["Threads"]),
        fds=len(os.listdir(f"/proc/{pid}/fd")),
        children=len(children),
        child_names=dict(names),
    )


def kill_children(pid: int, name: str, limit: int | None = None, sig: int = signal.SIGKILL) -> list[int]:
    """Kill the descendants of ``pid`` whose process name contains ``name`` (the oldest first, at most ``limit``);
    the pids killed."""
    killed: list[int] = []
    for child in sorted(descendants(pid)):
        if limit is not None and len(killed) >= limit:
            break
        try:
            if name in _status(child)["Name"]:
                os.kill(child, sig)
                killed.append(child)
        except (OSError, KeyError):
            continue
    return killed


@dataclass
class SoakReport:
    """What a soak run measured: samples under load, the tree at each rest, and every error."""

    mix: dict[str, int]
    samples: list[dict[str, Any]] = field(default_factory=list)
    rests: list[dict[str, Any]] = field(default_factory=list)
    episodes: Counter[str] = field(default_factory=Counter)
    steps: Counter[str] = field(default_factory=Counter)
    sessions_opened: Counter[str] = field(default_factory=Counter)
    sessions_abandoned: Counter[str] = field(default_factory=Counter)
    #: Opens the server refused because the env's family held its most sessions (its max_concurrency: an
    #: abandoned session holds its place until the TTL reaps it); the worker waits and opens again.
    sessions_refused: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    error_examples: dict[str, str] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {key: dict(value) if isinstance(value, Counter) else value for key, value in vars(self).items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SoakReport:
        """The report :meth:`as_json` wrote (its counters as :class:`~collections.Counter` again)."""
        counters = {name for name, kind in cls.__annotations__.items() if str(kind).startswith("Counter")}
        return cls(**{key: Counter(value) if key in counters else value for key, value in data.items()})

    def note_error(self, env_id: str, kind: str, message: str) -> None:
        key = f"{env_id}: {kind}"
        self.errors[key] += 1
        self.error_examples.setdefault(key, message[:300])


#: The error type of an open refused because the env's family holds its most sessions (not a failure).
REFUSED = "TooManySessions"


class SessionFailed(Exception):
    """A session call answered an error; ``kind`` is its type and the session is given up."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Session:
    """One server session, its calls over HTTP or over its WebSocket channel."""

    def __init__(self, client: httpx.AsyncClient, env_id: str, channel: bool) -> None:
        self.client, self.env_id, self.use_channel = client, env_id, channel
        self.id: str | None = None
        self._channel: Any = None
        self.calls = 0
        #: What the session was doing last (an error is counted with it): opening, its channel's handshake, its
        #: first call or a later one, over HTTP or its channel.
        self.doing = "opening"

    async def open(self) -> None:
        response = await self.client.post("/sessions", json={"env_id": self.env_id})
        if response.status_code != 201:
            raise SessionFailed(_error_type(response), response.text[:300])
        self.id = response.json()["session_id"]
        if self.use_channel:
            from websockets.asyncio.client import connect

            self.doing = "channel handshake"
            url = f"ws{str(self.client.base_url).removeprefix('http').rstrip('/')}/sessions/{self.id}/channel"
            self._channel = await connect(url, compression=None, max_size=None, proxy=None, open_timeout=60)

    async def call(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        self.doing = f"{'first' if self.calls == 1 else 'later'} call over {'channel' if self.use_channel else 'HTTP'}"
        if self._channel is not None:
            await self._channel.send(json.dumps({"call": name, "body": body}))
            reply = json.loads(await self._channel.recv())
            if reply["status"] != 200:
                raise SessionFailed(reply["error"]["type"], reply["error"]["message"])
            return reply["answer"]
        response = await self.client.post(f"/sessions/{self.id}/{name}", json=body)
        if response.status_code != 200:
            raise SessionFailed(_error_type(response), response.text[:300])
        return response.json()

    async def close(self, abandon: bool = False) -> None:
        """Close the session, or with ``abandon`` only drop the connection (the server's TTL reclaims it)."""
        if self._channel is not None:
            await self._channel.close()
        if not abandon and self.id is not None:
            await self.client.delete(f"/sessions/{self.id}")


def _error_kind(error: SessionFailed) -> str:
    """The error's type; for a session that is gone, with why the server says it went (reaped, closed, ...)."""
    if error.kind == "UnknownSession":
        for why in GONE_BECAUSE.values():
            if why in str(error):
                return f"UnknownSession ({why})"
    return error.kind


def _error_type(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"]["type"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP{response.status_code}"


@dataclass
class Churn:
    """How workers churn: episodes per session at most, steps per episode at most, how sessions end."""

    max_episodes: int = 3
    max_steps: int = 30
    abandon_probability: float = 0.25
    close_probability: float = 0.25
    oracle_probability: float = 0.5


async def _worker(
    client: httpx.AsyncClient,
    env_id: str,
    index: int,
    report: SoakReport,
    churn: Churn,
    stop: asyncio.Event,
) -> None:
    """Open, play, close or abandon sessions of ``env_id`` until ``stop`` is set."""
    rng = random.Random(index)
    while not stop.is_set():
        session = Session(client, env_id, channel=index % 2 == 1)
        abandon = False
        try:
            await session.open()
            report.sessions_opened[env_id] += 1
            for _ in range(rng.randint(1, churn.max_episodes)):
                await _play_episode(session, rng, report, churn, stop)
                if stop.is_set() or rng.random() < churn.close_probability + churn.abandon_probability:
                    break
            abandon = not stop.is_set() and rng.random() < churn.abandon_probability
        except SessionFailed as error:
            if error.kind == REFUSED and session.id is None:  # back-pressure, as a trainer's client meets it
                report.sessions_refused[env_id] += 1
            else:
                report.note_error(env_id, f"{_error_kind(error)} at {session.doing}", str(error))
            await asyncio.sleep(1.0)
        except Exception as error:  # a connection or channel that broke
            report.note_error(env_id, f"{type(error).__name__} at {session.doing}", str(error))
            await asyncio.sleep(1.0)
        finally:
            with contextlib.suppress(Exception):  # the session or the server is gone already: nothing to close
                await session.close(abandon)
        if abandon:
            report.sessions_abandoned[env_id] += 1


async def _play_episode(
    session: Session, rng: random.Random, report: SoakReport, churn: Churn, stop: asyncio.Event
) -> None:
    await session.call("reset", {"seed": rng.randrange(2**31)})
    for step in range(churn.max_steps):
        # An episode that was reset takes its first step even when the cycle ended meanwhile: on a loaded
        # machine a slow env's reset (a JVM starting) can take the whole cycle, and would never be stepped.
        if stop.is_set() and step > 0:
            return
        action = await _next_action(session, rng, churn)
        answer = await session.call("step", {"action": action})
        report.steps[session.env_id] += 1
        if answer["terminated"] or answer["truncated"]:
            break
    report.episodes[session.env_id] += 1


async def _next_action(session: Session, rng: random.Random, churn: Churn) -> str:
    """The oracle's action or a random legal one (by the worker's generator); a plain reply where neither exists."""
    calls = ["oracle_action", "random_action"]
    if rng.random() >= churn.oracle_probability:
        calls.reverse()
    for name in calls:
        try:
            body = {"seed": rng.randrange(2**31)} if name == "random_action" else {}
            action = (await session.call(name, body))["action"]
            if isinstance(action, (str, dict)):
                return action  # type: ignore[return-value]
        except SessionFailed as error:
            if error.kind != "NotImplemented":
                raise
    return "look"


async def _metrics(client: httpx.AsyncClient) -> dict[str, Any] | None:
    """The server's ``/metrics``, or None when it did not answer within a minute (a stall is data, not a crash)."""
    try:
        return (await client.get("/metrics", timeout=60)).json()
    except httpx.HTTPError:
        return None


async def soak(
    url: str,
    server_pid: int,
    mix: Mapping[str, int],
    *,
    cycles: int,
    cycle_s: float,
    rest_timeout_s: float = 120.0,
    sample_every_s: float = 5.0,
    churn: Churn | None = None,
    faults: Mapping[int, Callable[[], dict[str, Any]]] | None = None,
    progress: Callable[[str], None] | None = None,
    checkpoint: Callable[[SoakReport], None] | None = None,
    metrics_url: str | None = None,
) -> SoakReport:
    """Run ``cycles`` cycles of churn on the server at ``url`` (``mix``: sessions per env id), resting after each.

    ``faults`` maps a cycle index to a function called halfway through that cycle (it may kill
    a process of the server's tree); what it returns is recorded in ``events``, with the time
    and cycle. The server must reap idle sessions
    (``--session-ttl``) well within ``rest_timeout_s``. ``checkpoint`` is called with the report
    after each rest (to keep what was measured should the run be stopped). A server that exits
    ends the run early, recorded as an event (``"server exited"``), with what was measured so far. With
    ``metrics_url`` (the server's ``--metrics-port`` listener), each sample also times a scrape there.
    """
    churn = churn or Churn()
    report = SoakReport(mix=dict(mix))
    started = time.monotonic()
    client_lag = LoopLag()  # this process's own loop: a request it waits on may wait here, not on the server
    lag_watch = asyncio.create_task(client_lag.watch())
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits, trust_env=False) as client:
        report.rests.append({"cycle": -1, "t": 0.0, "sessions_left": 0, **asdict(tree_stats(server_pid))})
        for cycle in range(cycles):
            stop = asyncio.Event()
            workers = [
                asyncio.create_task(_worker(client, env_id, index, report, churn, stop))
                for index, env_id in enumerate(env_id for env_id, count in mix.items() for _ in range(count))
            ]
            cycle_end = time.monotonic() + cycle_s
            fault = (faults or {}).get(cycle)
            fault_at = time.monotonic() + cycle_s / 2 if fault else None
            try:
                while time.monotonic() < cycle_end:
                    await asyncio.sleep(min(sample_every_s, max(cycle_end - time.monotonic(), 0)))
                    if fault_at is not None and time.monotonic() >= fault_at:
                        event = await asyncio.to_thread(fault)  # type: ignore[arg-type]  # it may wait for its target
                        report.events.append({"t": time.monotonic() - started, "cycle": cycle, **event})
                        fault_at = None
                    await _sample(client, server_pid, report, started, cycle, client_lag, metrics_url)
            except ServerGone:
                pass  # the rest below finds it gone too, once the workers have stopped
            stop.set()
            await asyncio.gather(*workers)
            try:
                rest = await _rest(client, server_pid, started, cycle, rest_timeout_s)
            except ServerGone:
                report.events.append({"t": time.monotonic() - started, "cycle": cycle, "fault": "server exited"})
                break
            report.rests.append(rest)
            if checkpoint:
                checkpoint(report)
            if progress:
                progress(
                    f"cycle {cycle + 1}/{cycles}: {sum(report.steps.values())} steps, "
                    f"{sum(report.errors.values())} errors; at rest {_describe(rest)}"
                )
    lag_watch.cancel()
    return report


#: A scrape in a process of its own: the seconds ``GET argv[1]`` took, a line, then the body.
_SCRAPE = """
import sys, time, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
asked = time.monotonic()
try:
    body = opener.open(sys.argv[1], timeout=60).read()
except OSError:
    body = b""
sys.stdout.buffer.write(b"%f\\n%s" % (time.monotonic() - asked, body))
"""


async def _timed_metrics(url: str) -> tuple[float, dict[str, Any]]:
    """How long ``/metrics`` at ``url`` took and its answer ({} if none), timed in a process of its own, as a
    monitor scraping it is (this process's event loop and GIL, busy with hundreds of sessions, are not in the way)."""
    scrape = await asyncio.create_subprocess_exec(
        sys.executable, "-S", "-c", _SCRAPE, url, stdout=asyncio.subprocess.PIPE
    )
    output, _ = await scrape.communicate()
    seconds, _, body = output.partition(b"\n")
    try:
        return float(seconds), json.loads(body)
    except ValueError:
        return float(seconds or 60), {}


async def _sample(
    client: httpx.AsyncClient,
    pid: int,
    report: SoakReport,
    started: float,
    cycle: int,
    client_lag: LoopLag,
    metrics_url: str | None = None,
) -> None:
    asked = time.monotonic()
    scrapes = [str(client.base_url.join("/metrics")), *([metrics_url] if metrics_url else [])]
    (metrics_s, metrics), *listener = await asyncio.gather(*(_timed_metrics(url) for url in scrapes))
    report.samples.append(
        {
            "t": asked - started,
            "cycle": cycle,
            "metrics_s": metrics_s,
            **({"listener_metrics_s": listener[0][0]} if listener else {}),
            # The worst lag of the server's event loop and of this client's, each over the last minute.
            "server_lag_s": (metrics.get("loop_lag_s") or {}).get("max_last_minute"),
            "client_lag_s": client_lag.summary()["max_last_minute"],
            "errors": sum(report.errors.values()),
            "sessions": metrics.get("sessions"),
            "steps": metrics.get("steps"),
            "python_calls_waiting": (metrics.get("python_calls") or {}).get("waiting"),
            **asdict(tree_stats(pid)),
        }
    )


async def _rest(client: httpx.AsyncClient, pid: int, started: float, cycle: int, timeout_s: float) -> dict[str, Any]:
    """Wait until the server holds no session (the reaper took the abandoned ones) and its children settle;
    :class:`ServerGone` at once when it has exited."""
    tree_stats(pid)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and ((await _metrics(client)) or {"sessions": -1})["sessions"]:
        await asyncio.sleep(1.0)
    left = ((await _metrics(client)) or {"sessions": -1})["sessions"]  # -1: the server did not answer
    settled, previous = tree_stats(pid), None
    while previous is None or (settled.children, settled.threads) != (previous.children, previous.threads):
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(2.0)  # closed envs' processes and threads take a moment to exit
        previous, settled = settled, tree_stats(pid)
    rest = {"cycle": cycle, "t": time.monotonic() - started, "sessions_left": left, **asdict(settled)}
    with contextlib.suppress(httpx.HTTPError):  # where its memory is (a server without /memory or too busy: left out)
        rest["memory"] = (await client.get("/memory", timeout=60)).raise_for_status().json()
    return rest


def _describe(rest: Mapping[str, Any]) -> str:
    return (
        f"RSS {rest['rss_bytes'] / 2**20:.0f} MiB (tree {rest['tree_rss_bytes'] / 2**20:.0f} MiB), "
        f"{rest['threads']} threads, {rest['fds']} fds, {rest['children']} children"
    )


@dataclass
class GrowthBounds:
    """How much the server's tree may grow from the first rest (after a cycle) to the last."""

    rss_mib: float = 64.0
    rss_fraction: float = 0.15
    threads: int = 4
    fds: int = 16
    children: int = 0


def growth_failures(report: SoakReport, bounds: GrowthBounds | None = None) -> list[str]:
    """What grew past ``bounds`` between the first rest after a cycle and the last (empty: no leak)."""
    bounds = bounds or GrowthBounds()
    rests = [rest for rest in report.rests if rest["cycle"] >= 0]
    if len(rests) < 2:
        raise ValueError("growth needs at least two cycles")
    first, last = rests[0], rests[-1]
    failures = [
        f"the server still held {rest['sessions_left']} sessions after cycle {rest['cycle']}"
        for rest in rests
        if rest["sessions_left"]
    ]
    rss_limit = max(bounds.rss_mib * 2**20, bounds.rss_fraction * first["rss_bytes"])
    if last["rss_bytes"] - first["rss_bytes"] > rss_limit:
        failures.append(f"server RSS grew {first['rss_bytes'] / 2**20:.0f} -> {last['rss_bytes'] / 2**20:.0f} MiB")
    tree_limit = max(bounds.rss_mib * 2**20, bounds.rss_fraction * first["tree_rss_bytes"])
    if last["tree_rss_bytes"] - first["tree_rss_bytes"] > tree_limit:
        failures.append(
            f"the tree's RSS grew {first['tree_rss_bytes'] / 2**20:.0f} -> {last['tree_rss_bytes'] / 2**20:.0f} MiB"
        )
    for name in ("threads", "fds", "children"):
        if last[name] - first[name] > getattr(bounds, name):
            failures.append(
                f"{name} grew {first[name]} -> {last[name]} (child processes then: {last['child_names']}; "
                f"after the first cycle: {first['child_names']})"
            )
    return failures
