"""The wiki's content: invented countries with their towns, mountains, rivers, people and companies.

:func:`generate` builds, from a seed and the word lists in ``data.yaml``, about a thousand
articles that link to each other (a city names its country and mayor, a river its source
mountain, a company its founder and headquarters), each with an infobox of facts, sections of
prose, one category, and a history of one to four revisions by the wiki's editors (earlier
revisions hold fewer sections and older figures). :func:`article_text` renders an article (or
one of its earlier revisions) as wikitext; :func:`section_texts` splits it the way MediaWiki's
section editing does. The same content renders the XML dump that seeds the wiki and the
oracle plans that edit it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from functools import cache
from importlib import resources
from typing import Any

import yaml

#: Facts whose value names another article (written as a link).
LINK_FACTS = frozenset(
    {"capital", "country", "mayor", "source", "birthplace", "nationality", "founder", "headquarters"}
)
#: Facts that an earlier revision held an older value of.
UPDATED_FACTS = ("population", "employees")
SITENAME = "Agentpedia"


@cache
def data() -> dict[str, Any]:
    """The word lists and article schemas (``data.yaml``)."""
    return yaml.safe_load(resources.files(__package__).joinpath("data.yaml").read_text())


def _grouped(number: int) -> str:
    return f"{number:,}"


class _Names:
    """Draws names no other article has taken."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.taken = rng, set()

    def draw(self, make: Any) -> str:
        for _ in range(1000):
            name = make()
            if name not in self.taken:
                self.taken.add(name)
                return name
        raise RuntimeError("the word lists are too small for the number of articles")


def generate(seed: int) -> dict[str, Any]:
    """The wiki's content for ``seed`` (deterministic, JSON-serialisable)."""
    words = data()
    rng = random.Random(f"wiki-{seed}")
    names = _Names(rng)
    stems, counts = words["place_stems"], words["per_country"]

    def place(endings: Sequence[str]) -> str:
        return names.draw(lambda: rng.choice(stems) + rng.choice(endings))

    def person_name(gender: str) -> str:
        return names.draw(lambda: f"{rng.choice(words['first_names'][gender])} {rng.choice(words['last_names'])}")

    def formed(key: str, **extra: str) -> str:
        return names.draw(
            lambda: rng.choice(words[key]).format(stem=rng.choice(stems), stem2=rng.choice(stems), **extra)
        )

    articles: list[dict[str, Any]] = []

    def add(kind: str, title: str, country: str, facts: dict[str, str]) -> dict[str, Any]:
        article = {"title": title, "type": kind, "country": country, "facts": {"name": title, **facts}}
        articles.append(article)
        return article

    for _ in range(words["country_count"]):
        country = place(words["country_endings"])
        state = add(
            "country",
            country,
            country,
            {
                "population": _grouped(rng.randrange(800_000, 60_000_000)),
                "area_km2": _grouped(rng.randrange(8_000, 600_000)),
                "currency": rng.choice(words["currencies"]),
                "founded": str(rng.randrange(1650, 1990)),
            },
        )
        people = []
        for _ in range(counts["person"]):
            gender = rng.choice("fm")
            facts = {"born": str(rng.randrange(1890, 2001)), "nationality": country,
                     "occupation": rng.choice(words["occupations"]), "gender": gender}  # fmt: skip
            people.append(add("person", person_name(gender), country, facts))
        cities = []
        for index in range(counts["city"]):
            mayor = people[index]  # the first people of a country are its mayors (born in their city)
            city = add(
                "city",
                place(words["town_endings"]),
                country,
                {
                    "population": _grouped(
                        rng.randrange(2_000, 2_500_000) if index else rng.randrange(900_000, 4_000_000)
                    ),
                    "founded": str(rng.randrange(900, 1900)),
                    "elevation_m": str(rng.randrange(2, 1600)),
                    "mayor": mayor["title"],
                },
            )
            cities.append(city)
        state["facts"]["capital"] = cities[0]["title"]
        for person in people:
            person["facts"]["birthplace"] = rng.choice(cities)["title"]
        for index, city in enumerate(cities):
            people[index]["facts"]["birthplace"] = city["title"]
        mountains = [
            add(
                "mountain",
                formed("mountain_forms"),
                country,
                {
                    "range": rng.choice(words["mountain_ranges"]),
                    "height_m": _grouped(rng.randrange(900, 7800)),
                    "first_ascent": str(rng.randrange(1780, 1990)),
                },
            )
            for _ in range(counts["mountain"])
        ]
        for _ in range(counts["river"]):
            add(
                "river",
                formed("river_forms"),
                country,
                {
                    "length_km": str(rng.randrange(40, 2400)),
                    "source": rng.choice(mountains)["title"],
                    "mouth": rng.choice(words["seas"]),
                },
            )
        for _ in range(counts["company"]):
            add(
                "company",
                formed("company_forms"),
                country,
                {
                    "industry": rng.choice(words["industries"]),
                    "founded": str(rng.randrange(1820, 2015)),
                    "founder": rng.choice(people[counts["city"] :])["title"],
                    "headquarters": rng.choice(cities)["title"],
                    "employees": _grouped(rng.randrange(40, 90_000)),
                },
            )
    for article in articles:
        article["facts"]["country"] = article["country"]
        if article["type"] in ("country", "person"):
            article["facts"].pop("country")

    first_names = words["first_names"]["f"] + words["first_names"]["m"]
    editors = sorted(
        {f"{rng.choice(first_names)} {rng.choice(words['last_names'])}" for _ in range(words["editor_count"] * 3)}
        - names.taken
    )[: words["editor_count"]]
    rng.shuffle(editors)
    users = [{"name": name, "password": f"{name.split()[0].lower()}-{rng.randrange(10**6, 10**7)}"} for name in editors]

    start = datetime(2023, 1, 1, tzinfo=timezone.utc)
    for article in articles:
        article["category"] = words["categories"][article["type"]].format(country=article["country"])
        article["sections"] = _sections(article, rng)
        count = rng.choice((1, 2, 2, 3, 3, 4))
        moment = start + timedelta(minutes=rng.randrange(0, 60 * 24 * 400))
        revisions = []
        for number in range(count):
            last = number == count - 1
            shown = len(article["sections"]) if last else min(len(article["sections"]), 1 + number)
            comment = "Created the article" if number == 0 else rng.choice(words["edit_comments"])
            revisions.append(
                {
                    "user": rng.choice(editors),
                    "timestamp": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "comment": comment,
                    "sections": shown,
                    "old_figures": not last,
                }
            )
            moment += timedelta(minutes=rng.randrange(30, 60 * 24 * 90))
        article["revisions"] = revisions
        article["old_facts"] = {
            fact: _grouped(int(int(article["facts"][fact].replace(",", "")) * rng.uniform(0.8, 0.97)))
            for fact in UPDATED_FACTS
            if fact in article["facts"]
        }
    categories = sorted({(a["category"], a["type"], a["country"]) for a in articles})
    return {
        "sitename": SITENAME,
        "users": users,
        "articles": articles,
        "categories": [{"title": title, "type": kind, "country": country} for title, kind, country in categories],
        "maintenance_categories": words["maintenance_categories"],
    }


