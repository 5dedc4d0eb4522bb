"""The evaluation runner: many episodes in flight, each written when it finishes, resumable.

``run_eval`` plans every episode of a run (env, split, task id, repeat), skips those the
results folder already holds, and plays the rest with ``concurrency`` episodes at once on
one asyncio event loop. Policies are awaited; env calls run in a thread of the env's own
(with a timeout), except for envs whose metadata sets ``inline_safe`` (pure-Python
puzzles whose calls take microseconds), which are called inline once a turn of the id (its env made,
reset and stepped once on a thread: imports, caches) has been played. An env that raises or
times out, or a policy that fails, marks that episode ``"error"`` and the run goes on.

``backend=`` runs every env on that backend whatever its item says (the episodes, and so
the results folder, are the same). With ``backend="ray"`` the envs are Ray actors spread over
the connected cluster (:mod:`agentgym.serving.backends.ray`). A run makes a new env actor only where
the cluster's alive nodes have room for it beside the run's other actors (reckoned whenever an
env is made, so a node that joins adds room and one that dies takes its actors with it); when
there is none it closes a free env of another item, or waits for an env to be freed. An env
actor that dies, alone or with its node, fails its episode like a crashed env: it is recorded
``"error"`` (``--retry-errors`` plays it again) and the run goes on with the other actors.
Each record holds the ``node_id`` of the Ray node its env ran on (None for other backends).

**Preparation while playing**: every env of the run that declares a preparation (site installs,
index builds, screenshots) is prepared for the tasks the run plays, in the background, a bounded
number at once, while the episodes of ids already ready play; an episode of an id still preparing
waits for it, outside every episode's timeout, and one whose preparation failed is recorded as an
error that says so (:mod:`agentgym.evaluation.preparation`). **Infrastructure failures** are not the policy's: an
attempt whose env raised, timed out, or ended the episode with ``info["infra_error"]`` (a page
that did not answer) is played again on a fresh env, up to ``infra_retries`` times; the record's
``retries`` says why each earlier attempt was abandoned, and only a failure of the last attempt
errors the episode. **Per-family limits**: a family that declares ``max_concurrency`` (or that the
user limits) never has more episodes in flight than that, whatever ``concurrency`` says; on Ray the
limit holds per node.

Each episode becomes an :class:`~agentgym.evaluation.records.EpisodeRecord` (its fields:
docs/results.md); :func:`~agentgym.evaluation.results.play_missing` is the resume-and-worker
loop (skip what the folder holds, ``concurrency`` workers, append each record as it finishes).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import agentgym
from agentgym.contract.core import INFRA_ERROR_KEY
from agentgym.evaluation.env_host import EnvFailure, EnvHost, InfraFailure
from agentgym.evaluation.fingerprint import recorded_fingerprint
from agentgym.evaluation.plan import EvalItem, PlannedEpisode, plan, planned_tasks
from agentgym.evaluation.preparation import (
    DEFAULT_PREPARE_CONCURRENCY,
    Preparations,
    family_limits,
    interleave,
    limit_key,
)
from agentgym.evaluation.records import EpisodeRecord, Tokens, Turn
from agentgym.evaluation.results import Tally, play_missing
from agentgym.images import ImageOptions, replace_images
from agentgym.llm.policies.base import Episode, Policy, PromptTooLong
from agentgym.safety import episode_safety
from agentgym.safety.policies import episode_violations
from agentgym.wrappers.chat import DEFAULT_SYSTEM_PROMPT, DEFAULT_TOOLS_SYSTEM_PROMPT, ActionFormat
from agentgym.wrappers.screenshots import ScreenshotRecorder

#: ``EpisodeRecord.stopped`` of an episode whose prompt outgrew the model's context (:class:`PromptTooLong`).
STOPPED_CONTEXT = "context"
#: An episode stepped inline gives the event loop a turn after this many seconds of play (as a thread would the GIL),
#: so that the replies of episodes on threads, browsers and servers are taken up while it plays.
INLINE_SLICE_S = 0.005
#: ``info`` keys a turn record leaves out: the episode record holds them once.
REDUNDANT_INFO = ("task_id", "split", "instruction", "steps")
#: ``info`` keys not in a turn's ``info``: the redundant ones, and those the turn holds as fields.
TURN_LEAVES_OUT = (*REDUNDANT_INFO, "action", "invalid_action")


@dataclass
class RunStats(Tally):
    """What ``run_eval`` did in this invocation: the episodes planned, skipped, played and errored, and more."""

    steps: int = 0  #: env steps of the episodes played
    wall_s: float = 0.0


class Runner:
    """Plays planned episodes with one policy, each into an :class:`EpisodeRecord`; ``close`` closes its envs.

    ``folder`` is the results folder (screenshots of visual envs go into it).
    """

    def __init__(
        self,
        policy: Policy,
        folder: Path,
        *,
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        history_window: int | None = None,
        env_timeout_s: float = 120.0,
        backend: str | None = None,
        action_format: ActionFormat = "text",
        images: ImageOptions | None = None,
        infra_retries: int = 2,
        retry_delay_s: float = 1.0,
        family_concurrency: Mapping[str, int] | None = None,
        ready: Callable[[str], Awaitable[str | None]] | None = None,
        slots: dict[str, asyncio.Semaphore | None] | None = None,
    ) -> None:
        self.policy = policy
        #: ``await ready(label)``: when an env of that item may be made (``None``), or why it cannot.
        self._ready = ready
        self.infra_retries = infra_retries
        self.retry_delay_s = retry_delay_s
        #: The user's per-family (or per-id) concurrency limits, over the families' own.
        self.family_concurrency = dict(family_concurrency or {})
        #: Per limit key: the semaphore of a limited family, None for an unlimited one (``slots``: shared with
        #: the runners of other policies played at once, so that a family's limit holds across them).
        self._slots: dict[str, asyncio.Semaphore | None] = {} if slots is None else slots
        self.images = images or ImageOptions()
        self.action_format = action_format
        self.folder = folder
        self.system_prompt = system_prompt
        self.history_window = history_window
        self.env_timeout_s = env_timeout_s
        self.backend = backend
        self._pools: dict[str, list[EnvHost]] = {}
        #: Every env made and not closed (free or in use), and a condition notified when one is freed or closed.
        self._hosts: set[EnvHost] = set()
        self._changed = asyncio.Condition()
        self._waiting = 0  #: episodes waiting on ``_changed`` for an env

    def close(self) -> None:
        """Close every env this runner made (hung ones are left to their threads)."""
        for host in list(self._hosts):
            self._close(host)
        self._pools.clear()

    async def play(self, planned: PlannedEpisode, worker: int = 0) -> EpisodeRecord:
        """One episode, start to end; failures become an ``"error"`` record, never an exception.

        An attempt that meets an infrastructure failure is played again on a fresh env (after
        ``retry_delay_s`` times the attempt number), up to ``infra_retries`` times; policy errors are not retried.
        """
        unprepared = None if self._ready is None else await self._ready(planned.item.label)
        if unprepared is not None:  # never played on an env that is not ready
            record = self._record(planned, _now())
            record.status, record.error = "error", f"preparing {planned.item.label} failed: {unprepared}"
            return record
        retries: list[str] = []
        async with self._slot(planned.item):  # waiting for the family's slot is not the episode's time
            started, clock = _now(), time.perf_counter()
            for attempt in range(self.infra_retries + 1):
                record, failure = await self._attempt(planned, started)
                if failure is None or attempt == self.infra_retries:
                    break
                retries.append(failure)
                await asyncio.sleep(self.retry_delay_s * (attempt + 1))
        record.retries = retries
        record.started = started
        record.wall_s = time.perf_counter() - clock
        return record

    def _slot(self, item: EvalItem) -> contextlib.AbstractAsyncContextManager[Any]:
        """Held while an episode of ``item`` is in flight: its family's semaphore where it has a limit.

        On Ray the limit is per node, kept where actors are placed (:meth:`_room_for`).
        """
        if self._backend(item) == "ray":
            return contextlib.nullcontext()
        key = limit_key(item.env, self.family_concurrency)
        if key not in self._slots:
            limit = family_limits([item.env], self.family_concurrency).get(key)
            self._slots[key] = None if limit is None else asyncio.Semaphore(limit)
        return self._slots[key] or contextlib.nullcontext()

    async def _attempt(self, planned: PlannedEpisode, started: str) -> tuple[EpisodeRecord, str | None]:
        """One attempt at an episode (``started``: the episode's start): its record, and why the env's
        infrastructure failed (None if it did not)."""
        clock = time.perf_counter()
        failed: str | None = None
        record = self._record(planned, started)
        host, broken = None, False
        try:
            host = await self._acquire(planned.item)
            record.node_id = host.node_id
            await self._play_turns(host, planned, record)
        except EnvFailure as failure:
            record.status, record.error = "error", str(failure)
            failed, broken = str(failure), True
        except Exception as error:  # the policy failed; the env is still sound
            record.status, record.error = "error", f"policy {type(error).__name__}: {error}"
        finally:
            if host is not None:
                await self._release(host, broken)
        # Images are kept in the record as their screenshot files (OUT/screenshots/...), not as data URLs;
        # only a run that shows images has messages with content parts.
        if self.images.images and any(isinstance(message.get("content"), list) for message in record.messages):
            saved = [path for path in record.screenshots or () if path]
            record.messages = replace_images(list(record.messages), itertools.chain(saved, itertools.repeat(None)))
        else:  # no message has content parts: no image to replace
            record.messages = list(record.messages)
        if record.status == "error":
            record.success, record.score = False, 0.0
        record.wall_s = time.perf_counter() - clock
        return record, failed

    def _record(self, planned: PlannedEpisode, started: str) -> EpisodeRecord:
        """The record of an episode about to be played (its identity; the play fills the rest)."""
        return EpisodeRecord(
            key=planned.key,
            env=planned.item.label,
            env_id=planned.item.env,
            env_kwargs=planned.item.kwargs,
            split=planned.item.split,
            task_id=planned.task_id,
            repeat=planned.repeat,
            seed=planned.seed,
            policy=self.policy.name,
            started=started,
        )

    async def _acquire(self, item: EvalItem) -> EnvHost:
        """A free env of ``item``; a new one if there is room for it, after closing a free env of
        another item if there is not; else wait until an env is freed."""
        pool = self._pools.get(item.label)
        if pool:  # a free env, taken without the lock (nothing here awaits)
            return pool.pop()
        async with self._changed:
            while True:
                pool = self._pools.setdefault(item.label, [])
                if pool:
                    return pool.pop()
                if await self._room_for(item):
                    break
                idle = next((hosts for label, hosts in self._pools.items() if hosts and label != item.label), None)
                if idle is not None:
                    self._close(idle.pop())
                else:
                    self._waiting += 1
                    try:
                        await self._changed.wait()
                    finally:
                        self._waiting -= 1
            host = EnvHost(
                item,
                self.system_prompt,
                self.history_window,
                self.env_timeout_s,
                self.backend,
                self.action_format,
                self.images,
            )
            self._hosts.add(host)
        try:
            await host.start()
        except BaseException:
            await self._release(host, broken=True)
            raise
        return host

    async def _release(self, host: EnvHost, broken: bool) -> None:
        """Give ``host`` back to its item's pool, or close it when it is ``broken``."""
        if not broken:
            host.warm()
            if not self._waiting:  # nobody to wake: no lock needed (nothing here awaits)
                self._pools[host.item.label].append(host)
                return
        async with self._changed:
            if broken:
                self._close(host)
            else:
                self._pools[host.item.label].append(host)
            self._changed.notify_all()

    def _close(self, host: EnvHost) -> None:
        self._hosts.discard(host)
        host.close()

    def _backend(self, item: EvalItem) -> str:
        return self.backend or item.kwargs.get("backend", "local")

    async def _room_for(self, item: EvalItem) -> bool:
        """Whether another env of ``item`` may be made now: always, but on Ray only if the cluster
        has room for it beside this run's other env actors (or this run has none, which nothing
        would free)."""
        if self._backend(item) != "ray":
            return True
        actors = [
            (host.node_id, host.item.env, host.item.kwargs) for host in self._hosts if self._backend(host.item) == "ray"
        ]
        if not actors:
            return True
        from agentgym.serving.backends.ray import has_room

        return await asyncio.to_thread(has_room, actors, item.env, item.kwargs, self.family_concurrency)

    async def _play_turns(self, host: EnvHost, planned: PlannedEpisode, record: EpisodeRecord) -> None:
        chat = host.chat
        assert chat is not None
        run_in_env = None if host.inline else host.call
        episode = Episode(planned.key, planned.seed, chat.unwrapped, run_in_env=run_in_env, tools=chat.tools)
        options = {"task_id": planned.task_id}
        recorder = chat.env if isinstance(chat.env, ScreenshotRecorder) else None
        if recorder is not None:  # screenshots of dict observations go to OUT/screenshots/<episode>/N.png
            folder = self.folder
            recorder.record_to(folder / "screenshots" / _file_name(planned.key), relative_to=folder)
        messages, info = await host.call(lambda: chat.reset(seed=planned.seed, options=options))
        if recorder is not None and any(recorder.saved):
            record.screenshots = recorder.saved  # observation N's file; the list grows with each step
        record.instruction = info.get("instruction", "")
        record.messages = chat.transcript
        turns = record.turns
        tokens = record.tokens = Tokens()
        act, call, clock = self.policy.act, host.call, time.perf_counter
        # An inline env is stepped without a coroutine, and asked for a reply ready at once first.
        step_now = host.step_now if host.inline else None
        act_now = self.policy.act_now if host.inline else None
        terminated = truncated = False
        yielded = clock()
        while True:
            started = clock()
            if step_now is not None and started - yielded > INLINE_SLICE_S:  # inline turns run without awaiting
                await asyncio.sleep(0)
                started = yielded = clock()
            try:
                reply = None if act_now is None else act_now(messages, episode)
                if reply is None:
                    reply = await act(messages, episode)
            except PromptTooLong:  # the model cannot read this turn: the episode ends, failed by the model
                record.stopped, truncated = STOPPED_CONTEXT, True
                break
            replied = clock()
            if step_now is not None:
                messages, reward, terminated, truncated, info = step_now(reply.action)
            else:
                messages, reward, terminated, truncated, info = await call(partial(chat.step, reply.action))
            if step_now is None:  # a turn played on the env's thread: an inline-safe env goes inline from the next
                host.warm()
                if host.inline:
                    step_now, act_now = host.step_now, self.policy.act_now
            turn_info = info.copy()
            for key in TURN_LEAVES_OUT:
                turn_info.pop(key, None)
            # Turn's fields in order (positional: a step's record is built for every step of every episode)
            turns.append(
                Turn(
                    info.get("action", reply.text),
                    reward,
                    bool(info.get("invalid_action", False)),
                    terminated,
                    truncated,
                    turn_info,
                    replied - started,
                    clock() - replied,
                    reply.prompt_tokens,
                    reply.completion_tokens,
                    reply.tool_calls or None,  # the calls as the model made them (the env's reading: info["tool_call"])
                    reply.finish_reason,
                    reply.dropped_turns,
                )
            )
            tokens.prompt += reply.prompt_tokens
            tokens.completion += reply.completion_tokens
            record.return_ += reward
            if terminated or truncated:
                break
        record.success = bool(info.get("success", False))
        record.score = float(info.get("score", 0.0))
        record.utility, record.attack_success = episode_safety(info)
        record.policy_violations = episode_violations(info)
        record.steps = len(turns)
        record.terminated, record.truncated = terminated, truncated
        if info.get(INFRA_ERROR_KEY):
            raise InfraFailure(f"the env's infrastructure failed: {info[INFRA_ERROR_KEY]}")


def _file_name(key: str) -> str:
    """A file-system-safe, collision-free folder name for an episode key."""
    safe = "".join(char if char.isalnum() or char in "-_." else "_" for char in key)
    return f"{safe}-{hashlib.blake2b(key.encode(), digest_size=4).hexdigest()}"


def _now() -> str:
    """The UTC time as ``2026-01-02T03:04:05.678901Z``."""
    now = time.time()
    seconds = int(now)
    return f"{_utc_second(seconds)}.{int((now - seconds) * 1e6):06d}Z"


@lru_cache(maxsize=1)
def _utc_second(seconds: int) -> str:
    """``2026-01-02T03:04:05`` of a Unix time in whole seconds (the last one cached: episodes start many a second)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def run_description(
    policy_spec: str,
    policy: Policy,
    items: list[EvalItem],
    *,
    seed: int,
    system_prompt: str | None,
    history_window: int | None,
    suite: str | None,
    action_format: ActionFormat = "text",
    images: ImageOptions | None = None,
    protocol: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``run.json`` of an eval: enough to resume it and to label it on a leaderboard.

    A run of a published protocol's suite records the protocol (``"protocol"``: its name, source,
    metrics and differences); other runs have no such key.
    """
    description = {
        "agentgym_version": agentgym.__version__,
        "created": _now(),
        "policy": policy_spec,
        "policy_info": policy.describe(),
        "suite": suite,
        "seed": seed,
        "system_prompt": system_prompt,
        "history_window": history_window,
        "action_format": action_format,
        # What a VLM is shown of screen envs (mode text: nothing but text, as for text models).
        "observation": (images or ImageOptions()).describe(),
        "items": [item.describe() for item in items],
        # Each id's committed task-set fingerprint (None: exempt or unrecorded); see agentgym.evaluation.fingerprint.
        "env_fingerprints": {item.env: recorded_fingerprint(item.env) for item in items},
    }
    if protocol is not None:
        description["protocol"] = dict(protocol)
    return description


@dataclass
class Together:
    """What the runs of several policies played at once (:func:`run_eval` with ``together=``) share: one
    preparation of each env (None: not prepared) and the families' slots, so that a family's
    ``max_concurrency`` holds across the runs. Make it with :meth:`start` on the running event loop; ``aclose``."""

    preparations: Preparations | None
    slots: dict[str, asyncio.Semaphore | None]

    @classmethod
    def start(
        cls,
        items: list[EvalItem],
        *,
        seed: int = 0,
        backend: str | None = None,
        prepare: bool = True,
        on_prepare: Callable[[str], None] | None = None,
        prepare_concurrency: int = DEFAULT_PREPARE_CONCURRENCY,
        on_preparing: Callable[[Preparations], None] | None = None,
    ) -> Together:
        """Start preparing ``items``' envs for the tasks a run with ``seed`` plays (see :func:`run_eval`)."""
        preparations = None
        if prepare:
            preparations = Preparations(
                items,
                backend,
                on_prepare or (lambda line: None),
                planned_tasks(plan(items, seed)),
                prepare_concurrency,
                on_change=(lambda: on_preparing(preparations)) if on_preparing is not None else (lambda: None),
            )
            preparations.start()
        return cls(preparations, {})

    async def aclose(self) -> None:
        if self.preparations is not None:
            await self.preparations.aclose()


async def run_eval(
    policy_spec: str,
    policy: Policy,
    items: list[EvalItem],
    out: Path | str,
    *,
    seed: int = 0,
    concurrency: int = 64,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    history_window: int | None = None,
    env_timeout_s: float = 120.0,
    retry_errors: bool = False,
    backend: str | None = None,
    suite: str | None = None,
    on_episode: Callable[[EpisodeRecord], None] | None = None,
    on_plan: Callable[[int, int], None] | None = None,
    action_format: ActionFormat = "text",
    images: ImageOptions | None = None,
    prepare: bool = True,
    on_prepare: Callable[[str], None] | None = None,
    prepare_concurrency: int = DEFAULT_PREPARE_CONCURRENCY,
    on_preparing: Callable[[Preparations], None] | None = None,
    infra_retries: int = 2,
    family_concurrency: Mapping[str, int] | None = None,
    protocol: Mapping[str, Any] | None = None,
    together: Together | None = None,
) -> RunStats:
    """Run (or resume) an evaluation into ``out``; returns what this invocation did.

    ``backend`` runs every env there (see the module docstring); ``on_plan(total,
    already_done)`` is called once before playing (for a progress bar), ``on_episode(record)``
    after each finished episode. ``action_format`` ``"tools"`` plays native tool calls: the
    policy is offered each env's function tools and its tool calls are the actions (see
    :class:`~agentgym.wrappers.chat.ChatWrapper`); ``run.json`` records it. ``images``
    (:class:`~agentgym.images.ImageOptions`) sends screen envs' screenshots to the policy
    as image content parts (browser envs are made with ``screenshot=True``); ``run.json`` records them.

    With ``prepare``, every env's preparation (for the tasks this run plays) runs in the background,
    ``prepare_concurrency`` at once, while the episodes of ready ids play (``on_prepare(line)`` gets its
    progress lines, ``on_preparing(preparations)`` is called whenever one starts or ends: see
    :class:`~agentgym.evaluation.preparation.Preparations`). ``infra_retries`` bounds the replays of an
    episode whose env's infrastructure failed; ``family_concurrency`` (family or id -> N) overrides the
    families' declared limits.
    ``protocol`` (a published protocol suite's block) is recorded in ``run.json``. With ``together`` (a
    :class:`Together` of runs played at once, over the same ``items`` and ``seed``), this run waits on its
    preparations instead of making its own (``prepare`` and the preparation arguments are then its) and shares
    its families' slots.
    """
    if action_format == "tools" and system_prompt == DEFAULT_SYSTEM_PROMPT:
        system_prompt = DEFAULT_TOOLS_SYSTEM_PROMPT  # the text prompt asks for 'Action:' lines
    description = run_description(
        policy_spec,
        policy,
        items,
        seed=seed,
        system_prompt=system_prompt,
        history_window=history_window,
        suite=suite,
        action_format=action_format,
        images=images,
        protocol=protocol,
    )
    planned = plan(items, seed)
    if family_limits({item.env for item in items}, family_concurrency):  # no capped family at the queue's head
        planned = interleave(planned, key=lambda episode: limit_key(episode.item.env, family_concurrency))
    own = together is None
    together = together or Together.start(
        items,
        seed=seed,
        backend=backend,
        prepare=prepare,
        on_prepare=on_prepare,
        prepare_concurrency=prepare_concurrency,
        on_preparing=on_preparing,
    )
    preparations = together.preparations
    runner = Runner(
        policy,
        Path(out),
        system_prompt=system_prompt,
        history_window=history_window,
        env_timeout_s=env_timeout_s,
        backend=backend,
        action_format=action_format,
        images=images,
        infra_retries=infra_retries,
        family_concurrency=family_concurrency,
        ready=None if preparations is None else preparations.wait,
        slots=together.slots,
    )
    steps = 0

    def finished(record: EpisodeRecord) -> None:
        nonlocal steps
        steps += record.steps
        if on_episode is not None:
            on_episode(record)

    clock = time.perf_counter()
    try:
        tally = await play_missing(
            out,
            description,
            planned,
            runner.play,
            concurrency=concurrency,
            retry_errors=retry_errors,
            on_plan=on_plan,
            on_record=finished,
            playable=None if preparations is None else lambda episode: preparations.ready(episode.item.label),
        )
    finally:
        runner.close()
        if own:
            await together.aclose()
    return RunStats(**vars(tally), steps=steps, wall_s=time.perf_counter() - clock)
