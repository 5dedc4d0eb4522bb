"""A results folder: the run's configuration and its episodes, append-only and crash-safe.

Layout of ``OUT/``::

    run.json         what was run (policy, env items, split, seed, versions)
    episodes.jsonl   one JSON object per finished episode, appended when it finishes

Each episode has a ``key`` (``env/split/task_id/repeat``). A record is written with one
``write`` call and flushed, so a process killed at any point leaves every finished
episode on disk and at most one partial last line, which :meth:`ResultsFolder.open`
cuts off. When a key appears twice (an errored episode redone with ``--retry-errors``),
the later record wins.

A record is an :class:`~agentgym.evaluation.records.EpisodeRecord` (an eval) or a
:class:`~agentgym.evaluation.records.MatchRecord` (an arena); :mod:`agentgym.evaluation.records`
turns them into JSON and back (upgrading older versions). :func:`play_missing` is the
resume-and-worker loop that both ``run_eval`` and ``run_arena`` use.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar

import orjson

from agentgym.evaluation.records import EpisodeRecord, MatchRecord, Record, episode_from_json, match_from_json, to_json

RUN_FILE = "run.json"
EPISODES_FILE = "episodes.jsonl"


def episode_key(env_id: str, split: str, task_id: int, repeat: int) -> str:
    """The identity of one planned episode within a run."""
    return f"{env_id}/{split}/{task_id}/{repeat}"


def iter_json(path: Path) -> Iterator[dict[str, Any]]:
    """The raw JSON objects of a results folder (or an ``episodes.jsonl`` path) in file order.

    A final line without its newline (a write cut short by a crash) is skipped. Readers want
    the typed :func:`iter_episodes` / :func:`iter_matches`.
    """
    path = Path(path)
    if path.is_dir():
        path = path / EPISODES_FILE
    if not path.exists():
        return
    with path.open("rb") as file:
        for line in file:
            if not line.endswith(b"\n"):
                return
            yield _decode(line)


def _decode(line: bytes) -> dict[str, Any]:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:  # NaN or Infinity, which Python's json writes and reads
        return json.loads(line)


def iter_episodes(path: Path) -> Iterator[EpisodeRecord]:
    """The eval episodes of a results folder (or an ``episodes.jsonl`` path) in file order, typed."""
    return map(episode_from_json, iter_json(path))


def iter_matches(path: Path) -> Iterator[MatchRecord]:
    """The matches of an arena results folder (or its ``episodes.jsonl``) in file order, typed."""
    return map(match_from_json, iter_json(path))


def read_episodes(path: Path) -> dict[str, EpisodeRecord]:
    """The eval episodes of a results folder by key, later records of a key winning."""
    return {record.key: record for record in iter_episodes(path)}


def read_matches(path: Path) -> dict[str, MatchRecord]:
    """The matches of an arena results folder by key, later records of a key winning."""
    return {record.key: record for record in iter_matches(path)}


def read_run(folder: Path) -> dict[str, Any]:
    """The ``run.json`` of a results folder."""
    return json.loads((Path(folder) / RUN_FILE).read_text())


class ResultsFolder:
    """Writer for one results folder; reopening an existing one resumes it.

    Only the status of each episode key stays in memory (``statuses``), not the records,
    so a long run's memory does not grow with its trajectories.
    """

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)
        self.statuses: dict[str, str] = {}
        self._file: IO[bytes] | None = None

    def open(self, run: dict[str, Any]) -> None:
        """Create the folder, or resume it if it holds a run with the same configuration.

        Raises ``ValueError`` when the folder holds a different run.
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        run_path = self.folder / RUN_FILE
        if run_path.exists():
            previous = read_run(self.folder)
            if _comparable(previous) != _comparable(run):
                changed = sorted(
                    key for key in _comparable(previous) | _comparable(run) if previous.get(key) != run.get(key)
                )
                raise ValueError(
                    f"{self.folder} holds a different run (it differs in {', '.join(changed)}); use another --out"
                )
        else:
            _atomic_write(run_path, json.dumps(run, indent=2) + "\n")
        episodes_path = self.folder / EPISODES_FILE
        _cut_partial_line(episodes_path)
        # Only key and status, read raw (every schema version has them): a resume need not build the records.
        self.statuses = {record["key"]: record.get("status") or "ok" for record in iter_json(episodes_path)}
        self._file = episodes_path.open("ab")

    def append(self, record: Record) -> None:
        """Write one finished episode or match (one write call, flushed to the OS)."""
        assert self._file is not None, "open() the folder first"
        self._file.write(encode_record(to_json(record)))
        self._file.flush()
        self.statuses[record.key] = record.status

    def close(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None


class Planned(Protocol):
    """Anything planned in a run (an episode, a match): its key names its record."""

    @property
    def key(self) -> str: ...


P = TypeVar("P", bound=Planned)
R = TypeVar("R", EpisodeRecord, MatchRecord)


@dataclass
class Tally:
    """What one invocation of :func:`play_missing` did."""

    planned: int  #: items in the run's plan
    skipped: int  #: of those, the ones the folder already held
    played: int = 0
    errored: int = 0


async def play_missing(
    out: Path | str,
    run: dict[str, Any],
    planned: Sequence[P],
    play: Callable[[P, int], Awaitable[R]],
    *,
    concurrency: int,
    retry_errors: bool = False,
    on_plan: Callable[[int, int], None] | None = None,
    on_record: Callable[[R], None] | None = None,
    playable: Callable[[P], bool] | None = None,
) -> Tally:
    """Open (or resume) the results folder ``out`` for ``run`` and play what it lacks of ``planned``.

    An item is done when the folder holds a record of its key (with ``retry_errors``, an
    ``"ok"`` record). The rest are played by ``min(concurrency, missing)`` workers on this
    event loop, each taking the first item left that is ``playable`` now (its env prepared),
    else the first: ``play(item, worker)`` (``worker``: the worker's index, for state a worker
    keeps, such as the arena's game) returns the record, which is appended at once. Raises
    ``ValueError`` when ``out`` holds a different run. ``on_plan(total, already_done)`` is
    called once before playing, ``on_record(record)`` after each append; the folder is
    closed (flushed and synced) however the workers end.
    """
    results = ResultsFolder(out)
    results.open(run)
    try:

        def finished(key: str) -> bool:
            status = results.statuses.get(key)
            return status is not None and (status == "ok" or not retry_errors)

        pending = [item for item in planned if not finished(item.key)]
        tally = Tally(planned=len(planned), skipped=len(planned) - len(pending))
        if on_plan is not None:
            on_plan(tally.planned, tally.skipped)

        def take() -> P:
            index = next((n for n, item in enumerate(pending) if playable(item)), 0) if playable else 0
            return pending.pop(index)

        async def worker(number: int) -> None:
            while pending:
                record = await play(take(), number)
                results.append(record)
                tally.played += 1
                tally.errored += record.status == "error"
                if on_record is not None:
                    on_record(record)
                del record  # not held while other workers run: 256 finished records would crowd memory
                await asyncio.sleep(0)  # let other items in even if this one never waited

        await asyncio.gather(*(worker(number) for number in range(min(concurrency, len(pending)))))
    finally:
        results.close()
    return tally


#: orjson's options for a record line: numpy values, and the line's newline without a copy.
RECORD_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE


def encode_record(record: dict[str, Any]) -> bytes:
    """A record's JSON object (:func:`~agentgym.evaluation.records.to_json`) as one line, newline included.

    orjson (with non-string keys only for a record that has some: they make every record a third
    slower), or ``json`` for text orjson refuses (lone surrogates).
    """
    for options in (RECORD_OPTIONS, RECORD_OPTIONS | orjson.OPT_NON_STR_KEYS):
        with contextlib.suppress(orjson.JSONEncodeError):
            return orjson.dumps(record, default=_jsonable, option=options)
    return json.dumps(record, default=_jsonable).encode() + b"\n"


#: ``run.json`` entries that may differ between the invocations of one resumed run.
VOLATILE_RUN_KEYS = frozenset({"created", "agentgym_version", "policy_info"})


def _comparable(run: dict[str, Any]) -> dict[str, Any]:
    """The part of a run configuration that must match for a resume: all but the volatile keys."""
    return {key: value for key, value in run.items() if key not in VOLATILE_RUN_KEYS}


def _cut_partial_line(path: Path, chunk: int = 1 << 16) -> None:
    """Truncate ``path`` after its last newline (reading backwards from the end)."""
    if not path.exists():
        return
    with path.open("rb+") as file:
        end = file.seek(0, os.SEEK_END)
        position = end
        while position > 0:
            start = max(0, position - chunk)
            file.seek(start)
            newline = file.read(position - start).rfind(b"\n")
            if newline >= 0:
                if start + newline + 1 != end:
                    file.truncate(start + newline + 1)
                return
            position = start
        file.truncate(0)


def _atomic_write(path: Path, text: str) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def _jsonable(value: Any) -> Any:
    """JSON fallback for values envs put in ``info`` (numpy scalars and arrays, sets, other objects)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return repr(value)
