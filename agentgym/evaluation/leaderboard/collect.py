"""The leaderboard of folders of runs: how every number is computed, over the runs that
:func:`~agentgym.evaluation.leaderboard.runs.discover` finds.

**Per policy and env** (:class:`LeaderboardRow`), over the episodes of all runs:

- ``episodes`` counts the finished episodes with status ``ok``; ``errored`` counts the
  others (a crashed model server, a timeout). Errored episodes are infrastructure
  failures that ``agentgym eval --retry-errors`` redoes, so they are left out of every
  rate and mean, and shown apart so that a reader sees how complete a row is.
- ``success_rate`` is successes / ok episodes, with its 95% Wilson interval.
- ``mean_score``, ``mean_steps``, ``mean_tokens_in``/``_out`` and ``episode_s`` (seconds
  per episode) are means over ok episodes (token means over those that report tokens).
- ``utility`` is the mean ``utility`` over the ok episodes that report one, and
  ``attack_success_rate`` the share of the ``attacked`` ok episodes (played under prompt injection)
  whose attacker's goal was reached: on an -Attack id, utility under attack and the targeted attack
  success rate (docs/safety.md).
- ``policy_episodes`` counts the ok episodes whose env states policies (``policy_violations`` recorded),
  ``violation_rate`` the share of them that violated at least one, and ``cup_rate`` the share that succeeded
  with none: ST-WebAgentBench's Completion under Policy (docs/safety.md, "Policies").

**Per policy** (:class:`PolicySummary`), the overall rank: the *macro average over
families* — each family's success is the unweighted mean of its envs' rates, the overall
success the unweighted mean over families — so that a family of 130 MiniWoB tasks counts
as much as one Sokoban. Its 95% interval is :func:`agentgym.evaluation.stats.macro_interval`: the
normal approximation of that weighted sum of independent per-env rates, each env's
variance taken at its Agresti-Coull (Wilson-adjusted) rate, so that envs at 0% or 100%
still count as uncertain. Each family's success has its interval by the same formula.
Means over different env sets are not comparable, so policies are grouped by the exact
set of envs they have ok episodes on and ranked within each group (most leaderboards
have one group). Also per policy: tokens in/out and cost over all its episodes (errored
ones were paid for too), its **wall time** (the time during which at least one of its
episodes was in flight: the union of the episodes' [start, end] intervals, so concurrent
episodes are not summed and the gap between a run and its resumption is not counted),
and **episode time** (the sum of its episodes' own durations: the compute they took).

**Policies** are named by each episode's ``policy`` (else the run's ``policy_info.name``)
and the run's ``action_format`` (``text`` when absent) with its observation mode where
it was shown screenshots (:func:`action_format`): the same model prompted with native
tools, or shown screenshots, is another row. One policy may be spread over several runs.

**Published protocols.** A run of a published protocol's suite (docs/protocols.md) records the
protocol in ``run.json``; its run row names it, and :attr:`Leaderboard.published` holds that
protocol's published reference numbers (agentgym/evaluation/published.yaml), shown beside our
rows and marked as published, not run here.

**Fingerprints.** A run's ``run.json`` may hold ``env_fingerprints`` (env id -> the hash
of its task set, or null). When runs disagree on a non-null fingerprint of one env id,
their numbers for it measure different tasks: the env's rows are marked, listed in
:attr:`Leaderboard.mismatches`, and left out of every overall aggregate (``strict=True``
refuses instead). A leaderboard compares one split, and a policy may hold an episode key
only once; anything else raises :class:`LeaderboardError` rather than mixing or double
counting episodes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentgym.evaluation.leaderboard.published import PublishedResult, published_for
from agentgym.evaluation.leaderboard.runs import LeaderboardError, RunFolder, TrainingRun, discover
from agentgym.evaluation.records import EpisodeRecord, RecordError
from agentgym.evaluation.results import EPISODES_FILE, read_episodes
from agentgym.evaluation.stats import macro_interval, wilson_interval
from agentgym.safety.policies import completed_under_policy

# ---- the board -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderboardRow:
    """The results of one policy on one env, over all runs (see the module docstring)."""

    policy: str
    action_format: str
    env: str
    family: str
    episodes: int
    errored: int
    successes: int
    success_rate: float | None
    ci_low: float
    ci_high: float
    mean_score: float | None
    mean_steps: float | None
    mean_tokens_in: float | None
    mean_tokens_out: float | None
    episode_s: float | None
    mismatch: bool
    runs: tuple[str, ...]
    #: Mean ``utility`` over the ok episodes that report one (under attack where the env attacks; docs/safety.md).
    utility: float | None = None
    #: Ok episodes played under prompt injection, and the share of them whose attacker's goal was reached.
    attacked: int = 0
    attack_success_rate: float | None = None
    #: Ok episodes whose env states policies, the share with a violation, and the share completed under policy.
    policy_episodes: int = 0
    violation_rate: float | None = None
    cup_rate: float | None = None

    @property
    def mean_tokens(self) -> float | None:
        """Mean tokens (in + out) per ok episode that reports tokens."""
        if self.mean_tokens_in is None:
            return None
        return self.mean_tokens_in + (self.mean_tokens_out or 0.0)


@dataclass(frozen=True)
class FamilyScore:
    """A policy's macro-averaged success over one family's envs, with its 95% interval."""

    success_rate: float
    ci_low: float
    ci_high: float
    envs: int


@dataclass(frozen=True)
class PolicySummary:
    """A policy's overall row: macro average over families, totals, times (module docstring)."""

    policy: str
    action_format: str
    rank: int | None
    group: int | None  #: index of its env set in :attr:`Leaderboard.groups` (None: nothing ranked)
    success_rate: float | None
    ci_low: float | None
    ci_high: float | None
    mean_score: float | None
    families: dict[str, FamilyScore]
    episodes: int
    errored: int
    mean_steps: float | None
    tokens_in: int
    tokens_out: int
    cost: float | None
    wall_s: float | None
    episode_s: float
    runs: tuple[str, ...]


