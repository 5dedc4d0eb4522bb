"""BugFix-v0 and BugFix-Hard-v0: fix a bug injected into a small generated Python repository.

The rules are in :mod:`.env`'s docstring. The parts, each a module:

* ``templates/``: the library code of the four domains and the repository's test runner, as
  real Python files copied into each repository byte for byte;
* :mod:`.domains`: the domains (their modules and the tests drawn for each);
* :mod:`.mutations`: the single-site bugs a module can take;
* :mod:`.repository`: generating a task's repository, checking the bug breaks a test;
* :mod:`.tools`: reading a tool call out of a reply, and formatting tool output;
* :mod:`.env`: :class:`BugFixEnv`, the tools, the judge and the oracle.
"""

from agentgym.environments.code.bugfix.domains import DOMAINS, TEMPLATES
from agentgym.environments.code.bugfix.env import BugFixEnv
from agentgym.environments.code.bugfix.mutations import module_mutations
from agentgym.environments.code.bugfix.repository import generate_repo
from agentgym.environments.code.bugfix.tools import extract_tool_call, fenced_blocks

__all__ = [
    "DOMAINS",
    "TEMPLATES",
    "BugFixEnv",
    "extract_tool_call",
    "fenced_blocks",
    "generate_repo",
    "module_mutations",
]
