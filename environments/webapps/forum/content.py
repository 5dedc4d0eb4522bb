"""The forum's content, generated from a seed: users, categories, threads with replies and likes.

Everything is drawn from the word lists in ``data/content.yaml`` with one ``random.Random(seed)``,
so a seed always gives the same forum. Thread titles are unique (tasks name threads by title);
ids are the order of creation (the seeder inserts in this order and checks it).
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta, timezone
from functools import cache
from importlib import resources
from typing import Any

import yaml

#: How big the forum is.
USERS = 240
MODERATORS = 3
THREADS = 1200
MAX_REPLIES = 14
#: Everyone's password (the seeded sessions make logging in unnecessary; it is for a human looking).
PASSWORD = "forum-password"
ADMIN = "ForumAdmin"
_EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)


@cache
def words() -> dict[str, Any]:
    """The word lists (``data/content.yaml``)."""
    return yaml.safe_load(resources.files(__package__).joinpath("data/content.yaml").read_text())


def slugify(text: str) -> str:
    """Django's slugify for ASCII text (what Misago stores for a title or a name)."""
    text = re.sub(r"[^\w\s-]", "", text.lower())
    return re.sub(r"[-\s]+", "-", text).strip("-_")


def _stamp(moment: datetime) -> str:
    return moment.isoformat()


def _users(rng: random.Random, data: dict[str, Any]) -> list[dict[str, Any]]:
    names: list[str] = []
    taken: set[str] = {ADMIN.lower()}
    while len(names) < USERS:
        name = rng.choice(data["first_names"]) + rng.choice(data["name_words"])
        if rng.random() < 0.3:
            name += str(rng.randint(2, 99))
        if len(name) <= 14 and name.lower() not in taken:
            taken.add(name.lower())
            names.append(name)
    users = [{"username": ADMIN, "role": "admin"}]
    users += [{"username": name, "role": "moderator" if i < MODERATORS else "member"} for i, name in enumerate(names)]
    for i, user in enumerate(users):
        user["email"] = f"{user['username'].lower()}@{rng.choice(data['email_domains'])}"
        user["joined"] = _stamp(_EPOCH - timedelta(days=400 - i, hours=rng.randint(0, 23)))
        user["slug"] = slugify(user["username"])
        user["id"] = i + 1  # the seeder creates users in this order on a fresh database
    return users


def _text(rng: random.Random, data: dict[str, Any], subject: str, opening: bool) -> str:
    if opening:
        sentences = [rng.choice(data["opening_sentences"])]
        sentences += rng.sample(data["middle_sentences"], rng.randint(1, 3))
        sentences.append(rng.choice(data["closing_sentences"]))
    else:
        sentences = rng.sample(data["reply_sentences"], rng.randint(1, 3))
    return " ".join(sentences).format(subject=subject)


def generate(seed: int) -> dict[str, Any]:
    """The forum's content for ``seed`` (JSON-serialisable; see the module docstring)."""
    rng = random.Random(seed)
    data = words()
    users = _users(rng, data)
    members = [user["username"] for user in users if user["role"] != "admin"]
    categories = [
        # Misago's migrations make categories 1-3 (private threads, root, the first category, which
        # the seeder renames); the others follow in order.
        {"id": 3 + i, "name": c["name"], "slug": slugify(c["name"]), "description": c["description"]}
        | {"subjects": c["subjects"]}
        for i, c in enumerate(data["categories"])
    ]
    threads: list[dict[str, Any]] = []
    titles: set[str] = set()
    post_id = 0
    starts = sorted(rng.uniform(0, 600 * 24) for _ in range(THREADS))
    while len(threads) < THREADS:
        category = rng.choice(categories)
        subject = rng.choice(category["subjects"])
        title = rng.choice(data["title_patterns"]).format(subject=subject)
        if title in titles:
            continue
        titles.add(title)
        started = _EPOCH + timedelta(hours=starts[len(threads)])
        authors = [rng.choice(members)]
        replies = min(int(rng.expovariate(1 / 5)), MAX_REPLIES)
        authors += [rng.choice(members) for _ in range(replies)]
        posts = []
        moment = started
        for index, author in enumerate(authors):
            post_id += 1
            others = [m for m in rng.sample(members, 12) if m != author]
            likes = others[: min(int(rng.expovariate(1 / 2.5)), len(others))]
            posts.append(
                {
                    "id": post_id,
                    "author": author,
                    "text": _text(rng, data, subject, opening=index == 0),
                    "posted": _stamp(moment),
                    "likes": likes,
                }
            )
            moment += timedelta(minutes=rng.randint(5, 3000))
        threads.append(
            {
                "id": len(threads) + 1,
                "category": category["slug"],
                "subject": subject,
                "title": title,
                "slug": slugify(title),
                "starter": authors[0],
                "pinned": rng.random() < 0.01,
                "closed": rng.random() < 0.04,
                "posts": posts,
            }
        )
    return {
        "users": users,
        "categories": [{k: v for k, v in c.items() if k != "subjects"} for c in categories],
        "threads": threads,
        "password": PASSWORD,
    }
