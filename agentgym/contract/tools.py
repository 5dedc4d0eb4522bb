"""Native tool calls: an env's actions as OpenAI function tools, and reading calls back.

A family declares its tools as data: a ``tools.yaml`` next to its env module maps a
toolset name (``default``, or the ``toolset`` a class names) to a list of tools::

    default:
      - name: move
        description: Walk one cell; walking into a box pushes it.
        parameters:
          type: object
          properties:
            direction: {type: string, enum: [up, down, left, right]}
          required: [direction]
          additionalProperties: false
        command: "{direction}"

``command`` is a :meth:`str.format` template that turns a call's arguments into the
family's own text command (the one ``_execute`` already understands), or a list of
templates: the first whose fields are all among the call's arguments is used, so
optional parameters pick the longer form (``["cat {file} {start}-{end}", "cat {file}"]``).
A field written ``{name!j}`` is filled with the argument as JSON (``type({id}, {text!j})``
gives ``type(4, "hello")``); other fields with the argument as plain text.
:func:`command_to_tool_call` runs a template backwards: text command to tool call.

A call is checked against its tool's ``parameters`` before it is turned into a command;
the schemas use a small subset of JSON Schema that :func:`check_arguments` validates
(``type`` object/string/integer/number/boolean/array, ``properties``, ``required``,
``additionalProperties: false``, ``enum``, ``minimum``/``maximum``, ``minLength``,
``items``, ``description``); :func:`load_tools` refuses any other keyword, so a
declaration can never promise a check that is not made.

:func:`read_action` turns whatever ``TextEnv.step`` was given into either text or one
:class:`ToolCall`, and raises :class:`ToolCallError` with a message for the agent when a
call is malformed. See docs/tool-calls.md.
"""

from __future__ import annotations

import ast
import json
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import yaml

#: The toolset a class uses unless it names another one (``TextEnv.toolset``).
DEFAULT_TOOLSET = "default"

#: What an env without a tools file offers: one tool that takes a free-form command.
GENERIC_TOOL_SPEC: dict[str, Any] = {
    "name": "act",
    "description": "Play one command, written as the environment's instructions describe.",
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The command, e.g. what follows 'Action:'."}},
        "required": ["command"],
        "additionalProperties": False,
    },
    "command": "{command}",
}

_SCHEMA_KEYWORDS = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "items",
    "description",
}
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
}


class ToolCallError(ValueError):
    """A tool call that cannot be executed; the message is meant for the agent."""

    def __init__(self, message: str, call: ToolCall | None = None, call_ids: tuple[str | None, ...] = ()) -> None:
        super().__init__(message)
        self.call = call
        self.call_ids = call_ids


