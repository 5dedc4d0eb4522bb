"""Grid worlds drawn as images: the visual puzzles' screens (Sokoban-Visual-v0 and the like).

A text grid env shows its state as rows of symbols (``# _ P`` ...). Its visual variant shows
the same grid as an image, one square tile per symbol, so that a vision-language model plays it
from pixels with the same text actions (as verl-agent and RAGEN train VLMs on Sokoban frames).

* :class:`TileSet`: each symbol's tile, declared in a family's ``tiles.yaml`` (data, not code):
  a background colour and shapes drawn on it, from a fixed palette of named colours, so that
  the legend shown to the model ("box: a brown square on light grey") is written from the same
  data the tiles are drawn from. Each tile is drawn once with Pillow (integer coordinates, no
  anti-aliasing: the same pixels on every machine); a frame is the tiles put together by
  indexing, a few microseconds for a 15x15 grid.
* :class:`GridImageObservation`: a mixin put before a :class:`~agentgym.contract.core.TextEnv` grid
  family whose ``_describe`` is the grid (symbols separated by spaces, one row per line). The
  observation becomes ``{"text": ..., "screenshot": uint8 HxWx3}``; the text keeps the
  instruction, the actions, the image legend and the feedback, but not the grid, which only the
  image shows. Rules, tasks, actions, rewards and the oracle are the text family's, unchanged.

``tiles.yaml``::

    size: 24                      # the default tile size in pixels
    tiles:
      "#": {meaning: wall, background: dark grey}
      "X": {meaning: box, background: light grey, shapes: [{shape: square, colour: brown}]}

Shapes: ``square``, ``circle``, ``diamond``, ``ring``, ``cross``; ``inset`` (a fraction of the
tile, default 0.2) is the margin around a shape.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, ClassVar

import numpy as np
import yaml
from gymnasium import spaces

from agentgym.contract.core import TextEnv, UnicodeText

#: The colours tiles may use, by the name the legend shows.
PALETTE: dict[str, tuple[int, int, int]] = {
    "black": (0, 0, 0),
    "dark grey": (72, 72, 72),
    "light grey": (200, 200, 200),
    "white": (255, 255, 255),
    "red": (220, 40, 40),
    "green": (40, 170, 60),
    "blue": (40, 90, 220),
    "light blue": (175, 220, 245),
    "navy": (20, 30, 90),
    "brown": (140, 90, 40),
    "gold": (240, 190, 30),
}
SHAPES = ("square", "circle", "diamond", "ring", "cross")
#: What the legend calls each shape.
SHAPE_WORDS = {"square": "square", "circle": "disc", "diamond": "diamond", "ring": "ring", "cross": "cross"}
MIN_TILE, MAX_TILE = 4, 128


@dataclass(frozen=True)
class Shape:
    """One shape drawn on a tile: its kind, colour name and margin (a fraction of the tile)."""

    shape: str
    colour: str
    inset: float = 0.2

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"unknown shape {self.shape!r}; expected one of {SHAPES}")
        if self.colour not in PALETTE:
            raise ValueError(f"unknown colour {self.colour!r}; expected one of {sorted(PALETTE)}")
        if not 0.0 <= self.inset < 0.5:
            raise ValueError(f"a shape's inset must be in [0, 0.5), got {self.inset}")


@dataclass(frozen=True)
class Tile:
    """A symbol's tile: what it means, its background colour and the shapes drawn on it, in order."""

    meaning: str
    background: str
    shapes: tuple[Shape, ...] = ()

    def __post_init__(self) -> None:
        if self.background not in PALETTE:
            raise ValueError(f"unknown colour {self.background!r}; expected one of {sorted(PALETTE)}")

    def looks(self) -> str:
        """How the tile looks, in words ("a brown square on light grey")."""
        if not self.shapes:
            return f"a plain {self.background} tile"
        drawn = " inside ".join(f"a {shape.colour} {SHAPE_WORDS[shape.shape]}" for shape in reversed(self.shapes))
        return f"{drawn} on {self.background}"


