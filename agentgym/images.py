"""Image geometry shared by the screen envs' consumers: the size an image is sent at under a pixel budget.

On the env machinery's floor, so that computer use (:mod:`agentgym.computer_use`, the screen's geometry in
the model's coordinates) and the image codec (:mod:`agentgym.wrappers.vision`, which scales the screenshots
it sends) read one rule (docs/architecture.md).
"""

from __future__ import annotations

import math


def fit_pixels(width: int, height: int, max_pixels: int | None) -> tuple[int, int]:
    """The size a ``width`` x ``height`` image is sent at: scaled down (aspect kept) to at most ``max_pixels``.

    >>> fit_pixels(1024, 768, 512 * 384)
    (512, 384)
    >>> fit_pixels(160, 210, None)
    (160, 210)
    """
    if max_pixels is None or width * height <= max_pixels:
        return width, height
    scale = math.sqrt(max_pixels / (width * height))
    fitted_width, fitted_height = max(1, int(width * scale)), max(1, int(height * scale))
    while fitted_width * fitted_height > max_pixels:  # rounding up never happens, but int() of a float can
        fitted_width, fitted_height = max(1, fitted_width - 1), max(1, fitted_height - 1)
    return fitted_width, fitted_height
