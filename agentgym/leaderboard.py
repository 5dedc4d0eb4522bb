"""Leaderboards from results folders: terminal and Markdown tables, and a static HTML page.

Every statistic is computed per (policy, env) over the episodes of all given folders:

- ``episodes`` counts the finished episodes with status ``ok``; ``errored`` counts the
  others (a crashed model server, a timeout). Errored episodes are infrastructure
  failures that ``agentgym eval --retry-errors`` redoes, so they are left out of every
  rate and mean, and shown apart so that a reader sees how complete a row is.
- ``success_rate`` is successes / ok episodes, with its 95% Wilson interval.
- ``mean_score`` and ``mean_steps`` are means over ok episodes; ``mean_tokens`` (prompt +
  completion) is the mean over the ok episodes that report tokens (None when none do).
- ``wall_s`` sums the episodes' own wall times, errored ones included: it is the compute
  the row cost; episodes run concurrently, so it exceeds the run's elapsed time.

The policy of an episode is its record's ``policy`` name (else the run's
``policy_info.name``, else its spec string), so one policy may be spread over several
folders. A leaderboard compares one split, and a policy may hold an episode key only
once: anything else raises :class:`LeaderboardError` rather than mixing or double
counting episodes.

The **overall** view (:func:`overall`) ranks policies by their macro-averaged success:
the unweighted mean of their per-env success rates, so that every env counts the same
whatever its episode count. Means over different env sets are not comparable, so
policies are grouped by the exact set of envs they have ok episodes on and ranked within
each group; most leaderboards have one group. The tables show groups of two envs or more
(on one env, the per-env ranking says it all).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

import agentgym
from agentgym.results import EPISODES_FILE, RUN_FILE, read_episodes, read_run
from agentgym.stats import wilson_interval
from agentgym.table import format_table

#: Where the HTML template takes the embedded data.
DATA_MARKER = "<!--agentgym:data-->"
#: Episode fields the HTML index holds; the rest of a record goes into its lazy detail.
_INDEX_FIELDS = ("key", "env", "split", "task_id", "repeat", "policy", "status", "success", "score", "steps")


class LeaderboardError(ValueError):
    """Folders that cannot make one leaderboard (not results folders, mixed splits, duplicates)."""


@dataclass(frozen=True)
class LeaderboardRow:
    """The results of one policy on one env, over all given folders (see the module docstring)."""

    policy: str
    env: str
    episodes: int
    errored: int
    successes: int
    success_rate: float | None
    ci_low: float
    ci_high: float
    mean_score: float | None
    mean_steps: float | None
    mean_tokens: float | None
    wall_s: float
    folders: tuple[str, ...]


@dataclass(frozen=True)
class OverallRow:
    """A policy's macro average over ``envs``: the unweighted mean of its per-env rates."""

    policy: str
    envs: tuple[str, ...]
    success_rate: float
    mean_score: float
    episodes: int
    errored: int


@dataclass
class _Sums:
    episodes: int = 0
    errored: int = 0
    successes: int = 0
    score: float = 0.0
    steps: float = 0.0
    tokens: float = 0.0
    token_episodes: int = 0
    wall_s: float = 0.0
    folders: list[str] = field(default_factory=list)


