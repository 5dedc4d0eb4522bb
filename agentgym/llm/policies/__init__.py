"""Policies: chat history in, reply out. ``make_policy`` builds one from a spec string.

Specs:

* ``oracle``, ``random``: the env's scripted baselines; ``obedient``: the scripted player that follows injected
  instructions, on envs under prompt injection (docs/safety.md);
* ``openai:MODEL@BASE_URL`` (``@BASE_URL`` optional; default ``$OPENAI_BASE_URL`` or
  ``http://127.0.0.1:8000/v1``): any OpenAI-compatible server, e.g. ``vllm serve``;
* ``hf:PATH``: a Hugging Face model run in-process (needs the ``hf`` extra).
"""

from __future__ import annotations

import os
from typing import Any

from agentgym.llm.policies.base import Episode, Message, Policy, Reply
from agentgym.llm.policies.scripted import ObedientPolicy, OraclePolicy, RandomPolicy

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"

__all__ = [
    "Episode",
    "Message",
    "ObedientPolicy",
    "OraclePolicy",
    "Policy",
    "RandomPolicy",
    "Reply",
    "make_policy",
    "parse_spec",
]


def parse_spec(spec: str) -> tuple[str, str, str | None]:
    """Split a policy spec into (backend, model or path, base URL)."""
    backend, _, rest = spec.partition(":")
    if backend in ("oracle", "random", "obedient") and not rest:
        return backend, "", None
    if backend == "hf" and rest:
        return backend, rest, None
    if backend == "openai" and rest:
        model, at, url = rest.rpartition("@")
        if at and url.startswith(("http://", "https://")):
            return backend, model, url
        return backend, rest, os.environ.get("OPENAI_BASE_URL", DEFAULT_BASE_URL)
    raise ValueError(f"bad policy spec {spec!r}; expected oracle, random, obedient, openai:MODEL[@URL] or hf:PATH")


def make_policy(spec: str, **options: Any) -> Policy:
    """Build the policy a spec names; ``options`` go to LLM backends (sampling, limits)."""
    backend, model, url = parse_spec(spec)
    if backend == "oracle":
        return OraclePolicy()
    if backend == "random":
        return RandomPolicy()
    if backend == "obedient":
        return ObedientPolicy()
    if backend == "openai":
        from agentgym.llm.policies.openai_compat import OpenAIPolicy

        return OpenAIPolicy(model, url or DEFAULT_BASE_URL, **options)
    from agentgym.llm.policies.hf import HFPolicy

    return HFPolicy(model, **options)
