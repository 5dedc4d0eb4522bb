"""Play an env with pixel actions in a computer-use format (OSWorld pyautogui, Qwen2.5-VL, UI-TARS, ...)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from agentgym.computer_use import FORMATS, FormatError, Geometry, PixelAction, get_format
from agentgym.contract.core import InvalidAction, observation_text
from agentgym.images import DEFAULT_MAX_PIXELS, takes_keyword


def pixel_action_kwargs(env_id: str) -> dict[str, Any]:
    """The ``gym.make`` keyword arguments that give ``env_id`` pixel actions for the computer-use formats:
    ``{"actions": "both"}`` where its class picks its action space (the browser families), else ``{}``
    (Desktop-v0 and the grounding envs always act on pixels)."""
    return {"actions": "both"} if takes_keyword(env_id, "actions") else {}


class ComputerUseWrapper(gym.Wrapper):
    """Read each action in a computer-use ``format`` (:data:`agentgym.computer_use.FORMATS`) and play it
    as the env's own command on screen pixels.

    The env must declare ``pixel_actions`` (the commands it takes on pixels; see
    :mod:`agentgym.computer_use`). ``max_pixels`` is the image budget the screenshots are sent
    under (as :class:`~agentgym.images.ImageOptions` has it): the formats that count in
    pixels of the image the model saw convert through it. The first observation's text has the
    env's action syntax replaced by the format's instructions; :attr:`tools` holds the format's
    function tool (None for the text formats: ``pyautogui``, ``ui-tars``). A malformed action, a
    point out of range, or an action the env does not have is an invalid action whose observation
    says why (nothing is executed). ``info["computer_use"]`` records the format and the command played.
    """

    def __init__(self, env: gym.Env, format: str, max_pixels: int | None = DEFAULT_MAX_PIXELS) -> None:
        super().__init__(env)
        if format not in FORMATS:
            raise ValueError(f"unknown computer-use format {format!r}; the formats are {', '.join(FORMATS)}")
        supported = getattr(env.unwrapped, "pixel_actions", ())
        if not supported:
            raise TypeError(
                f"the {format} format needs an env with pixel actions (pixel_actions), such as Desktop-v0, a browser "
                f"env made with actions='coordinates' or 'both', or a grounding env; {type(env.unwrapped).__name__} "
                "has none"
            )
        self.format = get_format(format)
        self.max_pixels = max_pixels
        #: The commands the env takes on pixels.
        self.supported: tuple[str, ...] = tuple(supported)
        width, height = _screen_size(env.unwrapped)
        #: The screen and the image sizes the coordinates are converted between.
        self.geometry = Geometry.for_screen(width, height, max_pixels)
        #: Where the mouse pointer is, in screen pixels (for actions at the cursor).
        self.pointer = (width // 2, height // 2)
        #: The format's function tools (OpenAI's ``tools=[...]``), None for the text formats.
        self.tools = self.format.tools(self.geometry)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self._observe(observation)
        syntax = getattr(self.env.unwrapped, "action_syntax", "")
        text = observation_text(observation)
        instructions = f"{self.format.title}. {self.format.instructions(self.geometry)}"
        text = text.replace(syntax, instructions, 1) if syntax and syntax in text else f"{text}\n\n{instructions}"
        observation = {**observation, "text": text} if isinstance(observation, dict) else text
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        try:
            played = self.read(action)
        except FormatError as error:
            observation, reward, terminated, truncated, info = self.env.step(InvalidAction(str(error)))
            info["computer_use"] = {"format": self.format.name, "command": None, "error": str(error)}
            return observation, reward, terminated, truncated, info
        command = played.command()
        observation, reward, terminated, truncated, info = self.env.step(command)
        if not info.get("invalid_action"):
            self.pointer = played.point() or self.pointer
        self._observe(observation)
        info["computer_use"] = {"format": self.format.name, "command": command}
        return observation, reward, terminated, truncated, info

    def read(self, action: Any) -> PixelAction:
        """The env command ``action`` maps onto; :class:`~agentgym.computer_use.FormatError` if none."""
        played = self.format.read(action, self.geometry, self.pointer)
        if played.name not in self.supported:
            raise FormatError(f"this environment has no {played.name} action; it takes {', '.join(self.supported)}")
        return played

    def _observe(self, observation: Any) -> None:
        """Follow the screen's size and the pointer where the observation shows them."""
        if not isinstance(observation, Mapping):
            return
        pixels = observation.get("screenshot")
        if isinstance(pixels, np.ndarray) and pixels.ndim == 3:
            size = (int(pixels.shape[1]), int(pixels.shape[0]))
            if size != self.geometry.screen:
                self.geometry = Geometry.for_screen(*size, self.max_pixels)
                self.tools = self.format.tools(self.geometry)
        cursor = observation.get("cursor")
        if isinstance(cursor, np.ndarray) and cursor.shape == (2,):
            self.pointer = (int(cursor[0]), int(cursor[1]))


def _screen_size(env: Any) -> tuple[int, int]:
    """The env's screen (width, height): its ``screen_size``, else its observation space's screenshot box."""
    size = getattr(env, "screen_size", None)
    if size is not None:
        return int(size[0]), int(size[1])
    space = getattr(env, "observation_space", None)
    screenshot = getattr(space, "spaces", {}).get("screenshot") if space is not None else None
    if screenshot is not None and len(screenshot.shape) == 3:
        return int(screenshot.shape[1]), int(screenshot.shape[0])
    raise TypeError(f"{type(env).__name__} says neither its screen_size nor a screenshot in its observation space")
