"""WebArena-style tasks on the self-hosted web apps, in a browser tab (see docs/webapps.md).

Task ``task_id`` of a split is template ``index % T`` (the env's ``T`` templates in registry
order) drawn with a generator seeded by the template, the split and ``index // T``; its facts
come from the sites' generated content, so a task id always names the same task.

Each env copy leases a tenant (:func:`~.site.lease_tenant`) for its life: its own isolated
state on every site. ``reset`` makes sure the task's sites run (starting them the first time),
restores the tenant's state on those sites to the seeded snapshot, opens a fresh browser
context logged in as the task's users, and opens the start page.

Observation: the instruction, the action syntax, then the URL and the page as text with element
ids (and a screenshot with ``screenshot=True``). Actions: the shared browser commands, ``goto``
limited to this env's own sites, and ``answer("...")``, which ends the episode: the template's
checker then scores it from the app's real state (an info task's answer against the value in
the app's database, a navigation task's final page, a change task's database rows or mailbox).

Policies (``policies.yaml``, :mod:`.policies`): every task states the policies of its sites (stay on the task's
sites; on the mail and the wiki, delete nothing unasked; on the wiki, edit no other page; on the mail, send no
mail outside the company to anyone the task does not name), checked after reset and every step from the
tenant's state and the agent's navigations; ``info["policies"]`` and ``info["policy_violations"]`` report them.
With ``policies=True`` the instruction shows their texts (docs/safety.md).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import dataclasses
import importlib
import json
import random
import re
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import yaml

from agentgym.browser.commands import Command, parse_command
from agentgym.browser.env import BrowserEnv
from agentgym.browser.page import BrowserError
from agentgym.contract.core import InvalidAction, TaskSplits
from agentgym.environments.webapps import SPLITS, policies
from agentgym.environments.webapps.site import DEFAULT_SEED, Site, TenantLease, lease_tenant
from agentgym.environments.webapps.tasks import (
    Answer,
    AnswerFromPage,
    Choose,
    Click,
    Fill,
    Goto,
    Outcome,
    Press,
    Step,
    Task,
    Template,
)
from agentgym.safety.policies import Policy, PolicyEnv

#: How many times ``reset`` opens the start page (on a fresh context each time) before it reports the
#: site's failure: the episode has not begun, so opening it again changes nothing an agent did.
START_ATTEMPTS = 2
#: Requests that leave this machine's sites (``*.localhost``, loopback): the sites are self-hosted, but a page
#: may still name an outside host (django-oscar's pages load jQuery from ajax.googleapis.com before their
#: local copy), and its page load then waits for that host's name to resolve or fail: seconds with a slow
#: or silent resolver, and another page with internet access. The env's browser context refuses them at once.
OUTSIDE_SITES = re.compile(
    r"^(?!(?:https?|wss?)://(?:[^/?#]*\.)?(?:localhost|127\.0\.0\.1|\[::1\])(?::\d+)?(?:[/?#]|$))\w+://"
)
#: How long the oracle waits for a plan step's element to appear (pages that open dialogs from scripts).
#: It waits only when the element is missing; a loaded machine (a test run: load 8-24 on 2 cores) may take
#: seconds to run the script that shows it, and a shorter wait made the oracle answer "found no ...".
ORACLE_WAIT_S = 20.0
#: How long a reset and ``answer(...)`` wait for the page's network to go quiet (a page that polls is left
#: as it is). ``answer(...)`` waits longer, up to half the page timeout, for a write still in flight (a post
#: the agent's click sent, which a loaded machine may answer many seconds later: CI failed such a reply).
QUIET_WAIT_S = 5.0
#: How long a reset and each action wait for a page that fills itself by script to be filled in (the site's
#: ``ready_js``: a forum search's results and counts, a mail list). It waits only while the page is not yet
#: filled in; a loaded machine may answer the script's call many seconds late: CI captured a forum search
#: still without its results 10 s after the page loaded, when this wait was 5 s.
READY_WAIT_S = 20.0
ANSWER_SYNTAX = '  answer("text")            end the task with your answer (for tasks that ask for no fact: "done")'
_ANSWER = re.compile(r"^\s*answer\s*\((.*)\)\s*$", re.DOTALL)

#: Finds the id of the element a plan step names (see :mod:`.tasks`): a CSS selector or ``text=...``,
#: with an optional `` >> nth=K``; an element that is not listed is represented by its nearest listed ancestor.
_FIND_JS = r"""target => {
  let nth = 0;
  const suffix = target.match(/ >> nth=(\d+)$/);
  if (suffix) { nth = Number(suffix[1]); target = target.slice(0, suffix.index); }
  const clean = s => (s || '').replace(/\s+/g, ' ').trim();
  let found;
  if (target.startsWith('text=')) {
    const wanted = clean(target.slice(5));
    const listed = Array.from(document.querySelectorAll('[data-bid]'))
      .filter(e => clean(e.innerText !== undefined && e.innerText !== '' ? e.innerText : e.value) === wanted);
    found = listed.filter(e => !listed.some(other => other !== e && e.contains(other)));
  } else {
    found = Array.from(document.querySelectorAll(target));
  }
  const element = found[nth];
  if (!element) return null;
  const listed = element.closest('[data-bid]');
  return listed ? Number(listed.getAttribute('data-bid')) : null;
}"""
_TEXT_JS = r"""target => {
  const element = document.querySelector(target);
  if (!element) return null;
  return ['INPUT', 'TEXTAREA', 'SELECT'].includes(element.tagName) ? element.value : element.innerText;
}"""


@cache
def registry() -> dict[str, Any]:
    """``sites.yaml``: site name -> its class's ``module:Class``, and the template modules in order."""
    return yaml.safe_load((Path(__file__).parent / "sites.yaml").read_text())


