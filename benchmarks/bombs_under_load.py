"""Resource bombs under load: each bomb played in one session while many others play on the same server.

One ``agentgym serve`` process (a real server on a loopback port, started as the process backend
starts it) serves the background ids and the bombed ids. ``--sessions`` background sessions keep
playing over their WebSocket channels: each asks the server for a random legal action, steps, and
waits about ``--think-s`` (an agent thinking), resetting when an episode ends. Most of them play
``Maze-v0`` (pure Python, stepped on the server's event loop, a few kB a session: 256 fit in a few
hundred MB on a 2-core machine), ``--sandbox-sessions`` of them ``Bash-v0`` (read-only shell commands,
each a bwrap sandbox), so that other sandboxes run while a bomb goes off.

Then, for each bombed id (``Bash-v0``, the code family's shell; ``Math-Python-v0``, the Python
interpreter tool) and each bomb (:data:`BOMBS`: memory, fork, disk filler, infinite loop, output
flood), one more session is opened and reset, the background is measured for ``--seconds``
(*before*), the bomb is played as one step (*during*, from the step sent to its answer), the
background is measured ``--seconds`` more (*after*), and then:

* the bomb episode's observation: does it say which limit stopped the command (:attr:`Bomb.says`)?
  A next step in the same episode (``du`` of the work dir / a fresh cell) shows what was left;
* the background: step latency p50/p99 and errors in each window, per background id;
* the server: ``GET /health`` answers, and a new session of the bombed id opens, resets and steps;
* the host: the lowest ``MemAvailable`` (``/proc/meminfo``, sampled every 0.1 s) and the lowest free
  disk space where the sandboxes' work dirs live, from the start of *before* to the end of *after*;
  the server tree's peak resident memory (bwrap sandboxes included).

The memory bombs stay within an id's own limits: one process growing until ``memory_mb``, and, where the
sandbox has a memory cgroup (:func:`agentgym.sandbox.cgroup.memory_groups`), 8 processes (9 in the interpreter)
each taking three quarters of ``memory_mb`` until the run's ``run_memory_mb`` stops them (without that cap they
would take 6 GB at the ids' limits: that bomb is left out there). Issue #53's target is 256 background sessions.

    python benchmarks/bombs_under_load.py                    # writes results/bombs_under_load.{md,json}
    python benchmarks/bombs_under_load.py --sessions 64 --seconds 5 --no-write
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shlex
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from agentgym.sandbox.cgroup import memory_groups
from agentgym.serving.backends.process import ServerProcess

BACKGROUND_ID = "Maze-v0"
SANDBOX_ID = "Bash-v0"
#: The bombed ids: the code family's shell and the Python interpreter tool.
BOMBED_IDS = ("Bash-v0", "Math-Python-v0")
WINDOWS = ("before", "during", "after")
MIB = 2**20


@dataclass(frozen=True)
class Bomb:
    """A bomb: the reply that plays it, what its observation must say, the next step that looks at what was left."""

    name: str
    reply: str
    says: tuple[str, ...]  # the observation holds at least one of these
    then: str


def bash(command: str) -> str:
    return f"```bash\n{command}\n```"


def python(code: str) -> str:
    return f"```python\n{code}\n```"


#: Allocate three quarters of one's address-space limit and hold it a moment (Python).
_TAKE_MEMORY = (
    "import resource, time\nheld = bytearray(resource.getrlimit(resource.RLIMIT_AS)[0] * 3 // 4)\ntime.sleep(0.3)"
)

#: Every bomb, per bombed id. The shell's observation ends with ``[stopped: the LIMIT limit was hit]``,
#: the interpreter's with its cell status (``describe_cell``) or the cell's traceback. The shell's fork
#: bomb waits for its children at every level: the bare ``:(){ :|:& };:`` returns at once, and its processes
#: die with the command (the sandbox's init kills them), the observation saying only ``[exit code 0]``; with
#: a ``wait`` at the top only, 1 of 3 tries here ended so too, before reaching the process limit.
BOMBS: dict[str, tuple[Bomb, ...]] = {
    "Bash-v0": tuple(
        Bomb(name, bash(command), says, bash("du -sm . /tmp 2>/dev/null; ls | wc -l"))
        for name, command, says in (
            ("memory", "python3 -c 'chunks = [bytearray(64 << 20) for _ in range(1000)]'", ("the memory limit",)),
            (
                "memory of many processes",
                f"for i in $(seq 8); do python3 -c {shlex.quote(_TAKE_MEMORY)} & done; wait",
                ("the memory limit", "the wall limit"),
            ),
            (
                "fork",
                ":(){ :|:& wait; };:",
                ("the processes limit", "Resource temporarily unavailable", "the wall limit"),
            ),
            ("disk filler", "i=0; while head -c 60000000 /dev/zero > fill$i; do i=$((i+1)); done", ("the disk limit",)),
            ("infinite loop", "while :; do :; done", ("the cpu limit", "the wall limit")),
            ("output flood", "yes 'all work and no play'", ("the output limit",)),
        )
    ),
    "Math-Python-v0": tuple(
        Bomb(name, python(code), says, python("import os\nprint('fresh cell', len(os.listdir('.')), 'files')"))
        for name, code, says in (
            ("memory", "chunks = []\nwhile True:\n    chunks.append(bytearray(64 << 20))", ("ran out of memory",)),
            (
                "memory of many processes",
                "import os\nfor _ in range(8):\n    if os.fork() == 0:\n"
                + "".join(f"        {line}\n" for line in _TAKE_MEMORY.splitlines())
                + "        os._exit(0)\n"
                + _TAKE_MEMORY,
                ("ran out of memory", "time limit", "did not answer"),
            ),
            (
                "fork",
                "import os, time\nwhile True:\n    if os.fork() == 0:\n        time.sleep(60)\n        os._exit(0)",
                ("Resource temporarily unavailable",),
            ),
            (
                "disk filler",
                "i = 0\nwhile True:\n    with open(f'fill{i}', 'wb') as out:\n        out.write(bytes(15 << 20))\n"
                "    i += 1",
                ("disk quota",),
            ),
            ("infinite loop", "while True:\n    pass", ("time limit", "of CPU")),
            ("output flood", "while True:\n    print('all work and no play ' * 40)", ("output stopped", "omitted")),
        )
    ),
}
if isinstance(memory_groups(), str):  # no cgroup to cap a run's processes together: those bombs would take the host
    BOMBS = {env_id: tuple(b for b in bombs if b.name != "memory of many processes") for env_id, bombs in BOMBS.items()}


# ---- the background: sessions that keep playing ------------------------------------------------


@dataclass
class Log:
    """What the background sessions did: (end time, latency) of each step per id, and (time, error) of each error."""

    steps: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    errors: list[tuple[float, str]] = field(default_factory=list)


class Channel:
    """One session over its WebSocket channel."""

    def __init__(self, client: httpx.AsyncClient, env_id: str) -> None:
        self.client, self.env_id = client, env_id
        self.id: str | None = None
        self.socket: Any = None

    async def open(self) -> None:
        from websockets.asyncio.client import connect

        response = await self.client.post("/sessions", json={"env_id": self.env_id})
        if response.status_code != 201:
            raise RuntimeError(f"open {self.env_id}: HTTP {response.status_code} {response.text[:200]}")
        self.id = response.json()["session_id"]
        url = f"ws{str(self.client.base_url).removeprefix('http').rstrip('/')}/sessions/{self.id}/channel"
        self.socket = await connect(url, compression=None, max_size=None, proxy=None, open_timeout=120)

    async def call(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        await self.socket.send(json.dumps({"call": name, "body": body}))
        reply = json.loads(await self.socket.recv())
        if reply["status"] != 200:
            raise RuntimeError(f"{name}: {reply['error']['type']}: {reply['error']['message'][:200]}")
        return reply["answer"]

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.socket.close()
        with contextlib.suppress(Exception):
            await self.client.delete(f"/sessions/{self.id}")


async def play(
    client: httpx.AsyncClient, env_id: str, index: int, think_s: float, log: Log, stop: asyncio.Event
) -> None:
    """One background session: random legal actions, a think time between steps, a new session after an error."""
    rng = random.Random(index)
    steps = log.steps.setdefault(env_id, [])
    while not stop.is_set():
        session = Channel(client, env_id)
        try:
            await session.open()
            await session.call("reset", {"seed": index})
            while not stop.is_set():
                action = (await session.call("random_action", {"seed": rng.randrange(2**31)}))["action"]
                started = time.monotonic()
                answer = await session.call("step", {"action": action})
                steps.append((time.monotonic(), time.monotonic() - started))
                if answer["terminated"] or answer["truncated"]:
                    await session.call("reset", {"seed": rng.randrange(2**31)})
                await asyncio.sleep(rng.uniform(0.5, 1.5) * think_s)
        except Exception as error:  # counted, never raised: the others go on
            log.errors.append((time.monotonic(), f"{env_id}: {type(error).__name__}: {str(error)[:200]}"))
            await asyncio.sleep(1.0)
        finally:
            await session.close()


# ---- the host, sampled ---------------------------------------------------------------------------


def mem_available() -> int:
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and its descendants (the server, its sandboxes)."""
    total, queue = 0, [pid]
    while queue:
        current = queue.pop()
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{current}/statm") as statm:
                total += int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    queue += [int(child) for child in children.read().split()]
    return total


