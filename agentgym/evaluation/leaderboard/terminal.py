"""The leaderboard as plain-text and Markdown tables (the same sections in both)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agentgym.evaluation.leaderboard.collect import Leaderboard, LeaderboardRow, PolicySummary, RunSummary, ranked
from agentgym.evaluation.table import format_table


def _percent(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:.1%}"


def _interval(rate: float | None, low: float | None, high: float | None) -> str:
    """``62.5% [55.1, 69.4]``: a rate and its 95% interval, in percent."""
    if rate is None or low is None or high is None:
        return "—"
    return f"{rate:.1%} [{100 * low:.1f}, {100 * high:.1f}]"


def _number(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _cost(value: float | None) -> str:
    return "—" if value is None else f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def duration(seconds: float | None) -> str:
    """A short human duration: ``4.2s``, ``3m05s``, ``2h07m``."""
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


_HEADERS = (
    "env", "rank", "policy", "format", "success [95% CI]", "episodes", "errored", "score", "steps",
    "tokens in/ep", "tokens out/ep", "time/ep", "check",
)  # fmt: skip
_OVERALL_HEADERS = (
    "rank", "policy", "format", "success [95% CI]", "score", "episodes", "errored",
    "tokens in", "tokens out", "cost", "wall", "episode time",
)  # fmt: skip
_RUN_HEADERS = ("run", "policy", "format", "agentgym", "episodes", "errored", "wall", "episode time", "first start")


def _cells(rank: int | None, row: LeaderboardRow) -> tuple[str, ...]:
    return (
        row.env,
        "—" if rank is None else str(rank),
        row.policy,
        row.action_format,
        _interval(row.success_rate, row.ci_low, row.ci_high),
        str(row.episodes),
        str(row.errored),
        _number(row.mean_score, 3),
        _number(row.mean_steps, 1),
        _number(row.mean_tokens_in, 0),
        _number(row.mean_tokens_out, 0),
        duration(row.episode_s),
        "fingerprint!" if row.mismatch else "",
    )


def _overall_cells(row: PolicySummary) -> tuple[str, ...]:
    return (
        "—" if row.rank is None else str(row.rank),
        row.policy,
        row.action_format,
        _interval(row.success_rate, row.ci_low, row.ci_high),
        _number(row.mean_score, 3),
        str(row.episodes),
        str(row.errored),
        f"{row.tokens_in:,}",
        f"{row.tokens_out:,}",
        _cost(row.cost),
        duration(row.wall_s),
        duration(row.episode_s),
    )


def _run_cells(run: RunSummary) -> tuple[str, ...]:
    return (
        run.label,
        run.policy,
        run.action_format,
        run.agentgym_version or "—",
        str(run.episodes),
        str(run.errored),
        duration(run.wall_s),
        duration(run.episode_s),
        run.first_start or "—",
    )


def _family_matrix(board: Leaderboard) -> tuple[list[str], list[list[str]]]:
    families = list(board.families)
    headers = ["policy", *families]
    rows = [
        [
            row.policy if row.action_format == "text" else f"{row.policy} [{row.action_format}]",
            *(_percent(row.families[f].success_rate) if f in row.families else "—" for f in families),
        ]
        for row in board.policies
    ]
    return headers, rows


Section = tuple[str, Sequence[str], list[Sequence[str]], set[int]]


def _sections(board: Leaderboard) -> list[Section]:
    """The tables both outputs show: (title, headers, rows, right-aligned columns)."""
    sections: list[Section] = []
    if board.rows:
        cells: list[Sequence[str]] = [_cells(rank, row) for rank, row in ranked(board.rows)]
        sections.append(("", _HEADERS, cells, {1, 5, 6, 7, 8, 9, 10, 11}))
    for number, envs in enumerate(board.groups):  # also on one env: the totals, cost and times are here
        members = [row for row in board.policies if row.group == number]
        families = sorted({family for family, listed in board.families.items() if set(listed) & set(envs)})
        title = (
            f"Overall{group_note(board, number)}: macro average over {len(families)} families ({len(envs)} envs); "
            "95% interval: normal approximation, Agresti-Coull variance per env"
        )
        sections.append(_overall_section(board, title, members))
    unranked = [row for row in board.policies if row.group is None]
    if unranked:  # their totals, cost and times still count
        title = "Not ranked (no ok episode on an env whose task set all runs share)"
        sections.append(_overall_section(board, title, unranked))
    safety = [row for _, row in ranked(board.rows) if row.utility is not None or row.attacked or row.policy_episodes]
    if safety:
        cells = [
            (row.env, row.policy, row.action_format, _number(row.utility, 3), str(row.attacked),
             _percent(row.attack_success_rate), str(row.policy_episodes), _percent(row.violation_rate),
             _percent(row.cup_rate))
            for row in safety
        ]  # fmt: skip
        headers = ("env", "policy", "format", "utility", "attacked", "attack success", "under policies",
                   "violations", "CuP")  # fmt: skip
        title = (
            "Safety (utility: under attack on attacked envs; violations: episodes that broke a policy; "
            "CuP: completed under policy, success with no violation; docs/safety.md)"
        )
        sections.append((title, headers, cells, set(range(3, 9))))
    if len(board.families) > 1 and board.policies:
        headers, rows = _family_matrix(board)
        sections.append(("Success per family (macro over its envs)", headers, rows, set(range(1, len(headers)))))
    if board.runs:
        cells = [_run_cells(run) for run in board.runs]
        headers = _RUN_HEADERS
        if any(run.protocol for run in board.runs):  # the published protocol each run reproduces
            headers = (*headers, "protocol")
            cells = [(*row, run.protocol or "—") for row, run in zip(cells, board.runs)]
        sections.append(("Runs (wall: time with an episode in flight)", headers, cells, {4, 5, 6, 7}))
    if board.published:
        cells = [
            (
                result.protocol,
                result.model,
                result.method,
                result.env,
                result.metric,
                f"{result.value:g}%",
                result.citation,
            )
            for result in board.published
        ]
        headers = ("protocol", "model", "method", "env", "metric", "published", "citation")
        sections.append(("Published results (from the papers; not run here)", headers, cells, {5}))
    for arena in board.arenas:
        cells = [
            (str(rank), r.policy, _rating(r), str(r.games), f"{r.wins}/{r.draws}/{r.losses}")
            for rank, r in enumerate(arena.ratings, 1)
        ]
        headers = ("rank", "policy", "rating [95% CI]", "games", "W/D/L")
        sections.append((f"Arena: {arena.game} ({arena.label})", headers, cells, {0, 3}))
    for curve in board.curves:
        cells = [
            (
                str(point.iteration),
                "greedy" if point.temperature is None else f"T={point.temperature:g}",
                str(point.episodes),
                _interval(point.success_rate, point.ci_low, point.ci_high),
            )
            for point in curve.evals
        ]
        headers = ("iteration", "sampling", "episodes", "success [95% CI]")
        sections.append((f"Training run {curve.label}: evaluations", headers, cells, {0, 2}))
    return sections


def _overall_section(board: Leaderboard, title: str, members: Sequence[PolicySummary]) -> Section:
    """An overall table; where a policy is ranked apart, a last column says why on its own line."""
    notes = [apart_reason(board, row) for row in members]
    cells: list[Sequence[str]] = [_overall_cells(row) for row in members]
    headers: Sequence[str] = _OVERALL_HEADERS
    if any(notes):
        headers = (*headers, "why apart")
        cells = [(*row, note) for row, note in zip(cells, notes)]
    return (title, headers, cells, {0, 4, 5, 6, 7, 8, 9, 10, 11})


def apart_reason(board: Leaderboard, summary: PolicySummary) -> str:
    """Why ``summary`` is not ranked with the first group ("" when it is): the envs of group A it has
    no ok episode on, and how many of its episodes there errored (and how to replay them)."""
    if summary.group == 0 or not board.groups:
        return ""
    first = set(board.groups[0])
    own = set(board.groups[summary.group]) if summary.group is not None else set()
    missing, extra = first - own, own - first
    errored = sum(
        row.errored
        for row in board.rows
        if row.policy == summary.policy and row.action_format == summary.action_format and row.env in missing
    )
    parts = [f"no ok episode on {_some(missing)}"] if missing else []
    if errored:
        parts.append(f"{errored} errored there (agentgym eval --retry-errors replays them)")
    if extra:
        parts.append(f"also plays {_some(extra)}")
    if summary.group is None:
        parts = parts or ["no ok episode on an env whose task set all runs share"]
    return "; ".join(parts)


def _rating(rating: Any) -> str:
    return f"{rating.rating:.0f} [{rating.low:.0f}, {rating.high:.0f}]"


def group_difference(board: Leaderboard, number: int) -> str:
    """``lacks X, Y of group A; ranked apart``: how an env-set group differs from the first ("" for the first)."""
    if not number:
        return ""
    first, envs = set(board.groups[0]), set(board.groups[number])
    differences = [
        f"lacks {_some(first - envs)}" if first - envs else "",
        f"adds {_some(envs - first)}" if envs - first else "",
    ]
    return ", ".join(part for part in differences if part) + " of group A; ranked apart"


def group_note(board: Leaderboard, number: int) -> str:
    """`` (group B: lacks X, Y of group A; ranked apart)`` ("" when there is one group)."""
    if len(board.groups) < 2:
        return ""
    difference = group_difference(board, number)
    return f" (group {chr(65 + number)}{': ' + difference if difference else ''})"


def _some(envs: set[str], most: int = 4) -> str:
    names = sorted(envs)
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def _banner(board: Leaderboard) -> list[str]:
    return [
        f"Warning: {mismatch.describe()}; its rows are marked and left out of the overall ranking."
        for mismatch in board.mismatches
    ]


def format_terminal(board: Leaderboard) -> str:
    """The leaderboard as plain-text tables: per env, overall, per family, runs, arenas, training."""
    parts = _banner(board)
    for title, headers, rows, _ in _sections(board):
        table = format_table(headers, rows)
        parts.append(f"{title}\n{table}" if title else table)
    return "\n\n".join(parts)


def _markdown_table(headers: Sequence[str], rows: Iterable[Sequence[str]], right: set[int]) -> str:
    """A GitHub table; the columns numbered in ``right`` are right-aligned."""

    def cell(text: str) -> str:
        text = " ".join(text.split())
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")

    lines = [
        [cell(name[0].upper() + name[1:]) for name in headers],
        ["---:" if column in right else "---" for column in range(len(headers))],
        *([cell(text) for text in row] for row in rows),
    ]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def format_markdown(board: Leaderboard) -> str:
    """The leaderboard as GitHub-flavoured Markdown (the same tables as the terminal)."""
    parts = [f"> **{line}**" for line in _banner(board)]
    for title, headers, rows, right in _sections(board):
        if title:
            parts.append(f"**{title}**")
        parts.append(_markdown_table(headers, rows, right))
    return "\n\n".join(parts) + "\n"
