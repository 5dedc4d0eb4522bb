"""Questions over the generated world, each with one exact answer and the chain of reads that proves it.

Kinds (HotpotQA's bridge and comparison, plus deep-research aggregation):

* ``single``: one fact of one entity ("In what year was Dora Wardwood born?").
* ``bridge2``, ``bridge3``, ``bridge4``: a chain of 2 to 4 relations, each read in the
  article of the entity the previous one named ("In which country was the founder of the
  Valeby Bank born?": bank -> founder -> birth city -> country).
* ``comparison``: which of two entities has the smaller or larger value (2 reads);
  ``comparison_bridge``: the same over a 2-relation chain from each (4 reads).
* ``count``, ``earliest``, ``largest``: over a set one article lists (a person's works, the
  organisations a person founded, the events an organisation organised), a count of members
  under a threshold, the earliest founded, the best attended: one read per member.

Every question names its subject entity (never the answer); the answer is computed from
the world's facts. Its :class:`Hop` chain lists, in order, the documents a searcher must read,
the query that finds each (the entity's name), and the sentence in it that states the fact:
the oracle plays exactly that chain through the tools. Questions about one split's tasks are
drawn from that split's partition of subjects (see :mod:`.world`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from agentgym.environments.search.world import LISTS, RELATIONS, SUBJECT_TYPES, TEMPLATES, World

KINDS = ("single", "bridge2", "bridge3", "bridge4", "comparison", "comparison_bridge", "count", "earliest", "largest")
#: The question kinds each difficulty draws from (uniformly).
DIFFICULTIES: dict[str, tuple[str, ...]] = {
    "easy": ("single", "bridge2"),
    "medium": KINDS,
    "hard": ("bridge3", "bridge4", "comparison_bridge", "count", "earliest", "largest"),
}
MAX_DRAWS = 500
#: Aggregations range over sets of 2 (4 for counts) to this many members: one read each.
MAX_SET = 8


@dataclass(frozen=True)
class Hop:
    """One read: the document, the query that finds it, and the sentence in it that states the fact."""

    doc: int
    query: str
    evidence: str


@dataclass(frozen=True)
class Question:
    """A question, its exact answer, the reads that derive it, and the subject entities it touches."""

    kind: str
    relation: str
    text: str
    answer: str
    hops: tuple[Hop, ...]
    #: ``"person:12"``-style keys of every person, organisation, work and event on the chain.
    subjects: tuple[str, ...]
    #: The answers the question itself names (the two sides of a comparison), else empty.
    options: tuple[str, ...] = ()


@dataclass
class _Walk:
    hops: list[Hop]
    subjects: list[str]
    value: int | str  # the final fact: a number, or the final entity's name
    number: int  # the final fact as a number (the entity index for names)


def _walk(world: World, entity_type: str, index: int, path: list[str]) -> _Walk:
    """Follow ``path``'s relations from an entity, recording one hop per article read."""
    hops, subjects = [], []
    value: int | str = ""
    number = 0
    if entity_type in SUBJECT_TYPES:
        subjects.append(f"{entity_type}:{index}")
    for relation in path:
        doc = world.article(entity_type, index)
        evidence = world.document(doc).evidence[relation]
        hops.append(Hop(doc, world.names[entity_type][index], evidence))
        target = RELATIONS[(entity_type, relation)]
        number = world.fact(entity_type, index, relation)
        if target is None:
            value = str(number)
        else:
            entity_type, index = target, number
            value = world.names[target][index]
            if entity_type in SUBJECT_TYPES:
                subjects.append(f"{entity_type}:{index}")
    return _Walk(hops, subjects, value, number)


def _fill(template: str, world: World, entity_type: str, index: int, **more: str) -> str:
    kind = world.kind_name(entity_type, index) if entity_type == "work" else ""
    return template.format(a=world.names[entity_type][index], kind=kind, **more)


def make_question(world: World, kind: str, partition: str, rng: random.Random) -> Question:
    """A question of ``kind`` about subjects of ``partition``, drawn with ``rng``."""
    if kind not in KINDS:
        raise ValueError(f"unknown question kind {kind!r}; expected one of {KINDS}")
    maker = {"comparison": _comparison, "comparison_bridge": _comparison, "count": _count,
             "earliest": _extreme, "largest": _extreme}.get(kind, _chain)  # fmt: skip
    for _ in range(MAX_DRAWS):
        question = maker(world, kind, partition, rng)
        if question is not None:
            return question
    raise RuntimeError(f"no {kind} question found in {MAX_DRAWS} draws: the world is too small for this kind")