class TileSet:
    """The tiles of a grid family and the frames drawn from them (see the module docstring)."""

    def __init__(self, tiles: Mapping[str, Tile], size: int) -> None:
        if not MIN_TILE <= size <= MAX_TILE:
            raise ValueError(f"the tile size must be {MIN_TILE}..{MAX_TILE} pixels, got {size}")
        if not tiles:
            raise ValueError("a tile set needs at least one tile")
        self.tiles = dict(tiles)
        self.size = size
        self.symbols = list(self.tiles)
        self._index = {symbol: i for i, symbol in enumerate(self.symbols)}
        self._pixels = np.stack([_draw(tile, size) for tile in self.tiles.values()])
        if len({pixels.tobytes() for pixels in self._pixels}) != len(self.symbols):
            raise ValueError("two symbols have the same tile: the image could not tell them apart")

    @classmethod
    def load(cls, package: str, file: str = "tiles.yaml", size: int | None = None) -> TileSet:
        """The tile set declared in ``package``'s ``file`` (at its ``size``, unless ``size`` is given)."""
        return _load(package, file, size)

    def legend(self) -> str:
        """Each symbol's meaning, the symbol the instruction may name it by, and its look."""
        return "; ".join(f"{tile.meaning} ({symbol}): {tile.looks()}" for symbol, tile in self.tiles.items())

    def render(self, rows: Sequence[Sequence[str]]) -> np.ndarray:
        """The image (uint8, ``(rows * size, columns * size, 3)``) of a grid of symbols."""
        try:
            index = np.array([[self._index[symbol] for symbol in row] for row in rows], dtype=np.intp)
        except KeyError as error:
            raise ValueError(f"no tile for symbol {error.args[0]!r}; the tiles are {self.symbols}") from None
        if index.ndim != 2:
            raise ValueError("the grid's rows must all have the same length")
        height, width = index.shape
        size = self.size
        # (rows, columns, size, size, 3) -> (rows, size, columns, size, 3) -> one image.
        return self._pixels[index].transpose(0, 2, 1, 3, 4).reshape(height * size, width * size, 3)

    def read(self, image: np.ndarray) -> list[list[str]]:
        """The grid of symbols an image drawn by :meth:`render` shows (the inverse of ``render``)."""
        size = self.size
        height, width = image.shape[0] // size, image.shape[1] // size
        if image.shape != (height * size, width * size, 3):
            raise ValueError(f"an image of {size}-pixel tiles must be a multiple of {size} each way")
        by_pixels = {pixels.tobytes(): symbol for pixels, symbol in zip(self._pixels, self.symbols)}
        cells = image.reshape(height, size, width, size, 3).transpose(0, 2, 1, 3, 4)
        return [[by_pixels.get(cells[r, c].tobytes(), "?") for c in range(width)] for r in range(height)]


@cache
def _load(package: str, file: str, size: int | None) -> TileSet:
    data = yaml.safe_load(resources.files(package).joinpath(file).read_text(encoding="utf-8"))
    tiles = {
        str(symbol): Tile(
            meaning=spec["meaning"],
            background=spec["background"],
            shapes=tuple(Shape(**shape) for shape in spec.get("shapes", ())),
        )
        for symbol, spec in data["tiles"].items()
    }
    return TileSet(tiles, int(size if size is not None else data["size"]))