@dataclass(frozen=True)
class RunSummary:
    """One eval run: what it is, how long it took (wall: union of episode intervals)."""

    label: str
    policy: str
    action_format: str
    agentgym_version: str | None
    created: str | None
    suite: str | None
    split: str | None
    episodes: int
    errored: int
    wall_s: float | None
    episode_s: float
    first_start: str | None
    last_end: str | None
    training: str | None
    protocol: str | None = None  #: the published protocol the run's suite reproduces (run.json "protocol")


@dataclass(frozen=True)
class Mismatch:
    """An env id whose task-set fingerprint differs between runs: ``fingerprints[fp] = run labels``."""

    env_id: str
    fingerprints: dict[str, list[str]]

    def describe(self) -> str:
        parts = "; ".join(f"{fp[:12]} in {', '.join(runs)}" for fp, runs in self.fingerprints.items())
        return f"{self.env_id} has different task sets ({parts})"


@dataclass(frozen=True)
class ArenaBoard:
    """The ratings of one arena folder."""

    game: str
    label: str
    ratings: list[Any]  #: :class:`agentgym.evaluation.arena.Rating` rows, best first


@dataclass(frozen=True)
class EvalPoint:
    """One evaluation of a training run: success over its ok episodes, Wilson interval."""

    iteration: int
    temperature: float | None
    episodes: int
    success_rate: float | None
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class LearningCurve:
    """A training run's metrics per iteration and its evaluations."""

    label: str
    metrics: list[dict[str, Any]]
    evals: list[EvalPoint]


@dataclass
class Leaderboard:
    """Everything the tables and the page show (see :func:`collect`)."""

    rows: list[LeaderboardRow]
    policies: list[PolicySummary]
    groups: list[tuple[str, ...]]  #: the env sets policies are ranked within, largest first
    families: dict[str, list[str]]  #: family -> its env labels
    runs: list[RunSummary]
    mismatches: list[Mismatch]
    arenas: list[ArenaBoard]
    curves: list[LearningCurve]
    split: str | None
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: The published numbers of the protocols its runs reproduce (not run here).
    published: list[PublishedResult] = field(default_factory=list)


def policy_name(run: dict[str, Any]) -> str:
    """The display name of a run's policy: ``policy_info.name``, else its spec string."""
    return (run.get("policy_info") or {}).get("name") or str(run.get("policy", "?"))