class _Board:
    """Accumulates episodes folder by folder, checking that they make one leaderboard."""

    def __init__(self) -> None:
        self.sums: dict[tuple[str, str], _Sums] = {}
        self.splits: dict[str, str] = {}  # split -> first folder holding it
        self.seen: dict[tuple[str, str], str] = {}  # (policy, episode key) -> folder

    def add(self, folder: str, run: dict[str, Any], episodes: Iterable[dict[str, Any]]) -> None:
        for record in episodes:
            policy = record.get("policy") or policy_name(run)
            split = record.get("split") or run.get("split", "")
            self.splits.setdefault(split, folder)
            if len(self.splits) > 1:
                found = ", ".join(f"{name!r} ({where})" for name, where in self.splits.items())
                raise LeaderboardError(f"a leaderboard compares one split; these folders hold {found}")
            if (policy, record["key"]) in self.seen:
                raise LeaderboardError(
                    f"policy {policy!r} has episode {record['key']} in both {self.seen[policy, record['key']]} "
                    f"and {folder}; pass each run once (use repeats within one run for more samples)"
                )
            self.seen[policy, record["key"]] = folder
            sums = self.sums.setdefault((policy, record["env"]), _Sums())
            if folder not in sums.folders:
                sums.folders.append(folder)
            sums.wall_s += record.get("wall_s") or 0.0
            if record.get("status", "ok") != "ok":
                sums.errored += 1
                continue
            sums.episodes += 1
            sums.successes += bool(record.get("success"))
            sums.score += record.get("score") or 0.0
            sums.steps += record.get("steps") or 0
            tokens = record.get("tokens")
            if tokens:
                sums.tokens += (tokens.get("prompt") or 0) + (tokens.get("completion") or 0)
                sums.token_episodes += 1

    def rows(self) -> list[LeaderboardRow]:
        rows = []
        for (policy, env), sums in self.sums.items():
            n = sums.episodes
            ci_low, ci_high = wilson_interval(sums.successes, n)
            rows.append(
                LeaderboardRow(
                    policy=policy,
                    env=env,
                    episodes=n,
                    errored=sums.errored,
                    successes=sums.successes,
                    success_rate=sums.successes / n if n else None,
                    ci_low=ci_low,
                    ci_high=ci_high,
                    mean_score=sums.score / n if n else None,
                    mean_steps=sums.steps / n if n else None,
                    mean_tokens=sums.tokens / sums.token_episodes if sums.token_episodes else None,
                    wall_s=sums.wall_s,
                    folders=tuple(sums.folders),
                )
            )
        return [row for _, row in ranked(rows)]


def policy_name(run: dict[str, Any]) -> str:
    """The display name of a run's policy: ``policy_info.name``, else its spec string."""
    return (run.get("policy_info") or {}).get("name") or str(run.get("policy", "?"))


def _check_folders(folders: Sequence[Path | str]) -> None:
    """Fail before reading any episode if a folder is not a results folder."""
    for folder in folders:
        path = Path(folder)
        if not (path / RUN_FILE).is_file():
            what = "does not exist" if not path.exists() else f"has no {RUN_FILE}"
            raise LeaderboardError(
                f"{folder} is not a results folder ({what}); pass folders written by `agentgym eval`"
            )