def _draw(tile: Tile, size: int) -> np.ndarray:
    """One tile's pixels, drawn with Pillow on integer coordinates (no anti-aliasing)."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (size, size), PALETTE[tile.background])
    draw = ImageDraw.Draw(image)
    for shape in tile.shapes:
        colour = PALETTE[shape.colour]
        low = round(shape.inset * size)
        high = size - 1 - low
        middle = (size - 1) / 2
        if shape.shape == "square":
            draw.rectangle((low, low, high, high), fill=colour)
        elif shape.shape == "circle":
            draw.ellipse((low, low, high, high), fill=colour)
        elif shape.shape == "ring":
            draw.ellipse((low, low, high, high), outline=colour, width=max(1, size // 10))
        elif shape.shape == "diamond":
            draw.polygon(((middle, low), (high, middle), (middle, high), (low, middle)), fill=colour)
        else:  # cross
            width = max(1, size // 8)
            draw.line((low, low, high, high), fill=colour, width=width)
            draw.line((low, high, high, low), fill=colour, width=width)
    return np.asarray(image, dtype=np.uint8)


class GridImageObservation:
    """Mixin: a text grid family's observations as images (see the module docstring).

    Put it before the family's class (``class SokobanVisualEnv(GridImageObservation, SokobanEnv)``);
    the family class supplies :attr:`actions_line` (how to act, without the text map's legend) and
    :meth:`grid_shape` (rows and columns of its grid). ``tile_size`` overrides the tile file's size.
    """

    #: The tile declarations, beside the family's modules.
    tile_file: ClassVar[str] = "tiles.yaml"
    #: Said in the text where the grid would be.
    image_caption: ClassVar[str] = "(The map is in the image.)"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Task N is the text family's task N: its generators are seeded as the text class seeds them.
        text_class = next(
            base for base in cls.__mro__[1:] if issubclass(base, TextEnv) and not issubclass(base, GridImageObservation)
        )
        cls.task_seed_name = text_class.task_seed_name or text_class.__name__  # type: ignore[attr-defined]
        modes = cls.metadata["render_modes"]  # type: ignore[attr-defined]
        cls.metadata = {**cls.metadata, "render_modes": [*modes, *(["rgb_array"] if "rgb_array" not in modes else [])]}  # type: ignore[attr-defined]

    def __init__(self, *args: Any, tile_size: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        package = type(self).__module__.rpartition(".")[0]
        self.tileset = TileSet.load(package, self.tile_file, tile_size)
        rows, columns = self.grid_shape()
        size = self.tileset.size
        self.observation_space = spaces.Dict(
            {
                "text": UnicodeText(self.max_observation_chars),
                "screenshot": spaces.Box(0, 255, (rows * size, columns * size, 3), np.uint8),
            }
        )

    # ---- what the family class supplies ------------------------------------------------

    actions_line: str

    def grid_shape(self) -> tuple[int, int]:
        """The rows and columns of the grid."""
        raise NotImplementedError

    # ---- the visual observation ---------------------------------------------------------

    @property
    def action_syntax(self) -> str:
        return (
            f"{self.actions_line}\nThe image shows the map from above, one square tile per cell, "
            f"the top row at the top. Tiles: {self.tileset.legend()}."
        )

    def grid_text(self) -> str:
        """The grid as the text family shows it (symbols separated by spaces, a row per line)."""
        return super()._describe()  # type: ignore[misc]

    def grid_rows(self) -> list[list[str]]:
        """The grid's symbols, row by row."""
        return [line.split(" ") for line in self.grid_text().split("\n")]

    def _describe(self) -> str:
        return self.image_caption

    def _observation(self, text: str) -> dict[str, Any]:
        return {"text": text, "screenshot": self.tileset.render(self.grid_rows())}

    def render(self) -> Any:
        """``rgb_array``: the image; ``ansi``: the grid as text."""
        if self.task_id is None:  # type: ignore[attr-defined]
            return None
        if self.render_mode == "rgb_array":  # type: ignore[attr-defined]
            return self.tileset.render(self.grid_rows())
        return self.grid_text() if self.render_mode == "ansi" else None  # type: ignore[attr-defined]

    def fingerprint_task(self, task_id: int, max_steps: int = 200) -> dict[str, Any]:
        """What the task fingerprint pins of task ``task_id``: the first observation's text, the grid,
        the first image's sha256, and the oracle's moves with their rewards and the outcome.

        The image is hashed (the generic fingerprint leaves screenshots out: here they are the map).
        """
        observation, info = self.reset(seed=task_id, options={"task_id": task_id})  # type: ignore[attr-defined]
        record: dict[str, Any] = {
            "observation": observation["text"],
            "instruction": info["instruction"],
            "grid": self.grid_text(),
            "image_sha256": hashlib.sha256(observation["screenshot"].tobytes()).hexdigest(),
        }
        steps = []
        for _ in range(max_steps):
            action = self.oracle_action()  # type: ignore[attr-defined]
            _, reward, terminated, truncated, info = self.step(action)  # type: ignore[attr-defined]
            steps.append([action, round(float(reward), 9), terminated])
            if terminated:
                break
        return record | {"oracle": steps, "success": bool(info["success"]), "score": round(float(info["score"]), 9)}
