"""Gymnasium vector envs over agentgym's text spaces: ``gym.make_vec(ID, num_envs=N)``, sync and async.

Gymnasium batches a :class:`~gymnasium.spaces.Text` space as a ``Tuple`` of copies and its
observations as a tuple of strings, which is what agentgym wants. Only the shared memory
of ``AsyncVectorEnv`` (on by default) does not fit: Gymnasium stores a ``Text`` value as
indices into the space's charset (so a character outside it, such as Sokoban's ``√``,
raises ``KeyError``), and it decodes the buffer into a tuple of strings once, when the
vector env is made, so later writes would never be seen. This module registers
:class:`~agentgym.contract.core.UnicodeText` (and so its subclasses) with Gymnasium's
``create_shared_memory``, ``read_from_shared_memory`` and ``write_to_shared_memory``; it is
imported by :mod:`agentgym.contract.core`, so the registration is in place wherever the space exists
(the main process and every worker).

Layout: each sub-env owns one slot of ``max_length + 1`` unsigned 32-bit integers, the
string's length followed by its code points (UTF-32, lone surrogates included), so that
every string the space contains round-trips, whatever its characters. UTF-8 would need the
same 4 bytes per character in the worst case, and the slot must hold the worst case because
the worker sends nothing else. The buffer is allocated (and zero-filled) once:
``4 * (max_length + 1) * num_envs`` bytes, 0.8 MB per sub-env for the default 200,000
characters (a screenshot of 1280x720 takes 2.8 MB). Each step copies only the characters
written, never the whole slot. With many sub-envs and little memory, ``shared_memory=False``
sends each observation through the worker's pipe instead (see docs/vector.md for measurements).

What ``read_from_shared_memory`` returns is a :class:`SharedTextBatch`: a live, read-only
sequence of strings decoded on access. ``AsyncVectorEnv`` hands out a deep copy of it (its
default ``copy=True``), which is a plain ``tuple`` of ``str``; with ``copy=False`` the
batch itself, whose items change with the next step.

Actions need nothing here: ``batch_space`` of the action space is a ``Tuple`` of copies,
and ``iterate`` over it yields each sub-env's item of a list or tuple of replies (or of
tool-call dicts).
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Iterator, Sequence
from multiprocessing.sharedctypes import SynchronizedArray
from types import ModuleType
from typing import Any, overload

import numpy as np
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

from agentgym.contract.core import UnicodeText

#: The slot's item type: 4-byte unsigned integers (the ``array`` module's typecode ``I``).
_DTYPE = np.dtype(np.uint32)
#: UTF-32 in the machine's byte order, the order numpy reads the buffer in.
_CODEC = f"utf-32-{'le' if sys.byteorder == 'little' else 'be'}"


def slot_size(space: UnicodeText) -> int:
    """The integers one sub-env's slot holds: the length, then ``max_length`` code points."""
    return space.max_length + 1


class SharedTextBatch(Sequence[str]):
    """The strings of ``n`` sub-envs in a shared buffer, decoded when an item is read.

    A deep copy is a ``tuple`` of ``str`` (what ``AsyncVectorEnv`` returns by default);
    equality compares the decoded strings with any sequence.
    """

    def __init__(self, space: UnicodeText, buffer: np.ndarray, n: int) -> None:
        self._slots = buffer.reshape(n, slot_size(space))

    def __len__(self) -> int:
        return len(self._slots)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        slot = self._slots[index]
        return slot[1 : 1 + int(slot[0])].tobytes().decode(_CODEC, "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and not isinstance(other, str) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]  (mutable: the workers write into it)

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return f"SharedTextBatch({tuple(self)!r})"


@create_shared_memory.register(UnicodeText)
def _create_text_shared_memory(space: UnicodeText, n: int = 1, ctx: ModuleType = multiprocessing) -> SynchronizedArray:
    return ctx.Array(_DTYPE.char, n * slot_size(space))


@read_from_shared_memory.register(UnicodeText)
def _read_text_from_shared_memory(space: UnicodeText, shared_memory: SynchronizedArray, n: int = 1) -> SharedTextBatch:
    return SharedTextBatch(space, np.frombuffer(shared_memory.get_obj(), dtype=_DTYPE), n)


@write_to_shared_memory.register(UnicodeText)
def _write_text_to_shared_memory(space: UnicodeText, index: int, value: str, shared_memory: SynchronizedArray) -> None:
    if not isinstance(value, str):
        raise TypeError(f"a {space!r} observation must be a str, got {type(value).__name__}")
    if len(value) > space.max_length:
        raise ValueError(
            f"an observation of {len(value)} characters exceeds its space's max_length {space.max_length}; "
            "the env breaks its observation space (shared_memory=False would carry it anyway)"
        )
    codes = np.frombuffer(value.encode(_CODEC, "surrogatepass"), dtype=_DTYPE)
    start = index * slot_size(space)
    destination = np.frombuffer(shared_memory.get_obj(), dtype=_DTYPE)
    destination[start + 1 : start + 1 + len(codes)] = codes
    destination[start] = len(codes)
