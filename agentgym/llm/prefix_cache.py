"""Prefix caching: the keys and values a model computed for recent sequences, reused by prompts that start alike.

A multi-turn episode resends its whole history every turn, so each prompt begins with the previous turn's
prompt and reply. :class:`PrefixCache` keeps, for each sequence a ``Generator`` finished (prompt plus the
completion's tokens), the attention keys and values of every layer, and finds for a new prompt the stored
sequence sharing its longest token prefix: only the rest of the prompt is run through the model. A key or value
at a position depends only on the tokens up to it, so the reused ones are the ones the prompt's own prefill
would compute (up to floating-point rounding: shapes differ). Entries live until the cache holds more than its
budget of tokens, the least recently used going first, as vLLM's automatic prefix caching evicts its blocks.

Works with models whose cache is transformers' ``DynamicCache`` of full-attention layers (no sliding window);
a ``Generator`` checks that and skips the cache otherwise.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import torch

#: One layer's keys and values for one sequence, each ``(kv_heads, tokens, head_dim)``.
LayerKV = tuple[torch.Tensor, torch.Tensor]


@dataclass
class PrefixHit:
    """The reusable start of a prompt: its first ``length`` tokens' keys and values per layer (none when 0)."""

    length: int
    layers: list[LayerKV] | None = None


class PrefixCache:
    """Keys and values of recent token sequences, looked up by longest shared prefix.

    ``max_tokens`` bounds the tokens held over all entries (memory: :meth:`bytes_per_token` each). A stored
    sequence replaces the entries it extends (they are its prefixes). ``min_reuse`` is the shortest prefix
    worth reusing. Not thread-safe: the ``Generator`` that owns it uses it from its one thread.
    """

    def __init__(self, max_tokens: int, min_reuse: int = 16) -> None:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        self.max_tokens = max_tokens
        self.min_reuse = min_reuse
        self._entries: OrderedDict[int, tuple[torch.Tensor, list[LayerKV]]] = OrderedDict()
        self._next_key = 0
        self.tokens = 0
        #: Prompt tokens looked up, and those found (served from the cache).
        self.looked_up = 0
        self.hits = 0

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, ids: Sequence[int]) -> PrefixHit:
        """The longest stored prefix of ``ids``, leaving at least one token of them to run (its logits start the
        reply); the entry it came from becomes the most recently used."""
        prompt = torch.tensor(ids)
        best_key, best_length = None, 0
        for key, (stored, _) in self._entries.items():
            length = _shared_prefix(stored, prompt)
            if length > best_length:
                best_key, best_length = key, length
        best_length = min(best_length, len(ids) - 1)
        self.looked_up += len(ids)
        if best_key is None or best_length < self.min_reuse:
            return PrefixHit(0)
        self._entries.move_to_end(best_key)
        self.hits += best_length
        layers = [(keys[:, :best_length], values[:, :best_length]) for keys, values in self._entries[best_key][1]]
        return PrefixHit(best_length, layers)

    def store(self, ids: Sequence[int], layers: list[LayerKV]) -> None:
        """Keep the keys and values ``layers`` of the sequence ``ids`` (one per token), dropping the entries it
        extends, then the least recently used ones until the budget holds. A sequence over the budget is not kept."""
        if len(ids) < self.min_reuse or len(ids) > self.max_tokens:
            return
        sequence = torch.tensor(ids)
        for key, (stored, _) in list(self._entries.items()):
            if len(stored) <= len(sequence) and _shared_prefix(stored, sequence) == len(stored):
                self._drop(key)
        self._entries[self._next_key] = (
            sequence,
            [(keys.contiguous(), values.contiguous()) for keys, values in layers],
        )
        self._next_key += 1
        self.tokens += len(sequence)
        while self.tokens > self.max_tokens:
            self._drop(next(iter(self._entries)))

    def clear(self) -> None:
        """Forget every entry (a model whose weights changed computes other keys and values)."""
        self._entries.clear()
        self.tokens = 0

    def _drop(self, key: int) -> None:
        stored, _ = self._entries.pop(key)
        self.tokens -= len(stored)


def bytes_per_token(layers: list[LayerKV]) -> int:
    """The memory one token's keys and values take over ``layers``."""
    return sum(keys[:, :1].nbytes + values[:, :1].nbytes for keys, values in layers)


def _shared_prefix(a: torch.Tensor, b: torch.Tensor) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    differ = (a[:n] != b[:n]).nonzero()
    return int(differ[0, 0]) if len(differ) else n
