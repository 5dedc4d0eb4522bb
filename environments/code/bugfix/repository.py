"""Generating a BugFix repository: modules, tests with computed expectations, one breaking mutation.

:func:`generate_repo` draws a domain, a package name and a set of modules closed under
imports, draws the tests' inputs and computes their expected values by running them
in-process on the correct code, then tries mutations until one makes a test fail. The
in-process runs execute only the trusted template code and its mutants (never agent
code), under a budget of executed lines so that a mutant that loops forever is skipped.
"""

from __future__ import annotations

import builtins
import itertools
import random
import sys
import types
from dataclasses import dataclass, field
from typing import Any

from agentgym.environments.code.bugfix.domains import (
    CLOSE_SOURCE,
    DOMAINS,
    RUNNER,
    Case,
    Domain,
    Module,
    TestFile,
    close,
)
from agentgym.environments.code.bugfix.mutations import Mutation, module_mutations

# ---- running a suite in-process --------------------------------------------------------------

#: Most executed lines one in-process run of a suite may take; a mutant past it is skipped.
LINE_BUDGET = 400_000
_package_ids = itertools.count()


class _OverBudget(BaseException):
    """Raised inside a mutant that runs too long (BaseException: template code never catches it)."""


def _topological(modules: dict[str, Module], names: set[str]) -> list[str]:
    order: list[str] = []

    def visit(name: str) -> None:
        if name not in order:
            for required in modules[name].requires:
                visit(required)
            order.append(name)

    for name in sorted(names):
        visit(name)
    return order


def _run_cases(sources: dict[str, str], order: list[str], files: dict[str, TestFile], record: bool) -> set[str] | None:
    """Run every case of ``files`` on a package built from ``sources``; the failing cases ("module::case").

    With ``record`` (the correct code), fill each step's expected value and raise
    ``RuntimeError`` when a step does not behave as its spec says. ``None`` when the run
    went past :data:`LINE_BUDGET` lines.
    """
    name = f"_agentgym_bugfix_{next(_package_ids)}"
    package = types.ModuleType(name)
    package.__path__ = []
    loaded: dict[str, types.ModuleType] = {}
    previous_trace = sys.gettrace()
    executed = [0]

    def trace(frame: Any, event: str, arg: Any) -> Any:
        executed[0] += 1
        if executed[0] > LINE_BUDGET:
            raise _OverBudget
        return trace

    failures: set[str] = set()
    sys.modules[name] = package
    try:
        sys.settrace(trace)
        try:
            for module_name in order:
                module = types.ModuleType(f"{name}.{module_name}")
                module.__package__ = name
                sys.modules[module.__name__] = module
                exec(compile(sources[module_name], f"{module_name}.py", "exec"), module.__dict__)
                loaded[module_name] = module
        except _OverBudget:
            return None
        except Exception:
            if record:
                raise
            return {f"{module}::*" for module in files}
        for module_name, test_file in files.items():
            for case in test_file.cases:
                namespace: dict[str, Any] = {"__builtins__": builtins, "close": close}
                for source_module, names in test_file.imports.items():
                    for imported in names:
                        namespace[imported] = getattr(loaded[source_module], imported)
                if not _run_case(case, namespace, record):
                    failures.add(f"{module_name}::{case.name}")
    except _OverBudget:
        return None
    finally:
        sys.settrace(previous_trace)
        for module_name in list(sys.modules):
            if module_name == name or module_name.startswith(name + "."):
                del sys.modules[module_name]
    return failures


def _run_case(case: Case, namespace: dict[str, Any], record: bool) -> bool:
    """Whether ``case`` passes; with ``record``, store the expected values (see :func:`_run_cases`)."""
    for step in case.steps:
        try:
            if step.kind == "do":
                exec(step.code, namespace)
            elif step.kind == "check":
                value = eval(step.code, namespace)
                if record:
                    step.expected, step.approx = repr(value), _holds_float(value)
                    if eval(step.expected, {}) != value:
                        raise RuntimeError(f"{case.name}: {step.code} gives {step.expected}, which does not round-trip")
                expected = eval(step.expected, {})
                if not (close(value, expected) if step.approx else value == expected):
                    return False
            else:
                try:
                    eval(step.code, namespace)
                except _OverBudget:
                    raise
                except BaseException as error:  # noqa: BLE001  (a mutant may raise anything)
                    if not isinstance(error, getattr(builtins, step.error)):
                        return False
                else:
                    if record:
                        raise RuntimeError(f"{case.name}: {step.code} does not raise {step.error}")
                    return False
        except _OverBudget:
            raise
        except BaseException as error:  # noqa: BLE001
            if record:
                raise RuntimeError(f"{case.name}: {step.code} raised {error!r}") from error
            return False
    return True


