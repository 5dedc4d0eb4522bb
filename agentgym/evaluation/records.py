"""The typed records of a results folder: an eval episode and its turns, an arena match and its turns.

``episodes.jsonl`` holds one record per line (see :mod:`agentgym.evaluation.results` and
docs/results.md). The runner builds :class:`EpisodeRecord` values, the arena builds
:class:`MatchRecord` values; both are turned into JSON by :func:`to_json` (the one writer)
and read back by :func:`episode_from_json` / :func:`match_from_json` (the one reader), so every
reader (leaderboard, arena ratings, trainer, tests) sees typed fields, never string keys.

**Versions.** Every record written carries ``"schema": SCHEMA_VERSION``. A record without it
is version 1 (written before the field existed): its keys are today's, except that some were
added over time (``node_id``, ``screenshots``, ``retries``, a turn's ``tool_calls``, ``finish_reason`` and
``dropped_turns``) and hand-written or
external files may leave out more (``env_id``, ``env_kwargs``, ``tokens``, ``policy``,
``split``...). Reading fills each missing key with its default below, derives ``env_id`` from
the ``env`` label, and keeps ``tokens`` None where none were reported (token means skip such
episodes). A record of a newer version than this code knows is refused with a clear error.

The JSON keeps the keys, order and values that the runner and the arena wrote before these
types existed; ``screenshots``, ``retries`` and a turn's ``tool_calls``, ``finish_reason`` (LLM policies report it)
and ``dropped_turns`` are written only when present, and so are ``utility``, ``attack_success`` and
``policy_violations`` (envs that report them, docs/safety.md; read from the last turn's ``info`` in records written
before these fields), and
a match's ``rewards``, ``winner`` and ``reason`` only when it finished without error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentgym.safety import episode_safety
from agentgym.safety.policies import episode_violations

#: The version written into every record's ``"schema"``; a record without it is version 1.
SCHEMA_VERSION = 2


class RecordError(ValueError):
    """A line of ``episodes.jsonl`` that is not a record this version can read."""


@dataclass
class Tokens:
    """Tokens a policy used: prompt (input) and completion (output)."""

    prompt: int = 0
    completion: int = 0


@dataclass(slots=True)
class Turn:
    """One step of an eval episode: the action the env read and what it answered."""

    action: Any  #: the env's reading of the reply (``info["action"]``), else the reply text
    reward: float
    invalid_action: bool = False
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)  #: the step's ``info`` less the episode-level keys
    policy_s: float = 0.0  #: seconds the policy took for the reply
    env_s: float = 0.0  #: seconds the env took for the step
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: list[dict[str, Any]] | None = None  #: the native tool calls as the model made them
    finish_reason: str | None = None  #: why the model's reply ended (``"length"``: cut at the token limit)
    dropped_turns: int = 0  #: the oldest turns left out of the prompt to fit the model's context


@dataclass
class EpisodeRecord:
    """One finished eval episode (``status`` ``"ok"``, or ``"error"`` with ``error`` saying why)."""

    key: str  #: ``env/split/task_id/repeat``, its identity within the run
    env: str  #: the env label: the id with its non-backend kwargs, ``FrozenLake-v0[is_slippery=True]``
    env_id: str = ""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    split: str | None = None
    task_id: int = 0
    repeat: int = 0
    seed: int | None = None
    policy: str | None = None  #: None in files that left it out: readers fall back on ``run.json``
    status: str = "ok"
    error: str | None = None
    success: bool = False
    score: float = 0.0
    return_: float = 0.0  #: the sum of the rewards (JSON key ``return``)
    steps: int = 0
    terminated: bool = False
    truncated: bool = False
    instruction: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)  #: the chat, system prompt first
    turns: list[Turn] = field(default_factory=list)
    tokens: Tokens | None = field(default_factory=Tokens)  #: None: the file reported none
    node_id: str | None = None  #: the Ray node the env ran on (None off Ray)
    started: str | None = None  #: ISO 8601 UTC start time
    screenshots: list[str | None] | None = None  #: observation N's PNG, relative to the results folder
    #: Why each earlier attempt of this episode was abandoned (its env's infrastructure failed) and
    #: played again on a fresh env; empty when the first attempt counted.
    retries: list[str] = field(default_factory=list)
    #: Why the runner ended the episode before the env did: ``"context"``, the prompt no longer fit the model's
    #: context even with its oldest turns left out (a failure of the model, not an error); None otherwise.
    stopped: str | None = None
    wall_s: float = 0.0
    schema: int = SCHEMA_VERSION
    #: The final ``info["utility"]`` where the env reports one (AgentDojo, the -Attack ids; docs/safety.md).
    utility: float | None = None
    #: Whether the attacker's goal was reached, on an episode under prompt injection; None when not attacked.
    attack_success: bool | None = None
    #: The ids of the task's policies the episode violated (empty: none); None where the env states no policies.
    policy_violations: list[str] | None = None

    def __post_init__(self) -> None:
        if not self.env_id:
            self.env_id = self.env.split("[", 1)[0]


@dataclass
class MatchTurn:
    """One move of an arena match."""

    agent: str  #: the seat (``player_0``)
    observation: str
    reply: str
    invalid_action: bool = False


@dataclass
class MatchRecord:
    """One finished arena match; ``rewards``/``winner``/``reason`` are set when it ended without error."""

    key: str  #: ``first|second|index``
    seats: dict[str, str]  #: seat -> policy name
    seed: int | None = None
    status: str = "ok"
    error: str | None = None
    turns: list[MatchTurn] = field(default_factory=list)
    tokens: dict[str, Tokens] = field(default_factory=dict)  #: per policy name
    rewards: dict[str, float] | None = None  #: per policy name
    winner: str | None = None  #: a policy name; None for a draw
    reason: str | None = None
    wall_s: float = 0.0
    game: str | None = None
    schema: int = SCHEMA_VERSION


Record = EpisodeRecord | MatchRecord


# ---- writing ---------------------------------------------------------------------------------


def to_json(record: Record) -> dict[str, Any]:
    """The record as the JSON object ``episodes.jsonl`` holds (its lists and dicts shared, not copied)."""
    if isinstance(record, MatchRecord):
        return _match_json(record)
    turns = []
    for turn in record.turns:
        entry = {
            "action": turn.action,
            "reward": turn.reward,
            "invalid_action": turn.invalid_action,
            "terminated": turn.terminated,
            "truncated": turn.truncated,
            "info": turn.info,
            "policy_s": turn.policy_s,
            "env_s": turn.env_s,
            "prompt_tokens": turn.prompt_tokens,
            "completion_tokens": turn.completion_tokens,
        }
        if turn.tool_calls:
            entry["tool_calls"] = turn.tool_calls
        if turn.finish_reason is not None:
            entry["finish_reason"] = turn.finish_reason
        if turn.dropped_turns:
            entry["dropped_turns"] = turn.dropped_turns
        turns.append(entry)
    data: dict[str, Any] = {
        "schema": record.schema,
        "key": record.key,
        "env": record.env,
        "env_id": record.env_id,
        "env_kwargs": record.env_kwargs,
        "split": record.split,
        "task_id": record.task_id,
        "repeat": record.repeat,
        "seed": record.seed,
        "policy": record.policy,
        "status": record.status,
        "error": record.error,
        "success": record.success,
        "score": record.score,
        "return": record.return_,
        "steps": record.steps,
        "terminated": record.terminated,
        "truncated": record.truncated,
        "instruction": record.instruction,
        "messages": record.messages,
        "turns": turns,
        "tokens": None if record.tokens is None else _tokens_json(record.tokens),
        "node_id": record.node_id,
        "started": record.started,
    }
    if record.screenshots is not None:
        data["screenshots"] = record.screenshots
    if record.retries:
        data["retries"] = record.retries
    if record.stopped is not None:
        data["stopped"] = record.stopped
    if record.utility is not None:
        data["utility"] = record.utility
    if record.attack_success is not None:
        data["attack_success"] = record.attack_success
    if record.policy_violations is not None:
        data["policy_violations"] = record.policy_violations
    data["wall_s"] = record.wall_s
    return data


def _match_json(record: MatchRecord) -> dict[str, Any]:
    data: dict[str, Any] = {
        "schema": record.schema,
        "key": record.key,
        "seed": record.seed,
        "seats": record.seats,
        "status": record.status,
        "error": record.error,
        "turns": [
            {"agent": t.agent, "observation": t.observation, "reply": t.reply, "invalid_action": t.invalid_action}
            for t in record.turns
        ],
        "tokens": {name: _tokens_json(tokens) for name, tokens in record.tokens.items()},
    }
    if record.rewards is not None:
        data.update(rewards=record.rewards, winner=record.winner, reason=record.reason)
    data.update(wall_s=record.wall_s, game=record.game)
    return data


def _tokens_json(tokens: Tokens) -> dict[str, int]:
    return {"prompt": tokens.prompt, "completion": tokens.completion}


# ---- reading ---------------------------------------------------------------------------------


def _version(data: Any) -> int:
    if not isinstance(data, dict):
        raise RecordError(f"a record is a JSON object, not {type(data).__name__}")
    version = data.get("schema", 1)
    if not isinstance(version, int) or not 1 <= version <= SCHEMA_VERSION:
        raise RecordError(
            f"record {data.get('key')!r} has schema {version!r}; this agentgym reads versions 1 to "
            f"{SCHEMA_VERSION} (upgrade agentgym to read files written by a newer one)"
        )
    return version


def _required(data: dict[str, Any], name: str) -> Any:
    if name not in data:
        raise RecordError(f"record {data.get('key')!r} has no {name!r}")
    return data[name]


def _tokens(value: Any) -> Tokens | None:
    if not value:
        return None
    return Tokens(int(value.get("prompt") or 0), int(value.get("completion") or 0))


def _float(value: Any, default: float = 0.0) -> float:
    return default if value is None else float(value)


def episode_from_json(data: Any) -> EpisodeRecord:
    """The :class:`EpisodeRecord` of one ``episodes.jsonl`` object, upgrading older versions.

    Raises :class:`RecordError` for an object that is not an episode record (no ``key`` or
    ``env``) or that a newer version wrote.
    """
    _version(data)  # versions 1 and 2 differ only in the "schema" key: missing keys take defaults
    turns = [
        Turn(
            action=turn.get("action"),
            reward=_float(turn.get("reward")),
            invalid_action=bool(turn.get("invalid_action", False)),
            terminated=bool(turn.get("terminated", False)),
            truncated=bool(turn.get("truncated", False)),
            info=turn.get("info") or {},
            policy_s=_float(turn.get("policy_s")),
            env_s=_float(turn.get("env_s")),
            prompt_tokens=int(turn.get("prompt_tokens") or 0),
            completion_tokens=int(turn.get("completion_tokens") or 0),
            tool_calls=turn.get("tool_calls"),
            finish_reason=turn.get("finish_reason"),
            dropped_turns=int(turn.get("dropped_turns") or 0),
        )
        for turn in data.get("turns") or []
    ]
    # Records written before the safety fields keep them in the last turn's info.
    final = data if "utility" in data or "attack_success" in data else (turns[-1].info if turns else {})
    utility, attack_success = episode_safety(final)
    last = turns[-1].info if turns else {}
    violations = episode_violations(data if "policy_violations" in data else last)
    return EpisodeRecord(
        key=_required(data, "key"),
        env=_required(data, "env"),
        env_id=data.get("env_id") or "",
        env_kwargs=data.get("env_kwargs") or {},
        split=data.get("split"),
        task_id=data.get("task_id", 0),
        repeat=data.get("repeat", 0),
        seed=data.get("seed"),
        policy=data.get("policy"),
        status=data.get("status") or "ok",
        error=data.get("error"),
        success=bool(data.get("success", False)),
        score=_float(data.get("score")),
        return_=_float(data.get("return")),
        steps=int(data.get("steps") or 0),
        terminated=bool(data.get("terminated", False)),
        truncated=bool(data.get("truncated", False)),
        instruction=str(data.get("instruction") or ""),
        messages=data.get("messages") or [],
        turns=turns,
        tokens=_tokens(data.get("tokens")),
        node_id=data.get("node_id"),
        started=data.get("started"),
        screenshots=data.get("screenshots"),
        retries=list(data.get("retries") or ()),
        stopped=data.get("stopped"),
        wall_s=_float(data.get("wall_s")),
        utility=utility,
        attack_success=attack_success,
        policy_violations=violations,
    )


def match_from_json(data: Any) -> MatchRecord:
    """The :class:`MatchRecord` of one arena ``episodes.jsonl`` object, upgrading older versions."""
    _version(data)
    finished = "rewards" in data
    return MatchRecord(
        key=_required(data, "key"),
        seats=_required(data, "seats"),
        seed=data.get("seed"),
        status=data.get("status") or "ok",
        error=data.get("error"),
        turns=[
            MatchTurn(turn["agent"], turn["observation"], turn["reply"], bool(turn.get("invalid_action", False)))
            for turn in data.get("turns") or []
        ],
        tokens={name: _tokens(value) or Tokens() for name, value in (data.get("tokens") or {}).items()},
        rewards={name: float(value) for name, value in data["rewards"].items()} if finished else None,
        winner=data.get("winner"),
        reason=data.get("reason"),
        wall_s=_float(data.get("wall_s")),
        game=data.get("game"),
    )
