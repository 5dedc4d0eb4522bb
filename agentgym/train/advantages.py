"""Advantage estimators: GRPO, GAE (PPO), GiGPO and SPIRAL's role-conditioned baselines. Each is a short function.

Multi-turn episodes have one reward per turn (the env's reward for the model's reply).
GRPO and GiGPO give one advantage per turn, shared by all of that turn's tokens; GAE gives
one per model token. Environment and prompt tokens get no advantage (the loss mask is 0).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence

import torch


def group_normalize(values: torch.Tensor, groups: Sequence[Hashable], std_normalize: bool = True) -> torch.Tensor:
    """``(value - mean of its group)``, divided by the group's std if ``std_normalize``.

    A group of one, or one where all values are equal, gets advantage 0.
    """
    members: dict[Hashable, list[int]] = defaultdict(list)
    for index, group in enumerate(groups):
        members[group].append(index)
    advantages = torch.zeros_like(values)
    for indices in members.values():
        group_values = values[indices]
        centered = group_values - group_values.mean()
        if std_normalize and len(indices) > 1:
            centered = centered / (group_values.std() + 1e-6)
        advantages[indices] = centered
    return advantages


def whiten(values: torch.Tensor) -> torch.Tensor:
    """Zero mean and unit std over all ``values`` (PPO's batch advantage normalisation)."""
    return (values - values.mean()) / (values.std() + 1e-6) if values.numel() > 1 else values - values.mean()


def grpo_advantages(returns: torch.Tensor, groups: Sequence[Hashable], std_normalize: bool = True) -> torch.Tensor:
    """GRPO: each episode's return relative to the other episodes of its group (same task)."""
    return group_normalize(returns, groups, std_normalize)


def rae_advantages(
    returns: Sequence[float], keys: Sequence[Hashable], baselines: dict[Hashable, float], decay: float = 0.95
) -> list[float]:
    """SPIRAL's role-conditioned advantage estimation (Liu et al., 2025): ``R - b[key]``.

    ``b[key]`` is an exponential moving average of the earlier returns of ``key`` (a game and a
    role), read before this return updates it: ``b <- decay * b + (1 - decay) * R``, in order.
    ``baselines`` carries the averages from one batch to the next (a key starts at 0); it is updated
    in place.
    """
    advantages = []
    for value, key in zip(returns, keys):
        baseline = baselines.get(key, 0.0)
        advantages.append(value - baseline)
        baselines[key] = decay * baseline + (1 - decay) * value
    return advantages


def discounted_returns(rewards: Sequence[float], gamma: float) -> list[float]:
    """The return from each turn on: ``G_t = r_t + gamma * G_{t+1}``."""
    returns, running = [0.0] * len(rewards), 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running
        returns[t] = running
    return returns


def gigpo_advantages(
    turn_rewards: Sequence[Sequence[float]],
    anchors: Sequence[Sequence[Hashable]],
    groups: Sequence[Hashable],
    *,
    gamma: float = 1.0,
    step_weight: float = 1.0,
    std_normalize: bool = True,
) -> list[list[float]]:
    """GiGPO (Feng et al., 2025): episode-level group advantage plus a step-level one.

    The episode advantage is GRPO's on the episode returns. Step groups gather, within
    one episode group, the turns that acted on the same anchor observation (``anchors[e][t]``,
    e.g. the observation text); each such turn's discounted return is normalised within
    its step group. A turn's advantage is ``episode + step_weight * step``.
    Returns one list of per-turn advantages per episode.
    """
    returns = torch.tensor([float(sum(rewards)) for rewards in turn_rewards])
    episode = grpo_advantages(returns, groups, std_normalize)
    step_returns, step_groups, where = [], [], []
    for e, (rewards, keys) in enumerate(zip(turn_rewards, anchors)):
        for t, value in enumerate(discounted_returns(rewards, gamma)):
            step_returns.append(value)
            step_groups.append((groups[e], keys[t]))
            where.append((e, t))
    step = group_normalize(torch.tensor(step_returns), step_groups, std_normalize)
    advantages = [[float(episode[e])] * len(rewards) for e, rewards in enumerate(turn_rewards)]
    for (e, t), value in zip(where, step.tolist()):
        advantages[e][t] += step_weight * value
    return advantages


def gae(
    rewards: torch.Tensor, values: torch.Tensor, gamma: float = 1.0, lam: float = 0.95
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over one episode's model tokens, in order.

    ``rewards[k]`` is the reward after token ``k`` (a turn's reward sits on its last token),
    ``values[k]`` the critic's value before it. The episode ends after the last token
    (its next value is 0). Returns (advantages, returns = advantages + values).
    """
    advantages = torch.zeros_like(rewards)
    running = 0.0
    for k in reversed(range(len(rewards))):
        next_value = values[k + 1] if k + 1 < len(rewards) else 0.0
        delta = rewards[k] + gamma * next_value - values[k]  # TD error
        running = delta + gamma * lam * running
        advantages[k] = running
    return advantages, advantages + values
