"""Where a run's weights come from: the device, the dtypes of its weights and passes, the model folder of a
checkpoint, and the weights loaded from it (an adapter merged in)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from agentgym.train.config import TrainConfig


def pick_device(device: str) -> torch.device:
    """``auto`` is CUDA when available, else CPU."""
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


def precision(config: TrainConfig, device: torch.device) -> tuple[torch.dtype, torch.dtype, torch.dtype | None]:
    """The dtypes of the policy's weights, of frozen weights (reference) and of forward passes (autocast).

    See ``ModelConfig``: float32 on CPU; bfloat16 mixed precision on CUDA, with trainable weights
    in float32 and frozen ones in bfloat16. A compute dtype of None means no autocast.
    """
    model = config.model
    low = torch.float32 if device.type == "cpu" else torch.bfloat16
    frozen = getattr(torch, model.dtype) if model.dtype else low
    # Under LoRA the loaded weights are the frozen base; peft keeps the adapter in float32.
    weights = frozen if model.lora is not None or model.dtype else torch.float32
    compute = getattr(torch, model.compute_dtype) if model.compute_dtype else low
    return weights, frozen, None if compute == torch.float32 else compute


def checkpoint_model(path: str) -> Path:
    """The model folder of ``path``: a run's output folder (its latest checkpoint), a checkpoint, or a ``model/``."""
    folder = Path(path)
    if (folder / "checkpoints").is_dir():
        found = sorted((folder / "checkpoints").glob("iteration-*"))
        if not found:
            raise FileNotFoundError(f"{folder} has no checkpoint to start from")
        folder = found[-1]
    if (folder / "model").is_dir():
        folder = folder / "model"
    if not (folder / "config.json").is_file() and not (folder / "adapter_config.json").is_file():
        raise FileNotFoundError(f"{folder} holds no model or adapter (config.json, adapter_config.json)")
    return folder


def load_weights(model_class: Any, folder: Path, start: Path | None, dtype: torch.dtype) -> nn.Module:
    """``folder``'s model, or ``start``'s (see ``checkpoint_model``): its full weights, or its adapter merged in."""
    if start is not None and (start / "config.json").is_file():
        return model_class.from_pretrained(start, dtype=dtype)
    model = model_class.from_pretrained(folder, dtype=dtype)
    if start is None:
        return model
    from peft import PeftModel

    return PeftModel.from_pretrained(model, start).merge_and_unload()
