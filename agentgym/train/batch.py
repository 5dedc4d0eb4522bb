"""An iteration's episodes as tensors: the padded ``Batch``, the ``Scores`` taken before the update, and per-token
advantages (a turn's advantage spread over its tokens; PPO's GAE over model tokens)."""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from agentgym.train.advantages import gae, whiten
from agentgym.train.rollout import Trajectory


class Batch(NamedTuple):
    """An iteration's trajectories as right-padded ``[episodes, tokens]`` tensors."""

    token_ids: torch.Tensor
    attention: torch.Tensor
    mask: torch.Tensor  #: 1 on the model's sampled tokens (the loss mask)
    sampler_logprobs: torch.Tensor  #: the sampler's logprobs of those tokens, 0 elsewhere


class Scores(NamedTuple):
    """The batch scored before the update (``Trainer.score``), shaped like it."""

    old_logprobs: torch.Tensor  #: the trainer's own logprobs, the ratio's denominator
    values: torch.Tensor  #: the critic's values (PPO; zeros otherwise)
    ref_logprobs: torch.Tensor | None  #: the KL reference's logprobs; None at KL weight 0


def rows_of(images: list[dict[str, Any]] | None, rows: list[int]) -> list[dict[str, Any]] | None:
    """The image inputs of ``rows`` (None for a text model)."""
    return None if images is None else [images[row] for row in rows]


def collate(trajectories: list[Trajectory], pad_id: int) -> Batch:
    """Right-padded ``token_ids``, attention mask, loss mask and sampler logprobs."""
    length = max(len(t.token_ids) for t in trajectories)
    token_ids = torch.full((len(trajectories), length), pad_id, dtype=torch.long)
    attention = torch.zeros((len(trajectories), length), dtype=torch.long)
    mask = torch.zeros((len(trajectories), length))
    logprobs = torch.zeros((len(trajectories), length))
    for i, t in enumerate(trajectories):
        n = len(t.token_ids)
        token_ids[i, :n] = torch.tensor(t.token_ids)
        attention[i, :n] = 1
        mask[i, :n] = torch.tensor(t.loss_mask, dtype=torch.float)
        logprobs[i, :n] = torch.tensor(t.logprobs)
    return Batch(token_ids, attention, mask, logprobs)


def spread_over_turns(trajectories: list[Trajectory], turn_advantages: list[list[float]]) -> torch.Tensor:
    """Per-turn advantages as a padded per-token tensor: each turn's value on the tokens up to its last sampled one.

    Only the turn's sampled tokens are in the loss (the mask), so the prompt and env tokens
    before them may carry the value too.
    """
    advantages = torch.zeros(len(trajectories), max(len(t.token_ids) for t in trajectories))
    for i, t in enumerate(trajectories):
        start = 0
        for end, advantage in zip(t.turn_ends, turn_advantages[i]):
            advantages[i, start : end + 1] = advantage
            start = end + 1
    return advantages


def token_gae(
    trajectories: list[Trajectory], values: torch.Tensor, gamma: float, lam: float, std_normalize: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO: GAE over each episode's model tokens, a turn's reward on its last token; (advantages, returns).

    With ``std_normalize`` the advantages are whitened over the batch's model tokens (CleanRL's ``norm_adv``).
    """
    length = max(len(t.token_ids) for t in trajectories)
    advantages = torch.zeros(len(trajectories), length)
    returns = torch.zeros(len(trajectories), length)
    model_tokens = torch.zeros(len(trajectories), length, dtype=torch.bool)
    for i, t in enumerate(trajectories):
        positions = torch.tensor([k for k, m in enumerate(t.loss_mask) if m])
        token_rewards = torch.zeros(len(positions))
        ends = {end: reward for end, reward in zip(t.turn_ends, t.rewards)}
        for k, position in enumerate(positions.tolist()):
            token_rewards[k] = ends.get(position, 0.0)
        advantages[i, positions], returns[i, positions] = gae(token_rewards, values[i, positions], gamma, lam)
        model_tokens[i, positions] = True
    if std_normalize:
        advantages[model_tokens] = whiten(advantages[model_tokens])
    return advantages, returns
