"""The environment contract every single-agent text environment follows.

An agentgym environment is a :class:`gymnasium.Env` whose action is the raw text an LLM
produced and whose observation is text. :class:`TextEnv` implements the contract once:

* ``reset(seed=..., options={"task_id": N})`` picks a task (by id, or drawn from a split)
  and returns the first observation: the instruction, the action syntax and the state.
* ``step(reply)`` extracts the command from the reply (:func:`parse_action`), executes it,
  and never raises on any string: a command that cannot be parsed or executed yields an
  observation saying why, reward 0 and ``info["invalid_action"] = True``.
* ``step`` also takes a native tool call on the function tools that ``tools()`` declares
  (an OpenAI assistant message with ``tool_calls``, or one call dict): the call is checked
  against its tool's schema and mapped onto the family's text command, so both formats
  share one execution path; a malformed call is an invalid action like a malformed reply
  (see :mod:`agentgym.contract.tools` and docs/tool-calls.md).
* The reward of a step is the change of the episode's score, so an episode's return is
  its final ``info["score"]`` (in [0, 1]).
* ``info`` always holds ``task_id``, ``split``, ``instruction``, ``action`` (the extracted
  command), ``invalid_action``, ``success``, ``score`` and ``steps``, plus
  ``available_actions`` where the action set is enumerable.

``metadata["inline_safe"] = True`` declares that ``reset`` and ``step`` are pure Python,
never block on I/O and take at most milliseconds, so that a runner may call them on its
event loop instead of a thread.

A family subclasses :class:`TextEnv` and supplies the rules: ``_generate`` (set up a task),
``_describe`` (the state as text), ``_execute`` (apply one command), ``action_syntax`` and
``oracle_action``.

A failure of the env's own infrastructure (not the agent's doing) is signalled by raising
:class:`InfrastructureError`, or by ending the episode with ``info[INFRA_ERROR_KEY]`` set to a
reason; the evaluation runner retries such episodes and records the retries.
"""

from __future__ import annotations

import abc
import hashlib
import random
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

import gymnasium as gym
from gymnasium import spaces

from agentgym.contract.reply_text import last_action_line, strip_thinking
from agentgym.contract.tools import (
    DEFAULT_TOOLSET,
    GENERIC_TOOLS,
    Tool,
    ToolCall,
    ToolCallError,
    is_tool_action,
    load_tools,
    read_action,
    resolve_call,
)

T = TypeVar("T")
Split = Literal["train", "dev", "test"]
SPLIT_NAMES: tuple[Split, ...] = ("train", "dev", "test")

#: Characters ``UnicodeText.sample`` draws from; ``contains`` admits any character.
SAMPLE_CHARSET = string.printable + "éüßñøçå—–…“”‘’€£¥°±×÷中文字日本語한국어абвгдеΩπλ🙂"


