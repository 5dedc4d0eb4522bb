"""The wiki's task templates: facts from infoboxes and histories, pages to reach, articles to edit.

Checkers read the tenant's SQLite database (:mod:`.state`): an info task's expected answer is
the value in the article's latest revision (or its history), a navigation task's final URL is
mapped to a page title, and a change task's latest revision is compared with the golden
database's (only the requested change may differ) and must be by the user the browser is
logged in as. Oracle plans use the wiki's own UI: the search box, links, the history tab and
the (section) edit form; half-done plans preview the edit instead of saving it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from typing import Any, ClassVar
from urllib.parse import quote, urlencode

from agentgym.environments.webapps.tasks import (
    Answer,
    AnswerFromPage,
    Click,
    Fill,
    Goto,
    Outcome,
    Picker,
    Step,
    Task,
    Template,
    exact_match,
    number_match,
)
from agentgym.environments.webapps.wiki import state
from agentgym.environments.webapps.wiki.content import LINK_FACTS, data, section_texts

SITE = "wiki"
MAIN_PAGE = (SITE, "/wiki/Main_Page")
#: Facts an info task may ask about (plain values, not links), per article type.
_NUMERIC = frozenset({"population", "area_km2", "founded", "elevation_m", "height_m", "first_ascent", "length_km",
                      "born", "employees"})  # fmt: skip


def _wiki(pick: Picker) -> Mapping[str, Any]:
    return pick.content[SITE]


def _article(pick: Picker, *kinds: str) -> Mapping[str, Any]:
    articles = [a for a in _wiki(pick)["articles"] if not kinds or a["type"] in kinds]
    return pick.choice(articles, key=lambda article: article["title"])


def _editor(pick: Picker) -> str:
    return pick.choice(_wiki(pick)["users"], shared=True)["name"]


def _label(kind: str, fact: str) -> str:
    return dict(data()["infobox"][kind])[fact]


def _path(title: str, **query: str) -> str:
    """The wiki's URL path of a page (``/wiki/Title``) or of an action on it (``/index.php?title=...``)."""
    stored = state.db_title(title)
    if not query:
        return "/wiki/" + quote(stored, safe=":/(),'")
    return "/index.php?" + urlencode({"title": stored, **query})


def _search(title: str) -> list[Step]:
    """Find a page with the search box's "Go" (an exact title opens the page)."""
    return [Fill("#searchInput", title), Click("#searchButton")]


@contextmanager
def _tenant_db(outcome: Outcome) -> Iterator[sqlite3.Connection]:
    with closing(outcome.sites[SITE].connect(outcome.tenant)) as db:  # type: ignore[attr-defined]
        yield db


@contextmanager
def _golden_db(outcome: Outcome) -> Iterator[sqlite3.Connection]:
    with closing(outcome.sites[SITE].golden_connection()) as db:  # type: ignore[attr-defined]
        yield db


def _fact(db: sqlite3.Connection, title: str, fact: str) -> str | None:
    text = state.latest_text(db, title)
    if text is None:
        return None
    value = state.infobox_facts(text).get(fact)
    return None if value is None else state.unlink(value)


def _matches(answer: str | None, expected: str | None, fact: str) -> bool:
    if expected is None:
        return False
    if fact in _NUMERIC:
        try:
            return number_match(answer, float(expected.replace(",", "")))
        except ValueError:
            return exact_match(answer, expected)
    return exact_match(answer, expected)


def _final_page(outcome: Outcome) -> tuple[str, str] | None:
    path = outcome.path_on(SITE)
    return None if path is None else state.page_of_url(path)


def _on_page(outcome: Outcome, title: str, action: str = "view") -> float:
    page = _final_page(outcome)
    if page is None:
        return 0.0
    wanted = state.split_title(title)
    return float(state.split_title(page[0]) == wanted and page[1] == action)


# ---- information --------------------------------------------------------------------------


class InfoboxFact(Template):
    """A fact from an article's infobox (search for the article, read the row)."""

    id = "wiki/infobox-fact"
    kind = "info"
    sites = (SITE,)

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        article = _article(pick, "city", "mountain", "river", "person", "company")
        facts = [fact for fact, _ in data()["infobox"][article["type"]] if fact not in LINK_FACTS]
        fact = pick.rng.choice(facts)
        params = {"title": article["title"], "fact": fact, "label": _label(article["type"], fact).lower()}
        return params, MAIN_PAGE, {}

    def oracle(self, task: Task) -> list[Step]:
        return [*_search(task.params["title"]), AnswerFromPage(f"tr.ib-{task.params['fact']} td")]

    def check(self, task: Task, outcome: Outcome) -> float:
        with _tenant_db(outcome) as db:
            expected = _fact(db, task.params["title"], task.params["fact"])
        return float(_matches(outcome.answer, expected, task.params["fact"]))


