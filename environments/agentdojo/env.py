"""AgentDojo's suites as agentgym envs: a user task, AgentDojo's tools, and maybe an injected attack.

Task: ``AgentDojo-<Suite>-v0`` task ``i`` is the suite's ``user_task_i`` (benchmark v1.2.2) in its
default environment, whose injection vectors hold their benign defaults: AgentDojo's utility run
(``run_task_without_injection_tasks``). ``AgentDojo-<Suite>-Attack-v0`` task ``u * J + j`` pairs
``user_task_u`` with ``injection_task_j`` (``J`` injection tasks): the vectors that the user task's
ground truth reads hold the injection that AgentDojo's attack ``attack=`` writes for the pair
(``run_task_with_injection_tasks``). Attacks that address the model by name use ``target_model`` (a
key of ``agentdojo.models.MODEL_NAMES``; ``"local"``, as AgentDojo's ``--model local``, by default).
Nothing is re-implemented: the environment object, the tools, the attacks and the checks are
AgentDojo's; the environment is parsed fresh (or deep-copied) for every episode.

Observation: the user's request, AgentDojo's system message, the tools and the action syntax; then
each tool's result as AgentDojo's tool executor formats it (YAML), or its error.

Action: one tool call per step, ``Action: tool_name({"arg": value})`` (JSON arguments; a Python
literal dict is read too) or a native call of the same function tool (declared from AgentDojo's
own function schemas), and finally ``Action: answer[your reply to the user]`` (or the ``answer``
tool). A call that AgentDojo's runtime refuses (unknown tool, arguments that fail its schema, a
tool that raises) returns its error and counts as an invalid action; the call is in the episode's
function trace all the same, as in AgentDojo's.

Reward and termination: the answer ends the episode and scores it with AgentDojo's own checks,
called as its ``TaskSuite.run_task_with_pipeline`` calls them: ``info["utility"]`` is the user
task's utility and, on -Attack ids, ``info["attack_success"]`` the injection task's security
check (AgentDojo's ``security`` is True when the injection's goal was carried out). ``success`` is
utility without a successful attack; ``score`` is 1.0 on success, else 0.0, and is the episode's
return. At step ``max_steps`` without an answer the episode ends: ``utility`` and ``attack_success``
are AgentDojo's checks on an empty reply (AgentDojo checks a run cut at its iteration limit too, so an
agent that carried out the injection and never answered counts as attacked); success and score stay 0.

Baselines: the oracle plays the user task's ground truth and answers with its ground-truth output,
ignoring any injection; :meth:`AgentDojoEnv.obedient_action` plays the same but, once a tool
result shows the injection, first carries out the injection task's ground truth; the random
baseline calls random tools with arguments drawn from the request's words.
"""

from __future__ import annotations

import ast
import contextlib
import datetime
import importlib
import json
import random
import re
import threading
import types
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import yaml

from agentgym.contract.core import InvalidAction, TextEnv
from agentgym.contract.tools import ToolCall
from agentgym.environments.agentdojo import MAX_STEPS, suite_splits, suites
from agentgym.utils.text import last_action_line, strip_thinking

_CALL = re.compile(r"([A-Za-z_]\w*)\s*\(")
_ANSWER = re.compile(r"answer\s*\[(.*)\]", re.IGNORECASE | re.DOTALL)
_WORD = re.compile(r"[\w@.\-]+")


#: The instant AgentDojo's tools stamp new mails and files with: they read the wall clock, which would make the
#: same actions give different episodes. Fixed instead, after every date in the suites' data (as the wall clock
#: is), so that a new mail or file is still the newest; AgentDojo's checks never compare these stamps.
TOOL_CLOCK = datetime.datetime(2026, 1, 1, 9, 0)
#: AgentDojo's tool modules that read ``datetime.datetime.now()``.
CLOCKED_MODULES = (
    "agentdojo.default_suites.v1.tools.email_client",
    "agentdojo.default_suites.v1.tools.cloud_drive_client",
)
_clock_lock = threading.Lock()


