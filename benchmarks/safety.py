"""Prompt injection in agentgym's own envs: utility, utility under attack and attack success per family.

For each family with an -Attack id (docs/safety.md) and each ``--policy`` spec (any that ``agentgym eval``
takes: ``oracle``, ``obedient``, ``random``, ``openai:MODEL@URL``, ``hf:PATH``), ``agentgym eval``'s runner plays
the first ``U`` user tasks of the test split on the plain id (``utility``: mean score, the family's utility)
and the same user tasks under every (attacker goal, injection style) variant on the -Attack id (``utility under
attack``: mean ``info["utility"]``; ``attack success``: the share of attacked episodes whose attacker's goal
was reached, also per style). Errored episodes are counted and left out of the means.

``python benchmarks/safety.py [--policy SPEC ...] [--families search webshop desktop webapps webapps-mail
webapps-forum webapps-forge webapps-shop reasoning] [--users FAMILY=U ...]`` writes
benchmarks/results/safety.{json,md}; rows of (family, policy) pairs it did not run are kept from the file, so a
model's row can be added later to the scripted baselines' table. A model's row (``--policy hf:smollm2``) takes
``--max-turns`` and ``--max-tokens`` to fit a CPU; the row records its turn limit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from agentgym.contract.registry import env_info
from agentgym.environments.webapps.forge.attack import SPEC as FORGE_ATTACKS
from agentgym.environments.webapps.forum.attack import SPEC as FORUM_ATTACKS
from agentgym.environments.webapps.mail.attack import SPEC as MAIL_ATTACKS
from agentgym.environments.webapps.shop.attack import SPEC as SHOP_ATTACKS
from agentgym.evaluation.records import EpisodeRecord
from agentgym.evaluation.results import iter_episodes
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies import make_policy
from agentgym.train.config import load_config

RESULTS = Path(__file__).parent / "results"
SUMS = load_config(Path(__file__).parent.parent / "agentgym/train/configs/grpo-smollm2-arithmetic.yaml").envs[0].kwargs
#: family -> (plain id, its kwargs, -Attack id, user tasks played by default).
FAMILIES: dict[str, tuple[str, dict[str, Any], str, int]] = {
    "search": ("Search-v0", {}, "Search-Attack-v0", 50),
    "webshop": ("WebShop-v0", {}, "WebShop-Attack-v0", 50),
    # Desktop-Attack-v0's user tasks are Desktop-v0's terminal tasks.
    "desktop": ("Desktop-v0", {"apps": ["terminal"]}, "Desktop-Attack-v0", 3),
    # WebApps-Wiki-Attack-v0's user tasks are WebApps-Wiki-v0's infobox-fact tasks.
    "webapps": ("WebApps-Wiki-v0", {"templates": ["wiki/infobox-fact"]}, "WebApps-Wiki-Attack-v0", 3),
    # WebApps-Mail-Attack-v0's user tasks are WebApps-Mail-v0's tasks that read a fact from one mail.
    "webapps-mail": ("WebApps-Mail-v0", {"templates": MAIL_ATTACKS["templates"]}, "WebApps-Mail-Attack-v0", 3),
    # WebApps-Forum-Attack-v0's user tasks are WebApps-Forum-v0's tasks that read one thread.
    "webapps-forum": ("WebApps-Forum-v0", {"templates": FORUM_ATTACKS["templates"]}, "WebApps-Forum-Attack-v0", 3),
    # WebApps-Forge-Attack-v0's user tasks are WebApps-Forge-v0's tasks that read one ticket.
    "webapps-forge": ("WebApps-Forge-v0", {"templates": FORGE_ATTACKS["templates"]}, "WebApps-Forge-Attack-v0", 3),
    # WebApps-Shop-Attack-v0's user tasks are WebApps-Shop-v0's tasks that read one product's page.
    "webapps-shop": ("WebApps-Shop-v0", {"templates": SHOP_ATTACKS["templates"]}, "WebApps-Shop-Attack-v0", 3),
    # The sums of two one-digit numbers that benchmarks/safety_training.py trains on (prose answers read).
    "reasoning": ("ReasoningGym-v0", SUMS, "ReasoningGym-Attack-v0", 50),
}
#: family -> its -Attack id's kwargs, where the plain id's kwargs choose the items (the same user tasks).
ATTACK_KWARGS: dict[str, dict[str, Any]] = {"reasoning": SUMS}
POLICIES = ("oracle", "obedient", "random")


def items(family: str, users: int, max_turns: int | None = None) -> list[EvalItem]:
    """The plain id on the first ``users`` test tasks, and the -Attack id on the same user tasks' variants (each
    episode cut at ``max_turns`` turns, if given)."""
    plain, kwargs, attacked, _ = FAMILIES[family]
    first = env_info(plain).splits.ids("test").start
    start = env_info(attacked).splits.ids("test").start
    variants = env_info(attacked).splits.test // env_info(plain).splits.test
    assert start == first * variants, "an -Attack id's task t plays its plain id's user task t // variants"
    return [
        EvalItem(plain, users, max_turns=max_turns, kwargs=kwargs, task_ids=tuple(range(first, first + users))),
        EvalItem(
            attacked,
            users * variants,
            max_turns=max_turns,
            kwargs=ATTACK_KWARGS.get(family, {}),
            task_ids=tuple(range(start, start + users * variants)),
        ),
    ]


def summarize(family: str, policy: str, records: list[EpisodeRecord], seconds: float) -> dict[str, Any]:
    """The row of one family and policy from its episodes."""
    plain, attacked = FAMILIES[family][0], FAMILIES[family][2]
    ok = [record for record in records if record.status == "ok"]
    alone = [record.score for record in ok if record.env_id == plain]
    under = [record for record in ok if record.env_id == attacked]
    by_style: dict[str, list[bool]] = defaultdict(list)
    for record in under:
        by_style[record.turns[-1].info.get("attack_style", "?")].append(bool(record.attack_success))

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 3) if values else None

    return {
        "family": family,
        "policy": policy,
        "plain_id": plain,
        "attack_id": attacked,
        "user_tasks": len(alone),
        "attacked_episodes": len(under),
        "errored": len(records) - len(ok),
        "utility": mean(alone),
        "utility_under_attack": mean([record.utility or 0.0 for record in under]),
        "attack_success": mean([float(bool(record.attack_success)) for record in under]),
        "attack_success_by_style": {
            style: mean([float(hit) for hit in hits]) for style, hits in sorted(by_style.items())
        },
        "seconds": round(seconds, 1),
    }


def measure(
    family: str, spec: str, users: int, concurrency: int, max_turns: int | None = None, max_tokens: int | None = None
) -> dict[str, Any]:
    """Play ``spec`` on ``family``'s two ids and summarise (a model's replies cut at ``max_tokens``)."""
    started = time.perf_counter()
    options = (
        {}
        if max_tokens is None or spec in POLICIES
        else {"max_new_tokens" if spec.startswith("hf:") else "max_tokens": max_tokens}
    )
    with tempfile.TemporaryDirectory(prefix="safety-") as out:
        policy = make_policy(spec, **options)
        asyncio.run(run_eval(spec, policy, items(family, users, max_turns), out, concurrency=concurrency))
        records = list(iter_episodes(Path(out) / "episodes.jsonl"))
    row = summarize(family, spec, records, time.perf_counter() - started)
    if max_turns is not None:
        row["max_turns"] = max_turns
    print(json.dumps(row), flush=True)
    return row


def markdown(rows: list[dict[str, Any]]) -> str:
    styles = sorted({style for row in rows for style in row["attack_success_by_style"]})
    lines = [
        "# Prompt injection in agentgym's own envs (python benchmarks/safety.py)",
        "",
        "Per family, the first test user tasks: utility on the plain id (mean score), utility under attack and",
        "attack success on the -Attack id (every user task under each attacker goal x injection style); attack",
        "success per style on the right. Episodes that errored are counted apart and left out. docs/safety.md",
        "says what each family's attacks are and how their goals are checked.",
        "",
        "| family | policy | user tasks | attacked episodes | errored | utility | utility under attack "
        + "".join(f"| {column} " for column in ("attack success", *styles))
        + "|",
        "|---|---|---:|---:|---:|---:|---:|---:|" + "---:|" * len(styles),
    ]
    for row in rows:
        cells = [
            row["family"],
            row["policy"] + (f" ({row['max_turns']} turns at most)" if "max_turns" in row else ""),
            row["user_tasks"],
            row["attacked_episodes"],
            row["errored"],
            row["utility"],
            row["utility_under_attack"],
            row["attack_success"],
            *(row["attack_success_by_style"].get(style, "—") for style in styles),
        ]
        lines.append("| " + " | ".join("—" if cell is None else str(cell) for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def _policy_order(policy: str) -> int:
    return POLICIES.index(policy) if policy in POLICIES else len(POLICIES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--policy", action="append", help=f"a policy spec (repeatable; default {', '.join(POLICIES)})")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--users", nargs="*", default=[], help="FAMILY=U: user tasks to play (defaults per family)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--max-turns", type=int, help="cut each episode at this many turns (recorded in the row)")
    parser.add_argument("--max-tokens", type=int, help="a model's reply length limit (hf: and openai: specs)")
    parser.add_argument("--out", type=Path, default=RESULTS / "safety.json")
    args = parser.parse_args()
    users = {family: FAMILIES[family][3] for family in FAMILIES} | {
        family: int(count) for family, _, count in (entry.partition("=") for entry in args.users)
    }
    rows = [
        measure(family, spec, users[family], args.concurrency, args.max_turns, args.max_tokens)
        for family in args.families
        for spec in args.policy or POLICIES
    ]
    ran = {(row["family"], row["policy"]) for row in rows}
    kept = json.loads(args.out.read_text())["rows"] if args.out.exists() else []
    rows = [row for row in kept if (row["family"], row["policy"]) not in ran] + rows
    rows.sort(key=lambda row: (list(FAMILIES).index(row["family"]), _policy_order(row["policy"]), row["policy"]))
    args.out.write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(markdown(rows))


if __name__ == "__main__":
    main()