def _sections(article: Mapping[str, Any], rng: random.Random) -> list[dict[str, Any]]:
    """The article's sections: the lead (heading None) then the type's headed sections, as sentences."""
    facts = dict(article["facts"])
    he = facts.get("gender") == "m"
    facts.update(pronoun="He" if he else "She", possessive="his" if he else "her")
    for noun in ("occupation", "industry"):  # "an astronomer", "a painter"
        if noun in facts:
            facts[f"a_{noun}"] = ("an " if facts[noun][0] in "aeiou" else "a ") + facts[noun]
    sections = []
    for heading, sentences in data()["sections"][article["type"]].items():
        chosen = [sentences[0], *[s for s in sentences[1:] if rng.random() < 0.8]]
        sections.append(
            {
                "heading": None if heading == "lead" else heading,
                "sentences": [_fill(sentence, facts) for sentence in chosen],
            }
        )
    return sections


def _fill(sentence: str, facts: Mapping[str, str]) -> str:
    sentence = re.sub(r"\{link:(\w+)\}", lambda m: f"[[{facts[m.group(1)]}]]", sentence)
    return sentence.format(**facts)


def infobox(article: Mapping[str, Any], *, old_figures: bool = False) -> str:
    """The article's infobox call (``{{Infobox city | ... }}``)."""
    facts = {**article["facts"], **(article.get("old_facts", {}) if old_figures else {})}
    lines = [f"{{{{Infobox {article['type']}", f"| name = {article['title']}"]
    for fact, _label in data()["infobox"][article["type"]]:
        value = facts[fact]
        lines.append(f"| {fact} = [[{value}]]" if fact in LINK_FACTS else f"| {fact} = {value}")
    return "\n".join(lines) + "\n}}"


def section_texts(article: Mapping[str, Any], shown: int | None = None, *, old_figures: bool = False) -> list[str]:
    """The article's wikitext split as MediaWiki's section editing splits it (0: infobox and lead)."""
    sections = article["sections"][: shown or len(article["sections"])]
    texts = []
    for index, section in enumerate(sections):
        prose = " ".join(section["sentences"])
        if section["heading"] is None:
            texts.append(f"{infobox(article, old_figures=old_figures)}\n{prose}")
        else:
            texts.append(f"== {section['heading']} ==\n{prose}")
        if index == len(sections) - 1:
            texts[-1] += f"\n\n[[Category:{article['category']}]]"
    return texts


def article_text(article: Mapping[str, Any], shown: int | None = None, *, old_figures: bool = False) -> str:
    """The article's wikitext (its latest revision, or an earlier one showing ``shown`` sections)."""
    return "\n\n".join(section_texts(article, shown, old_figures=old_figures))


def infobox_template(kind: str) -> str:
    """The wikitext of ``Template:Infobox <kind>``: a table with one row (class ``ib-<fact>``) per fact."""
    rows = [f'{{| class="infobox infobox-{kind}"', '|+ class="ib-name" | {{{name}}}']
    for fact, label in data()["infobox"][kind]:
        rows += [f'|- class="ib-{fact}"', f"! {label}", f"| {{{{{{{fact}|}}}}}}"]
    return "\n".join(rows) + "\n|}"


def category_text(category: Mapping[str, str]) -> str:
    """The wikitext of a category's page."""
    if "text" in category:
        return category["text"]
    if category["type"] == "country":
        return "The countries described on this wiki."
    kind = {"city": "cities", "mountain": "mountains", "river": "rivers", "person": "people", "company": "companies"}[
        category["type"]
    ]
    return f"Articles about the {kind} of [[{category['country']}]]."


def main_page_text(content: Mapping[str, Any]) -> str:
    """The wikitext of the Main Page: a welcome and the list of countries."""
    countries = [a["title"] for a in content["articles"] if a["type"] == "country"]
    listing = "\n".join(f"* [[{name}]]" for name in countries)
    return (
        f"'''Welcome to {content['sitename']}''', the free encyclopedia of the invented world. "
        f"It has {len(content['articles'])} articles.\n\n== Countries ==\n{listing}\n\n"
        "See also [[:Category:Countries]]."
    )