@dataclass(frozen=True)
class Tool:
    """One function tool: its OpenAI declaration and the command templates it maps onto."""

    name: str
    description: str
    parameters: dict[str, Any]
    templates: tuple[str, ...]

    def declaration(self) -> dict[str, Any]:
        """The tool in OpenAI's ``tools=[...]`` shape (a fresh copy each time)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": json.loads(json.dumps(self.parameters)),
            },
        }

    def command(self, arguments: Mapping[str, Any]) -> str:
        """The text command a (checked) call maps onto: the first template it fills.

        A template is used only if it names every argument given (an argument it would
        drop must pick another form) and the call gives every field it names.
        """
        given = set(arguments)
        for template in self.templates:
            if set(_fields(template)) == given:
                return _FORMATTER.vformat(template, (), arguments)
        forms = " or ".join(f"({', '.join(_fields(template))})" for template in self.templates)
        raise ToolCallError(
            f"{self.name} takes the arguments {forms}, not ({', '.join(arguments)})"
            if len(self.templates) > 1
            else f"{self.name} cannot take the arguments ({', '.join(arguments)})"
        )


@dataclass(frozen=True)
class ToolCall:
    """A call read from an action: the tool's name, its arguments and the caller's id."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None

    def as_info(self) -> dict[str, Any]:
        """The call as ``info["tool_call"]`` reports it."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


class _CommandFormatter(string.Formatter):
    """Formats arguments as command text; the ``!j`` conversion writes JSON."""

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion == "j":
            return json.dumps(value, ensure_ascii=False)
        return _text(value) if conversion is None else super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> str:
        return value if isinstance(value, str) and not format_spec else super().format_field(value, format_spec)


_FORMATTER = _CommandFormatter()


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return " ".join(_text(item) for item in value)
    return str(value)


def _fields(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


# ---- declarations -------------------------------------------------------------------


def tool_from_spec(spec: Mapping[str, Any], where: str = "a tool") -> Tool:
    """A :class:`Tool` from one declaration (``name``, ``description``, ``parameters``, ``command``).

    Raises ``ValueError`` naming ``where`` when the declaration is malformed: unknown
    keys, a schema keyword outside the supported subset, or a template field that is not
    a parameter.
    """
    unknown = set(spec) - {"name", "description", "parameters", "command"}
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    name = spec.get("name")
    if not isinstance(name, str) or not name.replace("_", "a").isalnum():
        raise ValueError(f"{where}: name must be letters, digits and underscores, got {name!r}")
    where = f"{where} {name!r}"
    parameters = spec.get("parameters", {"type": "object", "properties": {}, "additionalProperties": False})
    _check_schema(parameters, where)
    if parameters.get("type") != "object":
        raise ValueError(f"{where}: parameters must be a schema of type object")
    templates = spec.get("command")
    templates = (templates,) if isinstance(templates, str) else tuple(templates or ())
    if not templates or not all(isinstance(template, str) for template in templates):
        raise ValueError(f"{where}: command must be a template string or a list of them")
    known = set(parameters.get("properties", {}))
    for template in templates:
        conversions = {conversion for _, name, _, conversion in string.Formatter().parse(template) if name is not None}
        if conversions - {None, "j"}:
            raise ValueError(f"{where}: command {template!r}: the only field conversion is !j (JSON)")
        missing = set(_fields(template)) - known
        if missing:
            raise ValueError(f"{where}: command {template!r} uses fields {sorted(missing)} that are not parameters")
    return Tool(name, str(spec.get("description", "")), dict(parameters), templates)


def _check_schema(schema: Any, where: str) -> None:
    if not isinstance(schema, Mapping):
        raise ValueError(f"{where}: a schema must be a mapping, got {schema!r}")
    unsupported = set(schema) - _SCHEMA_KEYWORDS
    if unsupported:
        raise ValueError(
            f"{where}: schema keywords {sorted(unsupported)} are not supported (see agentgym.contract.tools)"
        )
    if schema.get("type") not in _TYPES:
        raise ValueError(f"{where}: schema type must be one of {sorted(_TYPES)}, got {schema.get('type')!r}")
    if schema.get("additionalProperties", False) is not False:
        raise ValueError(f"{where}: additionalProperties may only be false")
    for child in schema.get("properties", {}).values():
        _check_schema(child, where)
    if "items" in schema:
        _check_schema(schema["items"], where)
    missing = set(schema.get("required", ())) - set(schema.get("properties", {}))
    if missing:
        raise ValueError(f"{where}: required names {sorted(missing)} are not properties")


@cache
def load_tools(package: str, filename: str, toolset: str = DEFAULT_TOOLSET) -> tuple[Tool, ...] | None:
    """The toolset ``toolset`` declared in ``package``'s data file ``filename``.

    ``None`` when the package has no such file; ``KeyError`` when the file lacks the
    toolset; ``ValueError`` when a declaration is malformed. Cached per arguments.
    """
    if not package:  # a class defined in a top-level module (a script, a test) has no package data
        return None
    try:
        text = resources.files(package).joinpath(filename).read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError, NotADirectoryError):
        return None
    sets = yaml.safe_load(text)
    where = f"{package}/{filename}"
    if not isinstance(sets, dict):
        raise ValueError(f"{where}: expected a mapping from toolset names to lists of tools")
    if toolset not in sets:
        raise KeyError(f"{where} has no toolset {toolset!r}; it has {sorted(sets)}")
    tools = tuple(tool_from_spec(spec, f"{where}[{toolset}]") for spec in sets[toolset])
    names = [tool.name for tool in tools]
    if len(set(names)) != len(names):
        raise ValueError(f"{where}[{toolset}]: tool names repeat: {names}")
    return tools


GENERIC_TOOLS: tuple[Tool, ...] = (tool_from_spec(GENERIC_TOOL_SPEC, "the generic tool"),)


# ---- reading actions ------------------------------------------------------------------


def is_tool_action(action: Any) -> bool:
    """Whether ``action`` has the shape of an assistant message or a single tool call.

    A shape check only (what the action space's ``contains`` uses): whether the call
    names a tool of the env and fits its schema is decided at ``step``.
    """
    if not isinstance(action, Mapping):
        return False
    if "tool_calls" in action or action.get("role") == "assistant":
        calls = action.get("tool_calls")
        return calls is None or isinstance(calls, list)
    function = action.get("function")
    if isinstance(function, Mapping):
        return isinstance(function.get("name"), str)
    return isinstance(action.get("name"), str) and "arguments" in action


def message_text(content: Any) -> str:
    """The text of a message's ``content``: a string, or OpenAI's list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) if isinstance(part, Mapping) else str(part)
            for part in content
            if not isinstance(part, Mapping) or part.get("type", "text") == "text"
        )
    return str(content)


