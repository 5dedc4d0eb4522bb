"""Procedural bugs in real source, of the kinds SWE-smith uses: each is a small edit of a module's text.

Every candidate is found on the module's syntax tree and applied to its text, so the change is
minimal (one operator, one constant, a few lines) and the rest of the file stays byte for byte:

``compare``        a comparison operator flipped: ``<`` / ``<=``, ``>`` / ``>=``, ``==`` / ``!=``,
                   ``in`` / ``not in``, ``is`` / ``is not``
``arithmetic``     a binary operator changed: ``+`` / ``-``, ``*`` / ``//`` (and ``/`` to ``*``), ``%`` to ``//``
``boolean``        ``and`` / ``or``
``condition``      an ``if``/``while``/``elif`` condition negated (``not (...)``)
``off_by_one``     an integer constant in an index, slice, ``range`` call or comparison moved by one
``remove_statement`` one assignment, augmented assignment or call statement deleted from a body that keeps others
``remove_branch``  an ``else`` branch, or an ``if`` without ``else`` whose body does not end the function, deleted
``swap_arguments`` the first two positional arguments of a call swapped (when their texts differ)
``remove_body``    a function's body (after its docstring) replaced by ``raise NotImplementedError``: re-implement it

A :class:`Mutation` keeps the original text and the mutated text of the lines it spans, so that the
task's patch and its reverse (the oracle's fix) are exact.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator
from dataclasses import dataclass

KINDS = (
    "compare",
    "arithmetic",
    "boolean",
    "condition",
    "off_by_one",
    "remove_statement",
    "remove_branch",
    "swap_arguments",
    "remove_body",
)
COMPARE_SWAPS = {
    ast.Lt: "<=",
    ast.LtE: "<",
    ast.Gt: ">=",
    ast.GtE: ">",
    ast.Eq: "!=",
    ast.NotEq: "==",
    ast.In: "not in",
    ast.NotIn: "in",
    ast.Is: "is not",
    ast.IsNot: "is",
}
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
ARITHMETIC_SWAPS = {
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "//"),
    ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "*"),
    ast.Mod: ("%", "//"),
}


@dataclass(frozen=True)
class Mutation:
    """One edit of a module: lines ``first``..``last`` (1-based, inclusive) were ``before``, become ``after``."""

    kind: str
    path: str
    first: int
    last: int
    before: str
    after: str
    function: str

    def apply(self, text: str) -> str:
        lines = text.splitlines(keepends=True)
        return "".join(lines[: self.first - 1]) + self.after + "".join(lines[self.last :])

    def revert(self, text: str) -> str:
        """The original text back from the mutated one."""
        lines = text.splitlines(keepends=True)
        span = self.after.count("\n")
        return "".join(lines[: self.first - 1]) + self.before + "".join(lines[self.first - 1 + span :])


def candidates(path: str, text: str, *, checked: bool = True) -> Iterator[Mutation]:
    """Every mutation of every kind that applies to ``text`` (in source order); ``checked``: only those whose
    result still parses (each check parses the module again, so :func:`sample` checks only what it draws)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    lines = text.splitlines(keepends=True)
    for function in _functions(tree):
        for mutation in _in_function(path, lines, function):
            if not checked or _parses(mutation, text):
                yield mutation


def _parses(mutation: Mutation, text: str) -> bool:
    mutated = mutation.apply(text)
    try:
        ast.parse(mutated)
    except SyntaxError:
        return False
    return mutated != text


def sample(path: str, text: str, rng: random.Random, per_kind: int) -> list[Mutation]:
    """At most ``per_kind`` candidates of each kind, drawn with ``rng`` (each one checked to parse)."""
    by_kind: dict[str, list[Mutation]] = {}
    for mutation in candidates(path, text, checked=False):
        by_kind.setdefault(mutation.kind, []).append(mutation)
    chosen = []
    for kind in KINDS:
        found = by_kind.get(kind, [])
        rng.shuffle(found)
        chosen += (
            [mutation for mutation in found if _parses(mutation, text)][:per_kind]
            if len(found) <= per_kind * 4
            else [mutation for mutation in found[: per_kind * 4] if _parses(mutation, text)][:per_kind]
        )
    return chosen


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _segment_offset(lines: list[str], first: int, line: int, col: int) -> int:
    """The offset in the text of lines ``first``.. of (line, col)."""
    return sum(len(text) for text in lines[first - 1 : line - 1]) + len(
        lines[line - 1].encode()[:col].decode("utf-8", "replace")
    )


