"""The web-apps family's machinery without running sites: registry, task ids and splits, answer
matching, tenant leases, and that the host setup installs every site's Debian packages."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentgym.environments.webapps import SPLITS
from agentgym.environments.webapps.env import WebAppEnv, all_templates, registry, site_class
from agentgym.environments.webapps.site import lease_tenant
from agentgym.environments.webapps.tasks import (
    Picker,
    Template,
    exact_match,
    fuzzy_match,
    must_include,
    normalise,
    number_match,
)

REPO = Path(__file__).resolve().parent.parent


def test_setup_host_installs_every_sites_debian_packages() -> None:
    script = (REPO / "containers" / "setup-host.sh").read_text()
    listed = set(re.search(r'WEBAPPS_PACKAGES="([^"]*)"', script, re.DOTALL).group(1).replace("\\\n", " ").split())
    needed = {package for name in registry()["sites"] for package in site_class(name).apt_packages}
    assert needed <= listed, f"add {sorted(needed - listed)} to WEBAPPS_PACKAGES in containers/setup-host.sh"


def test_every_site_has_templates_of_all_three_kinds_and_forty_in_all() -> None:
    templates = all_templates()
    assert len(templates) >= 40
    for name in registry()["sites"]:
        kinds = {template.kind for template in templates if name in template.sites}
        assert kinds == {"info", "navigation", "change"}, (name, kinds)
    assert any(len(template.sites) > 1 for template in templates), "no template spans two sites"
    for template in templates:
        assert set(template.sites) <= set(registry()["sites"]), template.id
        assert template.kind != "change" or type(template).half_done is not Template.half_done, template.id


def test_task_ids_map_to_templates_and_instances_deterministically() -> None:
    env = WebAppEnv(sites=["forge"])
    try:
        count = len(env.templates)
        first, again = env.task_for(5), env.task_for(5)
        assert first[1] == again[1] and first[0] is env.templates[5 % count]
        dev = env.task_for(SPLITS.ids("dev").start)
        assert dev[0] is env.templates[0] and dev[1] != env.task_for(0)[1]
        assert env.task_for(count)[0] is env.templates[0]  # the next instance of template 0
        assert env.fingerprint_task(5) == env.fingerprint_task(5)
    finally:
        env.close()


def test_picker_keeps_splits_apart() -> None:
    items = list(range(1000))
    drawn = {
        split: {Picker({}, random.Random(seed), split).choice(items) for seed in range(300)}
        for split in ("train", "dev", "test")
    }
    assert not drawn["train"] & drawn["dev"] and not drawn["train"] & drawn["test"] and not drawn["dev"] & drawn["test"]
    assert Picker({}, random.Random(0), "dev").choice([1, 2], shared=True) in (1, 2)


@pytest.mark.parametrize(
    ("matcher", "answer", "expected", "result"),
    [
        (exact_match, "  Alice   Zhang. ", "alice zhang", True),
        (exact_match, "Alice", "Alice Zhang", False),
        (exact_match, None, "x", False),
        (number_match, "It costs $1,299.00", 1299, True),
        (number_match, "12 or 13", 12, False),
        (number_match, "about 12.5", 12.4, False),
        (must_include, "Paris, Rome and Oslo", ["rome", "oslo"], True),
        (must_include, "Paris", ["rome"], False),
        (fuzzy_match, "The Great Gatsbi", "the great gatsby", True),
        (fuzzy_match, "Moby Dick", "the great gatsby", False),
    ],
)
def test_answer_matching(matcher, answer, expected, result) -> None:  # noqa: ANN001
    assert matcher(answer, expected) is result
    assert normalise("Hello,  World!") == "hello world"


def test_tenant_leases_are_exclusive_across_processes(tmp_path: Path) -> None:
    first, second = lease_tenant(tmp_path), lease_tenant(tmp_path)
    assert (first.number, second.number) == (0, 1)
    script = (
        "import sys; from pathlib import Path; from agentgym.environments.webapps.site import lease_tenant; "
        f"print(lease_tenant(Path({str(tmp_path)!r})).number)"
    )
    taken = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip()
    assert taken == "2"  # 0 and 1 are held by this process
    first.release()
    assert (
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip() == "0"
    )
    second.release()


def test_bad_answers_and_gotos_are_explained_without_a_site() -> None:
    from agentgym.contract.core import InvalidAction
    from agentgym.environments.webapps.env import _read_answer

    assert _read_answer('"Alice"') == "Alice" and _read_answer("'x'") == "x" and _read_answer("42") == "42"
    for bad in ("", '"unterminated', "'a' 'b' + 1"):
        with pytest.raises(InvalidAction):
            _read_answer(bad)
    env = WebAppEnv(sites=["shop"])  # no site is started, no page opened: the checks come first
    try:
        with pytest.raises(InvalidAction, match="a path opens on the site the tab shows, and it shows none"):
            env._goto_target('goto("/basket/")')
        with pytest.raises(InvalidAction, match="limited to this task's sites"):
            env._goto_target('goto("http://example.com/")')
        public = env.public_base("shop")
        assert env._goto_target(f'goto("{public}/basket/")') == env.site("shop").base_url(env.tenant) + "/basket/"
    finally:
        env.close()


def test_webapps_command(capsys: pytest.CaptureFixture[str]) -> None:
    """`agentgym webapps` (a family command): status names every site; an unknown site is an error, not a crash."""
    from agentgym.cli import main

    assert main(["webapps", "status"]) == 0
    out = capsys.readouterr().out
    assert all(f"{name}: " in out for name in registry()["sites"])
    assert main(["webapps", "up", "nosuchsite"]) == 1
    assert "unknown sites ['nosuchsite']" in capsys.readouterr().err