async def sample(pid: int, samples: list[tuple[float, int, int, int]], stop: asyncio.Event) -> None:
    """(time, MemAvailable, free disk where work dirs live, server tree RSS) every 0.1 s (RSS every 0.5 s)."""
    disk = tempfile.gettempdir()
    rss, tick = tree_rss(pid), 0
    while not stop.is_set():
        if tick % 5 == 0:
            rss = tree_rss(pid)
        stat = os.statvfs(disk)
        samples.append((time.monotonic(), mem_available(), stat.f_bavail * stat.f_frsize, rss))
        tick += 1
        await asyncio.sleep(0.1)


# ---- one bomb ------------------------------------------------------------------------------------


def percentile(values: list[float], share: float) -> float | None:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else None


def window_stats(log: Log, start: float, end: float) -> dict[str, Any]:
    """Per background id: steps, p50/p99 latency (ms) between ``start`` and ``end``; errors then."""
    stats: dict[str, Any] = {}
    for env_id, steps in log.steps.items():
        latencies = [latency * 1000 for at, latency in steps if start <= at <= end]
        p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
        stats[env_id] = {
            "steps": len(latencies),
            "p50_ms": None if p50 is None else round(p50, 1),
            "p99_ms": None if p99 is None else round(p99, 1),
        }
    stats["errors"] = [message for at, message in log.errors if start <= at <= end]
    return stats


