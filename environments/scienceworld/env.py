"""ScienceWorld (Wang et al., 2022): elementary-school science tasks in a simulated world.

Tasks: all 7,207 variations of ScienceWorld's 30 task types (boil a substance, grow a
plant, build a circuit, find an animal, measure a melting point, Mendelian genetics, ...),
with the official train/dev/test variation split; see :mod:`.tasks` for how task ids map
to ``(task type, variation)`` (``info["task_name"]``, ``info["variation"]``;
:func:`~.tasks.task_ids` lists one task type's ids). The simulator is the
``scienceworld`` package's (1.2.3), run in a JVM of this env's own (:mod:`.engine`),
started at the first ``reset`` and reused by later resets, stopped by ``close()``.

Observation: the first one holds the task description (the instruction), the action
syntax and the room the agent starts in (ScienceWorld's first ``look around``). After each
step: the command played (``> open door to kitchen``) and the simulator's answer.

Action: one ScienceWorld command (templates in :data:`ACTION_SYNTAX`, e.g. ``open door to
kitchen``, ``pick up thermometer``, ``move metal pot to stove``, ``focus on water``), sent to
the simulator as typed. An ambiguous command gets a numbered list of what it could mean;
the agent answers with the number (anything else cancels the choice). Invalid actions
(reward 0, ``info["invalid_action"]``): commands the simulator does not understand (it
answers "No known action matches that input." or, after an ambiguity prompt, "Unknown
action."), empty commands, commands over 300 characters or with characters that are not
text, and ``reset task`` (which would wipe the episode's progress: call ``reset()``).

Reward and score: ScienceWorld's score (0-100, from the task's sub-goals) over 100 is
``info["score"]``; a step's reward is its change. Success is a score of 100, which ends
the episode. A failure (focusing on the wrong object, e.g.; the simulator's score becomes
negative) also ends it, with score 0 and success False. ``info["engine_score"]`` holds the
simulator's own score. Truncation comes from the registered step limit.

Oracle: the simulator's gold action sequence for the variation (computed on first use, in
a second simulator instance of the same JVM: a second or two, 10-60 s for the Mendelian
genetics tasks). It is a walkthrough from the start of the episode, not a planner; it
holds numbers that answer ambiguity prompts, and a few commands the simulator rejects
(played as invalid actions, as the simulator's own gold run plays them).
``oracle_action()`` returns the next gold command not yet played: a command sent to the
simulator advances it only if it is that gold command, so after other commands that
changed the world the walkthrough may no longer lead to success; ``look around`` once it
is used up. Played from the start it reaches 100 on nearly every variation
(``benchmarks/results/scienceworld_env.md`` has the rates per task type).

Random baseline and ``available_actions``: the simulator's valid action-object
combinations in the current state (hundreds of commands; one JVM call of tens of
milliseconds). ``info["available_actions"]`` holds them only with ``list_actions=True``.

Simplifications (kwarg ``simplifications``): ``""`` (default, as AgentGym), ``"easy"`` (all
of them), or a comma-separated subset of :data:`SIMPLIFICATIONS` (``teleportAction`` adds
``teleport to OBJ``, ``openDoors``, ``openContainers``, ``selfWateringFlowerPots``,
``noElectricalAction``).

Determinism: the simulator is deterministic per variation with the default JVM options
(see :data:`.engine.DEFAULT_JVM_OPTIONS`), in one JVM and across JVMs; seeds only choose
the task when ``reset`` gets no ``task_id``. If the JVM dies, ``step`` raises
:class:`~.engine.EngineError` and the next ``reset`` starts a new JVM.
"""

from __future__ import annotations

import random
from typing import Any

from agentgym.contract.core import InvalidAction, TextEnv
from agentgym.environments.scienceworld.engine import DEFAULT_JVM_OPTIONS, Engine, EngineError
from agentgym.environments.scienceworld.tasks import SPLITS, task_of

SIMPLIFICATIONS = ("teleportAction", "selfWateringFlowerPots", "openContainers", "openDoors", "noElectricalAction")
MAX_COMMAND_CHARS = 300
#: How the simulator answers a command it cannot parse ("Unknown action." after an ambiguity prompt).
UNKNOWN_COMMAND_ANSWERS = ("No known action matches that input.", "Unknown action.")

ACTION_SYNTAX = (
    "Reply with one ScienceWorld command, e.g. 'Action: open door to kitchen'. OBJ is a thing or place "
    "you can see, named as the game names it.\n"
    "- look around; look at OBJ; look in OBJ; inventory; task (repeat the task)\n"
    "- go to OBJ (a room, through an open door); open OBJ; close OBJ\n"
    "- pick up OBJ; put down OBJ; move OBJ to OBJ; pour OBJ in OBJ; dunk OBJ in OBJ; mix OBJ\n"
    "- activate OBJ; deactivate OBJ; use OBJ on OBJ; connect OBJ to OBJ; disconnect OBJ\n"
    "- eat OBJ; flush OBJ; read OBJ\n"
    "- wait (10 time steps); wait1 (1 time step)\n"
    "- focus on OBJ: declares the object the task is about; focusing on a wrong one fails the task\n"
    "If the game lists numbered choices for an ambiguous command, reply with the number."
)
TELEPORT_SYNTAX = "\n- teleport to OBJ: go straight to a room"


