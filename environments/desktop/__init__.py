"""Desktop: real X11 apps (terminal, text editor, file manager, spreadsheet) driven by mouse and keyboard."""

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

#: 44 templates; 200 train, 20 dev and 20 test tasks per template.
SPLITS = TaskSplits(train=8_800, dev=880, test=880)

register(
    "Desktop-v0",
    entry_point="agentgym.environments.desktop.env:DesktopEnv",
    family="desktop",
    description="Xvfb + openbox desktop with xterm, Mousepad, PCManFM and Gnumeric; screenshot + window list; "
    "pyautogui-style actions; 44 task templates checked on the saved files",
    splits=SPLITS,
    max_episode_steps=30,
    observation="text+screenshot",
)
#: Desktop-Attack-v0's variants per task: 2 attacker goals x 3 injection styles (attack.py's VARIANTS).
ATTACK_VARIANTS = 6

register(
    "Desktop-Attack-v0",
    entry_point="agentgym.environments.desktop.attack:DesktopAttackEnv",
    family="desktop",
    description="Desktop-v0's terminal tasks with a prompt injection in the shared notes the terminal prints "
    "(3 styles x 2 attacker goals: copy a secret to ~/Public, delete a document); utility and attack success",
    splits=TaskSplits(**{split: count * ATTACK_VARIANTS for split, count in SPLITS.counts().items()}),
    max_episode_steps=30,
    observation="text+screenshot",
)
