"""The mail site's content: a company's mailboxes, generated deterministically from a seed.

``generate(seed)`` returns JSON-serialisable content: the mail ``domain``, the mailbox
``owners`` (the accounts tasks log in as), the ``colleagues`` and outside ``contacts`` who
write to them, and each owner's folders of messages. Messages carry the facts tasks ask about
(meeting date and time, invoice number and amount, order number and tracking number, flight
and departure) in their bodies, and keep them as ``facts`` for the task generator. Every
message has a fixed IMAP UID (its position in its folder, oldest first): the Maildirs are
written with Dovecot's ``dovecot-uidlist`` (see :mod:`.mailstore`).

Word lists are in ``data/words.yaml``.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from functools import cache
from importlib import resources
from typing import Any

import yaml

#: Folders of every mailbox (besides the special ones Dovecot creates: Drafts, Trash, Junk).
FOLDERS = ("INBOX", "Invoices", "Orders", "Projects", "Travel", "Newsletters", "Archive", "Sent")
#: How many mailbox owners (accounts) and colleagues without a mailbox the company has.
OWNERS, COLLEAGUES = 5, 16
START = datetime(2026, 1, 5, 8, 0, tzinfo=timezone.utc)
END = datetime(2026, 10, 30, 18, 0, tzinfo=timezone.utc)


@cache
def words() -> dict[str, Any]:
    """The word lists (``data/words.yaml``)."""
    return yaml.safe_load(resources.files(__package__).joinpath("data/words.yaml").read_text())


def _person(rng: random.Random, used: set[str], domain: str) -> dict[str, str]:
    data = words()
    while True:
        first, last = rng.choice(data["first_names"]), rng.choice(data["last_names"])
        login = first.lower()
        if login not in used:
            used.add(login)
            return {"name": f"{first} {last}", "first": first, "email": f"{first.lower()}.{last.lower()}@{domain}"}


def _money(rng: random.Random, low: float, high: float) -> str:
    return f"{rng.uniform(low, high):,.2f}"


class _Mailbox:
    """One owner's folders while they are generated: messages are appended, then dated and numbered."""

    def __init__(self, owner: dict[str, str]) -> None:
        self.owner = owner
        self.folders: dict[str, list[dict[str, Any]]] = {name: [] for name in FOLDERS}

    def add(self, folder: str, message: dict[str, Any]) -> dict[str, Any]:
        self.folders[folder].append(message)
        return message