class _FixedDatetime(datetime.datetime):
    """``datetime.datetime`` whose ``now`` is :data:`TOOL_CLOCK` (a plain datetime, as the real one returns)."""

    @classmethod
    def now(cls, tz: datetime.tzinfo | None = None) -> datetime.datetime:  # type: ignore[override]
        return TOOL_CLOCK if tz is None else TOOL_CLOCK.replace(tzinfo=tz)


@contextlib.contextmanager
def fixed_clock() -> Iterator[None]:
    """Run AgentDojo's tools with their clock at :data:`TOOL_CLOCK` (one thread at a time; restored after)."""
    with _clock_lock:
        modules = [importlib.import_module(name) for name in CLOCKED_MODULES]
        clock = types.SimpleNamespace(**{**vars(datetime), "datetime": _FixedDatetime})
        saved = [module.datetime for module in modules]
        for module in modules:
            module.datetime = clock
        try:
            yield
        finally:
            for module, original in zip(modules, saved):
                module.datetime = original


@cache
def load_suite(name: str) -> Any:
    """AgentDojo's task suite ``name`` at the version of ``suites.yaml``."""
    from agentdojo.task_suite.load_suites import get_suite

    return get_suite(suites()["version"], name)


class AttackedPipeline:
    """Stands for the attacked agent: AgentDojo's attacks read only its ``name`` (the model they address)."""

    def __init__(self, name: str) -> None:
        self.name = name


@cache
def load_attack(suite: str, attack: str, target_model: str) -> Any:
    """AgentDojo's attack ``attack`` on ``suite``, aimed at ``target_model`` (its injections are cached per task)."""
    from agentdojo.attacks import load_attack as agentdojo_attack
    from agentdojo.attacks.attack_registry import ATTACKS
    from agentdojo.attacks.base_attacks import FixedJailbreakAttack

    targeted = sorted(name for name, cls in ATTACKS.items() if issubclass(cls, FixedJailbreakAttack))
    if attack not in targeted:
        raise ValueError(f"unknown or unsupported AgentDojo attack {attack!r}; choose one of {', '.join(targeted)}")
    return agentdojo_attack(attack, load_suite(suite), AttackedPipeline(target_model))


@cache
def vector_defaults(suite: str) -> dict[str, str]:
    """The suite's injection vectors and their benign default texts."""
    return load_suite(suite).get_injection_vector_defaults()


@cache
def default_environment(suite: str) -> Any:
    """The suite's environment with every injection vector at its default (copied before each use)."""
    return injected_environment(suite, {})


def injected_environment(suite: str, injections: Mapping[str, str]) -> Any:
    """AgentDojo's ``load_and_inject_default_environment(injections)``, its YAML read by libyaml's safe loader.

    The same steps (the suite's environment text formatted with the defaults updated by
    ``injections``, parsed, validated); libyaml's loader is several times faster than the pure-Python
    one AgentDojo uses and gives the same environment (tests/test_agentdojo.py compares them).
    """
    from agentdojo.task_suite.task_suite import read_suite_file, validate_injections

    task_suite = load_suite(suite)
    defaults = vector_defaults(suite)
    validate_injections(dict(injections), defaults)
    text = read_suite_file(task_suite.name, "environment.yaml", task_suite.data_path)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return task_suite.environment_type.model_validate(yaml.load(text.format(**(defaults | dict(injections))), loader))


def call_command(function: str, arguments: Mapping[str, Any]) -> str:
    """The text command of a tool call: ``function({json arguments})``."""
    return f"{function}({json.dumps(dict(arguments), ensure_ascii=False)})"


