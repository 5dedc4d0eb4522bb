"""The generated encyclopedia: fictional but consistent entities, their facts, and their documents.

Entities: countries, cities, people, organisations, works (novels, films, albums, ...) and
events. Facts are typed relations and numbers: a person's birth year and birth city, an
organisation's founding year, founder, headquarters and staff, a work's year, creator and
publisher, an event's year, city, organiser and attendance, a city's country, founding
year and population, a country's capital and population. Dates are consistent (an
organisation is founded after its founder's 25th year, a work appears after its creator's
18th, an event after its organiser's founding).

Every entity has one encyclopedia article. Articles are written in one of several styles
(prose, an infobox, a narrative; ``data/templates.yaml``) drawn by the document's index,
padded with 0 to 30 paragraphs that mention other entities but state none of the subject's
facts, so documents range from a few lines to several pages, with the facts near the top,
the bottom or in between. Secondary sources follow the articles: news reports on events and
reviews of works (restating the facts) and unverified forum threads whose claims about a
person's birth conflict with the article (minor sources an agent must not trust). Names
share first names, surnames and title words, so searches return near-namesakes, but no name's
search terms are a subset of another's (the exact name finds its article).

Splits by entity: people, organisations, works and events (the subjects) are partitioned
into train (80%), dev and test (10% each); every relation between subjects stays inside a
partition (a test work's creator and publisher are test entities), so a question about a
test subject touches no train subject. Places (cities, countries) are shared background.

The world is a pure function of :class:`WorldConfig` (Python's ``random.Random``, stable
across versions); :func:`shared_world` keeps one per configuration per process.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import string
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from itertools import combinations
from typing import Any

import numpy as np
import yaml

from agentgym.retrieval import tokenize

#: Bumped whenever generation or rendering changes, so cached indexes are rebuilt.
GENERATOR_VERSION = 1
PARTITIONS = ("train", "dev", "test")
PARTITION_SHARES = (0.8, 0.1, 0.1)
SUBJECT_TYPES = ("person", "organisation", "work", "event")
#: Document order: articles by type, then the secondary sources.
DOCUMENT_TYPES = ("country", "city", "person", "organisation", "work", "event")
SECONDARY_KINDS = ("news", "review", "forum")
#: The share of works, organisations and events whose creator, founder or organiser is drawn from the
#: first tenth of the partition's people or organisations (the prolific ones aggregation questions ask about).
PROLIFIC_DRAWS = 0.5


def _data(name: str) -> Any:
    text = resources.files("agentgym.environments.search").joinpath("data", name).read_text(encoding="utf-8")
    return json.loads(text) if name.endswith(".json") else yaml.safe_load(text)


NAMES: dict[str, list[str]] = _data("names.json")
TEMPLATES: dict[str, Any] = _data("templates.yaml")


@dataclass(frozen=True)
class WorldConfig:
    """The size and seed of a world; every other count follows from ``people``.

    The default (40,000 people) has 111,080 documents; ``people=2_000`` (tests) 5,562.
    """

    people: int = 40_000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.people < 500:
            raise ValueError("a world needs at least 500 people (its partitions must hold prolific creators)")

    @property
    def counts(self) -> dict[str, int]:
        people = self.people
        return {
            "country": max(12, people // 500),
            "city": max(60, people * 3 // 40),
            "person": people,
            "organisation": people // 4,
            "work": people * 3 // 4,
            "event": people // 5,
        }

    @property
    def secondary(self) -> int:
        return self.people // 2

    @property
    def key(self) -> str:
        """A name for this world in caches."""
        return f"people{self.people}-seed{self.seed}-v{GENERATOR_VERSION}"


@functools.cache
def source_digest() -> str:
    """A digest of the generator's code and data: a cached index built from other sources is stale."""
    digest = hashlib.blake2b(digest_size=8)
    package = resources.files("agentgym.environments.search")
    for part in (
        package.joinpath("world.py"),
        package.joinpath("data", "names.json"),
        package.joinpath("data", "templates.yaml"),
    ):
        digest.update(part.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class Document:
    """A rendered document: its title, its text (paragraphs separated by blank lines), its fact sentences."""

    title: str
    text: str
    #: relation -> the sentence (without its full stop) that states it, for articles.
    evidence: dict[str, str]


#: (entity type, relation) -> the type of entity it points to, or None for a number.
RELATIONS: dict[tuple[str, str], str | None] = {
    ("person", "birth_year"): None,
    ("person", "birth_city"): "city",
    ("organisation", "founded_year"): None,
    ("organisation", "founder"): "person",
    ("organisation", "headquarters"): "city",
    ("organisation", "employees"): None,
    ("work", "year"): None,
    ("work", "creator"): "person",
    ("work", "publisher"): "organisation",
    ("event", "year"): None,
    ("event", "city"): "city",
    ("event", "organiser"): "organisation",
    ("event", "attendance"): None,
    ("city", "country"): "country",
    ("city", "founded_year"): None,
    ("city", "population"): None,
    ("country", "capital"): "city",
    ("country", "population"): None,
}
#: (entity type, list) -> the type of its members: the sets aggregation questions range over.
LISTS: dict[tuple[str, str], str] = {
    ("person", "works"): "work",
    ("person", "founded"): "organisation",
    ("organisation", "events"): "event",
    ("organisation", "published"): "work",
}


class World:
    """The entities and facts of one :class:`WorldConfig`, and their documents (rendered on demand)."""

    def __init__(self, config: WorldConfig = WorldConfig()) -> None:
        self.config = config
        self.counts = config.counts
        self.names: dict[str, list[str]] = {}
        self.columns: dict[tuple[str, str], np.ndarray] = {}
        self.kind: dict[str, np.ndarray] = {}
        self._generate(random.Random(f"agentgym-search-world:{config.seed}:{config.people}"))
        self.offsets: dict[str, int] = {}
        offset = 0
        for entity_type in DOCUMENT_TYPES:
            self.offsets[entity_type] = offset
            offset += self.counts[entity_type]
        self.secondary_offset = offset
        self.num_docs = offset + config.secondary
        #: Recently rendered documents (shared by every env of the process; a search renders its results).
        self.document = functools.lru_cache(maxsize=1024)(self._render)

    # ---- generation -----------------------------------------------------------------

    def partition_range(self, entity_type: str, partition: str) -> range:
        """The indices of ``entity_type``'s entities in ``partition`` (train, dev or test)."""
        count = self.counts[entity_type]
        bounds = [0]
        for share in PARTITION_SHARES:
            bounds.append(min(count, bounds[-1] + round(count * share)))
        bounds[-1] = count
        position = PARTITIONS.index(partition)
        return range(bounds[position], bounds[position + 1])

    def partition_of(self, entity_type: str, index: int) -> str:
        for partition in PARTITIONS:
            if index in self.partition_range(entity_type, partition):
                return partition
        raise IndexError(f"{entity_type} {index} is outside the world")

    def _generate(self, rng: random.Random) -> None:
        counts = self.counts
        # A name's search terms (stemmed, without stop words) are never a subset of another name's,
        # so searching a name's exact words ranks its article above its namesakes'.
        names_terms: set[frozenset[str]] = set()
        within_names: set[frozenset[str]] = set()

        def unique(make: Any) -> str:
            for _ in range(1000):
                name = make()
                terms = frozenset(tokenize(name))
                if terms in within_names or any(
                    frozenset(part) in names_terms
                    for size in range(1, len(terms))
                    for part in combinations(terms, size)
                ):
                    continue
                names_terms.add(terms)
                within_names.update(
                    frozenset(part) for size in range(1, len(terms) + 1) for part in combinations(terms, size)
                )
                return name
            raise RuntimeError("the name parts cannot make enough distinct names for this world size")

        def column(entity_type: str, relation: str, values: list[int]) -> None:
            self.columns[(entity_type, relation)] = np.array(values, dtype=np.int64)

        pick = rng.choice
        surnames = [head + tail.lower() for head in NAMES["surname_heads"] for tail in NAMES["surname_tails"]]

        # Places: countries first, then cities (the first city of each country is its capital).
        self.names["country"] = [
            unique(lambda: pick(NAMES["country_roots"]) + pick(NAMES["country_tails"]))
            for _ in range(counts["country"])
        ]

        def city_name() -> str:
            name = pick(NAMES["city_heads"]) + pick(NAMES["city_tails"])
            return name if rng.random() < 0.6 else f"{pick(NAMES['city_qualifiers'])} {name}"

        self.names["city"] = [unique(city_name) for _ in range(counts["city"])]
        city_country = [i if i < counts["country"] else rng.randrange(counts["country"]) for i in range(counts["city"])]
        column("city", "country", city_country)
        column("city", "founded_year", [rng.randint(800, 1880) for _ in range(counts["city"])])
        column("city", "population", [int(rng.lognormvariate(11.5, 1.2)) + 500 for _ in range(counts["city"])])
        column("country", "capital", list(range(counts["country"])))
        column("country", "population", [rng.randint(300_000, 90_000_000) for _ in range(counts["country"])])

        # People.
        self.names["person"] = [
            unique(lambda: f"{pick(NAMES['first_names'])} {pick(surnames)}") for _ in range(counts["person"])
        ]
        birth_year = [rng.randint(1750, 1960) for _ in range(counts["person"])]
        column("person", "birth_year", birth_year)
        column("person", "birth_city", [rng.randrange(counts["city"]) for _ in range(counts["person"])])
        self.kind["person"] = np.array([rng.randrange(len(NAMES["occupations"])) for _ in range(counts["person"])])

        def skewed(entity_type: str, partition: str) -> int:
            """An entity of the partition: half the draws from its first tenth (so some are prolific)."""
            span = self.partition_range(entity_type, partition)
            if rng.random() < PROLIFIC_DRAWS:
                return span.start + rng.randrange(max(1, len(span) // 10))
            return span.start + rng.randrange(len(span))

        # Organisations, founded by people of their partition.
        kinds = NAMES["org_kinds"]
        org_kind, founder, founded, names = [], [], [], []
        for index in range(counts["organisation"]):
            partition = self.partition_of("organisation", index)
            kind = rng.randrange(len(kinds))
            word = kinds[kind]
            if rng.random() < 0.5:
                names.append(unique(lambda word=word: f"{pick(surnames)} {word}"))
            else:
                names.append(unique(lambda word=word: f"{pick(NAMES['adjectives'])} {pick(NAMES['nouns'])} {word}"))
            person = skewed("person", partition)
            org_kind.append(kind)
            founder.append(person)
            founded.append(min(2015, birth_year[person] + rng.randint(25, 60)))
        self.names["organisation"] = names
        self.kind["organisation"] = np.array(org_kind)
        column("organisation", "founder", founder)
        column("organisation", "founded_year", founded)
        column("organisation", "headquarters", [rng.randrange(counts["city"]) for _ in range(counts["organisation"])])
        column(
            "organisation", "employees", [int(rng.lognormvariate(5, 1.5)) + 3 for _ in range(counts["organisation"])]
        )
        publishers = {
            partition: [
                i
                for i in self.partition_range("organisation", partition)
                if kinds[org_kind[i]] in NAMES["publisher_kinds"]
            ]
            for partition in PARTITIONS
        }

        # Works, created by people of their partition and published by its publishers.
        work_kinds = NAMES["work_kinds"]

        def title() -> str:
            adjective, noun, other = pick(NAMES["adjectives"]), pick(NAMES["nouns"]), pick(NAMES["nouns"])
            shape = rng.randrange(4)
            if shape == 0:
                return f"The {adjective} {noun}"
            if shape == 1:
                return f"{noun} of the {adjective} {other}"
            if shape == 2:
                return f"The {noun} of {pick(surnames)}"
            return f"{adjective} {noun}s of {pick(NAMES['first_names'])}"

        creator, work_year, publisher, kind_of_work, titles = [], [], [], [], []
        for index in range(counts["work"]):
            partition = self.partition_of("work", index)
            person = skewed("person", partition)
            titles.append(unique(title))
            creator.append(person)
            work_year.append(min(2020, birth_year[person] + rng.randint(18, 70)))
            publisher.append(pick(publishers[partition]))
            kind_of_work.append(rng.randrange(len(work_kinds)))
        self.names["work"] = titles
        self.kind["work"] = np.array(kind_of_work)
        column("work", "creator", creator)
        column("work", "year", work_year)
        column("work", "publisher", publisher)

        # Events, organised by organisations of their partition.
        event_kinds = NAMES["event_kinds"]
        organiser, event_year, kind_of_event, event_names = [], [], [], []
        for index in range(counts["event"]):
            partition = self.partition_of("event", index)
            kind = rng.randrange(len(event_kinds))
            shape = rng.randrange(3)
            word = event_kinds[kind]
            if shape == 0:
                make = lambda word=word: f"{pick(NAMES['event_heads'])} {pick(NAMES['nouns'])} {word}"  # noqa: E731
            elif shape == 1:
                make = lambda word=word: f"{pick(surnames)} {word}"  # noqa: E731
            else:
                make = lambda word=word: f"{pick(NAMES['adjectives'])} {pick(NAMES['event_heads'])} {word}"  # noqa: E731
            event_names.append(unique(make))
            org = skewed("organisation", partition)
            organiser.append(org)
            event_year.append(min(2024, founded[org] + rng.randint(1, 80)))
            kind_of_event.append(kind)
        self.names["event"] = event_names
        self.kind["event"] = np.array(kind_of_event)
        column("event", "organiser", organiser)
        column("event", "year", event_year)
        column("event", "city", [rng.randrange(counts["city"]) for _ in range(counts["event"])])
        column("event", "attendance", [int(rng.lognormvariate(8, 1.3)) + 20 for _ in range(counts["event"])])

        # Secondary sources: (kind, subject index).
        subjects = {"news": "event", "review": "work", "forum": "person"}
        self.secondary = []
        for _ in range(self.config.secondary):
            kind = pick(SECONDARY_KINDS)
            self.secondary.append((kind, rng.randrange(counts[subjects[kind]])))

    # ---- facts ----------------------------------------------------------------------

    def fact(self, entity_type: str, index: int, relation: str) -> int:
        """The value of ``relation`` for an entity: a number, or the index of the entity it points to."""
        return int(self.columns[(entity_type, relation)][index])

    def value_text(self, entity_type: str, index: int, relation: str) -> str:
        """The fact as an answer: the name of the entity it points to, or the number."""
        target = RELATIONS[(entity_type, relation)]
        value = self.fact(entity_type, index, relation)
        return self.names[target][value] if target else str(value)

    @cached_property
    def _members(self) -> dict[tuple[str, str], list[list[int]]]:
        """For each list relation, every entity's members (ascending)."""
        sources = {
            ("person", "works"): ("work", "creator"),
            ("person", "founded"): ("organisation", "founder"),
            ("organisation", "events"): ("event", "organiser"),
            ("organisation", "published"): ("work", "publisher"),
        }
        members: dict[tuple[str, str], list[list[int]]] = {}
        for key, (member_type, relation) in sources.items():
            lists: list[list[int]] = [[] for _ in range(self.counts[key[0]])]
            for member, owner in enumerate(self.columns[(member_type, relation)].tolist()):
                lists[owner].append(member)
            members[key] = lists
        return members

    def members(self, entity_type: str, index: int, relation: str) -> list[int]:
        """The members of a list relation (a person's works, an organisation's events, ...)."""
        return self._members[(entity_type, relation)][index]

    def kind_name(self, entity_type: str, index: int) -> str:
        """The kind of a work, organisation or event ("novel", "Press", "Festival"), or ""."""
        table = {"work": "work_kinds", "organisation": "org_kinds", "event": "event_kinds"}.get(entity_type)
        return NAMES[table][int(self.kind[entity_type][index])] if table else ""

    # ---- documents ------------------------------------------------------------------

    def article(self, entity_type: str, index: int) -> int:
        """The document index of an entity's article."""
        return self.offsets[entity_type] + index

    def entity_of(self, doc: int) -> tuple[str, int] | None:
        """The entity whose article ``doc`` is, or ``None`` for a secondary source."""
        for entity_type in reversed(DOCUMENT_TYPES):
            if doc >= self.offsets[entity_type] and doc < self.secondary_offset:
                return entity_type, doc - self.offsets[entity_type]
        return None

    def title(self, doc: int) -> str:
        """A document's title, without rendering its text."""
        entity = self.entity_of(doc)
        if entity is not None:
            return self.names[entity[0]][entity[1]]
        kind, index = self.secondary[doc - self.secondary_offset]
        subject = {"news": "event", "review": "work", "forum": "person"}[kind]
        return TEMPLATES["secondary"][kind]["title"].format(name=self.names[subject][index])

    @staticmethod
    def doc_id(doc: int) -> str:
        """The id agents see and open: ``doc`` followed by the index."""
        return f"doc{doc}"

    def doc_index(self, doc_id: str) -> int | None:
        """The index of a document id, or ``None`` if there is no such document."""
        text = doc_id.strip().lower()
        if not text.startswith("doc") or not text[3:].isdigit():
            return None
        doc = int(text[3:])
        return doc if 0 <= doc < self.num_docs else None

    def _render(self, doc: int) -> Document:
        """Render document ``doc`` (deterministic: the same world always writes the same text); see ``document``."""
        rng = random.Random(f"doc:{self.config.seed}:{doc}")
        entity = self.entity_of(doc)
        if entity is None:
            return self._secondary(doc, rng)
        return self._article(*entity, rng)

    def texts(self) -> Iterator[str]:
        """Every document's indexed text, in document order: the title twice (a title boost), then the body."""
        for doc in range(self.num_docs):
            document = self._render(doc)
            yield f"{document.title}\n{document.title}\n{document.text}"

    def _fields(self, entity_type: str, index: int) -> dict[str, Any]:
        fields: dict[str, Any] = {"name": self.names[entity_type][index]}
        for (owner, relation), _ in RELATIONS.items():
            if owner == entity_type:
                fields[relation] = self.value_text(entity_type, index, relation)
        if entity_type == "person":
            fields["occupation"] = NAMES["occupations"][int(self.kind["person"][index])]
        kind = self.kind_name(entity_type, index)
        if kind:
            fields["kind"], fields["kind_lower"] = kind, kind.lower()
        return fields

    def _article(self, entity_type: str, index: int, rng: random.Random) -> Document:
        styles = TEMPLATES["articles"][entity_type]
        style = styles[rng.randrange(len(styles))]
        fields = self._fields(entity_type, index)
        evidence = {relation: template.format(**fields) for relation, template in style["facts"].items()}
        fact_lines = [f"{sentence}." for sentence in evidence.values()]
        rng.shuffle(fact_lines)
        for (owner, relation), _ in LISTS.items():
            if owner != entity_type:
                continue
            items = [
                self.names[LISTS[(owner, relation)]][member] for member in self.members(entity_type, index, relation)
            ]
            if items:
                sentence = style["lists"][relation].format(**fields, items="; ".join(items))
                evidence[relation] = sentence
                fact_lines.append(f"{sentence}.")
        paragraphs = self._filler(fields["name"], rng)
        facts = " ".join(fact_lines) if style["lead"] != "{name}" else "\n".join(fact_lines)
        lead = style["lead"].format(**fields)
        place = rng.random()
        if place < 0.5 or not paragraphs:
            body = [lead, facts, *paragraphs]
        elif place < 0.75:
            body = [lead, *paragraphs, facts]
        else:
            middle = rng.randrange(len(paragraphs) + 1)
            body = [lead, *paragraphs[:middle], facts, *paragraphs[middle:]]
        return Document(fields["name"], "\n\n".join(body), evidence)

    def _secondary(self, doc: int, rng: random.Random) -> Document:
        kind, index = self.secondary[doc - self.secondary_offset]
        template = TEMPLATES["secondary"][kind]
        entity_type = {"news": "event", "review": "work", "forum": "person"}[kind]
        fields = self._fields(entity_type, index)
        if kind == "forum":  # a conflicting claim: never the true year or city
            fields["wrong_year"] = int(self.fact("person", index, "birth_year")) + rng.choice((-3, -2, -1, 1, 2, 3))
            city = (
                self.fact("person", index, "birth_city") + 1 + rng.randrange(self.counts["city"] - 1)
            ) % self.counts["city"]
            fields["wrong_city"] = self.names["city"][city]
        fields["filler"] = " ".join(self._filler_sentences(fields["name"], rng, rng.randint(1, 4)))
        return Document(template["title"].format(**fields), template["text"].format(**fields), {})

    def _filler(self, name: str, rng: random.Random) -> list[str]:
        """0 to 30 paragraphs about other entities: most documents short, some long."""
        roll = rng.random()
        count = rng.randint(0, 2) if roll < 0.7 else rng.randint(3, 8) if roll < 0.9 else rng.randint(12, 30)
        return [" ".join(self._filler_sentences(name, rng, rng.randint(2, 4))) for _ in range(count)]

    def _filler_sentences(self, name: str, rng: random.Random, count: int) -> list[str]:
        templates, counts, names = _FILLER, self.counts, self.names
        sentences = []
        for _ in range(count):
            template, fields = templates[int(rng.random() * len(templates))]
            values = {"name": name}
            if "other_person" in fields:
                values["other_person"] = names["person"][int(rng.random() * counts["person"])]
            if "other_org" in fields:
                values["other_org"] = names["organisation"][int(rng.random() * counts["organisation"])]
            if "other_city" in fields:
                values["other_city"] = names["city"][int(rng.random() * counts["city"])]
            if "other_work" in fields:
                work = int(rng.random() * counts["work"])
                values["other_work"], values["other_kind"] = names["work"][work], self.kind_name("work", work)
            sentences.append(template.format(**values))
        return sentences


#: The filler templates with the fields each one uses (only those are drawn).
_FILLER = [
    (template, frozenset(field for _, field, _, _ in string.Formatter().parse(template) if field))
    for template in TEMPLATES["filler"]
]

_WORLDS: dict[WorldConfig, World] = {}
_WORLDS_LOCK = threading.Lock()


def shared_world(config: WorldConfig = WorldConfig()) -> World:
    """The process-wide world of ``config``, generated on first use."""
    with _WORLDS_LOCK:
        world = _WORLDS.get(config)
        if world is None:
            world = _WORLDS[config] = World(config)
        return world