def _read_folder(folder: Path | str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``run.json`` and the episodes (by key) of a results folder, or a clear error."""
    try:
        run = read_run(Path(folder))
        episodes = read_episodes(Path(folder) / EPISODES_FILE)
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError) as error:
        raise LeaderboardError(f"{folder} is not a readable results folder: {error!r}") from error
    if not isinstance(run, dict) or "policy" not in run:
        raise LeaderboardError(f"{folder}/{RUN_FILE} is not a run configuration (no 'policy')")
    return run, episodes


def collect(folders: Sequence[Path | str]) -> list[LeaderboardRow]:
    """One row per (policy, env) over all ``folders``, ranked by success within each env.

    Raises :class:`LeaderboardError` for a folder that is not a results folder, for
    folders of different splits, and for an episode of a policy found in two folders.
    """
    _check_folders(folders)
    board = _Board()
    for folder in folders:
        run, episodes = _read_folder(folder)
        board.add(str(folder), run, episodes.values())
    return board.rows()


def ranked(rows: Iterable[LeaderboardRow]) -> list[tuple[int | None, LeaderboardRow]]:
    """Rows sorted by env, then best success first (ties: mean score, name), with their rank in the env.

    Equal success rates share a rank (1, 2, 2, 4); rows without ok episodes come last, unranked.
    """
    ordered = sorted(
        rows,
        key=lambda row: (
            row.env,
            row.success_rate is None,
            -(row.success_rate or 0.0),
            -(row.mean_score or 0.0),
            row.policy,
        ),
    )
    result: list[tuple[int | None, LeaderboardRow]] = []
    for row in ordered:
        better = sum(
            1
            for other in ordered
            if other.env == row.env and row.success_rate is not None and (other.success_rate or 0.0) > row.success_rate
        )
        result.append((None if row.success_rate is None else better + 1, row))
    return result


def overall(rows: Iterable[LeaderboardRow]) -> list[OverallRow]:
    """Each policy's macro-averaged success and score over the envs it has ok episodes on.

    Policies are grouped by that env set (largest sets first) and sorted by success
    within a group: only policies of one group are comparable.
    """
    by_policy: dict[str, list[LeaderboardRow]] = {}
    for row in rows:
        if row.success_rate is not None:
            by_policy.setdefault(row.policy, []).append(row)
    result = [
        OverallRow(
            policy=policy,
            envs=tuple(sorted(row.env for row in group)),
            success_rate=sum(row.success_rate or 0.0 for row in group) / len(group),
            mean_score=sum(row.mean_score or 0.0 for row in group) / len(group),
            episodes=sum(row.episodes for row in group),
            errored=sum(row.errored for row in group),
        )
        for policy, group in by_policy.items()
    ]
    return sorted(result, key=lambda row: (-len(row.envs), row.envs, -row.success_rate, -row.mean_score, row.policy))


def _overall_groups(rows: Sequence[LeaderboardRow]) -> list[tuple[tuple[str, ...], list[tuple[int, OverallRow]]]]:
    """The overall rows by env set, each with its rank in its group (sets of two envs or more)."""
    groups: dict[tuple[str, ...], list[OverallRow]] = {}
    for row in overall(rows):
        if len(row.envs) > 1:
            groups.setdefault(row.envs, []).append(row)
    return [
        (envs, [(1 + sum(o.success_rate > row.success_rate for o in group), row) for row in group])
        for envs, group in groups.items()
    ]


def _percent(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:.1%}"


def _success(row: LeaderboardRow) -> str:
    """``62.5% [55.1, 69.4]``: the success rate and its 95% Wilson interval, in percent."""
    if row.success_rate is None:
        return "—"
    return f"{row.success_rate:.1%} [{100 * row.ci_low:.1f}, {100 * row.ci_high:.1f}]"


def _number(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def duration(seconds: float) -> str:
    """A short human duration: ``4.2s``, ``3m05s``, ``2h07m``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


_HEADERS = ("env", "rank", "policy", "success [95% CI]", "episodes", "errored", "score", "steps", "tokens/ep", "wall")
_OVERALL_HEADERS = ("rank", "policy", "mean success", "mean score", "episodes", "errored")


def _cells(rank: int | None, row: LeaderboardRow) -> tuple[str, ...]:
    return (
        row.env,
        "—" if rank is None else str(rank),
        row.policy,
        _success(row),
        str(row.episodes),
        str(row.errored),
        _number(row.mean_score, 3),
        _number(row.mean_steps, 1),
        _number(row.mean_tokens, 0),
        duration(row.wall_s),
    )


def _overall_cells(rank: int, row: OverallRow) -> tuple[str, ...]:
    return (
        str(rank),
        row.policy,
        _percent(row.success_rate),
        f"{row.mean_score:.3f}",
        str(row.episodes),
        str(row.errored),
    )


def format_terminal(rows: Sequence[LeaderboardRow]) -> str:
    """The leaderboard as plain-text tables: per env (ranked by success), then overall.

    The overall tables list the policies that ran two envs or more, one table per env set.
    """
    parts = [format_table(_HEADERS, [_cells(rank, row) for rank, row in ranked(rows)])]
    for envs, group in _overall_groups(rows):
        table = format_table(_OVERALL_HEADERS, [_overall_cells(rank, row) for rank, row in group])
        parts.append(f"Overall: macro-averaged over {len(envs)} envs ({', '.join(envs)})\n{table}")
    return "\n\n".join(parts)


def _markdown_table(headers: Sequence[str], rows: Iterable[Sequence[str]], right: set[int]) -> str:
    """A GitHub table; the columns numbered in ``right`` are right-aligned."""

    def cell(text: str) -> str:
        text = " ".join(text.split())
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")

    lines = [
        [name[0].upper() + name[1:] for name in headers],
        ["---:" if column in right else "---" for column in range(len(headers))],
        *([cell(text) for text in row] for row in rows),
    ]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def format_markdown(rows: Sequence[LeaderboardRow]) -> str:
    """The leaderboard as GitHub-flavoured Markdown tables (per env, then overall)."""
    cells = (_cells(rank, row) for rank, row in ranked(rows))
    parts = [_markdown_table(_HEADERS, cells, right={1, 4, 5, 6, 7, 8, 9})]
    for envs, group in _overall_groups(rows):
        parts.append(f"**Overall**: macro-averaged over {len(envs)} envs ({', '.join(envs)})")
        cells = (_overall_cells(rank, row) for rank, row in group)
        parts.append(_markdown_table(_OVERALL_HEADERS, cells, right={0, 2, 3, 4, 5}))
    return "\n\n".join(parts) + "\n"


def _json(value: Any) -> str:
    """Compact JSON that is safe as the text of a ``<script>`` element (no ``<`` at all).

    Non-finite floats (NaN from an env's ``info``) become null, since JSON has none.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def _detail(record: dict[str, Any], system_prompt: str | None) -> dict[str, Any]:
    """What the viewer shows of an episode beyond its index entry.

    Messages become ``[role, content]`` pairs; a content equal to the run's system
    prompt becomes null (the page holds that prompt once per run).
    """
    detail = {name: value for name, value in record.items() if name not in _INDEX_FIELDS and name != "messages"}
    detail["messages"] = [
        [message.get("role"), None if message.get("content") == system_prompt else message.get("content")]
        for message in record.get("messages") or []
    ]
    return detail


def write_html(folders: Sequence[Path | str], path: Path | str) -> list[LeaderboardRow]:
    """Write one self-contained HTML page: the sortable leaderboard and a trajectory viewer.

    The page needs no network. Its index (rows, runs, one short entry per episode) is
    parsed on load; each episode's transcript sits in its own JSON script element,
    parsed only when the viewer shows it, so runs of 10^5 episodes stay usable.
    Folders are read one at a time and the page is streamed to a temporary file, then
    moved into place; on an error nothing is left behind. Returns the rows, as
    :func:`collect` would, so that a caller need not read the folders twice.
    """
    _check_folders(folders)
    template = resources.files("agentgym").joinpath("leaderboard.html").read_text(encoding="utf-8")
    head, tail = template.split(DATA_MARKER)
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp")
    try:
        with temporary.open("w", encoding="utf-8", errors="replace", newline="\n") as out:
            out.write(head)
            rows = _write_data(folders, out)
            out.write(tail)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    os.replace(temporary, path)
    return rows


def _write_data(folders: Sequence[Path | str], out: TextIO) -> list[LeaderboardRow]:
    """Write the page's data (one script element per episode, then the index); return the rows."""
    board = _Board()
    runs: list[dict[str, Any]] = []
    envs: dict[str, int] = {}
    index: list[list[Any]] = []
    for folder in folders:
        run, episodes = _read_folder(folder)
        board.add(str(folder), run, episodes.values())
        system_prompt = run.get("system_prompt")
        records = sorted(episodes.values(), key=lambda r: (r["env"], r.get("task_id", 0), r.get("repeat", 0)))
        runs.append(
            {
                "label": f"{policy_name(run)} · {Path(folder).resolve().name}",
                "policy": policy_name(run),
                "system_prompt": system_prompt,
                "envs": sorted({record["env"] for record in records}),
            }
        )
        for record in records:
            out.write(f'<script type="application/json" id="ep-{len(index)}">')
            out.write(_json(_detail(record, system_prompt)))
            out.write("</script>\n")
            index.append(
                [
                    len(runs) - 1,
                    envs.setdefault(record["env"], len(envs)),
                    record.get("task_id"),
                    record.get("repeat", 0),
                    int(record.get("status", "ok") == "ok"),
                    int(bool(record.get("success"))),
                    record.get("score"),
                    record.get("steps"),
                ]
            )
    rows = board.rows()
    data = {
        "version": agentgym.__version__,
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "split": next(iter(board.splits), None),
        # Rows without their folders: the page names runs by folder name only, never by path.
        "rows": [asdict(row) | {"rank": rank, "folders": None} for rank, row in ranked(rows)],
        "overall": [asdict(row) | {"rank": rank} for _, group in _overall_groups(rows) for rank, row in group],
        "runs": runs,
        "envs": list(envs),
        "episodes": index,
    }
    out.write(f'<script type="application/json" id="agentgym-data">{_json(data)}</script>\n')
    return rows