def _holds_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_float(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_float(item) for item in value.values())
    return False


# ---- repositories ------------------------------------------------------------------------------


@dataclass
class Repo:
    """A generated task: the correct files, the mutated file, and how it was chosen."""

    domain: str
    package: str
    modules: list[str]
    files: dict[str, str]
    mutation: Mutation
    mutated_path: str
    mutated_source: str
    failing: list[str]
    test_files: list[str]
    test_count: int
    fix_old: str = ""
    fix_new: str = ""
    direct: set[str] = field(default_factory=set)

    @property
    def protected(self) -> list[str]:
        """The files an agent must not change: the tests and the runner."""
        return [*self.test_files, "run_tests.py"]

    def broken_files(self) -> dict[str, str]:
        return {**self.files, self.mutated_path: self.mutated_source}


def _choose_modules(rng: random.Random, domain: Domain, low: int, high: int) -> set[str]:
    modules = domain.modules

    def closure(name: str) -> set[str]:
        found = {name}
        for required in modules[name].requires:
            found |= closure(required)
        return found

    tested = sorted(name for name, module in modules.items() if module.tests)
    for _ in range(200):
        chosen = closure(rng.choice(tested))
        for name in rng.sample(tested, len(tested)):
            if len(chosen) >= low and rng.random() < 0.4:
                break
            grown = chosen | closure(name)
            if len(grown) <= high:
                chosen = grown
        if low <= len(chosen) <= high:
            return chosen
    raise RuntimeError(f"no module set of size {low}-{high} in {domain.name}")


def _render_tests(package: str, module: str, test_file: TestFile) -> str:
    lines = [f'"""Tests for {package}.{module}."""', ""]
    for source_module, names in sorted(test_file.imports.items()):
        lines.append(f"from {package}.{source_module} import {', '.join(sorted(names))}")
    approx = any(step.approx for case in test_file.cases for step in case.steps)
    if approx:
        lines += ["", "", CLOSE_SOURCE.rstrip()]
    for case in test_file.cases:
        lines += ["", "", f"def {case.name}():"]
        for step in case.steps:
            if step.kind == "do":
                lines.append(f"    {step.code}")
            elif step.kind == "check":
                if step.approx:
                    lines.append(f"    assert close({step.code}, {step.expected})")
                else:
                    lines.append(f"    assert {step.code} == {step.expected}")
            else:
                lines += [
                    "    try:",
                    f"        {step.code}",
                    f"    except {step.error}:",
                    "        pass",
                    "    else:",
                    f'        raise AssertionError("{step.error} was not raised")',
                ]
    return "\n".join(lines) + "\n"


def _first_line(text: str) -> str:
    return text.split('"""')[1].strip().splitlines()[0]


def _fix_blocks(original: str, mutated: str) -> tuple[str, str]:
    """(old, new): the changed lines with context, widened until ``old`` occurs once in ``mutated``."""
    original_lines, mutated_lines = original.split("\n"), mutated.split("\n")
    prefix = 0
    while prefix < min(len(original_lines), len(mutated_lines)) and original_lines[prefix] == mutated_lines[prefix]:
        prefix += 1
    suffix = 0
    limit = min(len(original_lines), len(mutated_lines)) - prefix
    while suffix < limit and original_lines[-1 - suffix] == mutated_lines[-1 - suffix]:
        suffix += 1
    for context in range(len(mutated_lines) + 1):
        start = max(prefix - context, 0)
        old = "\n".join(mutated_lines[start : max(len(mutated_lines) - suffix + context, start)])
        if old.strip() and mutated.count(old) == 1:
            return old, "\n".join(original_lines[start : len(original_lines) - suffix + context])
    raise RuntimeError("no unique context for the fix")