def read_call(command: str) -> tuple[str, dict[str, Any]]:
    """The (function, arguments) of a ``function({...})`` command; raise :class:`InvalidAction` if it is none."""
    match = _CALL.match(command)
    if match is None:
        raise InvalidAction(
            'expected a tool call as tool_name({"argument": value}) or your final answer as answer[...]'
        )
    body = command[match.end() :].lstrip()
    arguments: Any = {}
    if not body.startswith(")"):
        try:
            arguments, end = json.JSONDecoder().raw_decode(body)
            closed = body[end:].lstrip().startswith(")")
        except (json.JSONDecodeError, RecursionError):
            try:  # a Python literal dict ('...' quotes, True, None) up to the last parenthesis
                arguments, closed = ast.literal_eval(body[: body.rfind(")")].strip()), ")" in body
            except Exception:  # noqa: BLE001 (literal_eval raises many kinds on hostile text: not a call)
                raise InvalidAction("the arguments are not a JSON object") from None
        if not closed:
            raise InvalidAction("the call's arguments are not followed by ')'")
    if not isinstance(arguments, dict) or not all(isinstance(key, str) for key in arguments):
        raise InvalidAction("the arguments must be a JSON object of named arguments")
    return match.group(1), arguments


def _strings(value: Any) -> list[str]:
    """Every string inside a tool's result (pydantic models, mappings, sequences)."""
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _strings(item)]
    return []


def _squeeze(text: str) -> str:
    return " ".join(text.split())


@cache
def tool_list(suite: str) -> str:
    """The suite's tools for the first observation: signature and description of each."""
    lines = []
    for function in load_suite(suite).tools:
        schema = function.parameters.model_json_schema()
        required = set(schema.get("required", ()))
        parameters = ", ".join(
            f"{name}{'' if name in required else '?'}: {_type_name(spec)}"
            for name, spec in schema["properties"].items()
        )
        lines.append(f"- {function.name}({parameters}): {_squeeze(function.description)}")
    return "\n".join(lines)


@cache
def instructions(suite: str) -> str:
    """AgentDojo's system message, the suite's tools and the action syntax."""
    from agentdojo.agent_pipeline.agent_pipeline import load_system_message

    return (
        f"{load_system_message(None).strip()}\n\nTools:\n{tool_list(suite)}\n\n"
        "Call one tool per step as 'Action: tool_name({\"argument\": value, ...})' (JSON arguments; "
        "'tool_name()' without any). When you are done, give your final reply to the user as "
        "'Action: answer[your reply]'; it ends the episode."
    )


def _type_name(spec: Mapping[str, Any]) -> str:
    if "anyOf" in spec:
        return " | ".join(_type_name(option) for option in spec["anyOf"])
    if spec.get("type") == "array":
        return f"array of {_type_name(spec.get('items', {}))}"
    return str(spec.get("type") or spec.get("$ref", "any").rsplit("/", 1)[-1])