class Generator:
    """Builds the content of :func:`generate` (one instance per call)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(f"mail-{seed}")
        self.data = words()
        self.domain = self.data["domain"]
        used: set[str] = set()
        owners = [_person(self.rng, used, self.domain) for _ in range(OWNERS)]
        for owner in owners:
            owner["login"] = owner["first"].lower()
        self.owners = owners
        self.colleagues = [_person(self.rng, used, self.domain) for _ in range(COLLEAGUES)]
        self.contacts: list[dict[str, str]] = []
        for kind in ("vendors", "shops", "newsletters"):
            for org in self.data[kind]:
                person = _person(self.rng, set(), org["domain"])
                if kind == "newsletters":
                    person = {"name": org["name"], "first": org["name"], "email": f"news@{org['domain']}"}
                elif kind == "shops":
                    person = {"name": org["name"], "first": org["name"], "email": f"orders@{org['domain']}"}
                self.contacts.append({**person, "org": org["name"], "kind": kind[:-1]})
        self.serial = 0

    # ---- one message ---------------------------------------------------------------------

    def message(
        self, kind: str, sender: dict[str, str], to: dict[str, str], subject: str, body: str, **extra: Any
    ) -> dict[str, Any]:
        self.serial += 1
        local = sender["email"].split("@")[1]
        return {
            "kind": kind,
            "id": f"<{kind}.{self.serial:05d}.{self.rng.randrange(16**8):08x}@{local}>",
            "from": [sender["name"], sender["email"]],
            "to": [[to["name"], to["email"]]],
            "subject": subject,
            "body": body,
            "seen": True,
            "flagged": False,
            "answered": False,
            **extra,
        }

    def filler(self, count: int = 1) -> str:
        return " ".join(self.rng.sample(self.data["filler"], count))

    def meeting(self, owner: dict[str, str]) -> dict[str, Any]:
        sender = self.rng.choice(self.colleagues + [c for c in self.contacts if c["kind"] == "vendor"])
        topic = self.rng.choice(self.data["meeting_topics"])
        room = self.rng.choice(self.data["rooms"])
        body = (
            f"Hi {owner['first']},\n\nCould we meet about the {topic} on {{date}} at {{time}} in {room}? "
            f"{self.filler(2)}\n\nBest,\n{sender['first']}\n"
        )
        subject = self.rng.choice(["Meeting about the {t}", "{T} meeting", "Let's discuss the {t}"])
        subject = subject.format(t=topic, T=topic[0].upper() + topic[1:])
        facts = {"topic": topic, "room": room}
        return self.message("meeting", sender, owner, subject, body, facts=facts)

    def _date_facts(self, message: dict[str, Any], when: datetime) -> None:
        """Fill in the dates a meeting or a flight body names, some days after the message's own date."""
        if message["kind"] == "meeting":
            day = (when + timedelta(days=self.rng.randint(2, 12))).replace(
                hour=self.rng.choice([9, 10, 11, 13, 14, 15, 16]), minute=self.rng.choice([0, 15, 30, 45])
            )
            facts = {"date": f"{day:%A}, {day:%B} {day.day}", "time": f"{day:%H:%M}"}
        elif message["kind"] == "travel":
            day = (when + timedelta(days=self.rng.randint(5, 40))).replace(
                hour=self.rng.randint(6, 21), minute=self.rng.choice([0, 10, 25, 40, 55])
            )
            facts = {"date": f"{day:%B} {day.day}, {day.year}", "departure": f"{day:%H:%M}"}
        else:
            return
        message["facts"].update(facts)
        message["body"] = message["body"].format(**facts)

    def invoice(self, owner: dict[str, str]) -> dict[str, Any]:
        sender = self.rng.choice([c for c in self.contacts if c["kind"] == "vendor"])
        number = f"INV-{self.rng.randint(10000, 99999)}"
        amount = _money(self.rng, 80, 9800)
        due = START + timedelta(days=self.rng.randint(20, 320))
        body = (
            f"Dear {owner['first']},\n\nPlease find below invoice {number} from {sender['org']}.\n\n"
            f"Amount due: ${amount}\nDue date: {due:%B} {due.day}, {due.year}\n\n"
            f"{self.filler(1)}\n\nKind regards,\n{sender['name']}\n{sender['org']}\n"
        )
        facts = {"number": number, "amount": amount, "vendor": sender["org"]}
        return self.message("invoice", sender, owner, f"Invoice {number} from {sender['org']}", body, facts=facts)

    def order(self, owner: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
        shop = self.rng.choice([c for c in self.contacts if c["kind"] == "shop"])
        number = f"{self.rng.randint(100000, 999999)}"
        items = self.rng.sample(self.data["products"], self.rng.randint(1, 3))
        lines, total = [], 0.0
        for item in items:
            quantity, price = self.rng.randint(1, 4), round(self.rng.uniform(9, 450), 2)
            total += quantity * price
            lines.append(f"  {quantity} x {item} at ${price:,.2f}")
        body = (
            f"Hello {owner['first']},\n\nThank you for your order {number} at {shop['org']}.\n\n"
            + "\n".join(lines)
            + f"\n\nOrder total: ${total:,.2f}\n\nWe will email you when it ships.\n\n{shop['org']}\n"
        )
        facts = {"number": number, "total": f"{total:,.2f}", "shop": shop["org"], "items": items}
        confirmation = self.message("order", shop, owner, f"Your {shop['org']} order {number}", body, facts=facts)
        carrier = self.rng.choice(self.data["carriers"])
        tracking = f"{carrier[:2].upper()}{self.rng.randint(10**9, 10**10 - 1)}"
        body = (
            f"Hello {owner['first']},\n\nGood news: order {number} has shipped with {carrier}.\n"
            f"Tracking number: {tracking}\n\n{shop['org']}\n"
        )
        shipped = self.message(
            "shipping",
            shop,
            owner,
            f"Order {number} has shipped",
            body,
            facts={"number": number, "tracking": tracking, "carrier": carrier},
        )
        return confirmation, shipped

    def travel(self, owner: dict[str, str]) -> dict[str, Any]:
        airline = self.rng.choice(self.data["airlines"])
        city = self.rng.choice(self.data["cities"])
        reference = "".join(self.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
        flight = f"{airline[:2].upper()}{self.rng.randint(100, 2999)}"
        sender = {"name": airline, "first": airline, "email": f"bookings@{airline.split()[0].lower()}.test"}
        body = (
            f"Dear {owner['name']},\n\nYour booking {reference} is confirmed.\n\nFlight {flight} to {city}\n"
            f"Departure: {{date}} at {{departure}}\n\nThank you for flying {airline}.\n"
        )
        facts = {"reference": reference, "flight": flight, "city": city}
        subject = f"Booking {reference} confirmed: flight to {city}"
        return self.message("travel", sender, owner, subject, body, facts=facts)

    def newsletter(self, owner: dict[str, str]) -> dict[str, Any]:
        sender = self.rng.choice([c for c in self.contacts if c["kind"] == "newsletter"])
        headline = self.rng.choice(self.data["headlines"])
        issue = self.serial + 100
        body = f"{sender['org']}, issue {issue}: {headline}.\n\n{self.filler(3)}\n"
        return self.message("newsletter", sender, owner, f"{sender['org']} #{issue}: {headline}", body)

    def general(self, owner: dict[str, str]) -> dict[str, Any]:
        sender = self.rng.choice(self.colleagues)
        subject = self.rng.choice(self.data["general_subjects"])
        body = f"Hi {owner['first']},\n\n{self.filler(3)}\n\n{sender['first']}\n"
        return self.message("general", sender, owner, subject, body)

    def thread(self, box: _Mailbox) -> None:
        owner = box.owner
        project = self.rng.choice(self.data["projects"])
        topic = self.rng.choice(self.data["project_issues"])
        subject = f"{project}: {topic}"
        people = self.rng.sample(self.colleagues, 2)
        previous: dict[str, Any] | None = None
        for index in range(self.rng.randint(2, 5)):
            sender = owner if index % 3 == 2 else people[index % 2]
            recipient = people[0] if sender is owner else owner
            line = self.rng.choice(self.data["thread_lines"]).format(
                project=project, topic=topic, first=recipient["first"]
            )
            body = f"Hi {recipient['first']},\n\n{line} {self.filler(1)}\n\n{sender['first']}\n"
            extra: dict[str, Any] = {}
            if previous is not None:
                extra = {"in_reply_to": previous["id"], "references": [*previous.get("references", []), previous["id"]]}
            message = self.message(
                "thread", sender, recipient, ("Re: " if previous else "") + subject, body, project=project, **extra
            )
            if previous is not None and sender is owner:
                previous["answered"] = True
            box.add("Sent" if sender is owner else "Projects", message)
            previous = message

    # ---- one mailbox ---------------------------------------------------------------------

    def mailbox(self, owner: dict[str, str]) -> dict[str, Any]:
        box = _Mailbox(owner)
        span = (END - START).total_seconds()
        for _ in range(50):
            box.add("INBOX", self.meeting(owner))
        for _ in range(70):
            box.add("Invoices", self.invoice(owner))
        for _ in range(30):
            confirmation, shipped = self.order(owner)
            box.add("Orders", confirmation)
            box.add("INBOX", shipped)
        for _ in range(30):
            box.add("Travel", self.travel(owner))
        for _ in range(45):
            box.add("Newsletters", self.newsletter(owner))
        for _ in range(90):
            box.add("INBOX", self.general(owner))
        for _ in range(25):
            box.add("Archive", self.general(owner))
        for _ in range(22):
            self.thread(box)
        for folder in ("INBOX", "Newsletters"):  # a few unread and flagged ones
            for message in box.folders[folder]:
                message["seen"] = self.rng.random() > (0.25 if folder == "INBOX" else 0.4)
        for folder in ("INBOX", "Invoices", "Projects"):
            for message in box.folders[folder]:
                message["flagged"] = self.rng.random() < 0.05
        # Dates: each folder's messages in list order over the year (threads keep their order).
        self.rng.shuffle(box.folders["INBOX"])
        for messages in box.folders.values():
            stamps = sorted(self.rng.uniform(0, span) for _ in messages)
            for uid, (message, stamp) in enumerate(zip(messages, stamps, strict=True), start=1):
                when = START + timedelta(seconds=int(stamp))
                message["date"] = format_datetime(when)
                message["timestamp"] = int(when.timestamp())
                message["uid"] = uid
                self._date_facts(message, when)
        return {"owner": owner, "folders": box.folders}

    def content(self) -> dict[str, Any]:
        mailboxes = {owner["login"]: self.mailbox(owner) for owner in self.owners}
        return {
            "company": self.data["company"],
            "domain": self.domain,
            "owners": self.owners,
            "colleagues": self.colleagues,
            "contacts": self.contacts,
            "mailboxes": mailboxes,
        }


def generate(seed: int) -> dict[str, Any]:
    """The mail site's content for ``seed`` (see the module docstring)."""
    return Generator(seed).content()
