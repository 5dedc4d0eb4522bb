"""Offline re-scoring: replay a saved run's episodes through their envs and compare the outcomes.

``agentgym rescore RUN_DIR`` reads ``run.json`` and ``episodes.jsonl``, and for every finished
(``ok``) episode makes its env again (same id, kwargs and turn limit), resets it with the
recorded task id and seed, and plays the recorded actions in order: each turn's
``action`` (the env's reading of the reply), or its native ``tool_calls`` as the assistant
message that carried them. The replay reproduces the record when every turn's reward,
``terminated`` and ``truncated`` and the episode's ``success``, ``score``, return and step
count are the same (floats to 1e-9). Anything else is a mismatch, listed with the first field
and turn that differ: a non-deterministic env, a changed env, or an edited record.

Per env the report says how many episodes the replay reproduces, and whether the env's task-set
fingerprint recorded in ``run.json`` still equals today's (when it does not, the env changed
since the run and mismatches are expected). Families whose episodes cannot replay exactly
(``replay: live`` in metrics.yaml: self-hosted sites that keep state, desktops) are reported
apart: skipped by default, replayed with ``live=True`` and still counted apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from agentgym.evaluation.fingerprint import recorded_fingerprint
from agentgym.evaluation.metrics import env_metrics
from agentgym.evaluation.plan import BACKEND_KWARGS
from agentgym.evaluation.records import EpisodeRecord, Turn
from agentgym.evaluation.results import EPISODES_FILE, read_episodes, read_run
from agentgym.evaluation.runner import EvalItem

#: Floats (rewards, scores, returns) agree when they differ by at most this.
TOLERANCE = 1e-9


@dataclass(frozen=True)
class Mismatch:
    """One episode whose replay differs from its record: the first field that differs, and where."""

    key: str
    field: str
    recorded: Any
    replayed: Any
    turn: int | None = None  #: the turn (0-based) where it differs; None for an episode-level field

    def describe(self) -> str:
        where = f" at turn {self.turn}" if self.turn is not None else ""
        return f"{self.key}: {self.field}{where} recorded {self.recorded!r}, replayed {self.replayed!r}"


@dataclass
class EnvRescore:
    """The replays of one env (label) of the run."""

    env: str  #: the env label (id with kwargs)
    env_id: str
    live: bool  #: its family's episodes are not deterministic (reported apart)
    episodes: int = 0  #: ok episodes in the run
    replayed: int = 0
    reproduced: int = 0
    errored: int = 0  #: episodes recorded as errors (not replayed: nothing to compare)
    mismatches: list[Mismatch] = field(default_factory=list)
    #: (recorded in run.json, today's) when the env's task-set fingerprint changed since the run
    fingerprint_change: tuple[str, str] | None = None
    failure: str | None = None  #: why the env could not be replayed at all (it could not be made)

    @property
    def all_reproduced(self) -> bool:
        return self.failure is None and self.replayed == self.episodes and self.reproduced == self.replayed


@dataclass
class RescoreReport:
    """Every env of a run, deterministic ones first; ``live`` ones are counted apart."""

    folder: Path
    envs: list[EnvRescore]

    @property
    def deterministic(self) -> list[EnvRescore]:
        return [env for env in self.envs if not env.live]

    @property
    def live(self) -> list[EnvRescore]:
        return [env for env in self.envs if env.live]

    @property
    def ok(self) -> bool:
        """Whether every replayed episode of a deterministic env reproduced its record."""
        return all(env.all_reproduced for env in self.deterministic)


def _close(recorded: Any, replayed: Any) -> bool:
    if isinstance(recorded, float) or isinstance(replayed, float):
        try:
            return math.isclose(float(recorded), float(replayed), rel_tol=0.0, abs_tol=TOLERANCE)
        except (TypeError, ValueError):
            return False
    return recorded == replayed


def _played(turn: Turn) -> Any:
    """What the env's ``step`` gets to replay ``turn``: its tool calls' message, else its action."""
    if turn.tool_calls:
        return {"role": "assistant", "content": None, "tool_calls": turn.tool_calls}
    return turn.action


def replay(env: gym.Env, record: EpisodeRecord) -> Mismatch | None:
    """Replay ``record`` on ``env`` (reset with its task and seed); its first mismatch, or None."""
    env.reset(seed=record.seed, options={"task_id": record.task_id})
    total, info, steps = 0.0, {}, 0
    for index, turn in enumerate(record.turns):
        _, reward, terminated, truncated, info = env.step(_played(turn))
        steps, total = steps + 1, total + float(reward)
        for name, recorded, replayed in (
            ("reward", turn.reward, float(reward)),
            ("terminated", turn.terminated, bool(terminated)),
            ("truncated", turn.truncated, bool(truncated)),
        ):
            if not _close(recorded, replayed):
                return Mismatch(record.key, name, recorded, replayed, index)
        if (terminated or truncated) and index < len(record.turns) - 1:
            return Mismatch(record.key, "steps", record.steps, steps)
    for name, recorded, replayed in (
        ("success", record.success, bool(info.get("success", False))),
        ("score", record.score, float(info.get("score", 0.0))),
        ("return", record.return_, total),
        ("steps", record.steps, steps),
    ):
        if not _close(recorded, replayed):
            return Mismatch(record.key, name, recorded, replayed)
    return None


def _items_by_label(run: dict[str, Any]) -> dict[str, EvalItem]:
    items = {}
    for entry in run.get("items", []):
        item = EvalItem(
            env=entry["env"],
            episodes=int(entry.get("episodes", 0)),
            split=entry.get("split", "test"),
            max_turns=entry.get("max_turns"),
            kwargs=dict(entry.get("kwargs") or {}),
        )
        items[item.label] = item
    return items


def _make(record: EpisodeRecord, item: EvalItem | None) -> gym.Env:
    kwargs = {key: value for key, value in record.env_kwargs.items() if not key.startswith(BACKEND_KWARGS)}
    limit = {"max_episode_steps": item.max_turns} if item is not None and item.max_turns else {}
    return gym.make(record.env_id, **limit, **kwargs)


def rescore(
    folder: Path | str,
    *,
    live: bool = False,
    envs: Iterable[str] | None = None,
    on_episode: Callable[[EpisodeRecord, Mismatch | None], None] | None = None,
) -> RescoreReport:
    """Replay every ok episode of the run in ``folder`` (see the module docstring).

    ``live`` also replays the envs of live families (still reported apart); ``envs`` limits the
    replay to those env labels or ids. ``on_episode(record, mismatch)`` follows the progress.
    """
    folder = Path(folder)
    run = read_run(folder)
    records = read_episodes(folder / EPISODES_FILE)
    items = _items_by_label(run)
    wanted = set(envs) if envs is not None else None
    recorded_fingerprints = run.get("env_fingerprints") or {}
    by_env: dict[str, list[EpisodeRecord]] = {}
    for record in records.values():
        if wanted is None or record.env in wanted or record.env_id in wanted:
            by_env.setdefault(record.env, []).append(record)
    report = []
    for label, episodes in sorted(by_env.items()):
        env_id = episodes[0].env_id
        metrics = env_metrics(env_id)
        result = EnvRescore(label, env_id, live=metrics is not None and not metrics.deterministic)
        ok = [record for record in episodes if record.status == "ok"]
        result.episodes, result.errored = len(ok), len(episodes) - len(ok)
        then, now = recorded_fingerprints.get(env_id), recorded_fingerprint(env_id)
        if then and now and then != now:
            result.fingerprint_change = (then, now)
        report.append(result)
        if result.live and not live:
            continue
        try:
            env = _make(ok[0], items.get(label)) if ok else None
        except Exception as error:  # an env that cannot be made here (a missing package, data or site)
            result.failure = f"{type(error).__name__}: {error}"
            continue
        try:
            for record in sorted(ok, key=lambda record: record.key):
                mismatch = replay(env, record)
                result.replayed += 1
                if mismatch is None:
                    result.reproduced += 1
                else:
                    result.mismatches.append(mismatch)
                if on_episode is not None:
                    on_episode(record, mismatch)
        finally:
            if env is not None:
                env.close()
    report.sort(key=lambda env: (env.live, env.env))
    return RescoreReport(folder, report)


def format_report(report: RescoreReport) -> str:
    """The report as text: one line per env, deterministic envs then live ones, then every mismatch."""
    lines = [f"Replayed {report.folder}:"]
    for title, envs in (("deterministic envs", report.deterministic), ("live envs (not deterministic)", report.live)):
        if not envs:
            continue
        lines.append(f"\n{title}:")
        for env in envs:
            if env.failure is not None:
                state = f"not replayed: {env.failure}"
            elif env.live and env.replayed == 0 and env.episodes:
                state = f"{env.episodes} episodes not replayed (live; --live replays them)"
            else:
                share = f"{env.reproduced / env.replayed:.0%}" if env.replayed else "-"
                state = f"{env.reproduced}/{env.replayed} reproduced ({share})"
            notes = []
            if env.errored:
                notes.append(f"{env.errored} errored episodes not replayed")
            if env.fingerprint_change:
                then, now = env.fingerprint_change
                notes.append(f"env changed since the run: fingerprint {then[:12]} then, {now[:12]} now")
            lines.append(f"  {env.env}: {state}" + (f" ({'; '.join(notes)})" if notes else ""))
    mismatches = [mismatch for env in report.envs for mismatch in env.mismatches]
    if mismatches:
        lines.append(f"\n{len(mismatches)} mismatches:")
        lines.extend(f"  {mismatch.describe()}" for mismatch in mismatches)
    return "\n".join(lines)