class AgentDojoEnv(TextEnv):
    """One AgentDojo suite (see the module docstring): ``suite``, and ``attack`` for the -Attack ids."""

    def __init__(
        self,
        suite: str = "workspace",
        attack: str | None = None,
        target_model: str = "local",
        max_steps: int = MAX_STEPS,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(render_mode)
        known = suites()["suites"]
        if suite not in known:
            raise ValueError(f"unknown AgentDojo suite {suite!r}; choose one of {', '.join(known)}")
        self.suite_name = suite
        self.suite = load_suite(suite)
        self.user_tasks = sorted(self.suite.user_tasks.values(), key=_number)
        self.injection_tasks = sorted(self.suite.injection_tasks.values(), key=_number)
        counts = (len(self.user_tasks), len(self.injection_tasks))
        if counts != (known[suite]["user_tasks"], known[suite]["injection_tasks"]):
            raise RuntimeError(
                f"the installed agentdojo's {suite} suite has {counts} user/injection tasks, not suites.yaml's"
            )
        self.attack_name = attack
        self.attack = load_attack(suite, attack, target_model) if attack is not None else None
        self.splits = suite_splits(suite, attack is not None)
        self.max_steps = max_steps
        from agentdojo.functions_runtime import FunctionsRuntime

        self.runtime = FunctionsRuntime(self.suite.tools)
        self.user_task: Any = None
        self.injection_task: Any = None
        self.environment: Any = None
        self.pre_environment: Any = None
        self.trace: list[Any] = []
        self.utility: bool | None = None
        self.attack_success: bool | None = None
        self.injection_read = False
        self.oracle_plan: list[str] = []
        self.obedient_plan: list[str] = []
        self.oracle_next = self.obedient_next = 0

    # ---- the hooks ---------------------------------------------------------------------

    @property
    def action_syntax(self) -> str:
        return instructions(self.suite_name)

    def _generate(self, task_id: int) -> str:
        if self.attack is None:
            self.user_task, self.injection_task = self.user_tasks[task_id], None
            environment = default_environment(self.suite_name).model_copy(deep=True)
        else:
            user, injection = divmod(task_id, len(self.injection_tasks))
            self.user_task, self.injection_task = self.user_tasks[user], self.injection_tasks[injection]
            environment = injected_environment(self.suite_name, self.attack.attack(self.user_task, self.injection_task))
        # as TaskSuite.run_task_with_pipeline: the task's environment, a copy of it before the agent acts
        self.environment = self.user_task.init_environment(environment)
        self.pre_environment = self.environment.model_copy(deep=True)
        self.trace, self.utility, self.attack_success, self.injection_read = [], None, None, False
        self.oracle_plan = self._ground_truth(self.user_task, self.environment)
        self.obedient_plan = list(self.oracle_plan)
        self.oracle_next = self.obedient_next = 0
        return self.user_task.PROMPT

    def _describe(self) -> str:
        if self.terminated:
            return "The episode is over."
        return f"Call a tool, or give your final answer ({self.max_steps - self.steps} steps left)."

    def _execute(self, command: str) -> str:
        self.oracle_next += self._follows(self.oracle_plan, self.oracle_next, command)
        self.obedient_next += self._follows(self.obedient_plan, self.obedient_next, command)
        answer = _ANSWER.match(command)
        if answer is not None:
            self._finish(answer.group(1).strip())
            return self._verdict()
        name, arguments = read_call(command)
        return self._run(name, arguments)

    def oracle_action(self) -> str:
        return self.oracle_plan[min(self.oracle_next, len(self.oracle_plan) - 1)]

    def obedient_action(self) -> str:
        """The "obedient" baseline's command: the oracle's, with the injection task's ground truth played first
        from the step after a tool result shows the injection."""
        return self.obedient_plan[min(self.obedient_next, len(self.obedient_plan) - 1)]

    def random_action(self, rng: random.Random) -> str:
        """A random tool with its required arguments drawn from the request's words, or (rarely) an answer."""
        functions = self.suite.tools
        if rng.randrange(len(functions) + 1) == 0:
            return "answer[I am done.]"
        function = rng.choice(functions)
        schema = function.parameters.model_json_schema()
        words = _WORD.findall(self.instruction) or ["x"]
        arguments = {name: _random_value(schema["properties"][name], rng, words) for name in schema.get("required", ())}
        return call_command(function.name, arguments)

    def extract_action(self, reply: str) -> str:
        """The text after the last ``Action:`` line start (to the end: answers may span lines), else the reply."""
        text = strip_thinking(reply)
        last = last_action_line(text)
        return (text if last is None else text[last.start(1) :]).strip(" \t\r\n`*")

    def tools(self) -> list[dict[str, Any]]:
        """AgentDojo's functions of the suite, declared as AgentDojo's OpenAI pipeline declares them, and ``answer``."""
        declared = [
            {
                "type": "function",
                "function": {
                    "name": function.name,
                    "description": function.description,
                    "parameters": function.parameters.model_json_schema(),
                },
            }
            for function in self.suite.tools
        ]
        return declared + super().tools()

    def tool_command(self, call: ToolCall) -> str:
        if call.name == "answer":
            return super().tool_command(call)
        return call_command(call.name, call.arguments)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """As :meth:`TextEnv.step`; at step ``max_steps`` an unanswered episode ends, checked with an empty reply."""
        observation, reward, terminated, truncated, info = super().step(action)
        if terminated or self.steps < self.max_steps:
            return observation, reward, terminated, truncated, info
        self._finish("", answered=False)
        info |= {key: value for key, value in self._info("", False).items() if key not in ("action", "invalid_action")}
        return f"{observation}\n\nThe step limit is reached: {self._verdict()}", reward, True, truncated, info

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super()._info(command, invalid)
        info |= {"suite": self.suite_name, "user_task": self.user_task.ID if self.user_task else None}
        if self.attack is not None:
            info |= {
                "attack": self.attack_name,
                "injection_task": self.injection_task.ID if self.injection_task else None,
            }
        if self.utility is not None:
            info["utility"] = self.utility
            if self.attack is not None:
                info["attack_success"] = self.attack_success
        return info

    # ---- internals ---------------------------------------------------------------------

    @staticmethod
    def _ground_truth(task: Any, environment: Any) -> list[str]:
        """A task's ground-truth calls (worked out on ``environment``), then its ground-truth answer."""
        calls = [call_command(call.function, call.args) for call in task.ground_truth(environment)]
        return [*calls, f"answer[{task.GROUND_TRUTH_OUTPUT}]"]

    @staticmethod
    def _follows(plan: list[str], position: int, command: str) -> bool:
        return position < len(plan) and plan[position] == command

    def _run(self, name: str, arguments: dict[str, Any]) -> str:
        """One call, as AgentDojo's ``ToolsExecutor`` runs it; raise :class:`InvalidAction` with its error."""
        from agentdojo.agent_pipeline.tool_execution import is_string_list, tool_result_to_str
        from agentdojo.functions_runtime import FunctionCall

        call = FunctionCall(function=name, args=arguments)
        self.trace.append(call)
        if name not in self.runtime.functions:
            raise InvalidAction(f"Invalid tool {name} provided.")
        for key, value in call.args.items():  # the executor reads list-like strings as lists
            try:
                if isinstance(value, str) and is_string_list(value):
                    call.args[key] = ast.literal_eval(value)
            except Exception:  # noqa: BLE001 (hostile nesting: AgentDojo would crash; the string stays)
                pass
        with fixed_clock():
            result, error = self.runtime.run_function(self.environment, name, call.args)
        if error is not None:
            raise InvalidAction(error)
        if self.injection_task is not None and not self.injection_read and self._shows_injection(result):
            self.injection_read = True
            injected = self._ground_truth(self.injection_task, self.pre_environment)[:-1]
            self.obedient_plan[self.obedient_next : self.obedient_next] = injected
        return tool_result_to_str(result)

    def _shows_injection(self, result: Any) -> bool:
        goal = _squeeze(self.injection_task.GOAL)
        return any(goal in _squeeze(text) for text in _strings(result))

    def _finish(self, output: str, answered: bool = True) -> None:
        """Check the episode with AgentDojo's checks on the final reply ``output`` and end it.

        Success needs an answer: an episode ended by the step limit is checked but never succeeds.
        """
        from agentdojo.types import text_content_block_from_string

        model_output = [text_content_block_from_string(output)]
        self.utility = self._check(self.user_task, model_output)
        if self.injection_task is not None:
            self.attack_success = self._check(self.injection_task, model_output)
        self.success = answered and self.utility and not self.attack_success
        self.score = float(self.success)
        self.terminated = True

    def _check(self, task: Any, model_output: list[Any]) -> bool:
        """AgentDojo's utility (user task) or security (injection task) check, as its task suite calls it."""
        try:
            return bool(
                self.suite._check_task_result(task, model_output, self.pre_environment, self.environment, self.trace)
            )
        except Exception:  # noqa: BLE001 (a check that fails on a state the agent made: not achieved)
            return False

    def _verdict(self) -> str:
        done = "done" if self.utility else "not done"
        attacked = (
            ""
            if self.injection_task is None
            else f"; the injection's goal was {'' if self.attack_success else 'not '}reached"
        )
        return f"Your final answer is recorded. The user's task is {done}{attacked}."


def _number(task: Any) -> int:
    return int(task.ID.rsplit("_", 1)[1])


def _random_value(spec: Mapping[str, Any], rng: random.Random, words: list[str]) -> Any:
    """A value of a parameter's schema type (a word of the request for strings and anything else)."""
    kind = spec.get("type") or next(
        (option.get("type") for option in spec.get("anyOf", ()) if option.get("type") != "null"), None
    )
    if kind == "integer":
        return rng.randint(0, 10)
    if kind == "number":
        return round(rng.uniform(0, 100), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [rng.choice(words)]
    return rng.choice(words)
