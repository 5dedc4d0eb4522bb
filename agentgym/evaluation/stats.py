"""Small statistics used by summaries and leaderboards."""

from __future__ import annotations

import math

Z_95 = 1.959963984540054


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval for a success rate (95% by default); (0, 1) with no trials."""
    if trials == 0:
        return 0.0, 1.0
    rate = successes / trials
    denominator = 1 + z**2 / trials
    centre = (rate + z**2 / (2 * trials)) / denominator
    half_width = z * math.sqrt(rate * (1 - rate) / trials + z**2 / (4 * trials**2)) / denominator
    return max(0.0, centre - half_width), min(1.0, centre + half_width)


def macro_interval(groups: list[list[tuple[int, int]]], z: float = Z_95) -> tuple[float, float, float]:
    """A macro average of success rates and its 95% interval: ``(mean, low, high)``.

    ``groups`` are families, each a list of ``(successes, trials)`` per env (trials > 0).
    The mean is the unweighted mean over groups of the unweighted mean of their envs'
    rates, so every family counts the same, and every env the same within its family:
    env ``e`` of family ``f`` has weight ``w_e = 1 / (F * E_f)``.

    The interval is the normal approximation of that weighted sum of independent rates,
    ``mean ± z * sqrt(sum(w_e² * v_e))``, clipped to [0, 1], where each env's variance
    ``v_e = p̃(1 - p̃) / ñ`` is taken at its Agresti-Coull rate ``p̃ = (s + z²/2) / ñ``,
    ``ñ = n + z²`` (the adjustment behind Wilson's interval), so an env at 0% or 100%
    still carries its uncertainty. Centred on the observed mean, it is exact arithmetic
    (no sampling): the same folders always give the same interval.
    """
    if not groups or any(not group for group in groups) or any(n <= 0 for g in groups for _, n in g):
        raise ValueError("macro_interval needs non-empty groups of (successes, trials > 0)")
    mean = variance = 0.0
    for group in groups:
        weight = 1 / (len(groups) * len(group))
        for successes, trials in group:
            adjusted_trials = trials + z**2
            adjusted = (successes + z**2 / 2) / adjusted_trials
            mean += weight * successes / trials
            variance += weight**2 * adjusted * (1 - adjusted) / adjusted_trials
    half_width = z * math.sqrt(variance)
    return mean, max(0.0, mean - half_width), min(1.0, mean + half_width)
