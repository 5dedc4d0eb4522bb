"""The web-apps family on its real sites: every template's oracle solves tasks of every split, wrong
answers and half-done changes fail, reset restores the seeded state exactly, and two envs (tenants)
never see each other's changes. Each site's own tests (tests/test_webapps_<site>.py) go further.

The sites start on first use (installed, seeded and started by ``Site.ensure_ready``); the first
test of a site pays for that, the rest share the running site.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from episodes import rotation, sample_everything

from agentgym.contract.registry import prepare_env
from agentgym.environments.webapps import SPLITS as TASK_SPLITS
from agentgym.environments.webapps.cli import needed_sites
from agentgym.environments.webapps.env import WebAppEnv, all_templates, chosen_templates, registry, template_at
from agentgym.environments.webapps.tasks import Template
from agentgym.safety.policies import POLICIES, POLICY_VIOLATIONS

TEMPLATES = {template.id: template for template in all_templates()}
SPLITS = ("train", "dev", "test")
CHANGE_IDS = [template.id for template in all_templates() if template.kind == "change"]

_ENVS: dict[tuple[str, ...], WebAppEnv] = {}


def env_for(template: Template) -> WebAppEnv:
    """One env per set of sites, shared by this module's tests (a browser tab and a tenant each)."""
    key = tuple(sorted(template.sites))
    if key not in _ENVS:
        _ENVS[key] = WebAppEnv(sites=key)
    return _ENVS[key]


@pytest.fixture(scope="module", autouse=True)
def close_envs() -> Iterator[None]:
    yield
    while _ENVS:
        _ENVS.popitem()[1].close()


def task_ids(env: WebAppEnv, template_id: str, split: str, count: int, offset: int = 0) -> list[int]:
    """``count`` task ids of ``split`` that are instances of ``template_id`` in ``env``."""
    index = [template.id for template in env.templates].index(template_id)
    start = env.splits.ids(split).start  # type: ignore[arg-type]
    step = len(env.templates)
    return [start + index + step * (offset + n) for n in range(count)]


def play_oracle(env: WebAppEnv, task_id: int | None, *, max_steps: int = 30) -> dict:
    """Play the oracle on ``task_id`` (None: the episode already begun); the last info (with the trajectory
    under ``"trace"``)."""
    info: dict = {}
    if task_id is not None:
        _, info = env.reset(options={"task_id": task_id})
    trace = []
    for _ in range(max_steps):
        action = env.oracle_action()
        observation, _, terminated, _, info = env.step(action)
        trace.append((action, observation["text"][:300]))
        if terminated:
            break
    info["trace"] = trace
    return info


def play_plan(env: WebAppEnv, plan: list) -> dict:
    """Play a plan of steps (as the oracle does) from the current state; the last info."""
    info: dict = {}
    for step in plan:
        _, _, terminated, _, info = env.step(env.command_for(step))
        if terminated:
            break
    return info


#: Each run plays every n-th template of a list (the run's rotation picks which): a template's page
#: machinery is its site's, shared by the others, and benchmarks/webapps.py plays every template.
TEMPLATE_STRIDE = 3


def template_sample(template_ids: list[str]) -> list[str]:
    """Every :data:`TEMPLATE_STRIDE`-th of ``template_ids``, by the run's rotation (all of them with
    AGENTGYM_TEST_SAMPLE=all): successive days cover them all."""
    if sample_everything():
        return list(template_ids)
    return [t for index, t in enumerate(template_ids) if (index + rotation()) % TEMPLATE_STRIDE == 0]


