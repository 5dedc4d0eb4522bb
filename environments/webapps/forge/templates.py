"""The forge's task templates: tickets, milestones, the wiki and the git browser of Trac.

Checkers read the tenant's Trac database (stdlib ``sqlite3``, read-only) or the shared git
repository, and the final URL; oracles act through Trac's pages. Instruction texts are in
``templates.yaml``.
"""

from __future__ import annotations

import contextlib
import re
import urllib.parse
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, ClassVar

from agentgym.environments.webapps.tasks import (
    Answer,
    AnswerFromPage,
    Choose,
    Click,
    Fill,
    Goto,
    Kind,
    Outcome,
    Picker,
    Step,
    Task,
    Template,
    exact_match,
    fuzzy_match,
    number_match,
)

SITE = "forge"
#: Trac's ticket states that count as open.
OPEN = ("new", "assigned", "accepted", "reopened")
#: The submit button of Trac's ticket forms.
SUBMIT = 'input[name="submit"]'
#: The folded "Modify Ticket" section of a ticket's page (its workflow actions are inside).
MODIFY = "text=Modify Ticket"


def content(pick: Picker) -> Mapping[str, Any]:
    """The forge's generated content (what params are drawn from)."""
    return pick.content[SITE]


def query(outcome: Outcome, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on the tenant's Trac database."""
    site = outcome.sites[SITE]
    with contextlib.closing(site.connect(outcome.tenant)) as db:  # type: ignore[attr-defined]
        return list(db.execute(sql, args))


def one(outcome: Outcome, sql: str, *args: Any) -> Any:
    """The first column of the first row of ``sql`` (None without rows)."""
    rows = query(outcome, sql, *args)
    return rows[0][0] if rows else None


def full_name(outcome: Outcome, user: str) -> str:
    """The display name Trac shows for ``user`` (its session's ``name``), or the user name."""
    return one(outcome, "SELECT value FROM session_attribute WHERE sid=? AND name='name'", user) or user


def user_match(outcome: Outcome, answer: str | None, user: str) -> bool:
    """The answer names ``user``: its user name or its full name."""
    return exact_match(answer, user) or exact_match(answer, full_name(outcome, user))


def final_path(outcome: Outcome) -> str | None:
    """The final page's path on the forge, decoded, without query or fragment (None if elsewhere)."""
    path = outcome.path_on(SITE)
    if path is None:
        return None
    return urllib.parse.unquote(urllib.parse.urlsplit(path).path)


_ISO = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_MONTHS = {
    m.lower(): i
    for i, m in enumerate(
        [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ],
        start=1,
    )
}
_WORDY = re.compile(
    r"(?:(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4}))|(?:([A-Za-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4}))"
)


def date_match(answer: str | None, expected: str) -> bool:
    """The answer names the date ``expected`` (``YYYY-MM-DD``): ISO, ``March 4, 2026`` or ``4 March 2026``."""
    if answer is None:
        return False
    found = [(int(y), int(m), int(d)) for y, m, d in _ISO.findall(answer)]
    for match in _WORDY.finditer(answer):
        day, month, year = (
            (match.group(1), match.group(2), match.group(3))
            if match.group(1)
            else (match.group(5), match.group(4), match.group(6))
        )
        number = next((i for name, i in _MONTHS.items() if month.lower() in (name, name[:3])), None)
        if number:
            found.append((int(year), number, int(day)))
    wanted = tuple(int(part) for part in expected.split("-"))
    return bool(found) and all(date == wanted for date in found)


def repo_files(forge: Mapping[str, Any]) -> list[str]:
    """The source files of the repository that commits after the first one changed."""
    changed = {path for commit in forge["commits"][1:] for path in commit["files"]}
    return sorted(changed)


def open_tickets(forge: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [t for t in forge["tickets"] if t["status"] in OPEN]


class ForgeTemplate(Template):
    """A template on the forge alone."""

    sites: ClassVar[tuple[str, ...]] = (SITE,)


# ---- information ------------------------------------------------------------------------


class TicketOwner(ForgeTemplate):
    id = "forge/ticket-owner"
    kind: ClassVar[Kind] = "info"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        ticket = pick.choice(content(pick)["tickets"], key=lambda t: ("ticket", t["id"]))
        return {"ticket": ticket["id"]}, (SITE, "/"), {}

    def oracle(self, task: Task) -> list[Step]:
        return [Goto(SITE, f"/ticket/{task.params['ticket']}"), AnswerFromPage('td[headers="h_owner"]')]

    def check(self, task: Task, outcome: Outcome) -> float:
        owner = one(outcome, "SELECT owner FROM ticket WHERE id=?", task.params["ticket"])
        return float(owner is not None and user_match(outcome, outcome.answer, owner))


class TicketReporter(ForgeTemplate):
    """Find a ticket by its title (search), then read who reported it."""

    id = "forge/ticket-reporter"
    kind: ClassVar[Kind] = "info"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        ticket = pick.choice(content(pick)["tickets"], key=lambda t: ("ticket", t["id"]))
        return {"summary": ticket["summary"]}, (SITE, "/"), {}

    def oracle(self, task: Task) -> list[Step]:
        phrase = urllib.parse.quote_plus(f'"{task.params["summary"]}"')
        return [
            Goto(SITE, f"/search?q={phrase}&ticket=on"),
            Click("dl#results dt a"),
            AnswerFromPage('td[headers="h_reporter"]'),
        ]

    def check(self, task: Task, outcome: Outcome) -> float:
        reporter = one(outcome, "SELECT reporter FROM ticket WHERE summary=?", task.params["summary"])
        return float(reporter is not None and user_match(outcome, outcome.answer, reporter))


class MilestoneOpenTickets(ForgeTemplate):
    """Count the open tickets of one component in one milestone (a custom query)."""

    id = "forge/milestone-open-tickets"
    kind: ClassVar[Kind] = "info"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        pairs = sorted({(t["milestone"], t["component"]) for t in open_tickets(content(pick)) if t["milestone"]})
        milestone, component = pick.choice(pairs, key=lambda pair: ("open-count", *pair))
        return {"milestone": milestone, "component": component}, (SITE, "/roadmap"), {}

    def oracle(self, task: Task) -> list[Step]:
        args = urllib.parse.urlencode(
            {"milestone": task.params["milestone"], "component": task.params["component"], "status": "!closed"}
        )
        return [Goto(SITE, f"/query?{args}"), AnswerFromPage("h1 .numrows", r"\((\d+) match")]

    def check(self, task: Task, outcome: Outcome) -> float:
        marks = ",".join("?" * len(OPEN))
        count = one(
            outcome,
            f"SELECT COUNT(*) FROM ticket WHERE milestone=? AND component=? AND status IN ({marks})",
            task.params["milestone"],
            task.params["component"],
            *OPEN,
        )
        return float(number_match(outcome.answer, count))


class MilestoneDate(ForgeTemplate):
    """The due date of a pending milestone, or the day a finished one was completed (roadmap, then milestone)."""

    id = "forge/milestone-date"
    kind: ClassVar[Kind] = "info"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        milestone = pick.choice(content(pick)["milestones"], key=lambda m: m["name"], shared=True)
        which = "completed" if milestone["completed"] else "due"
        return {"milestone": milestone["name"], "which": which}, (SITE, "/"), {}

    def oracle(self, task: Task) -> list[Step]:
        roadmap = "/roadmap?show=completed" if task.params["which"] == "completed" else "/roadmap"
        return [
            Goto(SITE, roadmap),
            Click(f'a[href="/milestone/{task.params["milestone"]}"]'),
            AnswerFromPage(".info p.date", r"\((\d{4}-\d\d-\d\d)"),
        ]

    def check(self, task: Task, outcome: Outcome) -> float:
        column = {"due": "due", "completed": "completed"}[task.params["which"]]
        when = one(outcome, f"SELECT {column} FROM milestone WHERE name=?", task.params["milestone"])
        if not when:
            return 0.0
        expected = datetime.fromtimestamp(when / 1e6, tz=timezone.utc).strftime("%Y-%m-%d")
        return float(date_match(outcome.answer, expected))


class FileLastAuthor(ForgeTemplate):
    """Read a file's revision log in the repository browser."""

    id = "forge/file-last-author"
    kind: ClassVar[Kind] = "info"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        path = pick.choice(repo_files(content(pick)), key=lambda p: ("file", p))
        return {"path": path}, (SITE, "/browser"), {}

    def oracle(self, task: Task) -> list[Step]:
        return [Goto(SITE, f"/log/{task.params['path']}"), AnswerFromPage("td.author")]

    def check(self, task: Task, outcome: Outcome) -> float:
        author = outcome.sites[SITE].git("log", "-1", "--format=%an", "--", task.params["path"]).strip()  # type: ignore[attr-defined]
        return float(bool(author) and exact_match(outcome.answer, author))


class FileLastMessage(ForgeTemplate):
    id = "forge/file-last-message"
    kind: ClassVar[Kind] = "info"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        path = pick.choice(repo_files(content(pick)), key=lambda p: ("file", p))
        return {"path": path}, (SITE, "/browser"), {}

    def oracle(self, task: Task) -> list[Step]:
        return [Goto(SITE, f"/log/{task.params['path']}"), AnswerFromPage("td.summary")]

    def check(self, task: Task, outcome: Outcome) -> float:
        message = outcome.sites[SITE].git("log", "-1", "--format=%s", "--", task.params["path"]).strip()  # type: ignore[attr-defined]
        return float(bool(message) and fuzzy_match(outcome.answer, message, threshold=0.9))


# ---- navigation -------------------------------------------------------------------------


class OpenTicket(ForgeTemplate):
    """Find a ticket by its title and open it."""

    id = "forge/open-ticket"
    kind: ClassVar[Kind] = "navigation"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        ticket = pick.choice(content(pick)["tickets"], key=lambda t: ("ticket", t["id"]))
        return {"summary": ticket["summary"]}, (SITE, "/"), {}

    def oracle(self, task: Task) -> list[Step]:
        args = urllib.parse.urlencode({"summary": f"~{task.params['summary']}"})
        return [Goto(SITE, f"/query?{args}"), Click("td.summary a"), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        number = one(outcome, "SELECT id FROM ticket WHERE summary=?", task.params["summary"])
        return float(number is not None and final_path(outcome) == f"/ticket/{number}")


class TicketMilestonePage(ForgeTemplate):
    """Open the milestone page of the milestone a ticket is planned for."""

    id = "forge/ticket-milestone-page"
    kind: ClassVar[Kind] = "navigation"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        planned = [t for t in content(pick)["tickets"] if t["milestone"]]
        ticket = pick.choice(planned, key=lambda t: ("ticket", t["id"]))
        return {"ticket": ticket["id"]}, (SITE, "/"), {}

    def oracle(self, task: Task) -> list[Step]:
        return [Goto(SITE, f"/ticket/{task.params['ticket']}"), Click('td[headers="h_milestone"] a'), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        milestone = one(outcome, "SELECT milestone FROM ticket WHERE id=?", task.params["ticket"])
        return float(bool(milestone) and final_path(outcome) == f"/milestone/{milestone}")


class BrowseFile(ForgeTemplate):
    """Walk the repository browser down to a file."""

    id = "forge/browse-file"
    kind: ClassVar[Kind] = "navigation"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        path = pick.choice(repo_files(content(pick)), key=lambda p: ("browse", p))
        return {"path": path}, (SITE, "/"), {}

    def oracle(self, task: Task) -> list[Step]:
        parts = task.params["path"].split("/")
        steps: list[Step] = [Click('#mainnav a[href="/browser"]')]
        for depth in range(1, len(parts) + 1):
            steps.append(Click(f'#dirlist a[href="/browser/{"/".join(parts[:depth])}"]'))
        return [*steps, Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        exists = outcome.sites[SITE].git("ls-tree", "--name-only", "HEAD", "--", task.params["path"]).strip()  # type: ignore[attr-defined]
        return float(bool(exists) and final_path(outcome) == f"/browser/{task.params['path']}")


class LatestChangeset(ForgeTemplate):
    """Open the changeset of the last commit that touched a file."""

    id = "forge/latest-changeset"
    kind: ClassVar[Kind] = "navigation"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        path = pick.choice(repo_files(content(pick)), key=lambda p: ("changeset", p))
        return {"path": path}, (SITE, "/browser"), {}

    def oracle(self, task: Task) -> list[Step]:
        return [Goto(SITE, f"/log/{task.params['path']}"), Click("td.rev a.chgset"), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        sha = outcome.sites[SITE].git("log", "-1", "--format=%H", "--", task.params["path"]).strip()  # type: ignore[attr-defined]
        path = final_path(outcome) or ""
        match = re.fullmatch(r"/changeset/([0-9a-f]{7,40})(?:/.*)?", path)
        return float(bool(sha) and match is not None and sha.startswith(match.group(1)))


# ---- changes ----------------------------------------------------------------------------


def developer(pick: Picker) -> str:
    return content(pick)["roles"]["developer"]


class CreateTicket(ForgeTemplate):
    id = "forge/create-ticket"
    kind: ClassVar[Kind] = "change"
    #: The fields the task sets (besides the summary), with the weight of each in the score.
    FIELDS: ClassVar[tuple[str, ...]] = ("type", "component", "priority")

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        forge = content(pick)
        ticket = pick.choice(forge["tickets"], key=lambda t: ("new-ticket", t["id"]))
        component = pick.choice([c["name"] for c in forge["components"] if c["name"] != "core"], shared=True)
        priority = pick.choice(["blocker", "critical", "minor", "trivial"], shared=True)
        kind = pick.choice(["enhancement", "task"], shared=True)
        summary = f"{ticket['summary']} (follow-up to #{ticket['id']})"
        params = {
            "summary": summary,
            "type": kind,
            "component": component,
            "priority": priority,
            "last": len(forge["tickets"]),
        }
        return params, (SITE, "/"), {SITE: developer(pick)}

    def oracle(self, task: Task) -> list[Step]:
        p = task.params
        return [
            Click('#mainnav a[href="/newticket"]'),
            Fill("#field-summary", p["summary"]),
            Choose("#field-type", p["type"]),
            Choose("#field-component", p["component"]),
            Choose("#field-priority", p["priority"]),
            Click(SUBMIT),
            Answer("done"),
        ]

    def half_done(self, task: Task) -> list[Step]:
        return [
            Click('#mainnav a[href="/newticket"]'),
            Fill("#field-summary", task.params["summary"]),
            Click(SUBMIT),
            Answer("done"),
        ]

    def check(self, task: Task, outcome: Outcome) -> float:
        p = task.params
        rows = query(
            outcome,
            "SELECT type, component, priority, reporter FROM ticket WHERE id > ? AND summary = ?",
            p["last"],
            p["summary"],
        )
        if not rows:
            return 0.0
        wanted = (p["type"], p["component"], p["priority"], task.logins[SITE])
        return max(sum(a == b for a, b in zip(row, wanted, strict=True)) for row in rows) / len(wanted)


class CloseTicket(ForgeTemplate):
    id = "forge/close-ticket"
    kind: ClassVar[Kind] = "change"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        forge = content(pick)
        ticket = pick.choice(open_tickets(forge), key=lambda t: ("close", t["id"]))
        commit = pick.choice(forge["commits"][1:], key=lambda c: c["time"], shared=True)
        comment = f'Fixed by the commit "{commit["message"]}".'
        return {"ticket": ticket["id"], "comment": comment}, (SITE, "/"), {SITE: developer(pick)}

    def oracle(self, task: Task) -> list[Step]:
        return [
            Goto(SITE, f"/ticket/{task.params['ticket']}"),
            Fill("#comment", task.params["comment"]),
            Click(MODIFY),
            Click("#action_resolve"),
            Choose("#action_resolve_resolve_resolution", "fixed"),
            Click(SUBMIT),
            Answer("done"),
        ]

    def half_done(self, task: Task) -> list[Step]:
        return [
            Goto(SITE, f"/ticket/{task.params['ticket']}"),
            Fill("#comment", task.params["comment"]),
            Click(SUBMIT),
            Answer("done"),
        ]

    def check(self, task: Task, outcome: Outcome) -> float:
        number = task.params["ticket"]
        state = query(outcome, "SELECT status, resolution FROM ticket WHERE id=?", number)
        comments = [
            row[0]
            for row in query(outcome, "SELECT newvalue FROM ticket_change WHERE ticket=? AND field='comment'", number)
        ]
        commented = any(task.params["comment"].strip() in (text or "") for text in comments)
        closed = bool(state) and state[0] == ("closed", "fixed")
        return (closed + commented) / 2


class ReassignTicket(ForgeTemplate):
    id = "forge/reassign-ticket"
    kind: ClassVar[Kind] = "change"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        forge = content(pick)
        ticket = pick.choice(open_tickets(forge), key=lambda t: ("reassign", t["id"]))
        others = [u for u in forge["users"] if u["username"] != ticket["owner"]]
        user = pick.choice(others, key=lambda u: u["username"], shared=True)
        params = {"ticket": ticket["id"], "user": user["username"], "name": user["name"]}
        return params, (SITE, "/"), {SITE: developer(pick)}

    def oracle(self, task: Task) -> list[Step]:
        return [
            Goto(SITE, f"/ticket/{task.params['ticket']}"),
            Click(MODIFY),
            Click("#action_reassign"),
            Fill("#action_reassign_reassign_owner", task.params["user"]),
            Click(SUBMIT),
            Answer("done"),
        ]

    def half_done(self, task: Task) -> list[Step]:
        return [
            Goto(SITE, f"/ticket/{task.params['ticket']}"),
            Fill("#comment", f"Reassigning to {task.params['user']}."),
            Click(SUBMIT),
            Answer("done"),
        ]

    def check(self, task: Task, outcome: Outcome) -> float:
        owner = one(outcome, "SELECT owner FROM ticket WHERE id=?", task.params["ticket"])
        return float(owner == task.params["user"])


class EditWiki(ForgeTemplate):
    """Append a sentence to a wiki page, keeping what it says."""

    id = "forge/edit-wiki"
    kind: ClassVar[Kind] = "change"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        forge = content(pick)
        page = pick.choice(forge["wiki"], key=lambda p: ("wiki", p["name"]), shared=True)
        reviewer = pick.choice(forge["users"], key=lambda u: u["username"], shared=True)
        milestone = pick.choice(forge["milestones"], key=lambda m: m["name"], shared=True)
        sentence = f"Reviewed by {reviewer['name']} for the {milestone['name']} release."
        params = {"page": page["name"], "sentence": sentence, "text": page["versions"][-1]["text"]}
        return params, (SITE, f"/wiki/{page['name']}"), {SITE: developer(pick)}

    def oracle(self, task: Task) -> list[Step]:
        text = task.params["text"].rstrip("\n") + "\n\n" + task.params["sentence"] + "\n"
        return [Click('input[value="Edit this page"]'), Fill("#text", text), Click("#save"), Answer("done")]

    def half_done(self, task: Task) -> list[Step]:
        return [
            Click('input[value="Edit this page"]'),
            Fill("#text", task.params["sentence"]),
            Click("#save"),
            Answer("done"),
        ]

    def check(self, task: Task, outcome: Outcome) -> float:
        rows = query(outcome, "SELECT text FROM wiki WHERE name=? ORDER BY version DESC LIMIT 1", task.params["page"])
        if not rows:
            return 0.0
        text = rows[0][0].replace("\r\n", "\n")
        if task.params["sentence"] not in text:
            return 0.0
        kept = all(line.strip() in text for line in task.params["text"].splitlines() if line.strip())
        return 1.0 if kept else 0.5  # the sentence, but the page's own text lost


TEMPLATES: list[Template] = [
    TicketOwner(),
    TicketReporter(),
    MilestoneOpenTickets(),
    MilestoneDate(),
    FileLastAuthor(),
    FileLastMessage(),
    OpenTicket(),
    TicketMilestonePage(),
    BrowseFile(),
    LatestChangeset(),
    CreateTicket(),
    CloseTicket(),
    ReassignTicket(),
    EditWiki(),
]