def _subject(world: World, entity_type: str, partition: str, rng: random.Random, prolific: bool = False) -> int:
    """A subject of the partition; with ``prolific``, one of its first tenth (who own most sets)."""
    span = world.partition_range(entity_type, partition)
    return span.start + rng.randrange(max(1, len(span) // 10) if prolific else len(span))


def _chain(world: World, kind: str, partition: str, rng: random.Random) -> Question | None:
    templates = TEMPLATES["questions"][kind]
    relation = rng.choice(sorted(templates))
    entity_type, *path = relation.split(".")
    index = _subject(world, entity_type, partition, rng)
    walk = _walk(world, entity_type, index, path)
    text = _fill(templates[relation], world, entity_type, index)
    return Question(kind, relation, text, str(walk.value), tuple(walk.hops), tuple(walk.subjects))


def _comparison(world: World, kind: str, partition: str, rng: random.Random) -> Question | None:
    templates = TEMPLATES["questions"][kind]
    relation = rng.choice(sorted(templates))
    entity_type, *path = relation.split(".")
    first, second = (_subject(world, entity_type, partition, rng) for _ in range(2))
    if first == second:
        return None
    walks = [_walk(world, entity_type, index, path) for index in (first, second)]
    if walks[0].number == walks[1].number:
        return None
    pick = min if templates[relation]["pick"] == "min" else max
    winner = pick((first, second), key=lambda index: walks[(first, second).index(index)].number)
    text = _fill(templates[relation]["text"], world, entity_type, first, b=world.names[entity_type][second])
    return Question(
        kind,
        relation,
        text,
        world.names[entity_type][winner],
        tuple(walks[0].hops + walks[1].hops),
        tuple(walks[0].subjects + walks[1].subjects),
        (world.names[entity_type][first], world.names[entity_type][second]),
    )


def _set_hops(
    world: World, entity_type: str, index: int, list_name: str, fact: str
) -> tuple[list[int], list[int], list[Hop], list[str]] | None:
    """The members of an entity's list, their facts, and the hops reading the list then each member."""
    members = world.members(entity_type, index, list_name)
    if not 2 <= len(members) <= MAX_SET:
        return None
    member_type = LISTS[(entity_type, list_name)]
    doc = world.article(entity_type, index)
    hops = [Hop(doc, world.names[entity_type][index], world.document(doc).evidence[list_name])]
    subjects = [f"{entity_type}:{index}"]
    values = []
    for member in members:
        walk = _walk(world, member_type, member, [fact])
        hops += walk.hops
        subjects += walk.subjects  # the member itself
        values.append(walk.number)
    return members, values, hops, subjects


def _count(world: World, kind: str, partition: str, rng: random.Random) -> Question | None:
    relation = "person.works.year"
    person = _subject(world, "person", partition, rng, prolific=True)
    found = _set_hops(world, "person", person, "works", "year")
    if found is None or len(found[0]) < 4:
        return None
    members, years, hops, subjects = found
    ordered = sorted(years)
    # The count is drawn uniformly from 0..n (so a blind guess is right at most about 1 in n + 1):
    # "before Y" counts c works when ordered[c - 1] < Y <= ordered[c].
    count = rng.randint(0, len(ordered))
    if count == 0:
        threshold = ordered[0] - rng.randint(0, 10)
    elif count == len(ordered):
        threshold = ordered[-1] + rng.randint(1, 10)
    elif ordered[count - 1] < ordered[count]:
        threshold = rng.randint(ordered[count - 1] + 1, ordered[count])
    else:
        return None
    text = TEMPLATES["questions"]["count"][relation].format(a=world.names["person"][person], year=threshold)
    return Question(kind, relation, text, str(count), tuple(hops), tuple(subjects))


def _extreme(world: World, kind: str, partition: str, rng: random.Random) -> Question | None:
    relation = next(iter(TEMPLATES["questions"][kind]))
    entity_type, list_name, fact = relation.split(".")
    index = _subject(world, entity_type, partition, rng, prolific=True)
    found = _set_hops(world, entity_type, index, list_name, fact)
    if found is None:
        return None
    members, values, hops, subjects = found
    best = min(values) if kind == "earliest" else max(values)
    if values.count(best) != 1:
        return None
    member_type = LISTS[(entity_type, list_name)]
    answer = world.names[member_type][members[values.index(best)]]
    text = TEMPLATES["questions"][kind][relation].format(a=world.names[entity_type][index])
    return Question(kind, relation, text, answer, tuple(hops), tuple(subjects))
