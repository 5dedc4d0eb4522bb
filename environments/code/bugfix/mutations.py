"""The bugs BugFix injects: every single-site mutation of a template module that still compiles.

:func:`find_mutations` walks a module's syntax tree and proposes, per function: a flipped
comparison, a swapped arithmetic or boolean operator, an off-by-one constant or bound, a
wrong variable, swapped arguments, ``min`` for ``max``, or a deleted branch. A mutation is
a character span of the template and its replacement, so its :meth:`Mutation.key` (which
decides the task split) depends only on the template's text.
"""

from __future__ import annotations

import ast
import threading
from dataclasses import dataclass

from agentgym.environments.code.bugfix.domains import Domain


@dataclass(frozen=True)
class Mutation:
    """One edit of a module's source: characters ``start:end`` become ``replacement``."""

    module: str
    function: str
    kind: str
    start: int
    end: int
    replacement: str

    def apply(self, source: str) -> str:
        return source[: self.start] + self.replacement + source[self.end :]

    def key(self, domain: str) -> str:
        """What identifies the bug regardless of package name and test inputs (for split buckets)."""
        return f"{domain}:{self.module}:{self.function}:{self.kind}:{self.start}:{self.replacement}"


COMPARE_TEXT = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}
COMPARE_FLIPS = {
    "<": ("<=", ">"),
    "<=": ("<",),
    ">": (">=", "<"),
    ">=": (">",),
    "==": ("!=",),
    "!=": ("==",),
    "in": ("not in",),
    "not in": ("in",),
    "is": ("is not",),
    "is not": ("is",),
}
BINOP_TEXT = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}
BINOP_SWAPS = {"+": ("-",), "-": ("+",), "*": ("+", "/"), "/": ("//", "*"), "//": ("/",), "%": ("//",)}


