"""Computer use's screen side: the env commands on pixels (:data:`PIXEL_ACTIONS`, :class:`PixelAction`), the sizes a
format's coordinates are converted between (:class:`Geometry`; Qwen's :func:`smart_resize`), what a reader is given
(:class:`Reading`) and :class:`FormatError`. :mod:`agentgym.computer_use` is the package's guide.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from agentgym.images import fit_pixels

Scale = Literal["screen", "image", "qwen", "relative"]
#: The relative scale's range (UI-TARS): 0 at the top-left, 1000 at the bottom-right.
RELATIVE_RANGE = 1000
#: The pointer and keyboard commands of :data:`PIXEL_ACTIONS` (a browser's coordinate action space takes these).
INPUT_ACTIONS: tuple[str, ...] = ("click", "double_click", "right_click", "move", "drag", "scroll", "type", "key")
#: The env commands a format maps onto, by name; an env declares the ones it takes (``pixel_actions``).
PIXEL_ACTIONS: tuple[str, ...] = (*INPUT_ACTIONS, "wait", "done")
#: Wheel notches of a UI-TARS scroll (its executor scrolls by five) and pixels per notch for the
#: pixel amounts of OpenAI's scroll (the browser's notch, :data:`agentgym.browser.commands.WHEEL_NOTCH_PX`).
UI_TARS_SCROLL_NOTCHES = 5
PIXELS_PER_NOTCH = 100
#: Qwen2.5-VL's image processor: sides are multiples of 28 pixels, the area within these bounds.
QWEN_FACTOR = 28
QWEN_MIN_PIXELS = 4 * 28 * 28
QWEN_MAX_PIXELS = 16384 * 28 * 28


class FormatError(ValueError):
    """An action that cannot be read in its format or played on the env; the message is for the agent."""


@dataclass(frozen=True)
class PixelAction:
    """One env command on screen pixels: ``name`` (of :data:`PIXEL_ACTIONS`) and its arguments."""

    name: str
    args: tuple[Any, ...] = ()

    def command(self) -> str:
        """The env's text command: ``click(412, 230)``, ``scroll(10, 20, 0, 3)``, ``type("hi")``, ``done()``."""
        written = (json.dumps(arg, ensure_ascii=False) if isinstance(arg, str) else _number(arg) for arg in self.args)
        return f"{self.name}({', '.join(written)})"

    def point(self) -> tuple[int, int] | None:
        """Where the pointer is after it (None for keyboard actions and waits)."""
        if self.name in ("click", "double_click", "right_click", "move", "scroll"):
            return int(self.args[0]), int(self.args[1])
        if self.name == "drag":
            return int(self.args[2]), int(self.args[3])
        return None


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def smart_resize(
    width: int,
    height: int,
    factor: int = QWEN_FACTOR,
    min_pixels: int = QWEN_MIN_PIXELS,
    max_pixels: int = QWEN_MAX_PIXELS,
) -> tuple[int, int]:
    """The (width, height) Qwen2-VL / Qwen2.5-VL's image processor resizes an image to: both sides
    multiples of ``factor``, nearest to the original, the area within [min_pixels, max_pixels].

    >>> smart_resize(1280, 720)
    (1288, 728)
    """
    if max(width, height) / min(width, height) > 200:
        raise ValueError(f"Qwen's processor takes aspect ratios up to 200, got {width}x{height}")
    resized_height = max(factor, round(height / factor) * factor)
    resized_width = max(factor, round(width / factor) * factor)
    if resized_height * resized_width > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        resized_height = max(factor, math.floor(height / beta / factor) * factor)
        resized_width = max(factor, math.floor(width / beta / factor) * factor)
    elif resized_height * resized_width < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        resized_height = math.ceil(height * beta / factor) * factor
        resized_width = math.ceil(width * beta / factor) * factor
    return resized_width, resized_height


@dataclass(frozen=True)
class Geometry:
    """The sizes a format's coordinates are converted between: the env's screen and the image sent.

    ``image`` is the screenshot as the model is shown it (the screen scaled to the image budget).
    """

    screen: tuple[int, int]
    image: tuple[int, int]

    @classmethod
    def for_screen(cls, width: int, height: int, max_pixels: int | None) -> Geometry:
        """The geometry of a ``width`` x ``height`` screen sent under the image budget ``max_pixels``."""
        return cls((width, height), fit_pixels(width, height, max_pixels))

    def space(self, scale: Scale) -> tuple[int, int]:
        """The (width, height) of a scale's coordinate range."""
        if scale == "screen":
            return self.screen
        if scale == "image":
            return self.image
        if scale == "qwen":
            return smart_resize(*self.image)
        return RELATIVE_RANGE, RELATIVE_RANGE

    def to_screen(self, x: Any, y: Any, scale: Scale) -> tuple[int, int]:
        """The screen pixel a point of ``scale`` falls on; :class:`FormatError` if it is not a point in range.

        Pixel scales (screen, image, qwen) name a pixel by its index: the screen pixel is the one under
        that pixel's centre, ``floor((x + 0.5) * screen / space)``. The relative scale names a position,
        ``x / 1000`` of the way across: ``floor(x * screen / 1000)``, the right and bottom edges (1000)
        falling on the last pixel.
        """
        width, height = self.space(scale)
        point = []
        for value, size, screen, axis in ((x, width, self.screen[0], "x"), (y, height, self.screen[1], "y")):
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise FormatError(f"the {axis} coordinate must be a number, got {json.dumps(value, default=str)[:40]}")
            limit = size if scale == "relative" else size - 1
            if not 0 <= value <= limit:
                raise FormatError(
                    f"the {axis} coordinate {value:g} is outside the {_scale_words(scale, width, height)}: "
                    f"{axis} must be from 0 to {limit}"
                )
            exact = Fraction(value) if scale == "relative" else Fraction(value) + Fraction(1, 2)
            point.append(min(screen - 1, math.floor(exact * screen / size)))
        return point[0], point[1]

    def from_screen(self, x: float, y: float, scale: Scale) -> tuple[float, float]:
        """A point of ``scale`` that :meth:`to_screen` maps onto screen pixel (x, y) (for examples and tests)."""
        width, height = self.space(scale)
        if scale == "relative":
            return (x + 0.5) * width / self.screen[0], (y + 0.5) * height / self.screen[1]
        return (x + 0.5) * width / self.screen[0] - 0.5, (y + 0.5) * height / self.screen[1] - 0.5


def _scale_words(scale: Scale, width: int, height: int) -> str:
    if scale == "relative":
        return "relative 0-1000 range"
    what = {"screen": "screen", "image": "screenshot", "qwen": "screenshot"}[scale]
    return f"{width}x{height} {what}"


# ---- reading actions ------------------------------------------------------------------------


@dataclass
class Reading:
    """What a format reader gets besides the action: the geometry and where the pointer is (screen pixels)."""

    geometry: Geometry
    pointer: tuple[int, int]

    def at(self, x: Any, y: Any, scale: Scale) -> tuple[int, int]:
        return self.geometry.to_screen(x, y, scale)

    def pair(self, value: Any, scale: Scale, what: str = "coordinate") -> tuple[int, int]:
        """A ``[x, y]`` array argument as a screen point."""
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise FormatError(f"{what} must be [x, y], got {json.dumps(value, default=str)[:60]}")
        return self.at(value[0], value[1], scale)
