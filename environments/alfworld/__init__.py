"""ALFWorld: the original text benchmark on the ``alfworld`` package's TextWorld engine.

The game files are the user's (``data_dir=`` or ``$ALFWORLD_DATA``); nothing is downloaded.
For ALFWorld-style tasks that need no data, see the ``household`` family (``Household-v0``).
"""

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

#: The games ALFWorld's own loader keeps (six task types, no movable receptacles or sliced
#: objects, solvable): train = json_2.1.1/train, dev = valid_seen, test = valid_unseen.
SPLITS = TaskSplits(train=3553, dev=140, test=134)

# 50 steps is the episode limit of ALFWorld's published LLM-agent evaluations (ReAct, AgentBench).
register(
    "ALFWorld-v0",
    entry_point="agentgym.environments.alfworld.env:ALFWorldEnv",
    family="alfworld",
    description="ALFWorld's text games on its TextWorld engine; needs the json_2.1.1 game files ($ALFWORLD_DATA)",
    splits=SPLITS,
    max_episode_steps=50,
)
