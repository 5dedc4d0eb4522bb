"""Task templates on the mail site (Roundcube): reading facts, opening messages, replying, filing.

Every task logs the browser in as one of the company's mailbox owners and starts in the inbox.
Checkers read the tenant's real mail: its Maildir files (:class:`~.mailstore.Account`: folders,
flags, Dovecot's UIDs) and the mail it sent outside (``outbox``). An info task's expected answer
is read from the message in the tenant's Maildir when the episode ends; the unread count is read
from the golden snapshot (the inbox as the episode began), since opening a message reads it.

Oracle plans open a message at its page (``_action=show``, by the UID the content gives it) or
through the folder list and the search box, then use Roundcube's toolbar and menus.
"""

from __future__ import annotations

import re
import urllib.parse
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, ClassVar

import yaml

from agentgym.environments.webapps.tasks import (
    Answer,
    AnswerFromPage,
    Choose,
    Click,
    Fill,
    Goto,
    Outcome,
    Picker,
    Press,
    Step,
    Task,
    Template,
    exact_match,
    must_include,
    normalise,
    number_match,
    settled,
)

if TYPE_CHECKING:
    from agentgym.environments.webapps.mail.mailstore import Account, StoredMessage
    from agentgym.environments.webapps.mail.site import MailSite

SITE = "mail"
INBOX_PAGE = (SITE, "/?_task=mail&_mbox=INBOX")


@cache
def task_data() -> dict[str, Any]:
    """``data/tasks.yaml``: reply texts, new folder names."""
    return yaml.safe_load(resources.files(__package__).joinpath("data/tasks.yaml").read_text())


# ---- helpers --------------------------------------------------------------------------------


def folder_page(folder: str) -> str:
    return "/?" + urllib.parse.urlencode({"_task": "mail", "_mbox": folder})


def message_page(folder: str, uid: int) -> str:
    """The page of message ``uid`` of ``folder``."""
    return "/?" + urllib.parse.urlencode({"_task": "mail", "_mbox": folder, "_uid": uid, "_action": "show"})


def owners(pick: Picker) -> list[dict[str, Any]]:
    return pick.content[SITE]["owners"]


def messages(pick: Picker, login: str, folder: str, kind: str | None = None) -> list[dict[str, Any]]:
    found = pick.content[SITE]["mailboxes"][login]["folders"][folder]
    return [message for message in found if kind is None or message["kind"] == kind]