def site_class(name: str) -> type[Site]:
    """The :class:`Site` subclass of site ``name``."""
    module, _, attribute = registry()["sites"][name].partition(":")
    return getattr(importlib.import_module(module), attribute)


@cache
def all_templates() -> tuple[Template, ...]:
    """Every template of every site, in registry order (task ids depend on it)."""
    found: list[Template] = []
    for module in registry()["template_modules"]:
        found.extend(importlib.import_module(module).TEMPLATES)
    ids = [template.id for template in found]
    if len(set(ids)) != len(ids):
        raise ValueError(f"template ids repeat: {sorted(i for i in ids if ids.count(i) > 1)}")
    return tuple(found)


def chosen_templates(
    sites: Sequence[str] | None = None, templates: Sequence[str] | None = None
) -> tuple[Template, ...]:
    """The templates whose sites are all among ``sites`` (default: every template), only ``templates`` where given."""
    chosen = [
        template
        for template in all_templates()
        if (sites is None or set(template.sites) <= set(sites)) and (templates is None or template.id in templates)
    ]
    if not chosen:
        raise ValueError(f"no template matches sites={sites!r} templates={templates!r}")
    if templates is not None and len(chosen) != len(set(templates)):
        unknown = sorted(set(templates) - {template.id for template in chosen})
        raise ValueError(f"unknown templates (or not on sites {sites!r}): {unknown}")
    return tuple(chosen)


def template_at(templates: Sequence[Template], task_id: int) -> tuple[Template, str, int]:
    """Task ``task_id``'s template among ``templates`` (they take turns), its split, and which of that template's
    tasks in the split it is."""
    split = SPLITS.split_of(task_id)
    index = task_id - SPLITS.ids(split).start
    return templates[index % len(templates)], split, index // len(templates)


