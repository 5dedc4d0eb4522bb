"""The forge's generated content: a software project's tickets, milestones, wiki and git history.

:func:`generate` is deterministic in its seed and draws every name and phrase from
``words.yaml``. Times are Unix seconds (UTC). The result is JSON-serialisable:

- ``users``: developers (``username``, ``name``, ``email``, ``password``); ``roles`` names the
  ``developer`` and ``admin`` users that tasks log in as.
- ``components``, ``milestones`` (``due``/``completed`` or None), ``versions``.
- ``tickets``: the final fields of each ticket plus ``changes`` (time, author, changed
  ``fields`` as ``[old, new]``, ``comment``), in Trac's own vocabulary (status ``new``,
  ``assigned``, ``accepted``, ``reopened``, ``closed``).
- ``wiki``: pages with their versions.
- ``commits``: the git history, oldest first (author, time, message, changed files' full text).
"""

from __future__ import annotations

import functools
import hashlib
import random
from importlib import resources
from typing import Any

import yaml

#: 2025-01-06 09:00 UTC: the project's first day.
EPOCH = 1736154000
DAY = 86400
TICKETS = 1500
COMMITS = 320
USERS = 24


@functools.cache
def words() -> dict[str, Any]:
    """The word lists (``words.yaml`` beside this module)."""
    return yaml.safe_load(resources.files(__package__).joinpath("words.yaml").read_text())


def generate(seed: int) -> dict[str, Any]:
    """The forge's whole content for ``seed`` (see the module docstring)."""
    rng = random.Random(f"forge-{seed}")
    data = words()
    users = _users(rng, data)
    developers = [user["username"] for user in users]
    components = [
        {"name": c["name"], "module": c["module"], "owner": rng.choice(developers), "description": c["description"]}
        for c in data["components"]
    ]
    milestones = _milestones(rng, data)
    tickets = _tickets(rng, data, developers, components, milestones)
    return {
        "project": data["project"],
        "package": data["package"],
        "users": users,
        "roles": {"developer": developers[0], "admin": developers[1]},
        "components": components,
        "milestones": milestones,
        "versions": [{"name": name, "time": EPOCH + i * 90 * DAY} for i, name in enumerate(data["versions"])],
        "tickets": tickets,
        "wiki": _wiki(rng, data, developers, components),
        "commits": _commits(rng, data, users[:10], components, len(tickets)),
    }


def _users(rng: random.Random, data: dict[str, Any]) -> list[dict[str, str]]:
    pairs = rng.sample([(f, last) for f in data["first_names"] for last in data["last_names"]], USERS)
    users, taken = [], set()
    for first, last in pairs:
        username = (first[0] + last).lower()
        if username in taken:
            username = f"{first}{last}".lower()
        taken.add(username)
        users.append(
            {
                "username": username,
                "name": f"{first} {last}",
                "email": f"{username}@harbor.example.org",
                "password": hashlib.sha256(f"{username}-{rng.random()}".encode()).hexdigest()[:12],
            }
        )
    return users


def _milestones(rng: random.Random, data: dict[str, Any]) -> list[dict[str, Any]]:
    milestones = []
    for i, name in enumerate(data["milestone_names"]):
        due = EPOCH + (45 + 42 * i + rng.randint(-6, 6)) * DAY
        completed = due + rng.randint(-5, 9) * DAY if i < 7 else None
        milestones.append(
            {
                "name": name,
                "due": due,
                "completed": completed,
                "description": f"Release {name}: {rng.choice(data['sentences'])}",
            }
        )
    return milestones


def _summary(rng: random.Random, data: dict[str, Any], kind: str) -> str:
    noun, symptom = rng.choice(data["nouns"]), rng.choice(data["symptoms"])
    text = rng.choice(data["summary_patterns"][kind]).format(
        noun=noun,
        noun_cap=noun[0].upper() + noun[1:],
        symptom=symptom,
        symptom_cap=symptom[0].upper() + symptom[1:],
        gerund=rng.choice(data["gerunds"]),
        object=rng.choice(data["objects"]),
        attribute=rng.choice(data["attributes"]),
        adjective=rng.choice(data["adjectives"]),
    )
    return text


