"""``agentgym new-family NAME``: write a ready plugin package for a new env family.

The package (templates in ``family/``, filled in with :class:`string.Template`) holds a
working env (a ``TextEnv`` with its five hooks, a small number-guessing game to replace), its
``tools.yaml``, task splits, an oracle, a test that runs
:func:`~agentgym.utils.env_checker.check_text_env`, a README, and a ``pyproject.toml``
that registers it through the ``agentgym.envs`` entry point group (:mod:`agentgym.contract.plugins`).
``pip install -e agentgym-NAME`` makes its id appear in ``agentgym list`` and play in
``agentgym eval`` without edits.

Floor: command line; it imports only its own floor and those below it: contract, env machinery, wrappers, serving,
llm, evaluation, training, integrations (docs/architecture.md).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from string import Template

#: A family name: a letter, then letters, digits, ``-`` or ``_``.
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
TEMPLATE_SUFFIX = ".tmpl"


@dataclass(frozen=True)
class FamilyNames:
    """Every name the package's files use, derived from the family name the user gave."""

    name: str  #: as given, ``my-puzzle``
    family: str  #: the registry's family, ``my_puzzle``
    module: str  #: the Python package, ``agentgym_my_puzzle``
    distribution: str  #: the pip distribution, ``agentgym-my-puzzle``
    class_name: str  #: ``MyPuzzleEnv``
    env_id: str  #: ``MyPuzzle-v0``
    title: str  #: ``My puzzle``
    description: str
    max_steps: int = 20

    @classmethod
    def of(cls, name: str) -> FamilyNames:
        """The names of family ``name``; ``ValueError`` if it is not a usable name."""
        if not NAME_PATTERN.fullmatch(name):
            raise ValueError(
                f"a family name starts with a letter and holds letters, digits, '-' and '_' only, got {name!r}"
            )
        words = [word for word in re.split(r"[-_]+", name) if word]
        family = "_".join(word.lower() for word in words)
        camel = "".join(word[:1].upper() + word[1:] for word in words)
        return cls(
            name=name,
            family=family,
            module=f"agentgym_{family}",
            distribution=f"agentgym-{family.replace('_', '-')}",
            class_name=f"{camel}Env",
            env_id=f"{camel}-v0",
            title=" ".join(words).capitalize(),
            description="guess a secret number from higher/lower answers (a template game to replace)",
        )


def _files(folder: Traversable, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """(relative path parts, text) of every template under ``folder``."""
    found = []
    for entry in sorted(folder.iterdir(), key=lambda entry: entry.name):
        if entry.is_dir():
            found.extend(_files(entry, (*prefix, entry.name)))
        elif entry.name.endswith(TEMPLATE_SUFFIX):
            found.append(((*prefix, entry.name.removesuffix(TEMPLATE_SUFFIX)), entry.read_text(encoding="utf-8")))
    return found


def scaffold_family(name: str, folder: Path | None = None) -> Path:
    """Write the plugin package of family ``name`` into ``folder`` (default ``./agentgym-NAME``); returns it.

    Refuses (``FileExistsError``) to write into a folder that exists and is not empty.
    """
    names = FamilyNames.of(name)
    target = folder if folder is not None else Path.cwd() / names.distribution
    if target.exists() and any(target.iterdir()):
        raise FileExistsError(f"{target} exists and is not empty; choose another --dir")
    values = {key: str(value) for key, value in asdict(names).items()}
    for parts, text in _files(resources.files(__name__) / "family"):
        path = target.joinpath(*(Template(part).substitute(values) for part in parts))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(text).substitute(values), encoding="utf-8")
    return target