async def wait_until_filled(page: Any, ready_js: str) -> None:
    """Wait, up to :data:`READY_WAIT_S`, until the site's ``ready_js`` says the page has filled itself in; a page
    still unfilled then is read as it is."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    with contextlib.suppress(PlaywrightTimeout):
        await page.wait_for_function(ready_js, timeout=READY_WAIT_S * 1000)


class WebAppEnv(PolicyEnv, BrowserEnv):
    """Tasks on one or more web apps (see the module docstring).

    ``sites``: the templates whose sites are all among these (default: every template);
    ``templates``: only these template ids. ``seed`` selects the generated content. ``policies=True`` shows the
    task's policies after its instruction (they are checked either way; :class:`~agentgym.safety.PolicyEnv`).
    """

    splits: ClassVar[TaskSplits] = SPLITS

    def __init__(
        self,
        *,
        sites: Sequence[str] | None = None,
        templates: Sequence[str] | None = None,
        seed: int = DEFAULT_SEED,
        **kwargs: Any,
    ) -> None:
        super().__init__(allow_goto=True, allow_tabs=True, **kwargs)
        self.toolset = "site_tasks"  # in agentgym/browser/browser_tools.yaml
        self.templates: tuple[Template, ...] = chosen_templates(sites, templates)
        self.seed = seed
        self.site_names = tuple(sorted({name for template in self.templates for name in template.sites}))
        self.sites: dict[str, Site] = {}
        self._lease: TenantLease | None = None
        self.task: Task | None = None
        self.template: Template | None = None
        self.answer: str | None = None
        self._plan: list[Step] = []
        #: Commands of the episode played before the oracle's plan (re)started (an -Attack env's detour).
        self.plan_offset = 0
        self._requests = RequestsInFlight()
        #: The pages off the task's sites that the episode opened or asked for (``stay_on_task_sites``).
        self.left_sites: list[str] = []
        #: What the policies' checks keep between steps (:mod:`.policies`): the seeded state they compare with, read
        #: once, and the mail headers they have read (each message file's once).
        self.policy_baseline: dict[Any, Any] = {}

    # ---- tasks --------------------------------------------------------------------------

    def site(self, name: str) -> Site:
        """This env's handle on site ``name`` (created on first use)."""
        if name not in self.sites:
            self.sites[name] = site_class(name)(seed=self.seed)
        return self.sites[name]

    def task_for(self, task_id: int) -> tuple[Template, Task]:
        """Template and task of ``task_id`` (needs no running site: only the generated content)."""
        template, split, number = template_at(self.templates, task_id)
        rng = random.Random(f"webapps/{template.id}/{split}/{number}")
        content = {name: self.site(name).content() for name in template.sites}
        return template, template.instantiate(content, rng, split)

    def fingerprint_task(self, task_id: int) -> dict[str, Any]:
        """Task ``task_id``'s definition, for its id's fingerprint: the pages show this env's tenant, not the task."""
        template, task = self.task_for(task_id)
        return {
            "templates": [template.id for template in self.templates],  # task ids map onto this list
            **dataclasses.asdict(task),
            "plan": [[type(step).__name__, dataclasses.asdict(step)] for step in template.oracle(task)],
        }

    @property
    def tenant(self) -> int:
        """This env's tenant number (leased on first use, held until :meth:`close`)."""
        if self._lease is None:
            self._lease = lease_tenant()
        return self._lease.number

    # ---- TextEnv ------------------------------------------------------------------------

    @property
    def action_syntax(self) -> str:
        return super().action_syntax + "\n" + ANSWER_SYNTAX

    def _generate(self, task_id: int) -> str:
        self.template, self.task = self.task_for(task_id)
        self.answer, self._plan = None, self.template.oracle(self.task)
        self.plan_offset = 0
        for name in self.task.sites:
            site = self.site(name)
            site.ensure_ready()
            site.reset_tenant(self.tenant)
        cookies = [
            cookie
            for name, user in self.task.logins.items()
            for cookie in self.site(name).session_cookies(self.tenant, user)
        ]
        start_site, start_path = self.task.start
        ready_js = self.site(start_site).ready_js
        start_url = self.site(start_site).base_url(self.tenant) + start_path

        async def open_start(page: Any) -> None:
            await page.context.route(OUTSIDE_SITES, lambda route: route.abort("blockedbyclient"))
            self._requests.watch(page.context)
            page.context.on("request", self._navigating)
            if cookies:
                await page.context.add_cookies(cookies)
            await page.goto(start_url, timeout=self.page_timeout_s * 1000)
            await self._requests.settle(QUIET_WAIT_S, QUIET_WAIT_S)  # a page that fills itself by script (a mail list)
            await wait_until_filled(page, ready_js)

        for attempt in range(START_ATTEMPTS):
            try:
                self.tab.recycle()  # a fresh context: no cookies, storage or history from the last episode
                self.tab.run(open_start)
                break
            except BrowserError as error:
                if attempt == START_ATTEMPTS - 1:
                    self._fail(error)
        self.left_sites = []
        where = "; ".join(f"{self.site(name).title}: {self.public_base(name)}/" for name in self.task.sites)
        return self.state_policies(f"{self.task.instruction}\n(Sites: {where}.)")

    def task_policies(self) -> tuple[Policy, ...]:
        assert self.task is not None
        return policies.task_policies(self.task.sites, ", ".join(self.public_base(n) + "/" for n in self.task.sites))

    def violated_policies(self) -> set[str]:
        return policies.violated(self)

    def _navigating(self, request: Any) -> None:
        """Note a navigation (any tab or frame) to a page off the task's sites, even one the browser refuses."""
        if request.is_navigation_request() and policies.off_site(self, request.url):
            self.left_sites.append(self.public(request.url))

    def _describe(self) -> str:
        return self.public(f"URL: {self.url}\n{super()._describe()}")

    def public_base(self, name: str) -> str:
        """Site ``name`` as the agent sees it, with no tenant: ``http://shop.localhost:8701``."""
        return f"http://{name}.localhost:{self.site(name).port}"

    def public(self, text: str) -> str:
        """``text`` with this env's tenant hosts written as the sites' public hosts (what the agent sees:
        observations do not depend on which tenant an env copy holds)."""
        for name in self.sites:
            text = text.replace(self.site(name).base_url(self.tenant), self.public_base(name))
        return text

    def private(self, url: str) -> str:
        """A public URL of one of this env's sites as its tenant's URL (others unchanged)."""
        for name in self.site_names:
            public = self.public_base(name)
            if url == public or url.startswith(public + "/"):
                return self.site(name).base_url(self.tenant) + url[len(public) :]
        return url

    @property
    def url(self) -> str:
        """The URL of the page the tab shows (``""`` before the first episode)."""
        return "" if self._tab is None or self._tab.page is None else self._tab.page.url

    def _execute(self, command: str) -> str:
        answer = _ANSWER.match(command)
        if answer is not None:
            return self._finish(_read_answer(answer.group(1)))
        if command.lstrip().startswith("goto"):
            command = f"goto({json.dumps(self._goto_target(command))})"
        return self.public(super()._execute(command))

    def _goto_target(self, command: str) -> str:
        """The tenant URL a ``goto`` opens (a path, ``/...``, on the site the tab shows); :class:`InvalidAction` if it
        leaves this env's sites."""
        try:
            url = str(parse_command(command, allow_goto=True, allow_tabs=True).args[0])
        except ValueError as error:
            raise InvalidAction(str(error)) from None
        if url.startswith("/") and not url.startswith("//"):
            here = self.public(self.url)
            shown = [name for name in self.site_names if here.startswith(self.public_base(name) + "/")]
            if not shown:
                raise InvalidAction(
                    f"goto({url!r}): a path opens on the site the tab shows, and it shows none; give a URL"
                )
            url = self.public_base(shown[0]) + url
        url = self.private(url)
        allowed = [self.site(name).base_url(self.tenant) for name in self.site_names]
        if not any(url == base or url.startswith(base + "/") for base in allowed):
            self.left_sites.append(self.public(url))  # asked for: a policy violation though the env refuses it
            public = ", ".join(self.public_base(name) + "/" for name in self.site_names)
            raise InvalidAction(f"goto is limited to this task's sites: {public}")
        return url

    async def _after_action(self, page: Any, command: Command) -> str:
        await page.wait_for_load_state()
        host = urlsplit(page.url).hostname or ""
        site = next((name for name in self.site_names if host == self.site(name).host(self.tenant)), None)
        if site is not None:  # let a page that fills itself by script finish, as on reset
            await wait_until_filled(page, self.site(site).ready_js)
        return ""

    def _finish(self, answer: str) -> str:
        assert self.task is not None and self.template is not None
        self.answer = answer
        writes_s = self.page_timeout_s / 2
        with contextlib.suppress(BrowserError):  # the tab failed: check what has landed
            self.tab.run(lambda _page: self._requests.settle(QUIET_WAIT_S, writes_s), timeout_s=writes_s + 5)
        outcome = Outcome(
            answer=answer, url=self.url, tenant=self.tenant, sites={n: self.site(n) for n in self.task.sites}
        )
        self.score = float(min(1.0, max(0.0, self.template.check(self.task, outcome))))
        self.success = self.score >= 1.0
        self.terminated = True
        self.history.append(f"answer({json.dumps(answer)})")
        return f"Answer recorded: {answer!r}. The episode is over."

    # ---- oracle -------------------------------------------------------------------------

    def oracle_action(self) -> str:
        """The next command of the template's plan, as the agent would write it."""
        if self.task is None or self.terminated:
            return 'answer("done")'
        done = len(self.history) - self.plan_offset
        if done >= len(self._plan):
            return 'answer("the oracle plan ended without an answer")'
        return self.command_for(self._plan[done])

    def command_for(self, step: Step) -> str:
        """The agent command that plays plan ``step`` on the current page."""
        if isinstance(step, Goto):
            return f"goto({json.dumps(self.public_base(step.site) + step.path)})"
        if isinstance(step, Answer):
            return f"answer({json.dumps(step.text)})"
        if isinstance(step, Press):
            return f"press({json.dumps(step.key)})"
        if isinstance(step, AnswerFromPage):
            text = self.evaluate(_TEXT_JS, step.target)
            if text is None:
                return f"answer({json.dumps(f'(the oracle found no {step.target} on the page)')})"
            text = " ".join(str(text).split())
            if step.pattern is not None:
                match = re.search(step.pattern, text)
                text = match.group(1) if match else text
            return f"answer({json.dumps(text)})"
        bid = self._wait_for(step.target)
        if bid is None:
            return f"answer({json.dumps(f'(the oracle found no {step.target} on {self.url})')})"
        if isinstance(step, Click):
            return f"click({bid})"
        if isinstance(step, Fill):
            return f"type({bid}, {json.dumps(step.text)})"
        if isinstance(step, Choose):
            return f"select({bid}, {json.dumps(step.option)})"
        raise TypeError(f"unknown plan step {step!r}")

    def _wait_for(self, target: str, timeout_s: float = ORACLE_WAIT_S) -> int | None:
        """The id of plan target ``target``, waiting a little for a page script to show it (a dialog)."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.page()  # list the elements, so that they have ids
            bid = self.evaluate(_FIND_JS, target)
            if bid is not None or time.monotonic() > deadline:
                return bid
            time.sleep(0.25)
            self._page_changed()  # read the page again: what a script showed since gets its ids

    def random_action(self, rng: random.Random) -> str:
        if rng.random() < 0.05:
            return f'answer("{rng.choice(["done", "yes", "0", "unknown"])}")'
        return super().random_action(rng)

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super()._info(command, invalid)
        info["url"] = self.public(self.url)
        if self.task is not None:
            info.update(template=self.task.template, kind=self.task.kind, sites=list(self.task.sites))
        if self.terminated:
            info["answer"] = self.answer
        return info

    def close(self) -> None:
        if self._lease is not None:
            self._lease.release()
            self._lease = None
        super().close()


class RequestsInFlight:
    """The requests a browser context has sent and not yet seen finish or fail, for :meth:`settle`."""

    #: How long nothing may have been in flight for the network to count as quiet (as Playwright's networkidle).
    IDLE_S = 0.5
    #: Request methods that change a site's state: a page's background post of the agent's change.
    WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})

    def __init__(self) -> None:
        self.pending: set[Any] = set()
        self.changed = time.monotonic()

    def watch(self, context: Any) -> None:
        """Count ``context``'s requests from now on (every page of it, tabs it opens included)."""
        self.pending.clear()
        context.on("request", self._started)
        context.on("requestfinished", self._ended)
        context.on("requestfailed", self._ended)

    def _started(self, request: Any) -> None:
        self.pending.add(request)
        self.changed = time.monotonic()

    def _ended(self, request: Any) -> None:
        self.pending.discard(request)
        self.changed = time.monotonic()

    def writing(self) -> bool:
        """Whether a request that changes state is still in flight."""
        return any(request.method in self.WRITES for request in self.pending)

    async def settle(self, quiet_s: float, writes_s: float) -> None:
        """Wait until nothing has been in flight for :attr:`IDLE_S`: at most ``quiet_s`` for reads (a page
        that polls is left as it is), and at most ``writes_s`` while a write is in flight. A background post
        on a loaded machine may take many seconds to be answered; the check must not score before it lands."""
        started = time.monotonic()
        while True:
            now = time.monotonic()
            waited = now - started
            if not self.pending and now - self.changed >= self.IDLE_S:
                return
            if waited >= quiet_s and (waited >= writes_s or not self.writing()):
                return
            await asyncio.sleep(0.05)


def _read_answer(raw: str) -> str:
    """The text of ``answer(...)``: a quoted string (JSON or Python quoting), or the bare words."""
    raw = raw.strip()
    if not raw:
        raise InvalidAction('answer needs your answer in quotes: answer("...")')
    if raw[0] in "\"'":
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise InvalidAction('cannot read the answer; write it in double quotes: answer("...")') from None
        if not isinstance(value, str):
            raise InvalidAction('answer takes one quoted text: answer("...")')
        return value
    return raw
