"""The sandbox (moved into a package; split by concern next)."""

from agentgym.sandbox.box import (
    UNPRIVILEGED_GID,
    UNPRIVILEGED_UID,
    WORK,
    Limits,
    RunResult,
    Sandbox,
    SandboxError,
    SandboxUnavailable,
    available,
)

__all__ = [
    "UNPRIVILEGED_GID",
    "UNPRIVILEGED_UID",
    "WORK",
    "Limits",
    "RunResult",
    "Sandbox",
    "SandboxError",
    "SandboxUnavailable",
    "available",
]