@dataclass
class Outcome:
    """How one bomb went (see the module docstring)."""

    env_id: str
    bomb: str
    observation: str
    says_what_happened: bool
    terminated: bool
    bomb_step_s: float
    next_observation: str
    windows: dict[str, dict[str, Any]]
    health_s: float | None
    new_session_ok: bool
    new_session_s: float
    min_mem_available_mib: float
    mem_available_drop_mib: float
    disk_used_at_peak_mib: float
    server_tree_peak_rss_mib: float
    problems: list[str]


async def explode(
    client: httpx.AsyncClient,
    env_id: str,
    bomb: Bomb,
    kwargs: Mapping[str, Any],
    window_s: float,
    log: Log,
    samples: list[tuple[float, int, int, int]],
) -> Outcome:
    """Play ``bomb`` in a fresh session of ``env_id`` between a before and an after window; measure everything."""
    opened = await client.post("/sessions", json={"env_id": env_id, "kwargs": dict(kwargs)}, timeout=120)
    opened.raise_for_status()
    session = opened.json()["session_id"]
    try:
        (await client.post(f"/sessions/{session}/reset", json={"seed": 0}, timeout=120)).raise_for_status()
        before = time.monotonic()
        await asyncio.sleep(window_s)
        bomb_started = time.monotonic()
        stepped = await client.post(f"/sessions/{session}/step", json={"action": bomb.reply}, timeout=300)
        bomb_ended = time.monotonic()
        stepped.raise_for_status()
        answer = stepped.json()
        await asyncio.sleep(window_s)
        after = time.monotonic()
        looked = await client.post(f"/sessions/{session}/step", json={"action": bomb.then}, timeout=300)
        next_observation = looked.json()["observation"] if looked.status_code == 200 else looked.text
    finally:
        await client.delete(f"/sessions/{session}")
    health_started = time.monotonic()
    health_s: float | None = None
    with contextlib.suppress(httpx.HTTPError):
        (await client.get("/health", timeout=30)).raise_for_status()
        health_s = time.monotonic() - health_started
    new_started = time.monotonic()
    new_ok = await try_new_session(client, env_id, kwargs)
    new_s = time.monotonic() - new_started

    observation = str(answer["observation"])
    says = any(text in observation for text in bomb.says)
    windows = {
        "before": window_stats(log, before, bomb_started),
        "during": window_stats(log, bomb_started, bomb_ended),
        "after": window_stats(log, bomb_ended, after),
    }
    seen = [sample for sample in samples if before <= sample[0] <= after]
    baseline = [sample for sample in samples if before <= sample[0] <= bomb_started] or seen
    mem_min = min(sample[1] for sample in seen)
    mem_base = statistics.median(sample[1] for sample in baseline)
    disk_min = min(sample[2] for sample in seen)
    disk_base = statistics.median(sample[2] for sample in baseline)
    problems = []
    if not says:
        problems.append(f"the observation does not say what stopped the bomb (none of {bomb.says})")
    for name in WINDOWS:
        if windows[name]["errors"]:
            problems.append(f"{len(windows[name]['errors'])} background errors {name}")
    if health_s is None:
        problems.append("/health did not answer")
    if not new_ok:
        problems.append("no new session could be played")
    return Outcome(
        env_id=env_id,
        bomb=bomb.name,
        observation=ends(observation, 2000),
        says_what_happened=says,
        terminated=bool(answer["terminated"]),
        bomb_step_s=round(bomb_ended - bomb_started, 2),
        next_observation=ends(str(next_observation), 600),
        windows=windows,
        health_s=None if health_s is None else round(health_s, 4),
        new_session_ok=new_ok,
        new_session_s=round(new_s, 2),
        min_mem_available_mib=round(mem_min / MIB),
        mem_available_drop_mib=round((mem_base - mem_min) / MIB),
        disk_used_at_peak_mib=round(max(0.0, disk_base - disk_min) / MIB),
        server_tree_peak_rss_mib=round(max(sample[3] for sample in seen) / MIB),
        problems=problems,
    )