def action_format(run: dict[str, Any]) -> str:
    """How a run's policy acted: ``"text"`` (a reply parsed for its action; the default) or ``"tools"``,
    and, where it was shown screenshots, what it saw: ``"text+screenshot[786432px]"`` (the observation
    mode and the image budget in pixels, and ``keep K`` where only the last K images were sent)."""
    fmt = str(run.get("action_format") or "text")
    observation = run.get("observation") or {}
    mode = observation.get("mode", "text")
    if mode == "text":
        return fmt
    budget = [f"{observation['max_pixels']}px" if observation.get("max_pixels") else "full size"]
    if observation.get("keep_images") is not None:
        budget.append(f"keep {observation['keep_images']}")
    return f"{fmt}+{mode}[{','.join(budget)}]"


def family_of(env_id: str) -> str:
    """The family of a registered env id; for an unknown id, its name up to the first dash."""
    from agentgym.contract.registry import env_info

    try:
        return env_info(env_id).family
    except KeyError:
        return env_id.split("-", 1)[0].lower()


def _parse_time(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


def busy_time(intervals: Iterable[tuple[float, float]]) -> float | None:
    """The length of the union of ``[start, end]`` intervals: time with at least one in flight.

    None when there are no intervals.
    """
    total, current = 0.0, None
    for start, end in sorted(intervals):
        if current is None or start > current[1]:
            if current is not None:
                total += current[1] - current[0]
            current = [start, end]
        else:
            current[1] = max(current[1], end)
    if current is None:
        return None
    return total + current[1] - current[0]


def check_fingerprints(runs: Sequence[RunFolder]) -> list[Mismatch]:
    """The env ids whose non-null ``env_fingerprints`` differ between ``runs``."""
    seen: dict[str, dict[str, list[str]]] = {}
    for run in runs:
        for env_id, fingerprint in (run.run.get("env_fingerprints") or {}).items():
            if fingerprint:
                seen.setdefault(env_id, {}).setdefault(str(fingerprint), []).append(run.label)
    return [Mismatch(env_id, by) for env_id, by in sorted(seen.items()) if len(by) > 1]


@dataclass
class _Sums:
    episodes: int = 0
    errored: int = 0
    successes: int = 0
    score: float = 0.0
    steps: float = 0.0
    tokens_in: float = 0.0
    tokens_out: float = 0.0
    token_episodes: int = 0
    seconds: float = 0.0
    runs: list[str] = field(default_factory=list)
    utility: float = 0.0
    utility_episodes: int = 0
    attacked: int = 0
    attack_successes: int = 0
    policy_episodes: int = 0
    violating: int = 0
    completed_under_policy: int = 0


@dataclass
class _AgentTotals:
    tokens_in: int = 0
    tokens_out: int = 0
    episode_s: float = 0.0
    intervals: list[tuple[float, float]] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)


