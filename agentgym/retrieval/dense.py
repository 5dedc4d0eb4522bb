"""Dense retrieval with an embedding model the user points at (e5, bge, ...): an option beside BM25.

:class:`Encoder` embeds texts with a Hugging Face model from a local folder or hub name
(``transformers``' ``AutoModel``; the ``hf`` extra): the mean of the last hidden states over
the tokens, L2-normalised, with the model's query and passage prefixes (e5's ``"query: "`` and
``"passage: "``, as Search-R1's e5 retriever uses them). :meth:`DenseIndex.build` embeds every
document once into ``embeddings.npy`` (float16) beside a ``meta.json``; searches load it with
``numpy.load(mmap_mode="r")`` and rank by inner product (cosine), ties by the lower index, so a
process's env copies share the pages. :func:`shared_dense_index` caches one index per corpus and
model, under ``<cache>/retrieval/dense/``, built under a file lock as BM25's is.

Exact search over all embeddings costs one matrix-vector product: fine to a few million
passages on a CPU; Search-R1's 21M-passage wiki-18 wants a GPU for the build.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from agentgym.retrieval.bm25 import Hit
from agentgym.utils.files import build_once, cache_root, written_aside

#: Bumped when the files' format changes.
DENSE_VERSION = 1


class Encoder:
    """Texts to unit vectors with a Hugging Face encoder (mean pooling over tokens)."""

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        query_prefix: str = "query: ",
        passage_prefix: str = "passage: ",
        max_length: int = 256,
        batch_size: int = 64,
        device: str | None = None,
    ) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.name = str(model)
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self.max_length, self.batch_size = max_length, batch_size
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tokenizer = AutoTokenizer.from_pretrained(model)
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        self.model = AutoModel.from_pretrained(model).to(self.device).eval()

    def encode(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        """Unit-length float32 embeddings of ``texts`` (one row each), with the query or passage prefix."""
        import torch

        prefix = self.query_prefix if query else self.passage_prefix
        rows = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                batch = [prefix + text for text in texts[start : start + self.batch_size]]
                tokens = self.tokenizer(
                    batch, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
                ).to(self.device)
                hidden = self.model(**tokens).last_hidden_state
                mask = tokens["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
                rows.append(torch.nn.functional.normalize(pooled, dim=-1).float().cpu().numpy())
        return np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32)


class DenseIndex:
    """Document embeddings read from a memory-mapped file, searched by inner product."""

    def __init__(self, directory: str | os.PathLike[str], encoder: Encoder) -> None:
        self.directory = Path(directory)
        self.meta: dict[str, Any] = json.loads((self.directory / "meta.json").read_text())
        self.num_docs: int = self.meta["num_docs"]
        self.embeddings = np.asarray(np.load(self.directory / "embeddings.npy", mmap_mode="r"))
        self.encoder = encoder

    @classmethod
    def build(
        cls,
        texts: Iterable[str],
        num_docs: int,
        directory: str | os.PathLike[str],
        encoder: Encoder,
        meta: dict[str, Any] | None = None,
    ) -> DenseIndex:
        """Embed ``texts`` (``num_docs`` of them) into ``directory`` (written aside, then renamed into place)."""
        with written_aside(directory) as work:
            out = None
            done, batch = 0, []
            for text in texts:
                batch.append(text)
                if len(batch) == 4096:
                    out, done = _write_rows(work, out, encoder.encode(batch), done, num_docs), done + len(batch)
                    batch = []
            if batch:
                out, done = _write_rows(work, out, encoder.encode(batch), done, num_docs), done + len(batch)
            if done != num_docs:
                raise ValueError(f"the corpus has {done} documents, not the {num_docs} announced")
            if out is not None:
                out.flush()
            stored = {**(meta or {}), "version": DENSE_VERSION, "num_docs": num_docs, "model": encoder.name}
            (work / "meta.json").write_text(json.dumps(stored, indent=1))
            del out
        return cls(directory, encoder)

    def matches(self, meta: dict[str, Any], num_docs: int) -> bool:
        stored = self.meta
        return (
            stored.get("version") == DENSE_VERSION
            and stored.get("num_docs") == num_docs
            and stored.get("model") == self.encoder.name
            and all(stored.get(key) == value for key, value in meta.items())
        )

    @property
    def size_bytes(self) -> int:
        return sum(path.stat().st_size for path in self.directory.iterdir() if path.is_file())

    def search(self, query: str, k: int = 10) -> list[int]:
        """The indices of the ``k`` documents nearest to ``query``, best first (ties: lower index first)."""
        return [hit.doc for hit in self.search_hits(query, k)]

    def search_hits(self, query: str, k: int = 10) -> list[Hit]:
        if k <= 0 or not query.strip() or self.num_docs == 0:
            return []
        vector = self.encoder.encode([query], query=True)[0].astype(np.float32)
        scores = self.embeddings.astype(np.float32, copy=False) @ vector
        k = min(k, self.num_docs)
        candidates = np.argpartition(-scores, k - 1)[:k] if k < self.num_docs else np.arange(self.num_docs)
        order = candidates[np.lexsort((candidates, -scores[candidates]))]
        return [Hit(int(doc), float(scores[doc])) for doc in order]


def _write_rows(work: Path, out: np.ndarray | None, rows: np.ndarray, done: int, num_docs: int) -> np.ndarray:
    if out is None:
        out = np.lib.format.open_memmap(
            work / "embeddings.npy", mode="w+", dtype=np.float16, shape=(num_docs, rows.shape[1])
        )
    if done + len(rows) > num_docs:
        raise ValueError(f"the corpus has more than the {num_docs} documents announced")
    out[done : done + len(rows)] = rows.astype(np.float16)
    return out


_SHARED: dict[str, DenseIndex] = {}
_ENCODERS: dict[str, Encoder] = {}
_SHARED_LOCK = threading.Lock()


def shared_dense_index(
    name: str,
    texts: Callable[[], Iterable[str]],
    num_docs: int,
    model: str | os.PathLike[str],
    *,
    meta: dict[str, Any] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    **encoder_options: Any,
) -> DenseIndex:
    """The process-wide dense index of corpus ``name`` under ``model``: loaded from the cache, or built first."""
    key_text = f"{name}|{model}"
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:60]
    digest = hashlib.blake2b(key_text.encode(), digest_size=4).hexdigest()
    directory = cache_root(cache_dir) / "retrieval" / "dense" / f"{safe}-{digest}"
    meta = dict(meta or {}, corpus=name)
    with _SHARED_LOCK:
        encoder = _ENCODERS.get(str(model))
        if encoder is None:
            encoder = _ENCODERS[str(model)] = Encoder(model, **encoder_options)
        index = _SHARED.get(str(directory))
        if index is not None and index.matches(meta, num_docs):
            return index

        def load(folder: Path) -> DenseIndex | None:
            try:
                found = DenseIndex(folder, encoder)
            except (OSError, ValueError, KeyError):
                return None
            return found if found.matches(meta, num_docs) else None

        index = _SHARED[str(directory)] = build_once(
            directory, load, lambda folder: DenseIndex.build(texts(), num_docs, folder, encoder, meta)
        )
        return index
