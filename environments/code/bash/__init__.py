"""Bash-v0: shell tasks on a generated project tree (InterCode-Bash style).

The rules are in :mod:`.env`'s docstring. The parts, each a module: :mod:`.tree` (the
file model and the generated project tree), :mod:`.tasks` (the 41 task templates),
:mod:`.checking` (judging the work dir or an answer) and :mod:`.env` (:class:`BashEnv`).
"""

from agentgym.environments.code.bash.checking import answer_matches
from agentgym.environments.code.bash.env import BashEnv, extract_command
from agentgym.environments.code.bash.tasks import TEMPLATES

__all__ = ["TEMPLATES", "BashEnv", "answer_matches", "extract_command"]
