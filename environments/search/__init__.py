"""Search: answer questions with search tools over an offline corpus (Search-R1 and deep-research style).

``Search-v0`` and its difficulty variants play over a generated encyclopedia (111,080
documents); :class:`~agentgym.environments.search.corpus.CorpusSearchEnv` plays over a
user's own corpus and question files in Search-R1's formats (docs/search.md).
"""

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

SPLITS = TaskSplits(train=10_000, dev=1_000, test=1_000)
ENTRY_POINT = "agentgym.environments.search.env:SearchEnv"
#: World and index built before episodes (agentgym eval, agentgym prepare), outside their timeouts.
_PREPARE = "agentgym.environments.search.env:prepare"
#: The world and its index the first time on 2 cores (31 s beside a running eval, at 5b56ab0).
_PREPARE_S = 30
#: Search-Attack-v0's variants per question: 2 attacker goals x 3 injection styles (attack.py's VARIANTS).
ATTACK_VARIANTS = 6

register(
    "Search-v0",
    entry_point=ENTRY_POINT,
    family="search",
    description=(
        "Search tools over a generated 111k-document encyclopedia: single-fact, 2-4 hop, comparison and "
        "aggregation questions"
    ),
    splits=SPLITS,
    prepare=_PREPARE,
    prepare_s=_PREPARE_S,
    max_episode_steps=40,
)
register(
    "Search-Easy-v0",
    entry_point=ENTRY_POINT,
    family="search",
    description="Search over the generated encyclopedia: single-fact and 2-hop bridge questions",
    splits=SPLITS,
    prepare=_PREPARE,
    prepare_s=_PREPARE_S,
    max_episode_steps=20,
    kwargs={"difficulty": "easy"},
)
register(
    "Search-Hard-v0",
    entry_point=ENTRY_POINT,
    family="search",
    description=(
        "Search over the generated encyclopedia: 3-4 hop bridges, 4-read comparisons and aggregations (deep research)"
    ),
    splits=SPLITS,
    prepare=_PREPARE,
    prepare_s=_PREPARE_S,
    max_episode_steps=60,
    kwargs={"difficulty": "hard"},
)
register(
    "Search-Attack-v0",
    entry_point="agentgym.environments.search.attack:SearchAttackEnv",
    family="search",
    description=(
        "Search-v0's questions with a prompt injection in the first article read (3 styles x 2 attacker goals "
        "per question); utility and attack success"
    ),
    splits=TaskSplits(**{split: count * ATTACK_VARIANTS for split, count in SPLITS.counts().items()}),
    prepare=_PREPARE,
    prepare_s=_PREPARE_S,
    max_episode_steps=40,
)
