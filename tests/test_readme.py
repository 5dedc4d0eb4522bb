"""The README's Python examples run as written.

An example whose first line is ``# not run by the tests: <reason>`` needs what a test cannot
have (a Ray cluster of the user's, a live site); it is reported as skipped with that reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).parent.parent / "README.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)


def test_readme_has_examples() -> None:
    assert len(EXAMPLES) >= 2


@pytest.mark.usefixtures("alfworld_data")  # the ALFWorld example reads $ALFWORLD_DATA, as a user's would
@pytest.mark.parametrize("code", EXAMPLES, ids=[f"example-{index}" for index in range(len(EXAMPLES))])
def test_readme_example_runs(code: str) -> None:
    reason = re.match(r"# not run by the tests: (.+)", code)
    if reason:
        pytest.skip(reason.group(1))
    exec(compile(code, str(README), "exec"), {"__name__": "readme_example"})
