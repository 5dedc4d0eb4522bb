"""What ``success`` and ``score`` mean per family, and which published metric each equals.

The definitions are data (``metrics.yaml`` beside this module): per family, ``success``,
``score``, ``published`` (the published metric each equals) and ``replay`` (``deterministic``:
a saved episode replays exactly; ``live``: a running site or desktop may answer differently).
``agentgym info ID`` prints an id's definitions, the leaderboard links its columns to them and
docs/protocols.md lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

from agentgym.contract.registry import env_info

REPLAY_KINDS = ("deterministic", "live")


@dataclass(frozen=True)
class MetricDefinition:
    """One family's metrics: what its ``info["success"]`` and ``info["score"]`` mean."""

    family: str
    success: str
    score: str
    published: str
    replay: str

    @property
    def deterministic(self) -> bool:
        """Whether a saved episode's actions replay to the same episode."""
        return self.replay == "deterministic"

    @property
    def anchor(self) -> str:
        """The id of this family's definition in docs/protocols.md and on the leaderboard page."""
        return f"metrics-{self.family}"


@cache
def metric_definitions() -> dict[str, MetricDefinition]:
    """Every family's definitions, by family name."""
    text = resources.files("agentgym.evaluation").joinpath("metrics.yaml").read_text(encoding="utf-8")
    families = yaml.safe_load(text)["families"]
    definitions = {}
    for family, entry in families.items():
        if entry.get("replay") not in REPLAY_KINDS:
            raise ValueError(f"metrics.yaml: {family}'s replay must be one of {REPLAY_KINDS}")
        definitions[family] = MetricDefinition(
            family, str(entry["success"]), str(entry["score"]), str(entry["published"]), entry["replay"]
        )
    return definitions


def family_metrics(family: str) -> MetricDefinition | None:
    """A family's definitions (None for a family metrics.yaml does not know, e.g. a plugin's)."""
    return metric_definitions().get(family)


def env_metrics(env_id: str) -> MetricDefinition | None:
    """The definitions of a registered id's family."""
    return family_metrics(env_info(env_id).family)