class _Board:
    """Accumulates episodes run by run, checking that they make one leaderboard."""

    def __init__(self, mismatched: set[str]) -> None:
        self.mismatched = mismatched
        self.sums: dict[tuple[str, str, str], _Sums] = {}  # (policy, format, env label)
        self.agents: dict[tuple[str, str], _AgentTotals] = {}
        self.families: dict[str, str] = {}  # env label -> family
        self.env_ids: dict[str, str] = {}  # env label -> env id
        self.splits: dict[str, str] = {}  # split -> first run holding it
        self.seen: dict[tuple[str, str, str], str] = {}  # (policy, format, key) -> run label
        self.runs: list[RunSummary] = []

    def add(self, folder: RunFolder, episodes: Iterable[EpisodeRecord], name: str | None = None) -> None:
        run, label, fmt = folder.run, folder.label, action_format(folder.run)
        intervals: list[tuple[float, float]] = []
        counts = [0, 0]
        seconds = 0.0
        policy, split = name, None
        for record in episodes:
            policy = name or record.policy or policy_name(run)
            split = record.split or run.get("split", "")
            self.splits.setdefault(split, label)
            if len(self.splits) > 1:
                found = ", ".join(f"{name!r} ({where})" for name, where in self.splits.items())
                raise LeaderboardError(f"a leaderboard compares one split; these runs hold {found}")
            identity = (policy, fmt, record.key)
            if identity in self.seen:
                raise LeaderboardError(
                    f"policy {policy!r} has episode {record.key} in both {self.seen[identity]} and {label}; "
                    "pass each run once (use repeats within one run for more samples)"
                )
            self.seen[identity] = label
            env = record.env
            if env not in self.families:
                self.env_ids[env] = record.env_id
                self.families[env] = family_of(self.env_ids[env])
            sums = self.sums.setdefault((policy, fmt, env), _Sums())
            agent = self.agents.setdefault((policy, fmt), _AgentTotals())
            for holder in (sums.runs, agent.runs):
                if label not in holder:
                    holder.append(label)
            wall = record.wall_s
            agent.episode_s += wall
            seconds += wall
            start = _parse_time(record.started)
            if start is not None:
                intervals.append((start, start + wall))
                agent.intervals.append((start, start + wall))
            tokens = record.tokens
            if tokens is not None:
                agent.tokens_in += tokens.prompt
                agent.tokens_out += tokens.completion
            if record.status != "ok":
                sums.errored += 1
                counts[1] += 1
                continue
            counts[0] += 1
            sums.episodes += 1
            sums.successes += record.success
            sums.score += record.score
            sums.steps += record.steps
            sums.seconds += wall
            if tokens is not None:
                sums.tokens_in += tokens.prompt
                sums.tokens_out += tokens.completion
                sums.token_episodes += 1
            if record.utility is not None:
                sums.utility += record.utility
                sums.utility_episodes += 1
            if record.attack_success is not None:
                sums.attacked += 1
                sums.attack_successes += record.attack_success
            cup = completed_under_policy(record)
            if cup is not None:
                sums.policy_episodes += 1
                sums.violating += bool(record.policy_violations)
                sums.completed_under_policy += cup
        self.runs.append(
            RunSummary(
                label=label,
                policy=policy or name or policy_name(run),
                action_format=fmt,
                agentgym_version=run.get("agentgym_version"),
                created=run.get("created"),
                suite=run.get("suite"),
                split=split,
                episodes=counts[0],
                errored=counts[1],
                wall_s=busy_time(intervals),
                episode_s=seconds,
                first_start=_iso(min((start for start, _ in intervals), default=None)),
                last_end=_iso(max((end for _, end in intervals), default=None)),
                training=folder.training,
                protocol=(run.get("protocol") or {}).get("name"),
            )
        )

    def rows(self) -> list[LeaderboardRow]:
        rows = []
        for (policy, fmt, env), sums in self.sums.items():
            n = sums.episodes
            ci_low, ci_high = wilson_interval(sums.successes, n)
            tokens = sums.token_episodes
            policed = sums.policy_episodes
            rows.append(
                LeaderboardRow(
                    policy=policy,
                    action_format=fmt,
                    env=env,
                    family=self.families[env],
                    episodes=n,
                    errored=sums.errored,
                    successes=sums.successes,
                    success_rate=sums.successes / n if n else None,
                    ci_low=ci_low,
                    ci_high=ci_high,
                    mean_score=sums.score / n if n else None,
                    mean_steps=sums.steps / n if n else None,
                    mean_tokens_in=sums.tokens_in / tokens if tokens else None,
                    mean_tokens_out=sums.tokens_out / tokens if tokens else None,
                    episode_s=sums.seconds / n if n else None,
                    mismatch=self.env_ids[env] in self.mismatched,
                    runs=tuple(sums.runs),
                    utility=sums.utility / sums.utility_episodes if sums.utility_episodes else None,
                    attacked=sums.attacked,
                    attack_success_rate=sums.attack_successes / sums.attacked if sums.attacked else None,
                    policy_episodes=policed,
                    violation_rate=sums.violating / policed if policed else None,
                    cup_rate=sums.completed_under_policy / policed if policed else None,
                )
            )
        return [row for _, row in ranked(rows)]