class UnicodeText(spaces.Text):
    """A text space that contains every unicode string up to ``max_length`` characters.

    Gymnasium's :class:`~gymnasium.spaces.Text` only contains strings over its charset;
    LLM replies and observations hold any character, so ``contains`` checks only the type
    and length. ``sample`` draws from :data:`SAMPLE_CHARSET` (printable ASCII, whitespace
    and some non-Latin characters).
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | None = None):
        super().__init__(max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"


class TextOrToolCall(UnicodeText):
    """The action space of text envs: a reply (any unicode string up to ``max_length``) or a tool call.

    ``contains`` also admits a dict shaped as an OpenAI assistant message or a single
    tool call (:func:`agentgym.contract.tools.is_tool_action`; whether the call fits the env's
    tools is decided at ``step``). ``sample`` draws strings, as :class:`UnicodeText` does.
    """

    def contains(self, x: Any) -> bool:
        return super().contains(x) or is_tool_action(x)

    def __repr__(self) -> str:
        return f"TextOrToolCall({self.min_length}, {self.max_length})"


@dataclass(frozen=True)
class TaskSplits:
    """How many tasks each split holds; task ids are global and contiguous.

    Train ids come first, then dev, then test: with ``TaskSplits(100, 10, 10)`` the train
    ids are 0..99, dev 100..109 and test 110..119.
    """

    train: int
    dev: int
    test: int

    @property
    def total(self) -> int:
        return self.train + self.dev + self.test

    def counts(self) -> dict[str, int]:
        return {"train": self.train, "dev": self.dev, "test": self.test}

    def ids(self, split: Split) -> range:
        """The task ids of ``split``."""
        start = 0
        for name in SPLIT_NAMES:
            count = getattr(self, name)
            if name == split:
                return range(start, start + count)
            start += count
        raise ValueError(f"unknown split {split!r}; expected one of {SPLIT_NAMES}")

    def split_of(self, task_id: int) -> Split:
        """The split that holds ``task_id``."""
        if not 0 <= task_id < self.total:
            raise ValueError(f"task_id {task_id} is outside 0..{self.total - 1}")
        if task_id < self.train:
            return "train"
        return "dev" if task_id < self.train + self.dev else "test"

    def bucket(self, content_key: str) -> Split:
        """Assign task *content* to a split by a stable hash, in proportion to the counts.

        Generators whose task space is small (a 4x4 lake has few maps) draw candidates
        until ``bucket(key) == split_of(task_id)``, so that no train task equals a test
        task even when two ids produce the same content.
        """
        digest = hashlib.blake2b(content_key.encode(), digest_size=8).digest()
        point = int.from_bytes(digest, "big") / 2**64 * self.total
        if point < self.train:
            return "train"
        return "dev" if point < self.train + self.dev else "test"

    def first_in_split(self, task_id: int, candidates: Iterable[tuple[str, T] | None], max_draws: int = 100_000) -> T:
        """The first candidate whose content key falls, by :meth:`bucket`, in ``task_id``'s split.

        ``candidates`` yields ``(content_key, task)``, or ``None`` for a draw the generator
        rejected. Raises ``RuntimeError`` after ``max_draws`` draws: a configuration with
        too few distinct tasks cannot fill every split.
        """
        split = self.split_of(task_id)
        for candidate, _ in zip(candidates, range(max_draws)):
            if candidate is not None and self.bucket(candidate[0]) == split:
                return candidate[1]
        raise RuntimeError(
            f"no {split} task found in {max_draws} draws for task {task_id}: this configuration has too "
            "few distinct tasks to fill every split"
        )


class InvalidAction(Exception):
    """Raised by ``TextEnv._execute`` when a command cannot be parsed or executed.

    The message tells the agent what was wrong; ``step`` turns it into an observation.
    """


#: The ``info`` key through which an env reports a failure of its infrastructure (a site or
#: browser that did not answer, a crashed engine): a short reason, set on the step that ends the
#: episode because of it. Runners retry such episodes instead of scoring them (docs/results.md).
INFRA_ERROR_KEY = "infra_error"


class InfrastructureError(RuntimeError):
    """Raised by an env when its infrastructure failed (not the agent): a site that does not
    answer, a dead container, a crashed engine. The episode cannot go on faithfully; a runner
    plays it again on a fresh env rather than scoring it. Envs that would rather end the
    episode gracefully set ``info[INFRA_ERROR_KEY]`` instead."""


_WRAPPING = " \t\r\n`*\"'"


def split_reply(reply: str) -> tuple[str, str]:
    """Split an LLM reply into (talk, command).

    Reasoning before a closing ``</think>`` is dropped. If a line starts with ``Action:``
    (also ``**Action:**``, ``> action:`` and the like), the command is the text after the
    last such line's colon and the talk is everything before that line; otherwise the
    whole reply is the command and the talk is empty. The command is stripped of
    surrounding whitespace, quotes, backticks and asterisks, and of a final full stop or
    exclamation mark; the talk of surrounding whitespace.

    >>> split_reply("I'll go up.\nAction: up")
    ("I'll go up.", 'up')
    """
    reply = strip_thinking(reply)
    last = last_action_line(reply)
    talk, command = ("", reply) if last is None else (reply[: last.start()], last.group(1))
    return talk.strip(), command.strip(_WRAPPING).rstrip(".!").strip(_WRAPPING)


def parse_action(reply: str) -> str:
    """The command in an LLM reply (see :func:`split_reply`).

    >>> parse_action("I should go up.\nAction: up")
    'up'
    >>> parse_action("  `left` ")
    'left'
    """
    return split_reply(reply)[1]


def observation_text(observation: Any) -> str:
    """The text of an observation: the ``str`` itself, or the ``"text"`` entry of a dict."""
    return observation["text"] if isinstance(observation, dict) else str(observation)


def quote(text: str, limit: int = 80) -> str:
    """A short, printable quotation of untrusted text for feedback messages."""
    return repr(text if len(text) <= limit else text[:limit] + "…")


class TextEnv(gym.Env[str, str], abc.ABC):
    """Base class of agentgym's text environments (see the module docstring).

    Subclasses set ``splits`` and implement ``_generate``, ``_describe``, ``_execute``,
    ``action_syntax`` and ``oracle_action``. They keep ``self.score`` (in [0, 1]),
    ``self.success`` and ``self.terminated`` up to date; the base class resets those
    three before ``_generate``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    splits: ClassVar[TaskSplits]
    #: Upper bound on observation length, used by the observation space.
    max_observation_chars: ClassVar[int] = 200_000
    #: Upper bound on reply length in the action space; longer replies are still handled.
    max_action_chars: ClassVar[int] = 65_536
    #: False where the family ships no scripted solver for this task (some MiniWoB++ pages):
    #: ``oracle_action`` then returns a harmless command and the oracle baseline fails there.
    has_oracle: bool = True
    #: The data file that declares the family's function tools: beside the env module, or in a
    #: package enclosing it within the family (a family split into sub-packages keeps one file);
    #: searched up the class hierarchy; an env without one gets a generic ``act(command)``.
    tool_file: ClassVar[str] = "tools.yaml"
    #: Which toolset of :attr:`tool_file` this class uses.
    toolset: ClassVar[str] = DEFAULT_TOOLSET
    #: The name :meth:`task_rng` seeds task generators with (None: the class's own name). A
    #: variant that plays another class's tasks (a visual view of a text family) names that class.
    task_seed_name: ClassVar[str | None] = None

    def __init__(self, render_mode: str | None = None) -> None:
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None")
        self.render_mode = render_mode
        self.action_space = TextOrToolCall(self.max_action_chars)
        self.observation_space = UnicodeText(self.max_observation_chars)
        self.task_id: int | None = None
        self.split: Split = "train"
        self.instruction = ""
        self.score = 0.0
        self.success = False
        self.terminated = False
        self.steps = 0

    # ---- what a family implements -------------------------------------------------

    @property
    @abc.abstractmethod
    def action_syntax(self) -> str:
        """How to act: the commands and their syntax, shown in the first observation."""

    @abc.abstractmethod
    def _generate(self, task_id: int) -> str:
        """Set up task ``task_id`` deterministically and return its instruction."""

    @abc.abstractmethod
    def _describe(self) -> str:
        """The current state as text."""

    @abc.abstractmethod
    def _execute(self, command: str) -> str:
        """Apply ``command`` and return feedback; raise :class:`InvalidAction` if it is bad."""

    @abc.abstractmethod
    def oracle_action(self) -> str:
        """The command a scripted solver plays from the current state."""

    def available_actions(self) -> list[str] | None:
        """The legal commands now, or ``None`` where the action set is not enumerable."""
        return None

    def random_action(self, rng: random.Random) -> str:
        """A uniformly random legal command (the "random" baseline).

        Uses ``rng``, not the env's generator, so that a baseline never changes the
        episode's own randomness. Families without enumerable actions override this.
        """
        actions = self.available_actions()
        if not actions:
            raise NotImplementedError(f"{type(self).__name__} has no enumerable actions to sample")
        return rng.choice(actions)

    def extract_action(self, reply: str) -> str:
        """The command inside an LLM reply; override for families with other syntax."""
        return parse_action(reply)

    def tools(self) -> list[dict[str, Any]]:
        """The env's actions as OpenAI function tools (``[{"type": "function", "function": {...}}]``).

        Pass them as ``tools=`` to a chat API or ``apply_chat_template``; ``step`` accepts
        calls on them. Declared in the family's :attr:`tool_file`.
        """
        return [tool.declaration() for tool in self.tool_specs()]

    def tool_specs(self) -> tuple[Tool, ...]:
        """The declared tools with their command templates (see :mod:`agentgym.contract.tools`)."""
        key = (type(self), self.tool_file, self.toolset)
        tools = _TOOLS_BY_CLASS.get(key)
        if tools is None:
            tools = GENERIC_TOOLS
            for cls in type(self).__mro__:
                if cls is TextEnv or not issubclass(cls, TextEnv):
                    break
                found = _declared_tools(cls.__module__.rpartition(".")[0], self.tool_file, self.toolset)
                if found is not None:
                    tools = found
                    break
            _TOOLS_BY_CLASS[key] = tools
        return tools

    def tool_command(self, call: ToolCall) -> str:
        """The text command a tool call maps onto; raise :class:`~agentgym.contract.tools.ToolCallError` if it is bad.

        Checks the call against its tool's schema and fills the tool's command template;
        families whose calls need other mapping override this.
        """
        return resolve_call(self.tool_specs(), call)

    def _observation(self, text: str) -> Any:
        """The observation carrying ``text``.

        Text families return ``text`` itself; visual families override this (and set a
        ``spaces.Dict`` observation space) to return ``{"text": text, "screenshot": ...}``.
        """
        return text

    # ---- helpers for families -------------------------------------------------------

    def task_rng(self, task_id: int, *salt: object) -> random.Random:
        """A generator seeded from the class (:attr:`task_seed_name`), ``task_id`` and ``salt`` (e.g. the config).

        Stable across processes and Python versions, so a task id always yields the
        same task for the same configuration.
        """
        key = "|".join(map(str, (self.task_seed_name or type(self).__name__, task_id, *salt)))
        return random.Random(key)

    # ---- the Gymnasium API ----------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Start an episode.

        ``options={"task_id": N}`` plays task N; ``options={"split": "test"}`` draws a
        task of that split with the env's seeded generator; with neither, a train task
        is drawn. Returns the first observation (instruction, action syntax, state).
        """
        super().reset(seed=seed)
        self.task_id = self._choose_task(options or {})
        self.split = self.splits.split_of(self.task_id)
        self.score, self.success, self.terminated, self.steps = 0.0, False, False, 0
        self.instruction = self._generate(self.task_id)
        observation = f"{self.instruction}\n\n{self.action_syntax}\n\n{self._describe()}"
        return self._observation(observation), self._info(command="", invalid=False)

    def step(self, action: str | Mapping[str, Any]) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Play one reply or tool call; see the module docstring for what comes back.

        ``action`` is the text reply, an assistant message (with ``tool_calls``, or
        without: then its content is the reply) or one tool call; an :class:`InvalidAction`
        (from a wrapper that reads actions in another format, such as the computer-use
        formats) is played as an invalid action with its message. A tool-call step adds
        ``info["tool_call"]`` (``{"id", "name", "arguments"}``, ``None`` if no call could
        be read) and ``info["tool_call_ids"]`` (every call id in the action, for the
        tool messages that answer them).
        """
        if self.task_id is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        self.steps += 1
        if self.terminated:
            feedback = "The episode is over; call reset() to start a new one."
            return self._observation(feedback), 0.0, True, False, self._info(command="", invalid=True)
        if isinstance(action, InvalidAction):  # a wrapper read the reply in another format and found it bad
            observation = f"Invalid action: {action}\n\n{self._describe()}"
            return self._observation(observation), 0.0, self.terminated, False, self._info("", True)
        call_info: dict[str, Any] | None = None
        if isinstance(action, Mapping):
            command, call_info, feedback = self._read_tool_action(action)
            if feedback is not None:  # a malformed call: nothing is executed
                observation = f"{feedback}\n\n{self._describe()}"
                return self._observation(observation), 0.0, self.terminated, False, self._info("", True) | call_info
        else:
            if not isinstance(action, str):
                action = action.decode("utf-8", "replace") if isinstance(action, bytes) else str(action)
            command = self.extract_action(action)
        score_before = self.score
        try:
            feedback = self._execute(command)
            invalid = False
        except InvalidAction as error:
            feedback = f"Invalid action {quote(command)}: {error}"
            invalid = True
        observation = f"{feedback}\n\n{self._describe()}"
        reward = float(self.score - score_before)
        info = self._info(command, invalid)
        if call_info is not None:
            info |= call_info
        return self._observation(observation), reward, self.terminated, False, info

    def render(self) -> str | None:
        if self.render_mode == "ansi" and self.task_id is not None:
            return self._describe()
        return None

    # ---- internals --------------------------------------------------------------------

    def _read_tool_action(self, action: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None, str | None]:
        """(command, tool-call info or None for a text reply, feedback if the call is malformed)."""
        try:
            read = read_action(action)
            if isinstance(read, str):  # an assistant message without tool calls: its text is the reply
                return self.extract_action(read), None, None
            return self.tool_command(read), {"tool_call": read.as_info(), "tool_call_ids": [read.id]}, None
        except ToolCallError as error:
            call = error.call
            info = {"tool_call": call.as_info() if call else None, "tool_call_ids": list(error.call_ids)}
            where = f" {quote(call.name)}" if call else ""
            return "", info, f"Invalid tool call{where}: {error}"

    def _choose_task(self, options: dict[str, Any]) -> int:
        unknown = set(options) - {"task_id", "split"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; use 'task_id' or 'split'")
        if options.get("task_id") is not None:
            task_id = options["task_id"]
            if isinstance(task_id, bool) or not isinstance(task_id, int):
                raise TypeError(f"task_id must be an int, got {task_id!r}")
            self.splits.split_of(task_id)  # raises ValueError when out of range
            return task_id
        ids = self.splits.ids(options.get("split", "train"))
        return ids[int(self.np_random.integers(len(ids)))]

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        assert self.task_id is not None
        info: dict[str, Any] = {
            "task_id": self.task_id,
            "split": self.split,
            "instruction": self.instruction,
            "action": command,
            "invalid_action": invalid,
            "success": self.success,
            "score": self.score,
            "steps": self.steps,
        }
        actions = self.available_actions()
        if actions is not None:
            info["available_actions"] = actions
        return info


def _declared_tools(package: str, tool_file: str, toolset: str) -> tuple[Tool, ...] | None:
    """The toolset declared in ``package``'s ``tool_file``, or in the nearest enclosing package's
    that has one, stopping above a family (``agentgym.environments.<family>``) or a top-level package."""
    while package:
        found = load_tools(package, tool_file, toolset)
        if found is not None:
            return found
        parent = package.rpartition(".")[0]
        if parent in ("", "agentgym", "agentgym.environments"):
            return None
        package = parent
    return None


#: Each class's resolved tools, keyed by (class, tool file, toolset).
_TOOLS_BY_CLASS: dict[tuple[type, str, str], tuple[Tool, ...]] = {}