class _MutationFinder:
    """Every candidate mutation inside the functions of one module's source."""

    def __init__(self, module: str, source: str) -> None:
        self.module, self.source = module, source
        self.line_starts = [0]
        for line in source.splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.found: list[Mutation] = []

    def offset(self, line: int, column: int) -> int:
        return self.line_starts[line - 1] + column

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def add(self, function: str, kind: str, start: int, end: int, replacement: str) -> None:
        if self.source[start:end] != replacement:
            self.found.append(Mutation(self.module, function, kind, start, end, replacement))

    def operator(self, function: str, kind: str, left: ast.AST, right: ast.AST, text: str, swaps: tuple[str, ...]):
        gap_start, gap_end = self.span(left)[1], self.span(right)[0]
        gap = self.source[gap_start:gap_end]
        if gap.strip(" ()\n") != text:
            return
        at = gap_start + gap.index(text)
        for swap in swaps:
            self.add(function, kind, at, at + len(text), swap)

    def find(self) -> list[Mutation]:
        tree = ast.parse(self.source)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self.function(node.name, node)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        self.function(f"{node.name}.{item.name}", item)
        return self.found

    def function(self, name: str, definition: ast.FunctionDef) -> None:
        in_fstring: set[int] = set()
        for node in ast.walk(definition):
            if isinstance(node, ast.JoinedStr):
                in_fstring.update(id(inner) for inner in ast.walk(node))
        bound = self.bound_names(definition)
        for node in ast.walk(definition):
            if id(node) in in_fstring or node is definition:
                continue
            self.visit(name, node, bound)
        self.branches(name, definition)

    @staticmethod
    def bound_names(definition: ast.FunctionDef) -> dict[str, int]:
        """Parameters and names assigned in the function body, with the line where they are first bound."""
        bound = {arg.arg: definition.lineno for arg in definition.args.args if arg.arg != "self"}
        for node in ast.walk(definition):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.For)):
                targets = [node.target]
            for target in targets:
                for inner in ast.walk(target):
                    if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                        bound.setdefault(inner.id, inner.lineno)
        return bound

    def visit(self, function: str, node: ast.AST, bound: dict[str, int]) -> None:
        if isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                text = COMPARE_TEXT[type(op)]
                self.operator(function, "comparison", left, right, text, COMPARE_FLIPS[text])
                left = right
        elif isinstance(node, ast.BinOp) and type(node.op) in BINOP_TEXT:
            text = BINOP_TEXT[type(node.op)]
            self.operator(function, "operator", node.left, node.right, text, BINOP_SWAPS[text])
        elif isinstance(node, ast.AugAssign) and type(node.op) in (ast.Add, ast.Sub):
            text = "+=" if isinstance(node.op, ast.Add) else "-="
            self.operator(function, "operator", node.target, node.value, text, ("-=" if text == "+=" else "+=",))
        elif isinstance(node, ast.BoolOp):
            text = "and" if isinstance(node.op, ast.And) else "or"
            for left, right in zip(node.values, node.values[1:]):
                self.operator(function, "boolean", left, right, text, ("or" if text == "and" else "and",))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            start, end = self.span(node)
            for value in (node.value + 1, node.value - 1):
                if value >= 0:
                    self.add(function, "off-by-one", start, end, str(value))
        elif isinstance(node, ast.Slice):
            for bound_node in (node.lower, node.upper):
                self.shift(function, bound_node)
        elif isinstance(node, ast.Call):
            self.call(function, node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in bound:
            start, end = self.span(node)
            for other, line in sorted(bound.items()):
                if other != node.id and line <= node.lineno:
                    self.add(function, "wrong variable", start, end, other)

    def shift(self, function: str, node: ast.AST | None) -> None:
        """``x`` -> ``x + 1`` and ``x - 1`` for a non-constant bound."""
        if node is None or isinstance(node, (ast.Constant, ast.UnaryOp)) or node.lineno != node.end_lineno:
            return
        start, end = self.span(node)
        text = self.source[start:end]
        if isinstance(node, ast.BinOp) and not isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
            text = f"({text})"
        for change in (" + 1", " - 1"):
            self.add(function, "off-by-one", start, end, text + change)

    def call(self, function: str, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            start, end = self.span(node.func)
            self.add(function, "min/max", start, end, "max" if node.func.id == "min" else "min")
        if isinstance(node.func, ast.Name) and node.func.id == "range" and node.args:
            self.shift(function, node.args[-1] if len(node.args) < 3 else node.args[1])
        args = node.args
        if len(args) >= 2 and not any(isinstance(arg, ast.Starred) for arg in args[:2]):
            first, second = self.span(args[0]), self.span(args[1])
            if args[0].lineno == args[1].end_lineno:
                one, two = self.source[first[0] : first[1]], self.source[second[0] : second[1]]
                if one != two:
                    between = self.source[first[1] : second[0]]
                    self.add(function, "swapped arguments", first[0], second[1], two + between + one)

    def branches(self, function: str, definition: ast.FunctionDef) -> None:
        """Delete a guard ``if`` (a one-statement body, no else) or an ``elif`` branch."""
        simple = (ast.Return, ast.Raise, ast.Assign, ast.AugAssign, ast.Expr, ast.Continue, ast.Break)
        lines = self.source.splitlines()
        for parent in ast.walk(definition):
            for field_name in ("body", "orelse"):
                block = getattr(parent, field_name, None)
                if not isinstance(block, list):
                    continue
                for node in block:
                    if not isinstance(node, ast.If):
                        continue
                    start = self.line_starts[node.lineno - 1]
                    is_elif = lines[node.lineno - 1].lstrip().startswith("elif")
                    if is_elif:
                        end = self.line_starts[node.body[-1].end_lineno]
                        self.add(function, "missing branch", start, end, "")
                    elif (
                        not node.orelse and len(node.body) == 1 and isinstance(node.body[0], simple) and len(block) > 1
                    ):
                        self.add(function, "missing branch", start, self.line_starts[node.end_lineno], "")


def find_mutations(module: str, source: str) -> list[Mutation]:
    """Every candidate mutation of ``source`` that still compiles, in source order."""
    candidates = []
    for mutation in sorted(set(_MutationFinder(module, source).find()), key=lambda m: (m.start, m.end, m.replacement)):
        try:
            compile(mutation.apply(source), f"{module}.py", "exec")
        except SyntaxError:
            continue
        candidates.append(mutation)
    return candidates


_MUTATIONS: dict[tuple[str, str], list[Mutation]] = {}
_MUTATIONS_LOCK = threading.Lock()


def module_mutations(domain: Domain, module: str) -> list[Mutation]:
    """The candidate mutations of a domain's module (computed once per process)."""
    key = (domain.name, module)
    with _MUTATIONS_LOCK:
        if key not in _MUTATIONS:
            _MUTATIONS[key] = find_mutations(module, domain.modules[module].source)
        return _MUTATIONS[key]
