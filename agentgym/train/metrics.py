"""A training run's metrics log: one JSON line per iteration in ``metrics.jsonl``, and TensorBoard or W&B."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


class MetricsLog:
    """Metrics per iteration to ``metrics.jsonl``, and to TensorBoard and W&B where enabled."""

    def __init__(self, out: Path, tensorboard: bool, wandb_project: str | None, config: dict[str, Any]) -> None:
        self.file = (out / "metrics.jsonl").open("a", encoding="utf-8")
        self.writer = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(out / "tensorboard"))
        self.wandb = None
        if wandb_project:
            import wandb

            self.wandb = wandb.init(project=wandb_project, config=config, dir=str(out))

    def truncate(self, iteration: int) -> None:
        """Drop the rows of ``iteration`` and later ones from ``metrics.jsonl``: a run resumed from a checkpoint
        writes them again, once each."""
        self.file.close()
        path = Path(self.file.name)
        rows = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        kept = [line for line in rows if json.loads(line).get("iteration", -1) < iteration]
        path.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")
        self.file = path.open("a", encoding="utf-8")

    def write(self, metrics: dict[str, float], step: int) -> None:
        clean = {key: value for key, value in metrics.items() if not (isinstance(value, float) and math.isnan(value))}
        self.file.write(json.dumps(clean) + "\n")
        self.file.flush()
        if self.writer is not None:
            for key, value in clean.items():
                self.writer.add_scalar(f"train/{key}", value, step)
        if self.wandb is not None:
            self.wandb.log(clean, step=step)

    def close(self) -> None:
        if not self.file.closed:
            self.file.close()
        if self.writer is not None:
            self.writer.close()
        if self.wandb is not None:
            self.wandb.finish()
            self.wandb = None
