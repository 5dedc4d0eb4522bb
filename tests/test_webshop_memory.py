"""No leak: 10,000 WebShop episodes in one process grow its resident memory by less than 5 %.

The shop's caches are bounded (search results 2,048 entries, products 1,024 + the
catalog's 4,096, title nouns 8,192) but take longer than the warm-up to fill: after a
1,000-episode warm-up they would still add about 4-5 MiB over the next 10,000 episodes
(measured: +4.3 % of RSS, then flat). The warm-up therefore also fills them to their bounds
(:func:`fill_caches`), so that what grows during the measured episodes is what a leak would
be; the test also checks that they stay within their bounds.
"""

from __future__ import annotations

import gc
import os
import random
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

import agentgym  # noqa: F401  (registers WebShop-v0)
from agentgym.environments.webshop.engine import Session, Shop
from agentgym.environments.webshop.reward import title_nouns

WARM_UP, EPISODES, ENVS = 1_000, 10_000, 8


def rss_bytes() -> int:
    """This process's resident memory (``/proc/self/statm``; psutil is not a dependency)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def live_sessions() -> int:
    """How many engine sessions this process holds."""
    return sum(isinstance(thing, Session) for thing in gc.get_objects())


def fill_caches(shop: Shop) -> None:
    """Bring the shop's bounded caches to their bounds with products, titles and searches of its own."""
    for index in range(min(len(shop.catalog), 8192 + 4096)):
        title_nouns(shop.product(index).title)
    for goal in shop.goals[:3000]:
        shop.search(goal.name)


def test_ten_thousand_episodes_do_not_grow_memory(tmp_path: Path) -> None:
    """Episodes on a pool of envs over the default 20,000-product catalog, as an RL worker plays them.

    Half the episodes are the oracle's, to the purchase; the others take 1-4 steps of the
    oracle or the random baseline (searches of random words, any button) and are cut off
    by the next reset. Every 50th episode closes one env of the pool and makes a new one;
    every 500th drops one without closing it.
    """
    rng = random.Random(0)

    def make() -> Any:
        return gym.make("WebShop-v0", cache_dir=tmp_path)

    pool = [make() for _ in range(ENVS)]
    total_tasks = pool[0].unwrapped.splits.total

    def episode(number: int) -> int:
        slot = number % ENVS
        if number % 50 == 0:
            if number % 500:
                pool[slot].close()
            pool[slot] = make()
        env = pool[slot]
        env.reset(options={"task_id": rng.randrange(total_tasks)})
        oracle = number % 2 == 0
        steps = 15 if oracle else rng.randint(1, 4)
        for step in range(steps):
            base = env.unwrapped
            command = base.oracle_action() if oracle or rng.random() < 0.5 else base.random_action(rng)
            _, _, terminated, truncated, _ = env.step(command)
            if terminated or truncated:
                return step + 1
        return steps

    for number in range(WARM_UP):
        episode(number)
    shop = pool[0].unwrapped.shop
    fill_caches(shop)
    gc.collect()
    sessions_before = live_sessions()
    before = rss_bytes()
    started = time.perf_counter()
    steps = sum(episode(number) for number in range(WARM_UP, WARM_UP + EPISODES))
    elapsed = time.perf_counter() - started
    gc.collect()
    after = rss_bytes()

    growth = (after - before) / before
    sessions = live_sessions()
    print(
        f"{EPISODES:,} episodes ({steps:,} steps) in {elapsed:.1f} s; "
        f"RSS {before / 2**20:.1f} -> {after / 2**20:.1f} MiB ({growth:+.2%}); "
        f"{sessions_before} -> {sessions} live sessions"
    )
    assert growth < 0.05
    assert sessions <= sessions_before  # those of past episodes and of closed or dropped envs are freed
    assert shop.product.cache_info().currsize <= 1024 and shop._search.cache_info().currsize <= 2048
    assert title_nouns.cache_info().currsize <= 8192 and len(shop.catalog._cache._products) <= 4096
