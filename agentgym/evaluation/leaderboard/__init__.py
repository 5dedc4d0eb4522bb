"""Leaderboards from folders of runs: terminal and Markdown tables, and a static HTML page.

- :mod:`~agentgym.evaluation.leaderboard.runs`: finds runs (eval runs, arenas, training runs);
- :mod:`~agentgym.evaluation.leaderboard.collect`: computes the :class:`Leaderboard` over them (rates,
  intervals, ranks, times; its docstring says how);
- :mod:`~agentgym.evaluation.leaderboard.terminal`: the plain-text and Markdown tables;
- :mod:`~agentgym.evaluation.leaderboard.page`: the HTML page (``leaderboard.html``, its
  template, sits beside it) and its trajectory files.
"""

from agentgym.evaluation.leaderboard.collect import (
    ArenaBoard,
    EvalPoint,
    FamilyScore,
    Leaderboard,
    LeaderboardRow,
    LearningCurve,
    Mismatch,
    PolicySummary,
    RunSink,
    RunSummary,
    action_format,
    busy_time,
    check_fingerprints,
    collect,
    family_of,
    load_prices,
    parse_price,
    policy_name,
    ranked,
    summarize,
)
from agentgym.evaluation.leaderboard.page import CHUNK_BYTES, CHUNK_EPISODES, DATA_MARKER, INSTRUCTION_CHARS, write_html
from agentgym.evaluation.leaderboard.runs import (
    METRICS_FILE,
    Found,
    LeaderboardError,
    RunFolder,
    TrainingRun,
    discover,
)
from agentgym.evaluation.leaderboard.terminal import (
    duration,
    format_markdown,
    format_terminal,
    group_difference,
    group_note,
)

__all__ = [
    "CHUNK_BYTES",
    "CHUNK_EPISODES",
    "DATA_MARKER",
    "INSTRUCTION_CHARS",
    "METRICS_FILE",
    "ArenaBoard",
    "EvalPoint",
    "FamilyScore",
    "Found",
    "Leaderboard",
    "LeaderboardError",
    "LeaderboardRow",
    "LearningCurve",
    "Mismatch",
    "PolicySummary",
    "RunFolder",
    "RunSink",
    "RunSummary",
    "TrainingRun",
    "action_format",
    "busy_time",
    "check_fingerprints",
    "collect",
    "discover",
    "duration",
    "family_of",
    "format_markdown",
    "format_terminal",
    "group_difference",
    "group_note",
    "load_prices",
    "parse_price",
    "policy_name",
    "ranked",
    "summarize",
    "write_html",
]