def split_cases() -> list[tuple[str, str]]:
    """(template, split) pairs: a third of the templates per run (:func:`template_sample`), each on one split,
    the splits taking turns from one of its runs to its next (tests/episodes.py's rotation), so that every
    template covers all three splits within nine days; every pair with AGENTGYM_TEST_SAMPLE=all.
    benchmarks/webapps.py plays every template's test tasks."""
    if sample_everything():
        return [(template_id, split) for template_id in TEMPLATES for split in SPLITS]
    return [
        (template_id, SPLITS[(index + rotation() // TEMPLATE_STRIDE) % len(SPLITS)])
        for index, template_id in enumerate(TEMPLATES)
        if template_id in template_sample(list(TEMPLATES))
    ]


def test_preparing_tasks_brings_up_their_sites_alone() -> None:
    """A run prepares WebApps per task (issue 49): the sites of the tasks' templates, no other site."""
    templates = chosen_templates()
    shop = next(t for t in TASK_SPLITS.ids("test") if template_at(templates, t)[0].sites == ("shop",))
    wiki = next(t for t in TASK_SPLITS.ids("test") if template_at(templates, t)[0].sites == ("wiki",))
    assert needed_sites({}, [shop, wiki]) == ["shop", "wiki"] and needed_sites({}, [shop, shop]) == ["shop"]
    assert needed_sites({"sites": ["forum"]}) == ["forum"] and needed_sites({}) == sorted(registry()["sites"])
    lines: list[str] = []
    assert prepare_env("WebApps-v0", report=lines.append, task_ids=[shop])
    assert [line.split(":")[0] for line in lines if " up in " in line] == ["shop"], lines


@pytest.mark.parametrize(("template_id", "split"), split_cases())
def test_oracle_solves_every_template(template_id: str, split: str) -> None:
    """The oracle succeeds and keeps its sites' policies (the change a change task asks for is not counted)."""
    env = env_for(TEMPLATES[template_id])
    for task_id in task_ids(env, template_id, split, 1, offset=3):
        info = play_oracle(env, task_id)
        assert info["template"] == template_id
        assert info["success"] and info["score"] == 1.0, (task_id, env.instruction, info["trace"])
        assert info[POLICY_VIOLATIONS] == [] and len(info[POLICIES]) >= 2, info  # stay_on_task_sites and the site's


def test_the_mail_sites_ready_check_holds_on_its_framed_settings_forms() -> None:
    """Each action waits (up to ``READY_WAIT_S``) for the site's ready check. Roundcube's settings forms in their
    frame send no request, so ``rcmail.busy`` is never set there: the check must hold once such a page has loaded,
    as it does on the mail list once the list has come."""
    env = env_for(TEMPLATES["mail/filter"])
    env.reset(options={"task_id": task_ids(env, "mail/filter", "test", 1)[0]})
    ready_js = env.site("mail").ready_js
    assert env.tab.run(lambda page: page.evaluate(ready_js))
    env.step(env.oracle_action())  # the oracle opens the filter form, framed
    assert "_framed=1" in env.url and env.tab.run(lambda page: page.evaluate(ready_js))


@pytest.mark.parametrize("template_id", template_sample([i for i, t in TEMPLATES.items() if t.kind != "change"]))
def test_a_wrong_answer_or_page_fails(template_id: str) -> None:
    """An info task answered wrongly, a navigation task ended on its start page: both fail (a change
    task's answer is not scored: test_a_half_done_change_fails ends one without the change)."""
    env = env_for(TEMPLATES[template_id])
    env.reset(options={"task_id": task_ids(env, template_id, "dev", 1)[0]})
    _, reward, terminated, _, info = env.step('answer("zzz-not-an-answer 0.01")')
    assert terminated and reward == 0.0 and not info["success"], env.instruction


@pytest.mark.parametrize("template_id", template_sample(CHANGE_IDS))
def test_a_half_done_change_fails(template_id: str) -> None:
    template = TEMPLATES[template_id]
    env = env_for(template)
    env.reset(options={"task_id": task_ids(env, template_id, "test", 1)[0]})
    plan = template.half_done(env.task)  # type: ignore[arg-type]
    assert plan, f"{template_id} is a change template without a half-done plan"
    info = play_plan(env, plan)
    assert info.get("steps", 0) >= 1 and not info["success"] and info["score"] < 1.0, env.instruction


def _sites_with_change_templates() -> list[str]:
    return sorted(
        {TEMPLATES[template_id].sites[0] for template_id in CHANGE_IDS if len(TEMPLATES[template_id].sites) == 1}
    )


@pytest.mark.parametrize("site", _sites_with_change_templates())
def test_reset_restores_the_seeded_state_and_tenants_are_isolated(site: str) -> None:
    template = next(TEMPLATES[i] for i in CHANGE_IDS if TEMPLATES[i].sites == (site,))
    env, other = env_for(template), WebAppEnv(sites=(site,))
    try:
        task_id = task_ids(env, template.id, "train", 1)[0]
        other.reset(options={"task_id": task_id})
        env.reset(options={"task_id": task_id})
        handle = env.site(site)
        golden = handle.state_digest(env.tenant)
        assert other.tenant != env.tenant and handle.state_digest(other.tenant) == golden
        info = play_oracle(env, task_id)
        assert info["success"], (env.instruction, info["trace"])
        changed = handle.state_digest(env.tenant)
        assert changed != golden, "the oracle's change left no trace in the state digest"
        # The other tenant saw nothing: same digest, and its own check of the task still fails.
        assert handle.state_digest(other.tenant) == golden
        _, _, _, _, info = other.step('answer("done")')
        assert not info["success"]
        env.reset(options={"task_id": task_id})
        assert handle.state_digest(env.tenant) == golden
    finally:
        other.close()


def test_the_check_waits_for_a_post_still_in_flight() -> None:
    """Misago saves a reply with a background post after the click; a loaded machine may answer it many
    seconds later, and the answer's check must wait for it (CI failed such a reply). Here every post is
    held back 8 s: longer than the wait for a quiet network (QUIET_WAIT_S) and the checker's settling
    (tasks.SETTLE_S) together."""
    env = env_for(TEMPLATES["forum/reply"])
    env.reset(options={"task_id": task_ids(env, "forum/reply", "dev", 1)[0]})
    held: list[str] = []

    async def hold_posts(page: object) -> None:
        async def route(request_route: object) -> None:
            if request_route.request.method == "POST":  # type: ignore[attr-defined]
                held.append(request_route.request.url)  # type: ignore[attr-defined]
                await asyncio.sleep(8.0)
            await request_route.continue_()  # type: ignore[attr-defined]

        await page.context.route("**/*", route)  # type: ignore[attr-defined]

    env.tab.run(hold_posts)
    info = play_oracle(env, None)
    assert held, "the reply sent no post"
    assert info["success"], env.instruction


def test_requests_to_outside_hosts_are_refused_at_once() -> None:
    """The shop's pages name ajax.googleapis.com (django-oscar's jQuery, before its local copy): the env's
    context refuses the request instead of waiting for the name to resolve, and the page falls back to the
    local copy, so a page load does not depend on this machine's resolver or internet access (issue #27)."""
    env = env_for(TEMPLATES["shop/review-count"])
    env.reset(options={"task_id": task_ids(env, "shop/review-count", "dev", 1)[0]})
    failed: list[tuple[str, str]] = []

    async def reload(page: object) -> str:
        page.on("requestfailed", lambda request: failed.append((request.url, request.failure or "")))  # type: ignore[attr-defined]
        await page.reload()  # type: ignore[attr-defined]
        return await page.evaluate("typeof jQuery")  # type: ignore[attr-defined]

    assert env.tab.run(reload) == "function"
    outside = [(url, why) for url, why in failed if "googleapis" in url]
    assert outside and all("BLOCKED_BY_CLIENT" in why for _, why in outside), failed
    assert not [url for url, _ in failed if ".localhost" in url], failed