class BirthplacePopulation(Template):
    """Two hops: from a person's article to their birthplace's, then that town's population."""

    id = "wiki/birthplace-population"
    kind = "info"
    sites = (SITE,)

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        return {"person": _article(pick, "person")["title"]}, MAIN_PAGE, {}

    def oracle(self, task: Task) -> list[Step]:
        return [
            *_search(task.params["person"]),
            Click("tr.ib-birthplace td a"),
            AnswerFromPage("tr.ib-population td"),
        ]

    def check(self, task: Task, outcome: Outcome) -> float:
        with _tenant_db(outcome) as db:
            town = _fact(db, task.params["person"], "birthplace")
            expected = None if town is None else _fact(db, town, "population")
        return float(_matches(outcome.answer, expected, "population"))


class ArticleCategory(Template):
    """The category an article is in (shown at the bottom of the article)."""

    id = "wiki/article-category"
    kind = "info"
    sites = (SITE,)

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        return {"title": _article(pick)["title"]}, MAIN_PAGE, {}

    def oracle(self, task: Task) -> list[Step]:
        return [*_search(task.params["title"]), AnswerFromPage("#mw-normal-catlinks ul li a")]

    def check(self, task: Task, outcome: Outcome) -> float:
        with _tenant_db(outcome) as db:
            text = state.latest_text(db, task.params["title"]) or ""
        return float(any(exact_match(outcome.answer, name) for name in state.categories(text)))


class LastEditor(Template):
    """Who made the latest edit of an article (its history tab)."""

    id = "wiki/last-editor"
    kind = "info"
    sites = (SITE,)
    #: Which end of the history: -1 the latest edit, 0 the first (the article's creator).
    position: ClassVar[int] = -1

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        return {"title": _article(pick)["title"]}, MAIN_PAGE, {}

    def oracle(self, task: Task) -> list[Step]:
        # The history lists the newest edit first, one list per day.
        row = "ul:first-of-type li:first-child" if self.position == -1 else "ul:last-of-type li:last-child"
        return [
            *_search(task.params["title"]),
            Click("#ca-history a"),
            AnswerFromPage(f"#pagehistory {row} .mw-userlink"),
        ]

    def check(self, task: Task, outcome: Outcome) -> float:
        with _tenant_db(outcome) as db:
            names = state.editors(db, task.params["title"])
        return float(bool(names) and exact_match(outcome.answer, names[self.position]))


class ArticleCreator(LastEditor):
    """Who created an article (the oldest entry of its history)."""

    id = "wiki/article-creator"
    position = 0


# ---- navigation ---------------------------------------------------------------------------


def _number(value: str | None) -> int | None:
    digits = (value or "").replace(",", "")
    return int(digits) if digits.isdigit() else None


