"""The trainer's advantage estimators and loss terms, on hand-made batches."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from agentgym.train.advantages import discounted_returns, gae, gigpo_advantages, grpo_advantages, whiten  # noqa: E402
from agentgym.train.loss import (  # noqa: E402
    aggregate,
    clipped_policy_loss,
    kl_k3,
    predicting_positions,
    token_logprobs_and_entropy,
)


def test_grpo_is_relative_to_the_group() -> None:
    returns = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.5])
    groups = ["a", "a", "b", "b", "c"]
    plain = grpo_advantages(returns, groups, std_normalize=False)
    assert plain.tolist() == pytest.approx([0.5, -0.5, 0.0, 0.0, 0.0])
    scaled = grpo_advantages(returns, groups, std_normalize=True)
    # std of [1, 0] (unbiased) is 1/sqrt(2); equal returns and singleton groups give 0.
    assert scaled.tolist() == pytest.approx([0.5 * math.sqrt(2), -0.5 * math.sqrt(2), 0.0, 0.0, 0.0], abs=1e-4)


def test_whiten_gives_zero_mean_and_unit_std() -> None:
    whitened = whiten(torch.tensor([1.0, 2.0, 3.0, 6.0]))
    assert whitened.mean().item() == pytest.approx(0.0, abs=1e-6)
    assert whitened.std().item() == pytest.approx(1.0, abs=1e-5)
    assert whitened.argsort().tolist() == [0, 1, 2, 3]  # the order is kept
    assert whiten(torch.tensor([0.7])).tolist() == [0.0]  # a single value is only centred


def test_discounted_returns() -> None:
    assert discounted_returns([0.0, 0.0, 1.0], 0.5) == pytest.approx([0.25, 0.5, 1.0])


def test_gae_matches_a_hand_computation() -> None:
    rewards, values = torch.tensor([0.0, 0.0, 1.0]), torch.tensor([0.5, 0.25, 0.5])
    # gamma = lam = 1: advantages are Monte Carlo returns minus values.
    advantages, returns = gae(rewards, values, gamma=1.0, lam=1.0)
    assert advantages.tolist() == pytest.approx([0.5, 0.75, 0.5])
    assert returns.tolist() == pytest.approx([1.0, 1.0, 1.0])
    # lam = 0: one-step TD errors r + gamma V' - V.
    advantages, _ = gae(rewards, values, gamma=0.9, lam=0.0)
    assert advantages.tolist() == pytest.approx([0.9 * 0.25 - 0.5, 0.9 * 0.5 - 0.25, 1.0 - 0.5])
    # gamma = 0.9, lam = 0.5, by the recursion A_k = delta_k + gamma * lam * A_{k+1}.
    deltas = [0.9 * 0.25 - 0.5, 0.9 * 0.5 - 0.25, 0.5]
    a2 = deltas[2]
    a1 = deltas[1] + 0.45 * a2
    a0 = deltas[0] + 0.45 * a1
    assert gae(rewards, values, gamma=0.9, lam=0.5)[0].tolist() == pytest.approx([a0, a1, a2])


def test_gigpo_adds_step_groups_of_identical_observations() -> None:
    # One group of three episodes. All start in s0; A and C both reach s1, B reaches s2.
    rewards = [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    anchors = [["s0", "s1"], ["s0", "s2"], ["s0", "s1"]]
    advantages = gigpo_advantages(rewards, anchors, ["g", "g", "g"], gamma=1.0, step_weight=1.0, std_normalize=False)
    episode = [2 / 3, -1 / 3, -1 / 3]  # returns 1, 0, 0 minus their mean
    s0 = [2 / 3, -1 / 3, -1 / 3]  # returns from s0: 1, 0, 0
    s1 = {0: 0.5, 2: -0.5}  # returns from s1: A 1, C 0; s2 holds B alone: 0
    expected = [
        [episode[0] + s0[0], episode[0] + s1[0]],
        [episode[1] + s0[1], episode[1] + 0.0],
        [episode[2] + s0[2], episode[2] + s1[2]],
    ]
    for got, want in zip(advantages, expected):
        assert got == pytest.approx(want)
    # Step groups never cross episode groups: the same anchor in another group is its own step group.
    split = gigpo_advantages(rewards, anchors, ["g", "h", "h"], gamma=1.0, step_weight=0.0, std_normalize=False)
    assert split[0] == pytest.approx([0.0, 0.0])


def test_clipped_policy_loss_and_clip_higher() -> None:
    old = torch.zeros(1, 2)
    new = torch.log(torch.tensor([[1.5, 0.5]]))
    advantages = torch.tensor([[1.0, -1.0]])
    mask = torch.ones(1, 2)
    loss, stats = clipped_policy_loss(new, old, advantages, mask, clip_low=0.2, clip_high=0.2)
    # Token 1: min(1.5, 1.2) * 1 = 1.2; token 2: min(-0.5, -0.8) = -0.8. Loss is minus the mean.
    assert loss.item() == pytest.approx(-(1.2 - 0.8) / 2)
    assert stats["clip_fraction"] == 1.0
    higher, _ = clipped_policy_loss(new, old, advantages, mask, clip_low=0.2, clip_high=0.28)
    assert higher.item() == pytest.approx(-(1.28 - 0.8) / 2)
    # Masked tokens do not count.
    masked, _ = clipped_policy_loss(new, old, advantages, torch.tensor([[1.0, 0.0]]))
    assert masked.item() == pytest.approx(-1.2)


def test_token_and_sequence_aggregation_differ_on_unequal_lengths() -> None:
    values = torch.tensor([[1.0, 1.0, 1.0], [4.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    assert aggregate(values, mask, "token").item() == pytest.approx(7 / 4)
    assert aggregate(values, mask, "sequence").item() == pytest.approx((1 + 4) / 2)


def test_kl_k3_estimator() -> None:
    logprobs = torch.tensor([-1.0, -2.0])
    assert kl_k3(logprobs, logprobs).tolist() == [0.0, 0.0]
    ref = torch.tensor([-1.5, -1.0])
    d = ref - logprobs
    assert kl_k3(logprobs, ref).tolist() == pytest.approx((torch.exp(d) - d - 1).tolist())
    assert (kl_k3(logprobs, ref) > 0).all()


def test_token_logprobs_score_each_token_given_the_ones_before() -> None:
    logits = torch.randn(1, 4, 7, generator=torch.Generator().manual_seed(0))
    ids = torch.tensor([[3, 1, 6, 2]])
    logprobs, entropy = token_logprobs_and_entropy(logits, ids)
    assert logprobs[0, 0] == 0 and entropy[0, 0] == 0
    for k in range(1, 4):
        expected = torch.log_softmax(logits[0, k - 1], -1)
        assert logprobs[0, k].item() == pytest.approx(expected[ids[0, k]].item(), abs=1e-6)
        assert entropy[0, k].item() == pytest.approx(-(expected.exp() * expected).sum().item(), abs=1e-5)


def test_logits_of_the_predicting_positions_alone_give_the_masked_tokens_logprobs() -> None:
    """A forward pass may keep only the logits that predict a masked token: the same logprobs and entropies there."""
    logits = torch.randn(2, 6, 7, generator=torch.Generator().manual_seed(1))
    ids = torch.tensor([[3, 1, 6, 2, 0, 0], [5, 4, 4, 1, 2, 6]])
    mask = torch.tensor([[0, 0, 1, 1, 0, 0], [0, 1, 0, 0, 0, 1]])
    positions = predicting_positions(mask)
    assert positions.tolist() == [0, 1, 2, 4]  # the positions just before a masked token of any row
    full = token_logprobs_and_entropy(logits, ids)
    kept = token_logprobs_and_entropy(logits[:, positions], ids, positions)
    for whole, part in zip(full, kept):
        assert torch.allclose(whole * mask, part * mask)
        assert (part[:, [0, 4]] == 0).all()  # nothing predicts them here
