"""The loss: token logprobs under the model, PPO's clipped objective, KL, entropy, value loss.

All functions take right-padded ``[batch, length]`` tensors whose ``mask`` is 1 on the
model's sampled tokens and 0 on prompt, environment and padding tokens.
"""

from __future__ import annotations

from typing import Literal

import torch

Aggregation = Literal["token", "sequence"]


def token_logprobs_and_entropy(
    logits: torch.Tensor, token_ids: torch.Tensor, positions: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logprob of each token given the ones before it, and the entropy of that prediction (``[batch, length]``).

    ``logits`` are the model's outputs for ``token_ids`` (``[batch, length, vocab]``); the first
    position has no prediction and gets 0. With ``positions`` (sorted, below ``length - 1``), ``logits`` hold
    only those positions' outputs (``[batch, len(positions), vocab]``, as a model's ``logits_to_keep``
    gives them): the token after each gets its logprob and entropy, every other token 0.
    """
    if positions is None:
        positions, logits = torch.arange(token_ids.shape[1] - 1, device=token_ids.device), logits[:, :-1]
    logp = torch.log_softmax(logits.float(), dim=-1)
    chosen = logp.gather(-1, token_ids[:, positions + 1, None])[..., 0]
    entropy = -(logp.exp() * logp).sum(-1)
    empty = chosen.new_zeros(token_ids.shape)
    return empty.index_copy(1, positions + 1, chosen), empty.index_copy(1, positions + 1, entropy)


def predicting_positions(mask: torch.Tensor) -> torch.Tensor:
    """The positions whose outputs predict a token of ``mask`` (1 on the tokens a loss reads) in any row:
    the logits a forward pass needs (each position predicts the token after it)."""
    return mask[:, 1:].bool().any(0).nonzero()[:, 0]


def aggregate(values: torch.Tensor, mask: torch.Tensor, how: Aggregation) -> torch.Tensor:
    """Mean over masked tokens: all tokens together (``token``), or per sequence then over sequences."""
    mask = mask.float()
    if how == "token":
        return (values * mask).sum() / mask.sum().clamp(min=1)
    per_sequence = (values * mask).sum(-1) / mask.sum(-1).clamp(min=1)
    return per_sequence[mask.sum(-1) > 0].mean() if (mask.sum(-1) > 0).any() else per_sequence.sum() * 0


def clipped_policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    how: Aggregation = "token",
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO's clipped surrogate, ratio clipped to ``[1 - clip_low, 1 + clip_high]``.

    Returns the loss and the fraction of tokens where clipping was active.
    """
    ratio = torch.exp(logprobs - old_logprobs)
    unclipped = ratio * advantages
    clipped = ratio.clamp(1 - clip_low, 1 + clip_high) * advantages
    loss = aggregate(-torch.minimum(unclipped, clipped), mask, how)
    clip_fraction = aggregate((unclipped != clipped).float(), mask, "token")
    return loss, {"clip_fraction": clip_fraction.item()}


def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token KL(policy || reference), Schulman's k3 estimator: ``exp(d) - d - 1``, ``d = ref - policy``."""
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1


def value_loss(
    values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor, how: Aggregation = "token"
) -> torch.Tensor:
    """Half the squared error of the critic against the GAE returns."""
    return aggregate(0.5 * (values - returns) ** 2, mask, how)
