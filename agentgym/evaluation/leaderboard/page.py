"""The leaderboard as a static HTML page (``leaderboard.html`` beside this module) with a trajectory viewer.

The page embeds the leaderboard and a small index of every episode; each run's trajectories
go into script files beside it, loaded when one of their episodes is opened (see
:func:`write_html`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import agentgym
from agentgym.evaluation.leaderboard.collect import (
    Leaderboard,
    action_format,
    collect,
    family_of,
    policy_name,
    ranked,
)
from agentgym.evaluation.leaderboard.runs import RunFolder
from agentgym.evaluation.leaderboard.terminal import apart_reason, group_difference
from agentgym.evaluation.metrics import family_metrics
from agentgym.evaluation.records import EpisodeRecord, to_json

#: Where the HTML template takes the embedded data.
DATA_MARKER = "<!--agentgym:data-->"
#: At most this many episodes, and about this many bytes, per trajectory file of the HTML page.
CHUNK_EPISODES = 50
CHUNK_BYTES = 1 << 20
#: Characters of each distinct instruction the page's search sees.
INSTRUCTION_CHARS = 300


def _json(value: Any) -> str:
    """Compact JSON that is safe as the text of a ``<script>`` element (no ``<`` at all).

    Non-finite floats (NaN from an env's ``info``) become null, since JSON has none.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # U+2028/2029 end lines in older JavaScript parsers; "<" could close the script element.
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


#: Episode fields the page's index holds; the rest of a record goes into its trajectory file.
_INDEX_FIELDS = ("key", "env", "split", "task_id", "repeat", "policy", "status", "success", "score", "steps")
#: Record fields the trajectory files leave out (messages are written in a shorter form).
_NOT_SHOWN = ("schema", "messages")


def _detail(record: EpisodeRecord, system_prompt: str | None, screenshots: list[str | None] | None) -> dict[str, Any]:
    """What the viewer shows of an episode beyond its index entry.

    Messages become ``[role, content]`` pairs (plus their other fields, e.g. tool calls,
    as a third item); a content equal to the run's system prompt becomes null (the page
    holds that prompt once per run). Screenshot paths are the copies beside the page.
    """
    data = to_json(record)
    detail = {name: value for name, value in data.items() if name not in _INDEX_FIELDS and name not in _NOT_SHOWN}
    messages = []
    for message in record.messages:
        content = message.get("content")
        entry = [message.get("role"), None if content == system_prompt and message.get("role") == "system" else content]
        extra = {key: value for key, value in message.items() if key not in ("role", "content")}
        if extra:
            entry.append(extra)
        messages.append(entry)
    detail["messages"] = messages
    if screenshots is not None:
        detail["screenshots"] = screenshots
    return detail


class _PageWriter:
    """Writes a run's trajectories into files beside the page as :func:`collect` reads it."""

    def __init__(self, files: Path, name: str) -> None:
        self.files = files  # the temporary folder that becomes NAME_files/
        self.name = name  # the folder's final name, for paths relative to the page
        self.env_ids: dict[str, int] = {}
        self.instructions: dict[str, int] = {}  # each distinct instruction once, for the search
        self.index: list[list[Any]] = []
        self.runs: list[dict[str, Any]] = []

    def __call__(self, number: int, folder: RunFolder, episodes: dict[str, EpisodeRecord]) -> None:
        run = folder.run
        system_prompt = run.get("system_prompt")
        records = sorted(episodes.values(), key=lambda r: (r.env, r.task_id, r.repeat))
        name = f"{folder.training} @ iteration {folder.iteration}" if folder.training else None
        self.runs.append(
            {
                "label": folder.label,
                "policy": name or policy_name(run),
                "action_format": action_format(run),
                "system_prompt": system_prompt,
            }
        )
        blocks: dict[int, list[list[str]]] = {}  # env -> its chunks, each a list of JSON texts
        sizes: dict[int, int] = {}  # env -> bytes in its last chunk
        for record in records:
            env = self.env_ids.setdefault(record.env, len(self.env_ids))
            screenshots = self._screenshots(number, folder.path, record.screenshots)
            detail = _json(_detail(record, system_prompt, screenshots))
            chunks = blocks.setdefault(env, [[]])
            if len(chunks[-1]) >= CHUNK_EPISODES or (chunks[-1] and sizes[env] + len(detail) > CHUNK_BYTES):
                chunks.append([])
                sizes[env] = 0
            chunks[-1].append(detail)
            sizes[env] = sizes.get(env, 0) + len(detail)
            chunk, position = len(chunks) - 1, len(chunks[-1]) - 1
            tokens = record.tokens
            instruction = record.instruction[:INSTRUCTION_CHARS]
            outcome = 0 if record.status != "ok" else 2 if record.success else 1
            self.index.append(
                [
                    number,
                    env,
                    record.task_id,
                    record.repeat,
                    outcome,
                    record.score,
                    record.steps,
                    None if tokens is None else tokens.prompt,
                    None if tokens is None else tokens.completion,
                    round(record.wall_s, 3),
                    chunk,
                    position,
                    self.instructions.setdefault(instruction, len(self.instructions)),
                ]
            )
        for env, chunks in blocks.items():
            for chunk, details in enumerate(chunks):
                chunk_id = f"r{number}-e{env}-c{chunk}"
                script = f"agentgymChunk({json.dumps(chunk_id)},[{','.join(details)}]);\n"
                (self.files / f"{chunk_id}.js").write_text(script, encoding="utf-8", errors="replace")

    def _screenshots(self, number: int, folder: Path, paths: Any) -> list[str | None] | None:
        """Copy an episode's screenshots beside the page; their paths relative to the page."""
        if not isinstance(paths, list):
            return None
        result: list[str | None] = []
        for relative in paths:
            name = Path(str(relative or ""))
            # Only plain relative paths inside the run folder (a record is data, not a path to trust).
            source = folder / name
            inside = source.resolve().is_relative_to(folder.resolve())  # also through symbolic links
            if not relative or name.is_absolute() or not inside or not source.is_file():
                result.append(None)  # a screenshot the record names but the folder lacks
                continue
            target = self.files / "shots" / f"r{number}" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)
            except OSError:
                shutil.copyfile(source, target)
            result.append(f"{self.name}/shots/r{number}/{name.as_posix()}")
        return result