def unique_subjects(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages whose subject no other message of ``items`` has."""
    counts = Counter(message["subject"] for message in items)
    return [message for message in items if counts[message["subject"]] == 1]


def pick_message(
    pick: Picker, folder: str, kind: str | None = None, *, but: tuple[str, ...] = ()
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(owner, message): a message of ``folder`` (of ``kind``, of no kind in ``but``) of any owner,
    whose subject is unique in its folder, from this split's share of all owners' messages."""
    candidates = [
        (owner, message)
        for owner in owners(pick)
        for message in unique_subjects(messages(pick, owner["login"], folder))
        if (kind is None or message["kind"] == kind) and message["kind"] not in but
    ]
    return pick.choice(candidates, key=lambda pair: pair[1]["id"])


def base_params(owner: Mapping[str, Any], message: Mapping[str, Any], folder: str) -> dict[str, Any]:
    return {
        "login": owner["login"],
        "folder": folder,
        "message_id": message["id"],
        "uid": message["uid"],
        "subject": message["subject"],
        "sender_name": message["from"][0],
        "sender_email": message["from"][1],
    }


def display_name(folder: str) -> str:
    """How Roundcube names a folder (``INBOX`` is "Inbox")."""
    return "Inbox" if folder == "INBOX" else folder


def site_of(outcome: Outcome) -> MailSite:
    return outcome.sites[SITE]  # type: ignore[return-value]


def account(task: Task, outcome: Outcome) -> Account:
    return site_of(outcome).account(outcome.tenant, task.params["login"])


def stored(task: Task, outcome: Outcome) -> StoredMessage | None:
    """The task's message as the tenant now has it (first copy), or as the snapshot has it when it is gone."""
    found = account(task, outcome).find(task.params["message_id"])
    if not found:
        found = site_of(outcome).golden_account(task.params["login"]).find(task.params["message_id"])
    return found[0] if found else None


def fact(task: Task, outcome: Outcome, pattern: str) -> str | None:
    """The first group of ``pattern`` in the body of the task's message (as the tenant has it)."""
    message = stored(task, outcome)
    match = re.search(pattern, message.text()) if message is not None else None
    return match.group(1) if match else None


def open_by_search(folder: str, query: str, subject: str) -> list[Step]:
    """Open a message from the folder list and the search box (the message opens as a page).

    ``query`` must not equal ``subject`` (the search box would then be the element with that text).
    """
    return [
        Click(f'#mailboxlist a[rel="{folder}"]'),
        Fill("#mailsearchform", query),
        Press("Enter"),
        Click(f"text={subject}"),
    ]


def shown_message(outcome: Outcome) -> tuple[str, int] | None:
    """(folder, uid) of the message the final page shows, if it is a message page of this tenant."""
    path = outcome.path_on(SITE)
    if path is None:
        return None
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    if query.get("_action", [""])[0] not in ("show", "preview") or "_uid" not in query:
        return None
    try:
        return query.get("_mbox", ["INBOX"])[0], int(query["_uid"][0])
    except ValueError:
        return None


def current_uid(task: Task, outcome: Outcome, folder: str) -> int | None:
    """The UID the tenant's Dovecot gives the task's message in ``folder`` now."""
    for message in account(task, outcome).messages(folder):
        if message.message_id == task.params["message_id"] and not message.deleted:
            return message.uid
    return None


class MailTemplate(Template):
    """A template on the mail site (the site, logins and start page are the same for all)."""

    sites: ClassVar[tuple[str, ...]] = (SITE,)

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        params = self.draw(pick)
        return params, INBOX_PAGE, {SITE: params["login"]}

    def draw(self, pick: Picker) -> dict[str, Any]:
        raise NotImplementedError


# ---- info -----------------------------------------------------------------------------------


class MeetingTime(MailTemplate):
    id = "mail/meeting-time"
    kind = "info"
    _PATTERN = r"meet about the .+? on (.+?) at (\d\d:\d\d) in"

    def draw(self, pick: Picker) -> dict[str, Any]:
        candidates = []
        for owner in owners(pick):
            meetings = messages(pick, owner["login"], "INBOX", "meeting")
            pairs = Counter((m["from"][1], m["facts"]["topic"]) for m in meetings)
            candidates += [(owner, m) for m in meetings if pairs[(m["from"][1], m["facts"]["topic"])] == 1]
        owner, message = pick.choice(candidates, key=lambda pair: pair[1]["id"])
        return {**base_params(owner, message, "INBOX"), "topic": message["facts"]["topic"]}

    def oracle(self, task: Task) -> list[Step]:
        p = task.params
        return [
            *open_by_search("INBOX", p["sender_email"], p["subject"]),
            AnswerFromPage("#messagebody", r"on (\w+, \w+ \d+ at \d\d:\d\d)"),
        ]

    def check(self, task: Task, outcome: Outcome) -> float:
        message = stored(task, outcome)
        match = re.search(self._PATTERN, message.text()) if message is not None else None
        return float(match is not None and must_include(outcome.answer, [match.group(1), match.group(2)]))


class InvoiceAmount(MailTemplate):
    id = "mail/invoice-amount"
    kind = "info"

    def draw(self, pick: Picker) -> dict[str, Any]:
        owner, message = pick_message(pick, "Invoices", "invoice")
        return {**base_params(owner, message, "Invoices"), **{k: message["facts"][k] for k in ("number", "vendor")}}

    def oracle(self, task: Task) -> list[Step]:
        p = task.params
        return [
            *open_by_search("Invoices", p["number"], p["subject"]),
            AnswerFromPage("#messagebody", r"Amount due: (\$[\d,.]+)"),
        ]

    def check(self, task: Task, outcome: Outcome) -> float:
        amount = fact(task, outcome, r"Amount due: \$([\d,.]+)")
        return float(amount is not None and number_match(outcome.answer, float(amount.replace(",", ""))))


class TrackingNumber(MailTemplate):
    id = "mail/tracking-number"
    kind = "info"

    def draw(self, pick: Picker) -> dict[str, Any]:
        owner, message = pick_message(pick, "INBOX", "shipping")
        shop = message["from"][0]
        return {**base_params(owner, message, "INBOX"), "number": message["facts"]["number"], "shop": shop}

    def oracle(self, task: Task) -> list[Step]:
        p = task.params
        return [
            *open_by_search("INBOX", p["number"], p["subject"]),
            AnswerFromPage("#messagebody", r"Tracking number: (\w+)"),
        ]

    def check(self, task: Task, outcome: Outcome) -> float:
        tracking = fact(task, outcome, r"Tracking number: (\w+)")
        return float(tracking is not None and normalise(tracking) in normalise(outcome.answer or "").split())


class UnreadFrom(MailTemplate):
    id = "mail/unread-from"
    kind = "info"

    def draw(self, pick: Picker) -> dict[str, Any]:
        senders = [
            (owner, email, name)
            for owner in owners(pick)
            for email, name in sorted(
                {m["from"][1]: m["from"][0] for m in messages(pick, owner["login"], "INBOX")}.items()
            )
        ]
        owner, email, name = pick.choice(senders, key=lambda sender: (sender[0]["login"], sender[1]))
        return {"login": owner["login"], "sender_email": email, "sender_name": name}

    def oracle(self, task: Task) -> list[Step]:
        return [
            Click("#mailsearchform"),
            Click("a.button.unread"),
            Fill("#mailsearchform", task.params["sender_email"]),
            Press("Enter"),
            AnswerFromPage("#rcmcountdisplay", r"of (\d+)"),
        ]

    def expected(self, task: Task, outcome: Outcome) -> int:
        inbox = site_of(outcome).golden_account(task.params["login"]).messages("INBOX")
        wanted = task.params["sender_email"].lower()
        return sum(1 for m in inbox if not m.seen and wanted in str(m.mail.get("From", "")).lower())

    def check(self, task: Task, outcome: Outcome) -> float:
        answer = outcome.answer
        if answer is not None and re.fullmatch(r"\s*(no|none)\b.*", answer.lower()):
            answer = "0"
        return float(number_match(answer, self.expected(task, outcome)))


# ---- navigation -----------------------------------------------------------------------------


class OpenMessage(MailTemplate):
    id = "mail/open-message"
    kind = "navigation"
    _FOLDERS: ClassVar[tuple[str, ...]] = ("Projects", "Orders", "Newsletters", "INBOX", "Invoices")

    def draw(self, pick: Picker) -> dict[str, Any]:
        folder = pick.choice(self._FOLDERS, shared=True)
        owner, message = pick_message(pick, folder)
        return base_params(owner, message, folder)

    def oracle(self, task: Task) -> list[Step]:
        p = task.params
        return [*open_by_search(p["folder"], p["sender_email"], p["subject"]), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        shown = shown_message(outcome)
        if shown is None or shown[0] != task.params["folder"]:
            return 0.0
        return float(shown[1] == current_uid(task, outcome, task.params["folder"]))


class OpenBooking(MailTemplate):
    id = "mail/open-booking"
    kind = "navigation"

    def draw(self, pick: Picker) -> dict[str, Any]:
        owner, message = pick_message(pick, "Travel", "travel")
        return {**base_params(owner, message, "Travel"), **{k: message["facts"][k] for k in ("flight", "city")}}

    def oracle(self, task: Task) -> list[Step]:
        p = task.params
        return [
            Click('#mailboxlist a[rel="Travel"]'),
            Click(f"text={p['subject']}"),
            Answer("done"),
        ]

    def check(self, task: Task, outcome: Outcome) -> float:
        shown = shown_message(outcome)
        return float(shown is not None and shown == ("Travel", current_uid(task, outcome, "Travel")))


# ---- changes --------------------------------------------------------------------------------


def sent_to(outcome: Outcome, address: str) -> list[Any]:
    """The messages the tenant sent outside the company to ``address``."""
    from agentgym.environments.webapps.mail.mailstore import outbox

    wanted = address.lower()
    return [
        mail
        for mail in outbox(site_of(outcome).tenant_dir(outcome.tenant))
        if wanted in str(mail.get("To", "")).lower()
    ]


def body_text(mail: Any) -> str:
    part = mail.get_body(preferencelist=("plain", "html"))
    return "" if part is None else part.get_content()


class Reply(MailTemplate):
    id = "mail/reply"
    kind = "change"
    _FOLDERS: ClassVar[tuple[str, ...]] = ("INBOX", "Invoices")

    def draw(self, pick: Picker) -> dict[str, Any]:
        folder = pick.choice(self._FOLDERS, shared=True)
        owner, message = pick_message(pick, folder, but=("shipping",))
        text = pick.choice(task_data()["reply_texts"], shared=True)
        return {**base_params(owner, message, folder), "text": text}

    def _plan(self, task: Task, text: str) -> list[Step]:
        p = task.params
        return [
            *open_by_search(p["folder"], p["sender_email"], p["subject"]),
            Click("text=Reply"),
            Fill("#composebody", text),
            Click("button.send"),
            Answer("done"),
        ]

    def oracle(self, task: Task) -> list[Step]:
        return self._plan(task, task.params["text"])

    def half_done(self, task: Task) -> list[Step]:
        """A reply sent with other words than the ones asked for."""
        return self._plan(task, "OK.")

    def check(self, task: Task, outcome: Outcome) -> float:
        """1: a reply (subject, In-Reply-To) with the text went to the sender; 0.5: a reply without the text."""
        return settled(lambda: self._score(task, outcome))

    def _score(self, task: Task, outcome: Outcome) -> float:
        p = task.params
        best = 0.0
        for mail in sent_to(outcome, p["sender_email"]):
            if str(mail.get("In-Reply-To", "")).strip() != p["message_id"]:
                continue
            if not exact_match(str(mail.get("Subject", "")), "Re: " + p["subject"]):
                continue
            best = max(best, 1.0 if normalise(p["text"]) in normalise(body_text(mail)) else 0.5)
        return best


class Forward(MailTemplate):
    id = "mail/forward"
    kind = "change"

    def draw(self, pick: Picker) -> dict[str, Any]:
        owner, message = pick_message(pick, "Invoices", "invoice")
        others = [o for o in pick.content[SITE]["owners"] if o["login"] != owner["login"]]
        colleague = pick.choice(others, key=lambda o: o["login"], shared=True)
        return {
            **base_params(owner, message, "Invoices"),
            **{k: message["facts"][k] for k in ("number", "vendor", "amount")},
            "colleague": colleague["login"],
            "colleague_name": colleague["name"],
            "colleague_email": colleague["email"],
        }

    def _plan(self, task: Task) -> list[Step]:
        p = task.params
        return [
            *open_by_search("Invoices", p["number"], p["subject"]),
            Click("text=Forward"),
            Fill("#_to", p["colleague_email"]),
        ]

    def oracle(self, task: Task) -> list[Step]:
        return [*self._plan(task), Click("button.send"), Answer("done")]

    def half_done(self, task: Task) -> list[Step]:
        """The forward written and saved as a draft, never sent."""
        return [*self._plan(task), Click("a.save.draft"), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        """The colleague's inbox holds a message with the invoice's subject and amount, from this user."""
        return settled(lambda: self._score(task, outcome))

    def _score(self, task: Task, outcome: Outcome) -> float:
        p = task.params
        site = site_of(outcome)
        inbox = site.account(outcome.tenant, p["colleague"]).messages("INBOX")
        owner = next(o for o in site.content()["owners"] if o["login"] == p["login"])
        for message in inbox:
            subject = str(message.mail.get("Subject", ""))
            sender = str(message.mail.get("From", "")).lower()
            if p["number"] in subject and owner["email"] in sender and p["amount"] in message.text():
                return 1.0
        return 0.0


class Move(MailTemplate):
    id = "mail/move"
    kind = "change"
    _MOVES: ClassVar[tuple[tuple[str, str], ...]] = (
        ("INBOX", "Archive"),
        ("INBOX", "Projects"),
        ("Invoices", "Archive"),
        ("Newsletters", "Trash"),
        ("Projects", "Archive"),
        ("Orders", "Invoices"),
    )

    def draw(self, pick: Picker) -> dict[str, Any]:
        folder, target = pick.choice(self._MOVES, shared=True)
        owner, message = pick_message(pick, folder)
        return {**base_params(owner, message, folder), "target": target}

    def _plan(self, task: Task, menu_item: str) -> list[Step]:
        p = task.params
        return [
            *open_by_search(p["folder"], p["sender_email"], p["subject"]),
            Click("#messagemenulink"),
            Click(menu_item),
            Click(f"text={display_name(p['target'])}"),
            Answer("done"),
        ]

    def oracle(self, task: Task) -> list[Step]:
        return self._plan(task, "#message-menu a.move")

    def half_done(self, task: Task) -> list[Step]:
        """Copied into the target folder, but still in the old one."""
        return self._plan(task, "#message-menu a.copy")

    def check(self, task: Task, outcome: Outcome) -> float:
        """1: only in the target folder; 0.5: in the target and still in the old folder."""
        folders = {message.folder for message in account(task, outcome).find(task.params["message_id"])}
        if task.params["target"] not in folders:
            return 0.0
        return 1.0 if folders == {task.params["target"]} else 0.5


class FlagSender(MailTemplate):
    id = "mail/flag-sender"
    kind = "change"
    _FOLDERS: ClassVar[tuple[str, ...]] = ("INBOX", "Projects", "Archive")

    def draw(self, pick: Picker) -> dict[str, Any]:
        groups = []
        for owner in owners(pick):
            for folder in self._FOLDERS:
                by_sender: dict[str, list[dict[str, Any]]] = {}
                for message in messages(pick, owner["login"], folder):
                    by_sender.setdefault(message["from"][1], []).append(message)
                groups += [
                    (owner, folder, group)
                    for group in by_sender.values()
                    if 2 <= len(group) <= 4 and not any(message["flagged"] for message in group)
                ]
        owner, folder, group = pick.choice(groups, key=lambda g: (g[0]["login"], g[1], g[2][0]["from"][1]))
        return {
            "login": owner["login"],
            "folder": folder,
            "sender_name": group[0]["from"][0],
            "sender_email": group[0]["from"][1],
            "count": len(group),
            "uids": [message["uid"] for message in group],
            "message_ids": [message["id"] for message in group],
        }

    def _flag(self, folder: str, uid: int) -> list[Step]:
        return [Goto(SITE, message_page(folder, uid)), Click("#markmessagemenulink"), Click("#markmessage-menu a.flag")]

    def oracle(self, task: Task) -> list[Step]:
        p = task.params
        return [step for uid in p["uids"] for step in self._flag(p["folder"], uid)] + [Answer("done")]

    def half_done(self, task: Task) -> list[Step]:
        p = task.params
        return [*self._flag(p["folder"], p["uids"][0]), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        """The share of the sender's messages flagged; 0 if any other message of the folder was flagged too."""
        p = task.params
        golden = {m.message_id: m.flagged for m in site_of(outcome).golden_account(p["login"]).messages(p["folder"])}
        wanted, flagged, wrong = set(p["message_ids"]), 0, False
        for message in account(task, outcome).messages(p["folder"]):
            if message.message_id in wanted:
                flagged += message.flagged
            elif message.flagged and not golden.get(message.message_id, False):
                wrong = True
        return 0.0 if wrong else flagged / len(wanted)


class NewFolder(MailTemplate):
    id = "mail/new-folder"
    kind = "change"
    _FOLDERS: ClassVar[tuple[str, ...]] = ("INBOX", "Orders", "Invoices", "Travel")

    def draw(self, pick: Picker) -> dict[str, Any]:
        folder = pick.choice(self._FOLDERS, shared=True)
        owner, message = pick_message(pick, folder)
        name = pick.choice(task_data()["new_folder_names"], shared=True)
        return {**base_params(owner, message, folder), "name": name}

    def _create(self, task: Task) -> list[Step]:
        return [
            Goto(SITE, "/?_task=settings&_action=edit-folder&_mbox="),
            Fill("#_name", task.params["name"]),
            Click("text=Save"),
        ]

    def oracle(self, task: Task) -> list[Step]:
        p = task.params
        return [
            *self._create(task),
            Goto(SITE, message_page(p["folder"], p["uid"])),
            Click("#messagemenulink"),
            Click("#message-menu a.move"),
            Click(f"text={p['name']}"),
            Answer("done"),
        ]

    def half_done(self, task: Task) -> list[Step]:
        return [*self._create(task), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        """0.5 for the (subscribed) folder, 0.5 more for the message in it and nowhere else."""
        p = task.params
        mail = account(task, outcome)
        names = {normalise(name): name for name in mail.folders()}
        name = names.get(normalise(p["name"]))
        if name is None:
            return 0.0
        score = 0.5 if name in mail.subscribed() else 0.25
        folders = {message.folder for message in mail.find(p["message_id"])}
        return score + (0.5 if folders == {name} else 0.0)


class Filter(MailTemplate):
    id = "mail/filter"
    kind = "change"
    _FOLDERS: ClassVar[tuple[str, ...]] = ("Archive", "Invoices", "Newsletters", "Orders", "Travel", "Junk")

    def draw(self, pick: Picker) -> dict[str, Any]:
        contacts = [(owner, contact) for owner in owners(pick) for contact in pick.content[SITE]["contacts"]]
        owner, sender = pick.choice(contacts, key=lambda pair: (pair[0]["login"], pair[1]["email"]))
        folder = pick.choice(self._FOLDERS, shared=True)
        name = pick.choice(task_data()["filter_names"], shared=True)
        return {
            "login": owner["login"],
            "sender_name": sender["name"],
            "sender_email": sender["email"],
            "folder": folder,
            "name": name,
        }

    def _plan(self, task: Task, folder: str | None) -> list[Step]:
        p = task.params
        steps: list[Step] = [
            Goto(SITE, "/?_task=settings&_action=plugin.managesieve-action&_framed=1"),
            Fill("#_name", p["name"]),
            Choose("#header0", "From"),
            Fill('input[name="_rule_target[0][]"]', p["sender_email"]),
        ]
        if folder is not None:
            steps.append(Choose("#action_mailbox0", display_name(folder)))
        return [*steps, Click("button.submit"), Answer("done")]

    def oracle(self, task: Task) -> list[Step]:
        return self._plan(task, task.params["folder"])

    def half_done(self, task: Task) -> list[Step]:
        """The rule for the sender, but its action left at the default folder (the inbox)."""
        return self._plan(task, None)

    def check(self, task: Task, outcome: Outcome) -> float:
        """Sieve (``sieve-test``) files a message from the sender into the folder, and one from someone else not."""
        p = task.params
        site = site_of(outcome)

        def probe(sender: str) -> bytes:
            return (
                f"From: {sender}\nTo: {p['login']}@example.test\nSubject: Probe\n"
                "Message-ID: <probe@agentgym.test>\n\nProbe.\n"
            ).encode()

        wanted = site.sieve_folders(outcome.tenant, p["login"], probe(f"{p['sender_name']} <{p['sender_email']}>"))
        other = site.sieve_folders(outcome.tenant, p["login"], probe("Someone Else <someone@elsewhere.test>"))
        return float(p["folder"] in wanted and p["folder"] not in other)


TEMPLATES: list[Template] = [
    MeetingTime(),
    InvoiceAmount(),
    TrackingNumber(),
    UnreadFrom(),
    OpenMessage(),
    OpenBooking(),
    Reply(),
    Forward(),
    Move(),
    FlagSender(),
    NewFolder(),
    Filter(),
]