def check_simplifications(simplifications: str) -> str:
    """``simplifications`` if ScienceWorld knows them (``""``, ``"easy"`` or a comma-separated subset)."""
    known = {"easy", *SIMPLIFICATIONS}
    unknown = [name for name in simplifications.split(",") if name and name not in known]
    if unknown:
        raise ValueError(f"unknown ScienceWorld simplifications {unknown}; use '', 'easy' or some of {SIMPLIFICATIONS}")
    return simplifications


class ScienceWorldEnv(TextEnv):
    """ScienceWorld's 30 task types and their variations (see the module docstring)."""

    splits = SPLITS

    def __init__(
        self,
        render_mode: str | None = None,
        simplifications: str = "",
        list_actions: bool = False,
        jvm_options: tuple[str, ...] = DEFAULT_JVM_OPTIONS,
    ) -> None:
        super().__init__(render_mode)
        self.simplifications = check_simplifications(simplifications)
        self.list_actions = list_actions
        self.jvm_options = tuple(jvm_options)
        self.engine: Engine | None = None  # started by the first reset
        self.task_name = ""
        self.variation = -1
        self.engine_score = 0
        self._text = ""
        self._played: list[str] = []  # the commands sent to the simulator this episode
        self._gold: list[str] | None = None
        self._gold_position = 0
        self._valid_actions: list[str] | None = None  # cached until the next step

    @property
    def action_syntax(self) -> str:
        teleport = any(name in self.simplifications.split(",") for name in ("easy", "teleportAction"))
        return ACTION_SYNTAX + (TELEPORT_SYNTAX if teleport else "")

    def _started_engine(self) -> Engine:
        """The engine, started (or restarted, after a crash) here: at reset only."""
        if self.engine is None or not self.engine.alive:
            if self.engine is not None:
                self.engine.close()
            self.engine = Engine(self.jvm_options)
        return self.engine

    def _live_engine(self) -> Engine:
        """The engine of this episode; raises :class:`EngineError` if its JVM died (``reset()`` restarts it)."""
        if self.engine is None:
            raise EngineError("the ScienceWorld JVM is not running (the env was closed); call reset()")
        self.engine.check_alive()
        return self.engine

    def _generate(self, task_id: int) -> str:
        self.task_name, self.variation = task_of(task_id)
        engine = self._started_engine()
        self._text = engine.load(self.task_name, self.variation, self.simplifications)
        self.engine_score = 0
        self._played, self._gold, self._gold_position, self._valid_actions = [], None, 0, None
        return engine.task_description()

    def _describe(self) -> str:
        return self._text

    def _execute(self, command: str) -> str:
        if not command:
            raise InvalidAction("type a command, e.g. 'look around'")
        if len(command) > MAX_COMMAND_CHARS:
            raise InvalidAction(f"ScienceWorld commands are short; this one has {len(command)} characters")
        command = " ".join(command.split())
        if not command.isprintable():
            raise InvalidAction("the command holds control characters or characters that are not text")
        if command.lower() == "reset task":
            raise InvalidAction("'reset task' is disabled here (it would wipe the episode's progress); call reset()")
        engine = self._live_engine()
        answer = engine.step(command)
        self._valid_actions = None
        self._played.append(command)
        self._advance_gold(command)
        if answer.startswith(UNKNOWN_COMMAND_ANSWERS):
            raise InvalidAction(answer.strip())
        self._text = answer.strip()
        self.engine_score = engine.score()
        completed = engine.completed()
        self.terminated = completed or self.engine_score < 0
        self.success = completed and self.engine_score >= 100
        self.score = min(max(self.engine_score, 0), 100) / 100
        return f"> {command}"

    # ---- oracle, random baseline, available actions ----------------------------------

    def gold_actions(self) -> list[str]:
        """The simulator's gold action sequence for this episode's variation (made on first use)."""
        if self._gold is None:
            self._gold = self._live_engine().gold_actions(self.task_name, self.variation, self.simplifications)
            self._gold_position = 0
            for command in self._played:
                self._advance_gold(command)
        return self._gold

    def _advance_gold(self, command: str) -> None:
        gold = self._gold
        if gold is not None and self._gold_position < len(gold) and _same(command, gold[self._gold_position]):
            self._gold_position += 1

    def oracle_action(self) -> str:
        gold = self.gold_actions()
        return gold[self._gold_position] if self._gold_position < len(gold) else "look around"

    def valid_actions(self) -> list[str]:
        """The simulator's valid action-object combinations now, sorted (``reset task`` left out)."""
        if self._valid_actions is None:
            actions = self._live_engine().valid_actions()
            self._valid_actions = sorted(action for action in set(actions) if action != "reset task")
        return self._valid_actions

    def available_actions(self) -> list[str] | None:
        return self.valid_actions() if self.list_actions else None

    def random_action(self, rng: random.Random) -> str:
        return rng.choice(self.valid_actions())

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super()._info(command, invalid)
        info["task_name"] = self.task_name
        info["variation"] = self.variation
        info["engine_score"] = self.engine_score
        return info

    def close(self) -> None:
        """Stop this env's JVM (a later reset starts a new one)."""
        if self.engine is not None:
            self.engine.close()
            self.engine = None
        super().close()


def _same(command: str, gold: str) -> bool:
    """Whether two commands are the same up to case and spacing."""
    return " ".join(command.lower().split()) == " ".join(gold.lower().split())
