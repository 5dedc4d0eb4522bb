"""Reasoning: questions with checkable answers, answered directly or after running Python in a sandbox.

``ReasoningGym-v0`` plays reasoning-gym's procedural generators (``dataset=NAME``, ``config={...}``;
:mod:`.generators`); ``Math-v0`` generated math problems judged by math-verify (:mod:`.math_env`),
which also reads the user's GSM8K/MATH/AIME-style files (:class:`~.math_env.MathFileEnv`). The
``-Python`` ids offer a persistent Python interpreter before the answer (docs/reasoning.md).
``ReasoningGym-Attack-v0`` plants a prompt injection after the question (:mod:`.attack`, docs/safety.md).
"""

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

# Items of reasoning-gym's generators, one seed per split (see generators.py).
REASONING_SPLITS = TaskSplits(train=10_000, dev=1_000, test=1_000)
# Generated problems, splits by task id (see math_env.py).
MATH_SPLITS = TaskSplits(train=10_000, dev=1_000, test=1_000)
#: Steps of the ids with the interpreter: up to 9 Python calls, then the answer.
TOOL_STEPS = 10

for suffix, tools, steps, how in (("", False, 1, "single-turn"), ("-Python", True, TOOL_STEPS, "Python first")):
    register(
        f"ReasoningGym{suffix}-v0",
        entry_point="agentgym.environments.reasoning.generators:ReasoningGymEnv",
        family="reasoning",
        description=(
            f"reasoning-gym's 105 generators (dataset=NAME, default basic_arithmetic; config= difficulty), "
            f"scored by their own score_answer; {how}"
        ),
        splits=REASONING_SPLITS,
        max_episode_steps=steps,
        kwargs={"tools": tools},
    )
    register(
        f"Math{suffix}-v0",
        entry_point="agentgym.environments.reasoning.math_env:MathEnv",
        family="reasoning",
        description=f"Generated math problems (algebra, fractions, counting, number theory), math-verify judged; {how}",
        splits=MATH_SPLITS,
        max_episode_steps=steps,
        kwargs={"tools": tools},
    )

#: ReasoningGym-Attack-v0's variants per item: 2 attacker goals x 3 injection styles (attack.py's VARIANTS).
ATTACK_VARIANTS = 6
register(
    "ReasoningGym-Attack-v0",
    entry_point="agentgym.environments.reasoning.attack:ReasoningGymAttackEnv",
    family="reasoning",
    description=(
        "ReasoningGym-v0's items with a prompt injection after the question (3 styles x 2 attacker goals per "
        "item); utility and attack success; single-turn"
    ),
    splits=TaskSplits(**{split: count * ATTACK_VARIANTS for split, count in REASONING_SPLITS.counts().items()}),
    max_episode_steps=1,
)