class Superlative(Template):
    """Compare the articles of a country's category by a fact and open the extreme one (the most populous city...)."""

    id = "wiki/superlative-article"
    kind = "navigation"
    sites = (SITE,)

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        options = []
        for superlative in data()["superlatives"]:
            for country in (a["title"] for a in _wiki(pick)["articles"] if a["type"] == "country"):
                group = [
                    a for a in _wiki(pick)["articles"] if a["type"] == superlative["type"] and a["country"] == country
                ]
                values = [_number(a["facts"][superlative["fact"]]) for a in group]
                best = (max if superlative["pick"] == "max" else min)(v for v in values if v is not None)
                if values.count(best) == 1:  # one clear answer
                    options.append((superlative, country, group[values.index(best)]["title"]))
        superlative, country, answer = pick.choice(options, key=lambda o: (o[0]["text"], o[1]))
        params = {
            "what": superlative["text"],
            "fact": superlative["fact"],
            "pick": superlative["pick"],
            "country": country,
            "category": data()["categories"][superlative["type"]].format(country=country),
            "answer": answer,
        }
        return params, MAIN_PAGE, {}

    def oracle(self, task: Task) -> list[Step]:
        return [*_search(f"Category:{task.params['category']}"), Click(f"text={task.params['answer']}"), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        with _tenant_db(outcome) as db:
            values = {title: _number(_fact(db, title, task.params["fact"]))
                      for title in state.category_members(db, task.params["category"])}  # fmt: skip
        known = {title: value for title, value in values.items() if value is not None}
        if not known:
            return 0.0
        best = (max if task.params["pick"] == "max" else min)(known.values())
        return max(_on_page(outcome, title) for title, value in known.items() if value == best)


class OpenCategory(Template):
    """Open the category page that lists a country's rivers (or mountains, cities, ...)."""

    id = "wiki/open-category"
    kind = "navigation"
    sites = (SITE,)

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        listed = [c for c in _wiki(pick)["categories"] if c["type"] != "country"]
        category = pick.choice(listed, key=lambda c: c["title"])
        params = {"country": category["country"], "category": category["title"],
                  "what": category["title"].split()[0].lower()}  # fmt: skip
        return params, MAIN_PAGE, {}

    def oracle(self, task: Task) -> list[Step]:
        return [*_search(f"Category:{task.params['category']}"), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        return _on_page(outcome, f"Category:{task.params['category']}")


class OpenHistory(Template):
    """Open the revision history of an article."""

    id = "wiki/open-history"
    kind = "navigation"
    sites = (SITE,)

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        return {"title": _article(pick)["title"]}, MAIN_PAGE, {}

    def oracle(self, task: Task) -> list[Step]:
        return [*_search(task.params["title"]), Click("#ca-history a"), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        return _on_page(outcome, task.params["title"], "history")


class MayorArticle(Template):
    """Two hops: from a city's article to the article about its mayor."""

    id = "wiki/mayor-article"
    kind = "navigation"
    sites = (SITE,)

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        return {"city": _article(pick, "city")["title"]}, MAIN_PAGE, {}

    def oracle(self, task: Task) -> list[Step]:
        return [*_search(task.params["city"]), Click("tr.ib-mayor td a"), Answer("done")]

    def check(self, task: Task, outcome: Outcome) -> float:
        with _tenant_db(outcome) as db:
            mayor = _fact(db, task.params["city"], "mayor")
        return 0.0 if mayor is None else _on_page(outcome, mayor)


# ---- changes ------------------------------------------------------------------------------


class _Edit(Template):
    """A change to one article's text by the logged-in editor, checked against the golden text."""

    kind = "change"
    sites = (SITE,)

    def edit(self, task: Task) -> tuple[str, str]:
        """(the edit form's path, the text to save in it)."""
        raise NotImplementedError

    def plan(self, task: Task, button: str) -> list[Step]:
        path, text = self.edit(task)
        return [Goto(SITE, path), Fill("#wpTextbox1", text), Click(button), Answer("done")]

    def oracle(self, task: Task) -> list[Step]:
        return self.plan(task, "#wpSave")

    def half_done(self, task: Task) -> list[Step]:
        return self.plan(task, "#wpPreview")  # previewed, never saved

    def expected(self, task: Task, golden: str | None) -> bool | str:
        """The text the article must have now (compared up to whitespace), or a verdict on its own."""
        raise NotImplementedError

    def check(self, task: Task, outcome: Outcome) -> float:
        title = task.params["title"]
        with _golden_db(outcome) as golden:
            before = state.latest_text(golden, title)
        with _tenant_db(outcome) as db:
            now = state.latest_text(db, title)
            names = state.editors(db, title)
        if now is None or not names or names[-1] != task.logins[SITE]:
            return 0.0  # not saved, or not by the logged-in editor
        return float(self.accepts(task, before, now))

    def accepts(self, task: Task, before: str | None, now: str) -> bool:
        """Whether the article's text ``now`` is the requested change of ``before`` (golden)."""
        raise NotImplementedError


class AddSentence(_Edit):
    """Add a sentence to the end of a named section of an article (section editing)."""

    id = "wiki/add-sentence"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        article = _article(pick)
        number = pick.rng.randrange(1, len(article["sections"]))
        sentence = pick.rng.choice(data()["added_sentences"]).format(name=article["title"])
        params = {
            "title": article["title"],
            "section": article["sections"][number]["heading"],
            "number": number,
            "section_text": section_texts(article)[number],
            "sentence": sentence,
        }
        return params, MAIN_PAGE, {SITE: _editor(pick)}

    def edit(self, task: Task) -> tuple[str, str]:
        text = task.params["section_text"]
        prose, marker, category = text.partition("\n\n[[Category:")
        added = f"{prose} {task.params['sentence']}" + (marker + category if marker else "")
        return _path(task.params["title"], action="edit", section=str(task.params["number"])), added

    def accepts(self, task: Task, before: str | None, now: str) -> bool:
        sentence = task.params["sentence"]
        bodies = {heading: body for heading, body in state.sections(now)}
        body = bodies.get(task.params["section"])
        if before is None or body is None or sentence not in body:
            return False
        return state.squash(now.replace(sentence, "", 1)) == state.squash(before)


class FixFact(_Edit):
    """Correct one figure in an article's infobox (the lead section's edit form)."""

    id = "wiki/fix-fact"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        article = _article(pick, "city", "mountain", "river", "company", "country")
        facts = [f for f, _ in data()["infobox"][article["type"]] if f in _NUMERIC and f != "founded"]
        fact = pick.rng.choice(facts)
        old = article["facts"][fact]
        number = int(old.replace(",", ""))
        new = number + max(1, round(number * pick.rng.uniform(0.02, 0.15)))
        value = f"{new:,}" if "," in old or number >= 10_000 else str(new)
        params = {"title": article["title"], "fact": fact, "label": _label(article["type"], fact).lower(),
                  "old": old, "value": value, "lead": section_texts(article)[0]}  # fmt: skip
        return params, MAIN_PAGE, {SITE: _editor(pick)}

    def edit(self, task: Task) -> tuple[str, str]:
        fact, lead = task.params["fact"], task.params["lead"]
        lead = lead.replace(f"| {fact} = {task.params['old']}\n", f"| {fact} = {task.params['value']}\n", 1)
        return _path(task.params["title"], action="edit", section="0"), lead

    def accepts(self, task: Task, before: str | None, now: str) -> bool:
        fact = task.params["fact"]
        facts_now, facts_before = state.infobox_facts(now), state.infobox_facts(before or "")
        value = facts_now.get(fact, "")
        if not _matches(value, task.params["value"], fact):
            return False
        others_now = {k: v for k, v in facts_now.items() if k != fact}
        return others_now == {k: v for k, v in facts_before.items() if k != fact}


class CreateArticle(_Edit):
    """Create a new article with a given title and text."""

    id = "wiki/create-article"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        wiki = _wiki(pick)
        city = _article(pick, "city")["title"]
        titles = {a["title"] for a in wiki["articles"]}
        pattern = pick.rng.choice(data()["new_articles"])
        while True:
            title = pattern["title"].format(stem=pick.rng.choice(data()["place_stems"]),
                                            ending=pick.rng.choice(data()["town_endings"]))  # fmt: skip
            if title not in titles:
                break
        text = pattern["text"].format(title=title, city=city, year=pick.rng.randrange(1850, 2020))
        return {"title": title, "text": text}, MAIN_PAGE, {SITE: _editor(pick)}

    def edit(self, task: Task) -> tuple[str, str]:
        return _path(task.params["title"], action="edit"), task.params["text"]

    def accepts(self, task: Task, before: str | None, now: str) -> bool:
        return before is None and state.squash(task.params["text"]) in state.squash(now)


class AddCategory(_Edit):
    """Add an article to one of the wiki's maintenance categories (its last section's edit form)."""

    id = "wiki/add-category"

    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        article = _article(pick)
        category = pick.choice(_wiki(pick)["maintenance_categories"], shared=True)["title"]
        texts = section_texts(article)
        params = {"title": article["title"], "category": category, "number": len(texts) - 1, "last": texts[-1]}
        return params, MAIN_PAGE, {SITE: _editor(pick)}

    def edit(self, task: Task) -> tuple[str, str]:
        text = f"{task.params['last']}\n[[Category:{task.params['category']}]]"
        return _path(task.params["title"], action="edit", section=str(task.params["number"])), text

    def accepts(self, task: Task, before: str | None, now: str) -> bool:
        wanted = state.db_title(task.params["category"])
        added = [name for name in state.categories(now) if state.db_title(name) == wanted]
        if before is None or not added:
            return False
        kept = [state.db_title(name) for name in state.categories(before)]
        return all(name in {state.db_title(n) for n in state.categories(now)} for name in kept)


TEMPLATES: list[Template] = [
    InfoboxFact(),
    BirthplacePopulation(),
    ArticleCategory(),
    LastEditor(),
    ArticleCreator(),
    Superlative(),
    OpenCategory(),
    OpenHistory(),
    MayorArticle(),
    AddSentence(),
    FixFact(),
    CreateArticle(),
    AddCategory(),
]