def read_action(action: Mapping[str, Any]) -> str | ToolCall:
    """What a dict action asks for: a text reply (``str``) or one :class:`ToolCall`.

    Accepts an assistant message (``{"role": "assistant", "content": ..., "tool_calls":
    [...]}``; without tool calls its content is the text reply), a call in OpenAI's shape
    (``{"id", "type": "function", "function": {"name", "arguments"}}``) or a bare
    ``{"name", "arguments"}``; ``arguments`` is a JSON object, as a string or a dict.
    Raises :class:`ToolCallError` for anything else, and for several calls at once: the
    env executes exactly one call per step.
    """
    if "tool_calls" in action or action.get("role") == "assistant":
        if action.get("role", "assistant") != "assistant":
            raise ToolCallError(f"a message with tool calls must have role 'assistant', not {action.get('role')!r}")
        calls = action.get("tool_calls") or []
        if not isinstance(calls, list):
            raise ToolCallError("'tool_calls' must be a list of tool calls")
        if not calls:
            return message_text(action.get("content"))
        if len(calls) > 1:
            ids = tuple(call.get("id") if isinstance(call, Mapping) else None for call in calls)
            names = [_name_of(call) for call in calls]
            raise ToolCallError(
                f"{len(calls)} tool calls in one turn ({', '.join(names)}); this environment executes exactly one "
                "tool call per step: call one tool, see its result, then call the next",
                call_ids=ids,
            )
        action = calls[0]
        if not isinstance(action, Mapping):
            raise ToolCallError(f"a tool call must be an object, got {type(action).__name__}")
    call_id = action.get("id")
    call_id = call_id if isinstance(call_id, str) else None
    function = action.get("function", action)
    if not isinstance(function, Mapping):
        raise ToolCallError("a tool call's 'function' must be an object with 'name' and 'arguments'")
    if action.get("type", "function") != "function":
        raise ToolCallError(f"only function tool calls are supported, not type {action.get('type')!r}")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ToolCallError("the tool call names no function", call_ids=(call_id,))
    arguments = function.get("arguments", {})
    if arguments is None or arguments == "":
        arguments = {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as error:
            raise ToolCallError(
                f"the arguments of {name!r} are not valid JSON ({error.msg} at character {error.pos})",
                ToolCall(name, {}, call_id),
                (call_id,),
            ) from None
    if not isinstance(arguments, dict):
        raise ToolCallError(
            f"the arguments of {name!r} must be a JSON object, got {_json_type(arguments)}",
            ToolCall(name, {}, call_id),
            (call_id,),
        )
    return ToolCall(name, arguments, call_id)


def _name_of(call: Any) -> str:
    if isinstance(call, Mapping):
        function = call.get("function", call)
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            return function["name"]
    return "?"


def check_arguments(schema: Mapping[str, Any], value: Any, path: str = "arguments") -> None:
    """Raise :class:`ToolCallError` saying what is wrong when ``value`` does not fit ``schema``."""
    kind = schema.get("type")
    if kind is not None:
        fits = isinstance(value, _TYPES[kind]) and not (kind in ("integer", "number") and isinstance(value, bool))
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            fits = True
        if not fits:
            raise ToolCallError(f"{path} must be {_article(kind)}, got {_json_type(value)} {_short(value)}")
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(json.dumps(choice) for choice in schema["enum"])
        raise ToolCallError(f"{path} must be one of {choices}; got {_short(value)}")
    if "minimum" in schema and value < schema["minimum"]:
        raise ToolCallError(f"{path} must be at least {schema['minimum']}, got {value}")
    if "maximum" in schema and value > schema["maximum"]:
        raise ToolCallError(f"{path} must be at most {schema['maximum']}, got {value}")
    if "minLength" in schema and len(value) < schema["minLength"]:
        raise ToolCallError(f"{path} must hold at least {schema['minLength']} character(s)")
    if kind == "object":
        properties = schema.get("properties", {})
        missing = [name for name in schema.get("required", ()) if name not in value]
        if missing:
            raise ToolCallError(f"missing required argument(s) {', '.join(missing)}")
        extra = [name for name in value if name not in properties]
        if extra:
            raise ToolCallError(
                f"unexpected argument(s) {', '.join(map(repr, extra))}; "
                f"the parameters are {', '.join(properties) or '(none)'}"
            )
        for name, item in value.items():
            check_arguments(properties[name], item, name if path == "arguments" else f"{path}.{name}")
    elif kind == "array" and "items" in schema:
        for index, item in enumerate(value):
            check_arguments(schema["items"], item, f"{path}[{index}]")


def _article(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def _json_type(value: Any) -> str:
    names = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def resolve_call(tools: tuple[Tool, ...], call: ToolCall) -> str:
    """The text command ``call`` maps onto, after checking it against its tool's schema."""
    for tool in tools:
        if tool.name == call.name:
            try:
                check_arguments(tool.parameters, call.arguments)
                return tool.command(call.arguments)
            except ToolCallError as error:
                raise ToolCallError(str(error), call, (call.id,)) from None
    names = ", ".join(tool.name for tool in tools)
    raise ToolCallError(f"there is no tool {call.name!r}; the tools are {names}", call, (call.id,))


# ---- text commands back to tool calls -----------------------------------------------------

_LITERAL = r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|\[.*?\]|-?\d+(?:\.\d+)?|true|false|null'


def _template_pattern(template: str, parameters: Mapping[str, Any]) -> re.Pattern[str]:
    """A regular expression that matches what ``template`` produces, one group per field."""
    properties = parameters.get("properties", {})
    parts = []
    for literal, name, _, conversion in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if name is None:
            continue
        schema = properties.get(name, {})
        if conversion == "j":
            body = _LITERAL
        elif "enum" in schema:
            body = "|".join(re.escape(_text(choice)) for choice in sorted(schema["enum"], key=lambda c: -len(str(c))))
        elif schema.get("type") == "integer":
            body = r"-?\d+"
        elif schema.get("type") == "number":
            body = r"-?\d+(?:\.\d+)?"
        else:
            body = r".+?"
        parts.append(f"(?P<{name}>{body})")
    return re.compile("".join(parts), re.DOTALL)


def _value(text: str, schema: Mapping[str, Any], conversion: str | None) -> Any:
    if conversion == "j":  # JSON, or the Python literal a text command may hold instead ('...' quotes)
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return ast.literal_eval(text)
    if "enum" in schema:
        return next(choice for choice in schema["enum"] if _text(choice) == text)
    kind = schema.get("type")
    if kind == "integer":
        return int(text)
    if kind == "number":
        return float(text) if "." in text else int(text)
    if kind == "boolean":
        return text == "true"
    return text


def command_to_tool_call(tools: tuple[Tool, ...], command: str) -> ToolCall | None:
    """The tool call that maps onto the text ``command``, or ``None`` if no tool's template yields it.

    Templates are tried with the most literal text first (so ``take {object} from
    {container}`` wins over ``take {object}``, and a catch-all ``{command}`` comes last);
    a match counts only if the call passes its schema and maps back onto ``command``
    (exactly; for templates with ``!j`` fields, onto a command that reads back as the
    same arguments, since ``'a'`` and ``"a"`` are one literal). Useful to turn text trajectories (an oracle's,
    a dataset's) into tool calls.
    """
    forms = [(tool, template) for tool in tools for template in tool.templates]
    forms.sort(key=lambda form: -sum(len(literal) for literal, *_ in string.Formatter().parse(form[1])))
    for tool, template in forms:
        match = _template_pattern(template, tool.parameters).fullmatch(command)
        if match is None:
            continue
        conversions = {name: conversion for _, name, _, conversion in string.Formatter().parse(template) if name}
        properties = tool.parameters.get("properties", {})
        try:
            arguments = {
                name: _value(text, properties.get(name, {}), conversions[name])
                for name, text in match.groupdict().items()
            }
            check_arguments(tool.parameters, arguments)
            rendered = tool.command(arguments)
            if rendered != command and not (
                "j" in conversions.values() and _read_back(tool, template, rendered) == arguments
            ):
                continue
        except (ToolCallError, ValueError, SyntaxError, StopIteration):
            continue
        return ToolCall(tool.name, arguments)
    return None


def _read_back(tool: Tool, template: str, command: str) -> dict[str, Any] | None:
    match = _template_pattern(template, tool.parameters).fullmatch(command)
    if match is None:
        return None
    conversions = {name: conversion for _, name, _, conversion in string.Formatter().parse(template) if name}
    properties = tool.parameters.get("properties", {})
    return {name: _value(text, properties.get(name, {}), conversions[name]) for name, text in match.groupdict().items()}
