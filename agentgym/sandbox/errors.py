"""The sandbox's two errors: a request it refuses, and a backend that cannot run here."""

from __future__ import annotations


class SandboxError(RuntimeError):
    """A sandbox could not do what was asked (a bad path, a closed sandbox)."""


class SandboxUnavailable(SandboxError):
    """The backend cannot run here (bwrap or docker missing, no namespaces, no image); says how to fix it."""