def _between(
    kind: str,
    path: str,
    lines: list[str],
    node: ast.AST,
    left: ast.AST,
    right: ast.AST,
    old: str,
    new: str,
    function: str,
) -> Mutation | None:
    """Replace operator ``old`` by ``new`` in the text between ``left``'s end and ``right``'s start."""
    first, last = node.lineno, node.end_lineno or node.lineno
    before = "".join(lines[first - 1 : last])
    start = _segment_offset(lines, first, left.end_lineno, left.end_col_offset)
    end = _segment_offset(lines, first, right.lineno, right.col_offset)
    gap = before[start:end]
    if gap.replace("(", " ").replace(")", " ").split() != old.split():
        return None  # a comment or line continuation between the operands: leave it
    index = gap.index(old.split()[0])
    length = len(gap[index:].split(old.split()[-1], 1)[0]) + len(old.split()[-1])
    after = before[: start + index] + new + before[start + index + length :]
    return Mutation(kind, path, first, last, before, after, function)


def _in_function(path: str, lines: list[str], function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[Mutation]:
    name = function.name
    body_nodes = [node for statement in function.body for node in ast.walk(statement)]
    nested = {
        id(node)
        for inner in body_nodes
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for node in ast.walk(inner)
        if node is not inner
    }
    own = [node for node in body_nodes if id(node) not in nested]
    for node in own:
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op = type(node.ops[0])
            if op in COMPARE_SWAPS:
                found = _between(
                    "compare",
                    path,
                    lines,
                    node,
                    node.left,
                    node.comparators[0],
                    COMPARE_TEXT[op],
                    COMPARE_SWAPS[op],
                    name,
                )
                if found:
                    yield found
        elif isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC_SWAPS:
            if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
                continue  # string formatting with %, or concatenation of literals
            old, new = ARITHMETIC_SWAPS[type(node.op)]
            found = _between("arithmetic", path, lines, node, node.left, node.right, old, new, name)
            if found:
                yield found
        elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
            old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            found = _between("boolean", path, lines, node, node.values[0], node.values[1], old, new, name)
            if found:
                yield found
        if isinstance(node, (ast.If, ast.While)) and node.test.lineno == node.test.end_lineno:
            test = node.test
            line = lines[test.lineno - 1]
            segment = line.encode()[test.col_offset : test.end_col_offset].decode("utf-8", "replace")
            before = "".join(lines[node.lineno - 1 : test.end_lineno])
            if segment and segment in before:
                index = before.rfind(segment)
                after = before[:index] + f"not ({segment})" + before[index + len(segment) :]
                yield Mutation("condition", path, node.lineno, test.end_lineno, before, after, name)
        is_range = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
        # (a `continue` here for calls other than range() skipped the swap_arguments check below for them:
        # only range() calls were ever swapped, 3 tasks of 520)
        if isinstance(node, (ast.Subscript, ast.Slice, ast.Compare)) or is_range:
            for constant in ast.walk(node):
                if (
                    isinstance(constant, ast.Constant)
                    and type(constant.value) is int
                    and constant.lineno == constant.end_lineno
                    and id(constant) not in nested
                ):
                    value = constant.value
                    replacement = str(value + 1 if value <= 1 else value - 1)
                    line = lines[constant.lineno - 1]
                    raw = line.encode()
                    if raw[constant.col_offset : constant.end_col_offset].decode() != str(value):
                        continue
                    after_line = (
                        raw[: constant.col_offset] + replacement.encode() + raw[constant.end_col_offset :]
                    ).decode()
                    yield Mutation("off_by_one", path, constant.lineno, constant.lineno, line, after_line, name)
                    break
        if (
            isinstance(node, ast.Call)
            and len(node.args) >= 2
            and not any(isinstance(arg, ast.Starred) for arg in node.args[:2])
        ):
            first_arg, second_arg = node.args[0], node.args[1]
            if first_arg.lineno == second_arg.end_lineno == node.lineno == node.end_lineno:
                raw = lines[node.lineno - 1].encode()
                one = raw[first_arg.col_offset : first_arg.end_col_offset]
                two = raw[second_arg.col_offset : second_arg.end_col_offset]
                if one != two:
                    swapped = (
                        raw[: first_arg.col_offset]
                        + two
                        + raw[first_arg.end_col_offset : second_arg.col_offset]
                        + one
                        + raw[second_arg.end_col_offset :]
                    ).decode()
                    line = lines[node.lineno - 1]
                    yield Mutation("swap_arguments", path, node.lineno, node.lineno, line, swapped, name)
    yield from _removals(path, lines, function)


def _removals(path: str, lines: list[str], function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[Mutation]:
    name = function.name
    for node in ast.walk(function):
        if isinstance(node, (ast.ClassDef,)) or (
            node is not function and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        ):
            continue
        for body in (getattr(node, "body", None), getattr(node, "orelse", None)):
            if not isinstance(body, list) or len(body) < 2:
                continue
            for statement in body:
                if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)) or (
                    isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
                ):
                    first, last = statement.lineno, statement.end_lineno or statement.lineno
                    if _whole_lines(lines, statement):
                        yield Mutation(
                            "remove_statement", path, first, last, "".join(lines[first - 1 : last]), "", name
                        )
        if (
            isinstance(node, ast.If)
            and node.orelse
            and not (len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If))
        ):
            else_line = node.body[-1].end_lineno + 1
            last = node.orelse[-1].end_lineno
            if else_line <= len(lines) and lines[else_line - 1].strip() == "else:":
                yield Mutation("remove_branch", path, else_line, last, "".join(lines[else_line - 1 : last]), "", name)
        elif (
            isinstance(node, ast.If)
            and not node.orelse
            and not isinstance(node.body[-1], (ast.Return, ast.Raise))
            and _whole_lines(lines, node)
        ):
            parent_body = next(
                (
                    body
                    for parent in ast.walk(function)
                    for body in (getattr(parent, "body", None),)
                    if isinstance(body, list) and node in body
                ),
                None,
            )
            if parent_body is not None and len(parent_body) >= 2:
                yield Mutation(
                    "remove_branch",
                    path,
                    node.lineno,
                    node.end_lineno,
                    "".join(lines[node.lineno - 1 : node.end_lineno]),
                    "",
                    name,
                )
    body = function.body
    start = (
        1
        if body
        and isinstance(body[0], ast.Expr)
        and isinstance(getattr(body[0], "value", None), ast.Constant)
        and isinstance(body[0].value.value, str)
        else 0
    )
    rest = body[start:]
    if len(rest) >= 2 or (rest and (rest[-1].end_lineno or 0) - rest[0].lineno >= 2):
        first, last = rest[0].lineno, rest[-1].end_lineno
        if _whole_lines(lines, rest[0]) and first > function.lineno:
            indent = lines[first - 1][: len(lines[first - 1]) - len(lines[first - 1].lstrip())]
            yield Mutation(
                "remove_body",
                path,
                first,
                last,
                "".join(lines[first - 1 : last]),
                f"{indent}raise NotImplementedError\n",
                name,
            )


def _whole_lines(lines: list[str], node: ast.AST) -> bool:
    """Whether ``node`` alone fills its lines (no ``;`` neighbours, no text after it)."""
    first = lines[node.lineno - 1]
    last = lines[(node.end_lineno or node.lineno) - 1]
    return first[: node.col_offset].strip() == "" and last.encode()[node.end_col_offset :].decode(
        "utf-8", "replace"
    ).strip() in ("", "\\")
