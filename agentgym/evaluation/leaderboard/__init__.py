"""Leaderboards from folders of runs: terminal and Markdown tables, and a static HTML page.

- :mod:`~agentgym.evaluation.leaderboard.collect`: finds runs (eval runs, arenas, training
  runs) and computes the :class:`Leaderboard` (rates, intervals, ranks, times; its docstring
  says how);
- :mod:`~agentgym.evaluation.leaderboard.terminal`: the plain-text and Markdown tables;
- :mod:`~agentgym.evaluation.leaderboard.page`: the HTML page (``leaderboard.html``, its
  template, sits beside it) and its trajectory files.
"""

from agentgym.evaluation.leaderboard.collect import (
    METRICS_FILE,
    ArenaBoard,
    EvalPoint,
    FamilyScore,
    Found,
    Leaderboard,
    LeaderboardError,
    LeaderboardRow,
    LearningCurve,
    Mismatch,
    PolicySummary,
    RunFolder,
    RunSink,
    RunSummary,
    TrainingRun,
    action_format,
    busy_time,
    check_fingerprints,
    collect,
    discover,
    family_of,
    load_prices,
    parse_price,
    policy_name,
    ranked,
    summarize,
)
from agentgym.evaluation.leaderboard.page import CHUNK_BYTES, CHUNK_EPISODES, DATA_MARKER, INSTRUCTION_CHARS, write_html
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
