"""Run this repository's tests: every test_* function in tests/test_*.py.

A small stand-in for pytest, which this machine does not have. The tests are plain
functions with assert statements, so "python -m pytest" runs them too where pytest exists.

Usage: python3 run_tests.py [TEST_FILE ...] [-k NAME_PART]
"""

import ast
import importlib.util
import os
import sys
import traceback

ROOT = os.path.dirname(os.path.abspath(__file__))
LINE = "=" * 30


def relative(path):
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path


def short_traceback(error):
    """The frames in this repository (not this runner), pytest style."""
    lines = []
    for frame in traceback.extract_tb(error.__traceback__):
        if os.path.abspath(frame.filename) == os.path.abspath(__file__):
            continue
        lines.append(f"{relative(frame.filename)}:{frame.lineno}: in {frame.name}")
        if frame.line:
            lines.append(f"    {frame.line}")
    message = "".join(traceback.format_exception_only(type(error), error)).rstrip()
    return lines + [message]


def explain_assert(error):
    """The values inside a failed assert: both sides of a comparison, or a call's arguments."""
    tb = error.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    try:
        with open(frame.f_code.co_filename) as handle:
            source = handle.read().splitlines()[tb.tb_lineno - 1].strip()
        node = ast.parse(source).body[0]
    except (OSError, IndexError, SyntaxError, UnicodeDecodeError):
        return []
    if not isinstance(node, ast.Assert):
        return []
    test = node.test
    if isinstance(test, ast.Compare) and len(test.comparators) == 1:
        parts = [("left", test.left), ("right", test.comparators[0])]
    elif isinstance(test, ast.Call):
        parts = [(f"argument {index + 1}", arg) for index, arg in enumerate(test.args)]
    else:
        return []
    lines = []
    for label, part in parts:
        text = ast.get_source_segment(source, part)
        try:
            value = eval(compile(ast.Expression(part), "<assert>", "eval"), frame.f_globals, frame.f_locals)
            shown = repr(value)
        except Exception as problem:
            shown = f"<raised {type(problem).__name__}: {problem}>"
        if len(shown) > 400:
            shown = shown[:400] + "..."
        lines.append(f"    {label}: {shown}" if shown == text else f"    {label}: {text} = {shown}")
    return lines


def load(path, index):
    spec = importlib.util.spec_from_file_location(f"_tests_{index}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv):
    files, pattern = [], None
    arguments = list(argv)
    while arguments:
        argument = arguments.pop(0)
        if argument == "-k" and arguments:
            pattern = arguments.pop(0)
        elif argument.startswith("-"):
            print(f"unknown option {argument}")
            return 2
        else:
            files.append(argument)
    if not files:
        folder = os.path.join(ROOT, "tests")
        names = os.listdir(folder) if os.path.isdir(folder) else []
        names = [name for name in names if name.startswith("test_") and name.endswith(".py")]
        files = sorted(os.path.join("tests", name) for name in names)
    sys.path.insert(0, ROOT)
    passed = failed = errors = 0
    reports = []
    for index, name in enumerate(files):
        path = name if os.path.isabs(name) else os.path.join(ROOT, name)
        print(relative(path) + " ", end="", flush=True)
        try:
            module = load(path, index)
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            errors += 1
            print("E", flush=True)
            reports.append((f"ERROR collecting {relative(path)}", short_traceback(error)))
            continue
        tests = [
            (test_name, function)
            for test_name, function in vars(module).items()
            if test_name.startswith("test")
            and callable(function)
            and getattr(function, "__module__", "") == module.__name__
        ]
        if pattern:
            tests = [(test_name, function) for test_name, function in tests if pattern in test_name]
        for test_name, function in tests:
            try:
                function()
            except AssertionError as error:
                failed += 1
                print("F", end="", flush=True)
                reports.append((test_name, short_traceback(error) + explain_assert(error)))
            except BaseException as error:
                if isinstance(error, KeyboardInterrupt):
                    raise
                failed += 1
                print("F", end="", flush=True)
                reports.append((test_name, short_traceback(error)))
            else:
                passed += 1
                print(".", end="", flush=True)
        print(flush=True)
    if reports:
        print()
        print(f"{LINE} FAILURES {LINE}")
        for title, lines in reports:
            print(f"_____ {title} _____")
            print("\n".join(lines))
    counts = [f"{count} {label}" for count, label in ((failed, "failed"), (passed, "passed"), (errors, "error"))]
    counts = [text for text in counts if not text.startswith("0 ")] or ["no tests ran"]
    print(f"{LINE} {', '.join(counts)} {LINE}")
    if failed or errors:
        return 1
    return 0 if passed else 5


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
