"""Task templates that span two sites: read a fact on one app, act on another with it.

Each checker reads the fact from the first site's real state at check time (the tenant's
database) and looks for it in the change made on the second (a forum post, a sent mail), so a
task is solved only by carrying the right value across. Instruction texts: ``crosssite.yaml``.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import closing
from typing import Any, ClassVar

from agentgym.environments.webapps.forge import templates as forge
from agentgym.environments.webapps.forum import templates as forum
from agentgym.environments.webapps.mail import templates as mail
from agentgym.environments.webapps.shop import templates as shop
from agentgym.environments.webapps.tasks import (
    Answer,
    Click,
    Fill,
    Goto,
    Kind,
    Outcome,
    Picker,
    Step,
    Task,
    Template,
    normalise,
    settled,
)
from agentgym.environments.webapps.wiki import templates as wiki

#: Roundcube's compose page and its fields.
COMPOSE = ("mail", "/?_task=mail&_action=compose")
TO, SUBJECT, BODY, SEND = "#_to", "#compose-subject", "#composebody", "button.send"


class CrossSiteTemplate(Template):
    """A change on one site that carries a fact read on another."""

    kind: ClassVar[Kind] = "change"
    text_file: ClassVar[str] = "crosssite.yaml"


def digits(text: str) -> str:
    """The digits of ``text`` (``"25,885,721"`` -> ``"25885721"``), to find a figure however it is grouped."""
    return "".join(character for character in text if character.isdigit())


def mentions(text: str, value: str) -> bool:
    """Whether ``text`` holds ``value``: a figure as one of its numbers (however grouped), else its words."""
    if digits(value) and not any(character.isalpha() for character in value):
        return any(digits(word) == digits(value) for word in text.replace(",", "").split())
    return normalise(value) in normalise(text)


def mail_sender(pick: Picker) -> Mapping[str, Any]:
    """A mailbox owner to write as (every owner has a seeded session)."""
    return pick.choice(pick.content["mail"]["owners"], key=lambda owner: owner["login"], shared=True)


def mail_contact(pick: Picker) -> Mapping[str, Any]:
    """An outside contact to write to (mail to outside addresses lands in the tenant's outbox)."""
    return pick.choice(pick.content["mail"]["contacts"], key=lambda contact: contact["email"], shared=True)


def compose(to: str, subject: str, body: str) -> list[Step]:
    return [Goto(*COMPOSE), Fill(TO, to), Fill(SUBJECT, subject), Fill(BODY, body)]


def mailed_score(outcome: Outcome, to: str, subject: str, value: str | None) -> float:
    """1: a mail to ``to`` with ``subject`` holds ``value``; 0.5: the mail without it; 0: no such mail."""

    def score() -> float:
        best = 0.0
        for sent in mail.sent_to(outcome, to):
            if normalise(str(sent.get("Subject", ""))) != normalise(subject):
                continue
            best = max(best, 1.0 if value is not None and mentions(mail.body_text(sent), value) else 0.5)
        return best

    return settled(score)


class WikiFactToForum(CrossSiteTemplate):
    """Look a figure up in the wiki and post it as a reply in a forum thread."""

    id = "cross/wiki-fact-to-forum"
    sites = ("wiki", "forum")

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        article = pick.choice(
            [a for a in pick.content["wiki"]["articles"] if a.get("facts", {}).get("population")],
            key=lambda a: a["title"],
        )
        thread = forum.pick_thread(pick, lambda thread: not thread["closed"])
        user = pick.choice([u for u in forum.members(pick) if u["username"] != thread["starter"]], shared=True)
        params = {
            "place": article["title"],
            "population": article["facts"]["population"],
            "title": thread["title"],
            "path": forum.thread_path(thread),
            "user": user["username"],
        }
        return params, ("wiki", "/wiki/Main_Page"), {"forum": user["username"]}

    def _reply(self, task: Task, text: str) -> list[Step]:
        p = task.params
        return [
            *wiki._search(p["place"]),
            Goto("forum", p["path"]),
            Click(forum.TOOLBAR_PRIMARY),
            Fill(forum.EDITOR_TEXT, text),
        ]

    def oracle(self, task: Task) -> list[Step]:
        p = task.params
        text = f"According to the wiki, {p['place']} has a population of {p['population']}."
        return [*self._reply(task, text), Click(forum.EDITOR_SUBMIT), Answer("done")]

    def half_done(self, task: Task) -> list[Step]:
        """The reply posted without the figure."""
        text = f"I looked {task.params['place']} up in the wiki."
        return [*self._reply(task, text), Click(forum.EDITOR_SUBMIT), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        """1: a new post by the user in the thread holds the population the wiki's article gives."""
        p = task.params
        with closing(outcome.sites["wiki"].connect(outcome.tenant)) as db:  # type: ignore[attr-defined]
            population = wiki._fact(db, p["place"], "population")
        if population is None:
            return 0.0

        def score() -> float:
            posts = forum.posts_of(outcome, p["title"], p["user"])
            return float(any(mentions(post[2], population) for post in posts))

        return settled(score)


class TicketToMail(CrossSiteTemplate):
    """Read a ticket in the forge and mail its summary and owner to an outside contact."""

    id = "cross/ticket-to-mail"
    sites = ("forge", "mail")

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        ticket = pick.choice(pick.content["forge"]["tickets"], key=lambda t: t["id"])
        sender, contact = mail_sender(pick), mail_contact(pick)
        params = {
            "ticket": ticket["id"],
            "summary": ticket["summary"],
            "sender": sender["name"],
            "contact": contact["name"],
            "contact_email": contact["email"],
            "subject": f"Ticket #{ticket['id']}",
        }
        return params, ("forge", "/"), {"mail": sender["login"]}

    def _mail(self, task: Task, body: str) -> list[Step]:
        p = task.params
        return [Goto("forge", f"/ticket/{p['ticket']}"), *compose(p["contact_email"], p["subject"], body)]

    def oracle(self, task: Task) -> list[Step]:
        body = f"Hello,\n\nticket #{task.params['ticket']} is: {task.params['summary']}\n"
        return [*self._mail(task, body), Click(SEND), Answer("done")]

    def half_done(self, task: Task) -> list[Step]:
        """The mail sent without the summary."""
        return [*self._mail(task, "Hello,\n\nplease have a look at the ticket.\n"), Click(SEND), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        summary = forge.one(outcome, "SELECT summary FROM ticket WHERE id=?", task.params["ticket"])
        return mailed_score(outcome, task.params["contact_email"], task.params["subject"], summary)


class PriceToMail(CrossSiteTemplate):
    """Find a product's price in the shop and mail it to an outside contact."""

    id = "cross/price-to-mail"
    sites = ("shop", "mail")

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        product = shop.product_pool(pick)
        sender, contact = mail_sender(pick), mail_contact(pick)
        params = {
            "upc": product["upc"],
            "title": product["title"],
            "price": product["price"],
            "sender": sender["name"],
            "contact": contact["name"],
            "contact_email": contact["email"],
            "subject": f"Price of {product['title']}",
        }
        return params, ("shop", "/"), {"mail": sender["login"]}

    def _mail(self, task: Task, body: str) -> list[Step]:
        p = task.params
        return [*shop.open_product(p["title"]), *compose(p["contact_email"], p["subject"], body)]

    def oracle(self, task: Task) -> list[Step]:
        body = f"Hello,\n\nthe shop sells {task.params['title']} for {task.params['price']}.\n"
        return [*self._mail(task, body), Click(SEND), Answer("done")]

    def half_done(self, task: Task) -> list[Step]:
        """The mail written but never sent."""
        return [*self._mail(task, f"The price is {task.params['price']}."), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        price = shop.one(
            outcome,
            "SELECT s.price FROM partner_stockrecord s JOIN catalogue_product p ON p.id = s.product_id "
            "WHERE p.upc = %s",
            task.params["upc"],
        )
        return mailed_score(
            outcome, task.params["contact_email"], task.params["subject"], None if price is None else f"{price}"
        )


TEMPLATES: list[Template] = [WikiFactToForum(), TicketToMail(), PriceToMail()]