def ends(text: str, size: int) -> str:
    """``text``, or its head and tail when longer than ``size``: a bomb's output is long, what stopped it comes last."""
    return text if len(text) <= size else f"{text[: size // 2]}\n[...]\n{text[-size // 2 :]}"


async def try_new_session(client: httpx.AsyncClient, env_id: str, kwargs: Mapping[str, Any]) -> bool:
    """Whether a new session of ``env_id`` opens, resets and plays a harmless step."""
    harmless = bash("echo hello") if env_id == "Bash-v0" else python("print('hello')")
    try:
        opened = await client.post("/sessions", json={"env_id": env_id, "kwargs": dict(kwargs)}, timeout=120)
        opened.raise_for_status()
        session = opened.json()["session_id"]
        try:
            (await client.post(f"/sessions/{session}/reset", json={"seed": 1}, timeout=120)).raise_for_status()
            stepped = await client.post(f"/sessions/{session}/step", json={"action": harmless}, timeout=120)
            return stepped.status_code == 200 and "hello" in stepped.json()["observation"]
        finally:
            await client.delete(f"/sessions/{session}")
    except httpx.HTTPError:
        return False


# ---- the whole run ---------------------------------------------------------------------------------


async def bombs_under_load(
    url: str,
    pid: int,
    background: Mapping[str, int],
    bombs: Mapping[str, tuple[Bomb, ...]],
    *,
    window_s: float,
    think_s: float,
    warmup_s: float,
    bomb_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Start the background sessions, play every bomb in turn, stop; the outcomes and the whole run's numbers."""
    log, samples, stop = Log(), [], asyncio.Event()
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        sampler = asyncio.create_task(sample(pid, samples, stop))
        players, index = [], 0
        for env_id, count in background.items():
            for _ in range(count):
                players.append(asyncio.create_task(play(client, env_id, index, think_s, log, stop)))
                index += 1
        started = time.monotonic()
        await asyncio.sleep(warmup_s)
        progress(f"background: {sum(background.values())} sessions, {sum(map(len, log.steps.values()))} steps so far")
        outcomes = []
        try:
            for env_id, id_bombs in bombs.items():
                for bomb in id_bombs:
                    outcome = await explode(
                        client, env_id, bomb, (bomb_kwargs or {}).get(env_id, {}), window_s, log, samples
                    )
                    outcomes.append(outcome)
                    progress(line_of(outcome))
        finally:
            stop.set()
            await asyncio.gather(*players, sampler, return_exceptions=True)
        ended = time.monotonic()
    return {
        "outcomes": [asdict(outcome) for outcome in outcomes],
        "whole_run": window_stats(log, started + warmup_s, ended),
        "all_errors": [message for _, message in log.errors],
        "min_mem_available_mib": round(min(sample[1] for sample in samples) / MIB),
        "server_tree_peak_rss_mib": round(max(sample[3] for sample in samples) / MIB),
        "seconds": round(ended - started, 1),
    }


def line_of(outcome: Outcome) -> str:
    """One bomb's outcome as a progress line."""
    latency = " / ".join(
        "{p50_ms}|{p99_ms}".format(**outcome.windows[name].get(BACKGROUND_ID, {"p50_ms": None, "p99_ms": None}))
        for name in WINDOWS
    )
    return (
        f"{outcome.env_id} {outcome.bomb}: step {outcome.bomb_step_s:.1f} s, "
        f"{'clear' if outcome.says_what_happened else 'UNCLEAR'}, {BACKGROUND_ID} p50|p99 {latency} ms, "
        f"MemAvailable min {outcome.min_mem_available_mib} MiB, {'; '.join(outcome.problems) or 'contained'}"
    )


# ---- the results -----------------------------------------------------------------------------------


def table(run: Mapping[str, Any], background: Mapping[str, int]) -> str:
    """The bombs-under-load table (Markdown)."""
    ids = list(background)
    header = ["bombed id", "bomb", "bomb step (s)", "observation says it", "next step shows"]
    for env_id in ids:
        header += [f"{env_id} p50/p99 ms before", "during", "after"]
    header += ["background errors", "/health (ms)", "new session", "min MemAvailable (MiB)", "disk at peak (MiB)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for outcome in run["outcomes"]:
        said = next(
            (text for text in (*BOMB_SAYS[outcome["env_id"], outcome["bomb"]],) if text in outcome["observation"]), ""
        )
        row = [
            outcome["env_id"],
            outcome["bomb"],
            f"{outcome['bomb_step_s']:.1f}",
            f"yes ({said})" if outcome["says_what_happened"] else "**no**",
            summary_of(outcome["next_observation"]),
        ]
        for env_id in ids:
            for name in WINDOWS:
                stats = outcome["windows"][name].get(env_id, {})
                row.append(f"{stats.get('p50_ms')}/{stats.get('p99_ms')} ({stats.get('steps', 0)})")
        errors = sum(len(outcome["windows"][name]["errors"]) for name in WINDOWS)
        row += [
            str(errors),
            "no answer" if outcome["health_s"] is None else f"{1000 * outcome['health_s']:.0f}",
            f"ok, {outcome['new_session_s']:.1f} s" if outcome["new_session_ok"] else "**failed**",
            str(outcome["min_mem_available_mib"]),
            str(outcome["disk_used_at_peak_mib"]),
        ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


BOMB_SAYS = {(env_id, bomb.name): bomb.says for env_id, id_bombs in BOMBS.items() for bomb in id_bombs}


def summary_of(observation: str) -> str:
    """The next step's observation, on one line of a table."""
    lines = [
        line.strip()
        for line in observation.splitlines()
        if line.strip() and not line.startswith(("Run code", "Current"))
    ]
    return " ".join(" ".join(lines).split())[:80].replace("|", "/") or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=256, help="background sessions (issue #53's target: 256)")
    parser.add_argument("--sandbox-sessions", type=int, default=8, help=f"of them, {SANDBOX_ID} sessions")
    parser.add_argument("--seconds", type=float, default=10.0, help="the before and after windows of each bomb")
    parser.add_argument("--think-s", type=float, default=1.0, help="a background session's mean wait between steps")
    parser.add_argument("--warmup-s", type=float, default=15.0, help="background play before the first bomb")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()
    background = {BACKGROUND_ID: args.sessions - args.sandbox_sessions, SANDBOX_ID: args.sandbox_sessions}
    server = ServerProcess(
        sorted({*background, *BOMBED_IDS}),
        max_sessions=args.sessions + 16,
        session_ttl_s=600,
        startup_timeout_s=300,
    )
    try:
        run = asyncio.run(
            bombs_under_load(
                server.url,
                server.pid,
                background,
                BOMBS,
                window_s=args.seconds,
                think_s=args.think_s,
                warmup_s=args.warmup_s,
                progress=lambda line: print(line, flush=True),
            )
        )
        run["server_alive_at_end"] = server.process.poll() is None
    finally:
        server.stop()
    setup = {key: value for key, value in vars(args).items() if key != "no_write"}
    run["setup"] = {**setup, "background": background, "cores": os.cpu_count(), "target_sessions": 256}
    text = table(run, background)
    print(text)
    if not args.no_write:
        from recording import record  # benchmarks/ is this script's folder

        record(
            "bombs_under_load",
            "Resource bombs contained while other sessions play",
            f"{args.sessions} background sessions ({background[BACKGROUND_ID]} {BACKGROUND_ID}, "
            f"{args.sandbox_sessions} {SANDBOX_ID}), a step every ~{args.think_s:g} s each; "
            f"windows of {args.seconds:g} s; issue #53's target is 256",
            text + "\n\n" + notes(run),
            run,
            command=f"python benchmarks/bombs_under_load.py --sessions {args.sessions} --seconds {args.seconds:g}",
        )


def notes(run: Mapping[str, Any]) -> str:
    """What the whole run adds to the table."""
    whole = run["whole_run"]
    lines = [
        f"Whole run: {run['seconds']} s; background steps "
        + ", ".join(
            f"{env_id} {stats['steps']} (p50 {stats['p50_ms']} ms, p99 {stats['p99_ms']} ms)"
            for env_id, stats in whole.items()
            if env_id != "errors"
        )
        + f"; background errors {len(run['all_errors'])}; lowest MemAvailable {run['min_mem_available_mib']} MiB; "
        f"server tree peak RSS {run['server_tree_peak_rss_mib']} MiB; "
        f"server alive at the end: {run.get('server_alive_at_end')}.",
        "",
        "Latency cells: p50/p99 in ms (steps in the window). *During* is the bomb's step, from sent to answered.",
        "",
        "The disk filler is stopped at the work dir's quota (`disk_mb`, measured by the host while the command "
        "runs; a later command may not grow a work dir already over it): *disk at peak* is what it left there "
        "(on the host's disk until the episode resets or the session closes). The memory bombs are one process "
        "each; `memory_mb` is per process, so a run could hold up to `processes` x `memory_mb` (not played "
        "here). See docs/security.md.",
    ]
    problems = [f"- {o['env_id']} {o['bomb']}: {'; '.join(o['problems'])}" for o in run["outcomes"] if o["problems"]]
    if problems:
        lines += ["", "Problems:", *problems]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
