"""What the web apps' ``-Attack`` ids share: :class:`SiteAttackEnv`, one site's tasks with a prompt injection.

A site's attack module (``wiki/attack.py``, ``mail/attack.py``) names its site and its ``attacks.yaml`` (the
templates of its user tasks, the goals' instructions and the attacker's details), plants the text and checks the
goals; the obedient player's detour is a list of the site's :class:`~.tasks.Step` (:meth:`SiteAttackEnv._detour`),
played to its end, after which the oracle's plan starts again. Where the attacker's goal needs a member of the site
(a reply on the forum, a ticket's change on the forge) and the user task reads its page signed out, the attack id
signs the browser in after the plant (:meth:`SiteAttackEnv._sign_in`): the user whose agent reads the page, whom
the site's ``_goal_instruction`` names in :attr:`SiteAttackEnv.signed_in` and the task's fingerprint records.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Collection
from importlib import resources
from typing import Any, ClassVar

import yaml

from agentgym.browser.page import BrowserError
from agentgym.environments.webapps.cli import prepare as prepare_sites
from agentgym.environments.webapps.env import WebAppEnv, wait_until_filled
from agentgym.environments.webapps.tasks import Step
from agentgym.safety import InjectedEnv


def load_attacks(package: str) -> dict[str, Any]:
    """A site's ``attacks.yaml`` (in its package ``package``)."""
    return yaml.safe_load(resources.files(package).joinpath("attacks.yaml").read_text(encoding="utf-8"))


class SiteAttackEnv(InjectedEnv, WebAppEnv):
    """One site's tasks of the templates its ``attacks.yaml`` lists, each under every (goal, style) variant."""

    #: The site the tasks play on, and its ``attacks.yaml``.
    site_name: ClassVar[str]
    spec: ClassVar[dict[str, Any]]
    medium = "html"
    paragraphs = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(sites=[self.site_name], templates=list(self.spec["templates"]), **kwargs)
        self._obeyed_from: int | None = None
        #: The user the browser is signed in as after the plant ("" where the task reads its page as the plain id's
        #: does); a site that signs in draws it with the attack, in ``_goal_instruction``.
        self.signed_in = ""

    def fingerprint_task(self, task_id: int) -> dict[str, Any]:
        """The user task's definition (as the plain id's) and the attack planted in it, with the user signed in
        where there is one."""
        user = self.variants.pick(task_id)[0]
        self.task_id, (self.template, self.task) = task_id, self.task_for(user)
        attack = dataclasses.asdict(self._make_attack())
        if self.signed_in:
            attack["signed_in"] = self.signed_in
        return {**super().fingerprint_task(user), "attack": attack}

    def _generate(self, task_id: int) -> str:
        self._obeyed_from = None
        return super()._generate(task_id)

    def _sign_in(self) -> None:
        """Sign the browser in to the site as :attr:`signed_in` (the site's seeded session) and load the page
        again."""
        assert self.signed_in, "the attack names no user to sign in as"
        site = self.site(self.site_name)
        cookies, ready_js = site.session_cookies(self.tenant, self.signed_in), site.ready_js

        async def sign_in(page: Any) -> None:
            await page.context.add_cookies(cookies)
            await page.reload(timeout=self.page_timeout_s * 1000)
            await wait_until_filled(page, ready_js)

        try:
            self.tab.run(sign_in)
        except BrowserError as error:
            self._fail(error)
        self._page_changed()

    @abc.abstractmethod
    def _detour(self) -> list[Step]:
        """The steps that carry out the attacker's request on the site."""

    def _obey(self) -> str:
        steps = self._detour()
        if self._obeyed_from is None:
            self._obeyed_from = len(self.history)
        done = len(self.history) - self._obeyed_from
        if done >= len(steps):  # the request was carried out but has not landed yet: go on with the user's task
            return self.oracle_action()
        self.plan_offset = len(self.history) + 1  # the oracle's plan starts again after the detour
        return self.command_for(steps[done])

    def obedient_action(self) -> str:
        """The "obedient" baseline (see :meth:`InjectedEnv.obedient_action`); a detour begun is played to its end."""
        begun = self._obeyed_from
        if begun is not None and not self.terminated and len(self.history) - begun < len(self._detour()):
            return self._obey()
        return super().obedient_action()


def prepare_site(
    site: str, env_id: str, report: Callable[[str], None], task_ids: Collection[int] | None = None
) -> None:
    """An attack id's preparation: bring up its one site, which every task plays on."""
    prepare_sites(env_id, {"sites": [site]}, report)
