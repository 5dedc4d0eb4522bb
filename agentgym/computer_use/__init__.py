"""Computer-use action formats: how GUI agents are trained to act, mapped onto an env's pixel actions.

A GUI model acts in the format it was trained on, and each format measures the screen its own way.
This module reads one action in any of these formats and turns it into the env's own command on
screen pixels (``click(412, 230)``, ``type("hello")``, ...):

========================  ==============================  ======================================================
format                    what the model emits            coordinates
========================  ==============================  ======================================================
``pyautogui``             OSWorld's pyautogui code        screen pixels
``qwen-computer``         Qwen2.5-VL ``computer_use``     pixels of the image the model saw, as Qwen's processor
                          function calls                  resizes it (:func:`smart_resize` of the sent image)
``qwen-mobile``           Qwen2.5-VL ``mobile_use`` calls the same
``ui-tars``               UI-TARS action strings          relative: 0-1000 across the screenshot
``anthropic``             Anthropic's computer tool       pixels of the sent image (its display size)
``openai``                OpenAI's computer-use actions   pixels of the sent image (its display size)
========================  ==============================  ======================================================

The *sent image* is the screenshot as the chat wrapper sends it: scaled down (aspect kept) to the
image budget ``max_pixels`` (:func:`agentgym.images.fit_pixels`). Conversions are exact
functions of the sizes (:class:`Geometry`); a point outside the format's coordinate range, a
malformed call or an action the env does not have raises :class:`FormatError`, whose message is
meant for the agent.

An env takes these formats when it declares ``pixel_actions``, the names of the commands it takes
on screen pixels, from :data:`PIXEL_ACTIONS` (in the syntax :meth:`PixelAction.command` writes):
Desktop-v0 takes all of them, the browser envs with ``actions="coordinates"`` or ``"both"`` the
pointer and keyboard ones, a grounding env ``click``. The wrapper
:class:`agentgym.wrappers.computer_use.ComputerUseWrapper` (and ``ChatWrapper(action_format=...)``,
``agentgym eval --action-format``) applies a format to an env. The formats' instructions and tool
declarations are data: ``formats.yaml`` in this package. The package: :mod:`.screen` (pixel commands, geometry),
:mod:`.readers` (one reader per format) and here the formats' registry. See docs/computer-use.md.

Floor: env machinery; it imports only its own floor and those below it: contract (docs/architecture.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentgym.computer_use.readers import READERS, format_specs, key_combination
from agentgym.computer_use.screen import (
    INPUT_ACTIONS,
    PIXEL_ACTIONS,
    PIXELS_PER_NOTCH,
    QWEN_FACTOR,
    QWEN_MAX_PIXELS,
    QWEN_MIN_PIXELS,
    RELATIVE_RANGE,
    UI_TARS_SCROLL_NOTCHES,
    FormatError,
    Geometry,
    PixelAction,
    Reading,
    Scale,
    smart_resize,
)

__all__ = [
    "FORMATS",
    "INPUT_ACTIONS",
    "PIXEL_ACTIONS",
    "PIXELS_PER_NOTCH",
    "QWEN_FACTOR",
    "QWEN_MAX_PIXELS",
    "QWEN_MIN_PIXELS",
    "RELATIVE_RANGE",
    "TOOL_FORMATS",
    "UI_TARS_SCROLL_NOTCHES",
    "ComputerUseFormat",
    "FormatError",
    "Geometry",
    "PixelAction",
    "Reading",
    "Scale",
    "anthropic_tool",
    "get_format",
    "key_combination",
    "openai_tool",
    "smart_resize",
]

#: The computer-use formats, as ``--action-format`` names them.
FORMATS: tuple[str, ...] = ("pyautogui", "qwen-computer", "qwen-mobile", "ui-tars", "anthropic", "openai")
#: The formats whose actions are function tool calls (the others are text replies).
TOOL_FORMATS: tuple[str, ...] = ("qwen-computer", "qwen-mobile", "anthropic", "openai")


@dataclass(frozen=True)
class ComputerUseFormat:
    """One format: its name, title, coordinate scale, instructions template and (tool formats) tool."""

    name: str
    title: str
    scale: Scale
    instructions_template: str
    tool_spec: Mapping[str, Any] | None
    reader: Callable[[Any, Reading], PixelAction]

    def space(self, geometry: Geometry) -> tuple[int, int]:
        """The (width, height) of this format's coordinate range for ``geometry``."""
        return geometry.space(self.scale)

    def _fill(self, text: str, geometry: Geometry) -> str:
        width, height = self.space(geometry)
        screen_width, screen_height = geometry.screen
        return (
            text.replace("{width}", str(width))
            .replace("{height}", str(height))
            .replace("{screen_width}", str(screen_width))
            .replace("{screen_height}", str(screen_height))
        )

    def instructions(self, geometry: Geometry) -> str:
        """How to act in this format, for the first observation."""
        return self._fill(self.instructions_template, geometry)

    def tools(self, geometry: Geometry) -> list[dict[str, Any]] | None:
        """The function tool to offer (OpenAI ``tools=[...]`` shape), or None for a text format."""
        if self.tool_spec is None:
            return None
        spec = self.tool_spec
        return [
            {
                "type": "function",
                "function": {
                    "name": spec["name"],
                    "description": self._fill(spec["description"], geometry),
                    "parameters": json.loads(json.dumps(spec["parameters"])),
                },
            }
        ]

    def read(self, action: Any, geometry: Geometry, pointer: tuple[int, int] | None = None) -> PixelAction:
        """The env command ``action`` asks for; :class:`FormatError` says why there is none.

        ``action`` is what the model produced: the reply text, an assistant message (with
        ``tool_calls``), one tool call, or (hosted formats) the provider's own block. ``pointer`` is
        where the mouse is (default: the screen's centre), for actions at the cursor.
        """
        centre = (geometry.screen[0] // 2, geometry.screen[1] // 2)
        return self.reader(action, Reading(geometry, pointer or centre))


# ---- the registry of formats -------------------------------------------------------------------------


def get_format(name: str) -> ComputerUseFormat:
    """The format called ``name`` (one of :data:`FORMATS`)."""
    if name not in FORMATS:
        raise ValueError(f"unknown computer-use format {name!r}; the formats are {', '.join(FORMATS)}")
    spec = format_specs()[name]
    return ComputerUseFormat(
        name=name,
        title=spec["title"],
        scale=spec["scale"],
        instructions_template=spec["instructions"],
        tool_spec=spec.get("tool"),
        reader=READERS[name],
    )


def anthropic_tool(geometry: Geometry) -> dict[str, Any]:
    """Anthropic's own declaration of its computer tool for ``geometry`` (for the Messages API's ``tools``):
    the display is the image sent, whose pixels its coordinates are."""
    width, height = geometry.image
    return {"type": "computer_20250124", "name": "computer", "display_width_px": width, "display_height_px": height}


def openai_tool(geometry: Geometry, environment: str = "browser") -> dict[str, Any]:
    """OpenAI's own declaration of its computer-use tool for ``geometry`` (for the Responses API's ``tools``)."""
    width, height = geometry.image
    return {
        "type": "computer_use_preview",
        "display_width": width,
        "display_height": height,
        "environment": environment,
    }