def generate_repo(rng: random.Random, hard: bool, split: str, splits: Any) -> Repo:
    """A repository with one test-breaking mutation whose key falls in ``split``."""
    for _ in range(100):
        domain = rng.choice(DOMAINS)
        package = rng.choice(domain.packages)
        names = _choose_modules(rng, domain, 4 if hard else 2, 6 if hard else 3)
        order = _topological(domain.modules, names)
        sources = {name: domain.modules[name].source for name in order}
        test_files = {name: domain.modules[name].tests(rng) for name in order if domain.modules[name].tests is not None}
        if _run_cases(sources, order, test_files, record=True):
            raise RuntimeError(f"{domain.name}: the correct code fails its own tests")
        direct = set()
        for test_file in test_files.values():
            for names_imported in test_file.imports.values():
                direct.update(names_imported)
        candidates = [
            mutation
            for name in order
            for mutation in module_mutations(domain, name)
            if _is_direct(mutation.function, direct) != hard and splits.bucket(mutation.key(domain.name)) == split
        ]
        for mutation in _interleave_kinds(rng, candidates)[:40]:
            mutated = dict(sources)
            mutated[mutation.module] = mutation.apply(sources[mutation.module])
            failing = _run_cases(mutated, order, test_files, record=False)
            if failing:
                return _assemble(domain, package, order, sources, test_files, mutation, mutated, failing, direct)
    raise RuntimeError("no repository with a test-breaking mutation found")


def _interleave_kinds(rng: random.Random, candidates: list[Mutation]) -> list[Mutation]:
    """``candidates`` in a random order that draws the kind of mutation uniformly, then a site of that kind."""
    by_kind: dict[str, list[Mutation]] = {}
    for mutation in candidates:
        by_kind.setdefault(mutation.kind, []).append(mutation)
    for group in by_kind.values():
        rng.shuffle(group)
    ordered = []
    kinds = sorted(by_kind)
    while kinds:
        kind = rng.choice(kinds)
        ordered.append(by_kind[kind].pop())
        if not by_kind[kind]:
            kinds.remove(kind)
    return ordered


def _is_direct(function: str, direct: set[str]) -> bool:
    """Whether tests call ``function`` themselves (a public function or a method of a class they import)."""
    owner, _, method = function.partition(".")
    if method:
        return owner in direct and (not method.startswith("_") or method == "__init__")
    return function in direct


def _assemble(
    domain: Domain,
    package: str,
    order: list[str],
    sources: dict[str, str],
    test_files: dict[str, TestFile],
    mutation: Mutation,
    mutated: dict[str, str],
    failing: set[str],
    direct: set[str],
) -> Repo:
    files = {"README.md": "", f"{package}/__init__.py": f'"""{package}: {domain.description}."""\n'}
    for name in order:
        files[f"{package}/{name}.py"] = sources[name]
    tests = []
    for name, test_file in test_files.items():
        path = f"tests/test_{name}.py"
        files[path] = _render_tests(package, name, test_file)
        tests.append(path)
    files["run_tests.py"] = RUNNER
    listing = "\n".join(f"- `{package}.{name}`: {_first_line(sources[name])}" for name in order)
    files["README.md"] = (
        f"# {package}\n\n{domain.description[0].upper()}{domain.description[1:]}.\n\n## Modules\n\n{listing}\n\n"
        "## Tests\n\n    python3 run_tests.py        # or: python -m pytest\n"
    )
    path = f"{package}/{mutation.module}.py"
    fix_old, fix_new = _fix_blocks(sources[mutation.module], mutated[mutation.module])
    failing_names = sorted(
        f"tests/test_{case.split('::')[0]}.py::{case.split('::')[1]}" for case in failing if not case.endswith("*")
    )
    return Repo(
        domain=domain.name,
        package=package,
        modules=order,
        files=files,
        mutation=mutation,
        mutated_path=path,
        mutated_source=mutated[mutation.module],
        failing=failing_names,
        test_files=sorted(tests),
        test_count=sum(len(test_file.cases) for test_file in test_files.values()),
        fix_old=fix_old,
        fix_new=fix_new,
        direct=direct,
    )
