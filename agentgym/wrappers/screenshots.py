"""Save the screenshots of dict observations as PNG files, for the trajectory viewer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np


class ScreenshotRecorder(gym.Wrapper):
    """Write each observation's ``"screenshot"`` (uint8 HxWx3) to ``folder/N.png``.

    ``N`` counts observations from the reset (0) through every step (1, 2, ...).
    Recording is off until :meth:`record_to` names a folder for the next episode;
    observations pass through unchanged. Observations that are not dicts with a
    screenshot array (every text env) cost one ``isinstance`` check. PNG encoding uses
    Pillow, which every env that renders screenshots already needs; a fast compression
    level keeps a 1024x768 desktop frame to milliseconds.

    ``saved`` lists, for the current episode, each observation's file relative to
    ``relative_to`` (None where an observation had no screenshot).
    """

    def __init__(self, env: gym.Env, compress_level: int = 1) -> None:
        super().__init__(env)
        self.compress_level = compress_level
        self.folder: Path | None = None
        self.relative_to: Path | None = None
        self.saved: list[str | None] = []

    def record_to(self, folder: Path | None, relative_to: Path | None = None) -> None:
        """Record the next episode's screenshots into ``folder`` (None: stop recording)."""
        self.folder, self.relative_to, self.saved = folder, relative_to, []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self.saved = []
        self._save(observation)
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._save(observation)
        return observation, reward, terminated, truncated, info

    def _save(self, observation: Any) -> None:
        if self.folder is None:
            return
        pixels = observation.get("screenshot") if isinstance(observation, dict) else None
        if not isinstance(pixels, np.ndarray) or pixels.dtype != np.uint8 or pixels.ndim != 3:
            self.saved.append(None)
            return
        from PIL import Image

        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{len(self.saved)}.png"
        Image.fromarray(pixels).save(path, compress_level=self.compress_level)
        self.saved.append(str(path.relative_to(self.relative_to)) if self.relative_to else str(path))