def ranked(rows: Iterable[LeaderboardRow]) -> list[tuple[int | None, LeaderboardRow]]:
    """Rows sorted by env, then best success first (ties: mean score, name), with their rank in the env.

    Equal success rates share a rank (1, 2, 2, 4); rows without ok episodes come last, unranked,
    and so are the rows of an env whose task-set fingerprints differ between runs (not comparable).
    """
    ordered = sorted(
        rows,
        key=lambda row: (
            row.env,
            row.success_rate is None,
            -(row.success_rate or 0.0),
            -(row.mean_score or 0.0),
            row.policy,
            row.action_format,
        ),
    )
    result: list[tuple[int | None, LeaderboardRow]] = []
    for row in ordered:
        better = sum(
            1
            for other in ordered
            if other.env == row.env and row.success_rate is not None and (other.success_rate or 0.0) > row.success_rate
        )
        result.append((None if row.success_rate is None or row.mismatch else better + 1, row))
    return result


def summarize(
    rows: Sequence[LeaderboardRow],
    agents: Mapping[tuple[str, str], _AgentTotals],
    prices: Mapping[str, tuple[float, float]] | None = None,
) -> tuple[list[PolicySummary], list[tuple[str, ...]]]:
    """Each policy's overall row (macro over families), ranked within its env-set group."""
    prices = prices or {}
    by_agent: dict[tuple[str, str], list[LeaderboardRow]] = {}
    for row in rows:
        by_agent.setdefault((row.policy, row.action_format), []).append(row)
    for agent in agents:
        by_agent.setdefault(agent, [])
    drafts = []
    for (policy, fmt), group in by_agent.items():
        counted = [row for row in group if row.success_rate is not None and not row.mismatch]
        families: dict[str, list[LeaderboardRow]] = {}
        for row in counted:
            families.setdefault(row.family, []).append(row)
        scores = {
            family: FamilyScore(*macro_interval([[(row.successes, row.episodes) for row in members]]), len(members))
            for family, members in sorted(families.items())
        }
        if counted:
            success, low, high = macro_interval(
                [[(row.successes, row.episodes) for row in members] for members in families.values()]
            )
            score = sum(
                sum(row.mean_score or 0.0 for row in members) / len(members) for members in families.values()
            ) / len(families)
        else:
            success = low = high = score = None
        ok = sum(row.episodes for row in group)
        steps = sum((row.mean_steps or 0.0) * row.episodes for row in group)
        totals = agents.get((policy, fmt), _AgentTotals())
        price = prices.get(policy)
        drafts.append(
            (
                tuple(sorted(row.env for row in counted)),
                PolicySummary(
                    policy=policy,
                    action_format=fmt,
                    rank=None,
                    group=None,
                    success_rate=success,
                    ci_low=low,
                    ci_high=high,
                    mean_score=score,
                    families=scores,
                    episodes=ok,
                    errored=sum(row.errored for row in group),
                    mean_steps=steps / ok if ok else None,
                    tokens_in=totals.tokens_in,
                    tokens_out=totals.tokens_out,
                    cost=None if price is None else (totals.tokens_in * price[0] + totals.tokens_out * price[1]) / 1e6,
                    wall_s=busy_time(totals.intervals),
                    episode_s=totals.episode_s,
                    runs=tuple(totals.runs),
                ),
            )
        )
    sets = sorted({envs for envs, _ in drafts if envs}, key=lambda envs: (-len(envs), envs))
    result = []
    for envs, summary in drafts:
        if not envs:
            result.append(summary)
            continue
        peers = [other for other_envs, other in drafts if other_envs == envs]
        rank = 1 + sum((other.success_rate or 0.0) > (summary.success_rate or 0.0) for other in peers)
        result.append(replace(summary, rank=rank, group=sets.index(envs)))
    result.sort(
        key=lambda s: (
            s.group is None,
            s.group or 0,
            -(s.success_rate or 0.0),
            -(s.mean_score or 0.0),
            s.policy,
            s.action_format,
        )
    )
    return result, sets


def _curve(training: TrainingRun) -> LearningCurve:
    points = []
    for run in training.evals:
        episodes = read_episodes(run.path / EPISODES_FILE).values()
        ok = [record for record in episodes if record.status == "ok"]
        successes = sum(record.success for record in ok)
        low, high = wilson_interval(successes, len(ok))
        points.append(
            EvalPoint(run.iteration or 0, run.temperature, len(ok), successes / len(ok) if ok else None, low, high)
        )
    return LearningCurve(training.label, training.metrics, points)


