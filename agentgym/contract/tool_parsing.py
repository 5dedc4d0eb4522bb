"""Tool calls in model text, and chat messages in the shape chat templates expect.

Two conversions that sit between an LLM's text and the OpenAI message shape:

* :func:`parse_tool_calls` reads tool calls out of generated text in the Hermes / Qwen
  convention, one JSON object per block::

      <tool_call>
      {"name": "move", "arguments": {"direction": "up"}}
      </tool_call>

  as vLLM's ``hermes`` tool parser does (``vllm serve --tool-call-parser hermes``): several
  blocks may follow each other, a last block may lack its closing tag (generation stopped),
  and if any block is not a JSON object with ``name`` and ``arguments`` the whole text is
  left as plain content with no calls. The calls come back in OpenAI's shape (an ``id``,
  ``type: "function"``, the arguments as a JSON string). Unlike vLLM, which keeps only the
  text before the first block, ``content`` is all text outside the blocks.
* :func:`template_messages` turns OpenAI-shaped messages (tool-call arguments as JSON
  strings, as the API sends them) into what chat templates render: Qwen2.5's, Llama 3.1's
  and Hermes' templates write ``tool_call.arguments | tojson``, which needs a mapping (a
  string would be quoted twice). vLLM does the same conversion before it renders a prompt.

:func:`assistant_message` builds the assistant message an env's ``step`` takes from a
reply's text, so that everything that reads model text (``serve-model``, the in-process
policy, the trainer) turns it into an action the same way.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TOOL_CALL_START = "<tool_call>"
TOOL_CALL_END = "</tool_call>"
# A closed block, or an unclosed one running to the end of the text.
_BLOCK = re.compile(rf"{TOOL_CALL_START}(.*?){TOOL_CALL_END}|{TOOL_CALL_START}(.*)\Z", re.DOTALL)


@dataclass
class ParsedReply:
    """Generated text split into its tool calls (OpenAI shape) and the text around them.

    ``content`` is None when nothing but whitespace is left (as OpenAI's API reports a
    message that only calls tools).
    """

    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def new_call_id() -> str:
    """A fresh tool call id in vLLM's format (``chatcmpl-tool-`` and 32 hex digits)."""
    return f"chatcmpl-tool-{uuid.uuid4().hex}"


def parse_tool_calls(text: str) -> ParsedReply:
    """The Hermes / Qwen ``<tool_call>`` blocks in ``text`` as OpenAI tool calls (see the module docstring).

    Examples:
        >>> block = '<tool_call>\\n{"name": "move", "arguments": {"direction": "up"}}\\n</tool_call>'
        >>> reply = parse_tool_calls("Up.\\n" + block)
        >>> reply.content, reply.tool_calls[0]["function"]
        ('Up.', {'name': 'move', 'arguments': '{"direction": "up"}'})
    """
    if TOOL_CALL_START not in text:
        return ParsedReply(_content(text))
    calls = []
    for match in _BLOCK.finditer(text):
        body = match.group(1) if match.group(1) is not None else match.group(2)
        try:
            call = json.loads(body)
        except json.JSONDecodeError:
            return ParsedReply(_content(text))
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or "arguments" not in call:
            return ParsedReply(_content(text))
        arguments = json.dumps(call["arguments"], ensure_ascii=False)
        function = {"name": call["name"], "arguments": arguments}
        calls.append({"id": new_call_id(), "type": "function", "function": function})
    return ParsedReply(_content(_BLOCK.sub("", text)), calls)


def _content(text: str) -> str | None:
    text = text.strip()
    return text or None


def assistant_message(text: str) -> dict[str, Any]:
    """The assistant message for a reply's ``text``: with ``tool_calls`` where it holds valid blocks.

    Its ``content`` is the text outside the blocks (None if there is none); without calls
    the message is ``{"role": "assistant", "content": text}`` unchanged.
    """
    parsed = parse_tool_calls(text)
    if not parsed.tool_calls:
        return {"role": "assistant", "content": text}
    return {"role": "assistant", "content": parsed.content, "tool_calls": parsed.tool_calls}


def template_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``messages`` for ``apply_chat_template``: tool-call arguments as mappings.

    Arguments given as a JSON string that decodes to an object become that object; other
    strings (not JSON) stay as they are. Messages without tool calls are copied unchanged.
    """
    converted = []
    for message in messages:
        message = dict(message)
        calls = message.get("tool_calls")
        if calls:
            message["tool_calls"] = [_template_call(call) for call in calls]
        converted.append(message)
    return converted


def _template_call(call: Any) -> Any:
    if not isinstance(call, Mapping):
        return call
    call = dict(call)
    function = call.get("function")
    if isinstance(function, Mapping) and isinstance(function.get("arguments"), str):
        try:
            arguments = json.loads(function["arguments"])
        except json.JSONDecodeError:
            return call
        if isinstance(arguments, dict):
            call["function"] = {**function, "arguments": arguments}
    return call
