"""How nearly two screenshots of a source look the same: the measure behind "test pages are unseen in train".

Splitting by page group keeps a page out of two splits, but two groups can still show nearly the same page
(MiniWoB++'s ``login-user`` and ``login-user-popup``, ``enter-text`` and ``enter-text-dynamic``). This measure
finds such twins, so that ``sources.yaml`` can put them in one group and a test can check that no test
screenshot has one in train.

A screenshot's :func:`signature` is its source's ``compare_region`` (the part where its pages differ; outside
it, chrome such as MiniWoB++'s score board is the same on every page) cut in :data:`CELL_PX`-pixel cells,
each the mean colour of its pixels. A cell is *ink* where it differs from the screenshot's background (its
most common cell colour) by more than :data:`TOLERANCE` in a channel. The :func:`distance` of two screenshots
is the share of the cells inked in either that differ between them by more than :data:`TOLERANCE`: 0 for
the same page, near 1 for pages with nothing in the same place. Pages below :data:`NEAR_DUPLICATE` are twins.

Measured on the MiniWoB++ build (docs/envs/grounding.md), the closest pages of different tasks were
``click-test`` / ``click-button-sequence``, ``enter-text`` / ``enter-text-dynamic`` and ``multi-layouts`` /
``multi-orderings`` (0.00), ``draw-line`` / ``draw-circle`` (0.02), ``click-button`` / ``unicode-test``
(0.07), ``login-user`` / ``login-user-popup`` (0.12), ``enter-text`` / ``use-autocomplete`` (0.17),
``right-angle`` / ``find-midpoint`` (0.19); then a gap to 0.26 (``bisect-angle`` / ``right-angle``) and above.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Side of a signature's cells, in pixels.
CELL_PX = 8
#: Colour difference (0-255, any channel, of a cell's mean) below which two cells are the same.
TOLERANCE = 8.0
#: Distance below which two screenshots are twins (the same page to a reader).
NEAR_DUPLICATE = 0.2


def signature(pixels: np.ndarray, region: Sequence[int]) -> np.ndarray:
    """The mean colour of each :data:`CELL_PX` cell of ``region`` ([left, top, width, height]) of ``pixels``
    (uint8 height x width x 3), as float32 (rows, columns, 3); a partial cell at the region's edge is dropped."""
    left, top, width, height = (int(value) for value in region)
    rows, columns = height // CELL_PX, width // CELL_PX
    if rows < 1 or columns < 1 or top + height > pixels.shape[0] or left + width > pixels.shape[1]:
        raise ValueError(f"region {list(region)} does not fit a {pixels.shape[1]} x {pixels.shape[0]} screenshot")
    cut = pixels[top : top + rows * CELL_PX, left : left + columns * CELL_PX]
    return cut.reshape(rows, CELL_PX, columns, CELL_PX, 3).mean(axis=(1, 3), dtype=np.float32)


def ink(signature_: np.ndarray) -> np.ndarray:
    """The cells (bool, rows x columns) that differ from the signature's most common cell colour."""
    colours, counts = np.unique(np.round(signature_.reshape(-1, 3)), axis=0, return_counts=True)
    background = colours[counts.argmax()]
    return (np.abs(signature_ - background) > TOLERANCE).any(axis=-1)


def distance(first: np.ndarray, second: np.ndarray) -> float:
    """How differently two signatures look: the share of cells inked in either that differ (0: the same)."""
    return float(nearest(first[None], second[None])[0][0])


def nearest(queries: np.ndarray, pool: np.ndarray, max_cells: int = 8_000_000) -> tuple[np.ndarray, np.ndarray]:
    """For each signature of ``queries`` (n, rows, columns, 3), the distance to its nearest signature of ``pool``
    (m, rows, columns, 3) and that one's index: two arrays of length n (compared in batches of at most
    ``max_cells`` cell pairs)."""
    if len(pool) == 0:
        raise ValueError("the pool of signatures is empty")
    batch = max(1, max_cells // (len(pool) * pool.shape[1] * pool.shape[2]))
    pool_flat = pool.reshape(len(pool), -1, 3)
    pool_ink = np.stack([ink(item) for item in pool]).reshape(len(pool), -1)
    best = np.empty(len(queries), dtype=np.float64)
    index = np.empty(len(queries), dtype=np.int64)
    for start in range(0, len(queries), batch):
        chunk = queries[start : start + batch]
        chunk_flat = chunk.reshape(len(chunk), 1, -1, 3)
        chunk_ink = np.stack([ink(item) for item in chunk]).reshape(len(chunk), 1, -1)
        either = chunk_ink | pool_ink[None]
        differs = (np.abs(chunk_flat - pool_flat[None]) > TOLERANCE).any(axis=-1) & either
        share = differs.sum(axis=-1) / np.maximum(either.sum(axis=-1), 1)
        index[start : start + len(chunk)] = share.argmin(axis=1)
        best[start : start + len(chunk)] = share.min(axis=1)
    return best, index