def _page_data(board: Leaderboard, writer: _PageWriter, files: str) -> dict[str, Any]:
    envs = list(writer.env_ids)
    for row in board.rows:
        if row.env not in writer.env_ids:
            envs.append(row.env)
    return {
        "version": agentgym.__version__,
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "split": board.split,
        "files": files,
        "families": board.families,
        "envs": envs,
        "rows": [asdict(row) | {"rank": rank} for rank, row in ranked(board.rows)],
        # ``apart``: why a policy is ranked apart from group A ("" when it is not), shown on its row.
        "policies": [asdict(row) | {"apart": apart_reason(board, row)} for row in board.policies],
        "groups": [list(envs) for envs in board.groups],
        "group_notes": [group_difference(board, number) for number in range(len(board.groups))],
        "runs": [asdict(run) | writer.runs[i] for i, run in enumerate(board.runs)],
        "mismatches": [asdict(mismatch) for mismatch in board.mismatches],
        "arenas": [
            {"game": arena.game, "label": arena.label, "ratings": [asdict(rating) for rating in arena.ratings]}
            for arena in board.arenas
        ],
        "curves": [asdict(curve) for curve in board.curves],
        "priced": sorted(board.prices),
        # Published numbers of the runs' protocols (not run here), and what success and score mean per family.
        "published": [asdict(result) | {"family": family_of(result.env)} for result in board.published],
        "metrics": {
            family: asdict(definition) | {"anchor": definition.anchor}
            for family in sorted({*board.families, *(family_of(result.env) for result in board.published)})
            if (definition := family_metrics(family)) is not None
        },
        "instructions": list(writer.instructions),
        "episodes": writer.index,
    }


def write_html(
    paths: Sequence[Path | str],
    page: Path | str,
    *,
    prices: Mapping[str, tuple[float, float]] | None = None,
    strict: bool = False,
) -> Leaderboard:
    """Write the HTML page ``page`` and its trajectories in ``<page stem>_files/`` beside it.

    The page holds the leaderboard, the plots and a small index of every episode; each
    run's trajectories (and copies of its screenshots) go into files of at most
    :data:`CHUNK_EPISODES` episodes and about :data:`CHUNK_BYTES` (one episode may exceed
    it), which the page loads with a ``<script>`` element when
    one of their episodes is opened, so it works from ``file://`` as well as over HTTP and
    stays small however many episodes there are. Nothing is fetched from the network.
    Both are written to temporary names, then moved into place; on an error nothing is
    left behind. Returns the :class:`Leaderboard`, as :func:`collect` would.
    """
    page = Path(page)
    template = (
        resources.files("agentgym.evaluation.leaderboard").joinpath("leaderboard.html").read_text(encoding="utf-8")
    )
    head, tail = template.split(DATA_MARKER)
    name = f"{page.stem}_files"
    files = page.with_name(name)
    temporary_files = page.with_name(name + ".tmp")
    temporary_page = page.with_name(page.name + ".tmp")
    shutil.rmtree(temporary_files, ignore_errors=True)
    temporary_files.mkdir(parents=True)
    try:
        writer = _PageWriter(temporary_files, name)
        board = collect(paths, prices=prices, strict=strict, on_run=writer)
        data = _page_data(board, writer, name)
        with temporary_page.open("w", encoding="utf-8", errors="replace", newline="\n") as out:
            out.write(head)
            out.write(f'<script type="application/json" id="agentgym-data">{_json(data)}</script>\n')
            out.write(tail)
        shutil.rmtree(files, ignore_errors=True)
        os.replace(temporary_files, files)
        os.replace(temporary_page, page)
    except BaseException:
        shutil.rmtree(temporary_files, ignore_errors=True)
        temporary_page.unlink(missing_ok=True)
        raise
    return board