def _tickets(
    rng: random.Random,
    data: dict[str, Any],
    developers: list[str],
    components: list[dict[str, Any]],
    milestones: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    tickets, summaries = [], set()
    span = milestones[-1]["due"] - EPOCH
    for number in range(1, TICKETS + 1):
        kind = rng.choices(data["ticket_types"], weights=[5, 3, 2])[0]
        summary = _summary(rng, data, kind)
        while summary in summaries:
            summary = _summary(rng, data, kind)
        summaries.add(summary)
        created = EPOCH + int(span * (number - 1) / TICKETS) + rng.randint(0, DAY)
        component = rng.choice(components)
        later = [m for m in milestones if m["due"] > created]
        milestone = rng.choice(later[:3])["name"] if later and rng.random() < 0.85 else ""
        ticket: dict[str, Any] = {
            "id": number,
            "type": kind,
            "time": created,
            "component": component["name"],
            "priority": rng.choices(data["priorities"], weights=[1, 3, 8, 5, 2])[0],
            "owner": component["owner"] if rng.random() < 0.7 else rng.choice(developers),
            "reporter": rng.choice(developers),
            "cc": "",
            "version": rng.choice(data["versions"]) if rng.random() < 0.5 else "",
            "milestone": milestone,
            "status": "new",
            "resolution": "",
            "summary": summary,
            "description": " ".join(rng.sample(data["sentences"], rng.randint(2, 4))),
            "keywords": "",
        }
        ticket["changes"] = _history(rng, data, developers, ticket)
        ticket["changetime"] = ticket["changes"][-1]["time"] if ticket["changes"] else created
        tickets.append(ticket)
    return tickets


def _history(
    rng: random.Random, data: dict[str, Any], developers: list[str], ticket: dict[str, Any]
) -> list[dict[str, Any]]:
    """A plausible life of ``ticket`` (updated in place to its final state): comments, reassignments, closing."""
    changes: list[dict[str, Any]] = []
    when = ticket["time"]

    def change(author: str, fields: dict[str, str], comment: str = "") -> None:
        nonlocal when
        when += rng.randint(3600, 12 * DAY)
        diff = {name: [ticket[name], value] for name, value in fields.items() if ticket[name] != value}
        ticket.update(fields)
        changes.append({"time": when, "author": author, "fields": diff, "comment": comment})

    for _ in range(rng.choices([0, 1, 2, 3, 4], weights=[3, 4, 3, 2, 1])[0]):
        step = rng.random()
        author = rng.choice(developers)
        if step < 0.15:
            change(author, {"owner": rng.choice(developers), "status": "assigned"}, rng.choice(data["comments"]))
        elif step < 0.3 and ticket["status"] in ("new", "assigned", "reopened"):
            change(ticket["owner"], {"status": "accepted"})
        elif step < 0.4:
            change(author, {"priority": rng.choice(data["priorities"])}, rng.choice(data["comments"]))
        else:
            change(author, {}, rng.choice(data["comments"]))
    if rng.random() < 0.55:
        resolution = rng.choices(data["resolutions"], weights=[10, 2, 2, 2, 1])[0]
        change(ticket["owner"], {"status": "closed", "resolution": resolution}, rng.choice(data["comments"]))
        if rng.random() < 0.06:
            change(ticket["reporter"], {"status": "reopened", "resolution": ""}, rng.choice(data["comments"]))
    return changes


def _wiki(
    rng: random.Random, data: dict[str, Any], developers: list[str], components: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    names = list(data["wiki_topics"]) + ["Component" + c["module"].capitalize() for c in components]
    pages = []
    for name in names:
        versions, when = [], EPOCH + rng.randint(0, 300) * DAY
        text = ""
        for _ in range(rng.randint(1, 4)):
            when += rng.randint(1, 40) * DAY
            section = rng.choice(data["wiki_sections"])
            text += f"\n== {section} ==\n" + " ".join(rng.sample(data["sentences"], 3)) + "\n"
            links = " ".join(rng.sample(names, 2))
            body = f"= {name} =\n{text}\nSee also: {links}\n"
            versions.append({"time": when, "author": rng.choice(developers), "text": body, "comment": f"{section}"})
        pages.append({"name": name, "versions": versions})
    return pages


def _function(rng: random.Random, data: dict[str, Any]) -> tuple[str, list[str]]:
    verb = rng.choice(["load", "save", "parse", "render", "check", "merge", "split", "resolve", "build", "count"])
    noun = rng.choice(data["objects"]).replace("-", "_").split()[-1]
    name = f"{verb}_{noun}_{rng.randint(1, 99)}"
    body = [
        f"def {name}(items, limit={rng.randint(1, 500)}):",
        f'    """{verb.capitalize()} the {noun} of ``items``, at most ``limit`` of them."""',
        "    return [item for item in items if item is not None][:limit]",
    ]
    return name, body


def _render(path: str, functions: dict[str, list[str]]) -> str:
    if path.endswith(".py"):
        header = f'"""{path}: part of Harbor."""\n'
        return header + "".join("\n\n" + "\n".join(lines) + "\n" for lines in functions.values())
    return f"{path}\n{'=' * len(path)}\n" + "".join("\n" + "\n".join(lines) + "\n" for lines in functions.values())


def _commits(
    rng: random.Random,
    data: dict[str, Any],
    authors: list[dict[str, str]],
    components: list[dict[str, Any]],
    ticket_count: int,
) -> list[dict[str, Any]]:
    package = data["package"]
    stems = ["models", "service", "utils", "errors", "handlers", "config", "cache", "client"]
    files: dict[str, dict[str, list[str]]] = {"README.md": {"intro": [data["project"], rng.choice(data["sentences"])]}}
    for component in components:
        module = component["module"]
        files[f"{package}/{module}/__init__.py"] = {}
        for stem in rng.sample(stems, 5):
            files[f"{package}/{module}/{stem}.py"] = dict([_function(rng, data)])
        files[f"tests/test_{module}.py"] = dict([_function(rng, data)])
        files[f"docs/{module}.rst"] = {"intro": [component["description"] + "."]}
    commits = [
        {
            "author": authors[0]["name"],
            "email": authors[0]["email"],
            "time": EPOCH,
            "message": "Initial import of the Harbor source tree",
            "files": {path: _render(path, functions) for path, functions in files.items()},
        }
    ]
    editable = sorted(path for path in files if not path.endswith("__init__.py"))
    when = EPOCH
    for _ in range(COMMITS - 1):
        when += rng.randint(600, 2 * DAY)
        author = rng.choice(authors)
        changed = rng.sample(editable, rng.choices([1, 2, 3], weights=[6, 3, 1])[0])
        verb = rng.choice(data["commit_verbs"])
        for path in changed:
            functions = files[path]
            if path.endswith(".py") and functions and rng.random() < 0.4:
                name = rng.choice(sorted(functions))
                lines = list(functions[name])
                lines[-1] = f"    return [item for item in items if item][:limit or {rng.randint(1, 900)}]"
                functions[name] = lines
            elif path.endswith(".py"):
                name, lines = _function(rng, data)
                functions[name] = lines
            else:
                functions[f"p{len(functions)}"] = [rng.choice(data["sentences"])]
        subject_path = changed[0].rsplit("/", 1)[-1]
        message = f"{verb} {rng.choice(data['nouns'])} handling in {subject_path}"
        if rng.random() < 0.5:
            message += f" (refs #{rng.randint(1, ticket_count)})"
        commits.append(
            {
                "author": author["name"],
                "email": author["email"],
                "time": when,
                "message": message,
                "files": {path: _render(path, files[path]) for path in changed},
            }
        )
    return commits