def _arena(folder: RunFolder) -> ArenaBoard:
    from agentgym.evaluation.arena import ratings

    return ArenaBoard(str(folder.run.get("game", "?")), folder.label, ratings(folder.path))


#: Called with each eval run, its index and its episodes (by key) as :func:`collect` reads them.
RunSink = Callable[[int, RunFolder, dict[str, EpisodeRecord]], None]


def collect(
    paths: Sequence[Path | str],
    *,
    prices: Mapping[str, tuple[float, float]] | None = None,
    strict: bool = False,
    on_run: RunSink | None = None,
) -> Leaderboard:
    """The leaderboard of every run under ``paths`` (see the module docstring).

    ``prices`` maps a policy name to its (input, output) price per million tokens.
    ``strict`` raises :class:`LeaderboardError` on mismatched fingerprints instead of
    leaving those envs out of the overall ranking. Raises it also for paths without
    runs, runs of different splits and an episode of a policy found in two runs.
    """
    found = discover(paths)
    mismatches = check_fingerprints(found.evals)
    if mismatches and strict:
        raise LeaderboardError(
            "runs measured different task sets (fingerprints differ): "
            + "; ".join(mismatch.describe() for mismatch in mismatches)
            + ". Rank runs of one version of each env, or drop --strict to mark these envs and leave them out"
        )
    board = _Board({mismatch.env_id for mismatch in mismatches})
    for index, folder in enumerate(found.evals):
        try:
            episodes = read_episodes(folder.path / EPISODES_FILE)
        except (json.JSONDecodeError, UnicodeDecodeError, RecordError, KeyError, TypeError) as error:
            raise LeaderboardError(f"{folder.path} is not a readable results folder: {error!r}") from error
        name = f"{folder.training} @ iteration {folder.iteration}" if folder.training else None
        board.add(folder, episodes.values(), name)
        if on_run is not None:
            on_run(index, folder, episodes)
    rows = board.rows()
    policies, groups = summarize(rows, board.agents, prices)
    families: dict[str, list[str]] = {}
    for env in sorted(board.families, key=lambda env: (board.families[env], env)):
        families.setdefault(board.families[env], []).append(env)
    return Leaderboard(
        rows=rows,
        policies=policies,
        groups=groups,
        families=families,
        runs=board.runs,
        mismatches=mismatches,
        arenas=[_arena(folder) for folder in found.arenas],
        curves=[_curve(training) for training in found.trainings if training.evals or training.metrics],
        split=next(iter(board.splits), None),
        prices=dict(prices or {}),
        published=published_for(run.protocol for run in board.runs if run.protocol),
    )


# ---- prices ----------------------------------------------------------------------------------


def parse_price(text: str) -> tuple[str, tuple[float, float]]:
    """``POLICY=IN,OUT`` (dollars per million input and output tokens) as ``(policy, (in, out))``."""
    policy, _, numbers = text.rpartition("=")
    try:
        price_in, price_out = (float(value) for value in numbers.split(","))
    except ValueError:
        raise LeaderboardError(f"bad price {text!r}: write POLICY=IN,OUT in dollars per million tokens") from None
    if not policy or price_in < 0 or price_out < 0:
        raise LeaderboardError(f"bad price {text!r}: write POLICY=IN,OUT in dollars per million tokens")
    return policy, (price_in, price_out)


def load_prices(path: Path | str) -> dict[str, tuple[float, float]]:
    """A price file (JSON or YAML): ``{policy: {input: $/Mtok, output: $/Mtok}}`` or ``{policy: [in, out]}``."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise LeaderboardError(f"cannot read the price file {path}: {error}") from error
    if not isinstance(data, dict):
        raise LeaderboardError(f"{path}: expected a mapping of policy -> {{input, output}} per million tokens")
    prices = {}
    for policy, value in data.items():
        if isinstance(value, dict) and {"input", "output"} <= set(value):
            value = [value["input"], value["output"]]
        if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value)):
            raise LeaderboardError(f"{path}: the price of {policy!r} must be {{input: X, output: Y}} or [X, Y]")
        prices[str(policy)] = (float(value[0]), float(value[1]))
    return prices
