"""The household engine: a room of receptacles and objects, played with ALFWorld's commands.

Pure Python and small: a step parses one command, checks its preconditions (raising
:class:`~agentgym.contract.core.InvalidAction` with the reason when one fails) and changes the state.
The rules follow ALFWorld's PDDL domain: you stand at one receptacle at a time (or in the
middle of the room at the start), hold at most one object, must open a closed receptacle to
take from it or put into it, clean at a sink basin, heat at a microwave and cool at a fridge
while holding the object (heating undoes cooling and the reverse), and switch a lamp with
``use`` where it stands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agentgym.contract.core import InvalidAction, quote
from agentgym.environments.household.catalog import CHANGES, LAMPS, OBJECTS, RECEPTACLES


@dataclass
class Receptacle:
    name: str  # "cabinet 2"
    kind: str  # "cabinet"
    is_open: bool = False
    contents: list[str] = field(default_factory=list)

    @property
    def openable(self) -> bool:
        return RECEPTACLES[self.kind].openable

    @property
    def reachable(self) -> bool:
        """Whether its contents can be seen, taken and added to."""
        return self.is_open or not self.openable


@dataclass
class Thing:
    """An object (``apple 1``) or a lamp (``desklamp 1``, which stays where it is)."""

    name: str
    kind: str
    place: str | None  # the receptacle that holds it; None while held
    clean: bool = False
    hot: bool = False
    cool: bool = False
    on: bool = False

    @property
    def is_lamp(self) -> bool:
        return self.kind in LAMPS

    def accepts(self, receptacle: Receptacle) -> bool:
        return not self.is_lamp and receptacle.kind in OBJECTS[self.kind].places


def article(noun: str) -> str:
    """``noun`` with its indefinite article: "an apple 1", "a mug"."""
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def a_list(names: list[str]) -> str:
    """ "an apple 1, and a mug 2", as ALFWorld lists things ("nothing" when empty)."""
    if not names:
        return "nothing"
    items = [article(name) for name in names]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f", and {items[-1]}"


_PATTERNS = [
    (re.compile(r"^go to (?P<target>.+)$"), "go"),
    (re.compile(r"^open (?P<target>.+)$"), "open"),
    (re.compile(r"^close (?P<target>.+)$"), "close"),
    (re.compile(r"^take (?P<thing>.+) from (?P<target>.+)$"), "take"),
    (re.compile(r"^move (?P<thing>.+) to (?P<target>.+)$"), "move"),
    (re.compile(r"^put (?P<thing>.+?) (?:in/on|in|on|into|onto) (?P<target>.+)$"), "move"),
    (re.compile(r"^(?P<change>clean|heat|cool) (?P<thing>.+) with (?P<target>.+)$"), "change"),
    (re.compile(r"^use (?P<thing>.+)$"), "use"),
    (re.compile(r"^examine (?P<target>.+)$"), "examine"),
    (re.compile(r"^look$"), "look"),
    (re.compile(r"^(?:inventory|inv|i)$"), "inventory"),
]


class World:
    """The state of one room and the rules of every command."""

    def __init__(self, receptacles: list[Receptacle], things: list[Thing]) -> None:
        self.receptacles = {receptacle.name: receptacle for receptacle in receptacles}
        self.things = {thing.name: thing for thing in things}
        self.location: str | None = None  # None: the middle of the room
        self.held: str | None = None

    # ---- what one sees --------------------------------------------------------------

    def overview(self) -> str:
        return f"You are in the middle of a room. Looking quickly around you, you see {a_list(list(self.receptacles))}."

    def receptacle_view(self, receptacle: Receptacle) -> str:
        if not receptacle.reachable:
            return f"The {receptacle.name} is closed."
        seen = a_list(receptacle.contents)
        if receptacle.openable:
            return f"The {receptacle.name} is open. In it, you see {seen}."
        return f"On the {receptacle.name}, you see {seen}."

    def visible(self) -> list[str]:
        """The things at the receptacle you stand at, where you can see them."""
        if self.location is None:
            return []
        here = self.receptacles[self.location]
        return list(here.contents) if here.reachable else []

    # ---- the commands ---------------------------------------------------------------

    def execute(self, command: str) -> str:
        """Apply ``command`` (lower-case, single spaces) and return ALFWorld-style feedback."""
        for pattern, verb in _PATTERNS:
            match = pattern.match(command)
            if match:
                return getattr(self, f"_{verb}")(**match.groupdict())
        raise InvalidAction(
            "unknown command; use go to, open, close, take ... from, move ... to, clean/heat/cool ... with, "
            "use, examine, look or inventory"
        )

    def _receptacle(self, name: str) -> Receptacle:
        if name not in self.receptacles:
            hint = "an object, not a receptacle" if name in self.things else "not in this room"
            raise InvalidAction(f"{quote(name)} is {hint}; the receptacles are: {', '.join(self.receptacles)}")
        return self.receptacles[name]

    def _thing(self, name: str) -> Thing:
        if name not in self.things:
            hint = "a receptacle, not an object" if name in self.receptacles else "not in this room"
            raise InvalidAction(f"{quote(name)} is {hint}")
        return self.things[name]

    def _here(self, receptacle: Receptacle) -> None:
        if self.location != receptacle.name:
            raise InvalidAction(f"you are not at the {receptacle.name}; go to it first")

    def _holding(self, thing: Thing) -> None:
        if self.held != thing.name:
            held = f"you hold the {self.held}" if self.held else "your hands are empty"
            raise InvalidAction(f"you are not holding the {thing.name} ({held})")

    def _go(self, target: str) -> str:
        receptacle = self._receptacle(target)
        if self.location == receptacle.name:
            raise InvalidAction(f"you are already at the {receptacle.name}")
        self.location = receptacle.name
        return f"You arrive at {receptacle.name}. {self.receptacle_view(receptacle)}"

    def _open(self, target: str) -> str:
        receptacle = self._receptacle(target)
        self._here(receptacle)
        if not receptacle.openable:
            raise InvalidAction(f"the {receptacle.name} cannot be opened; its contents are in plain view")
        if receptacle.is_open:
            raise InvalidAction(f"the {receptacle.name} is already open")
        receptacle.is_open = True
        return f"You open the {receptacle.name}. {self.receptacle_view(receptacle)}"

    def _close(self, target: str) -> str:
        receptacle = self._receptacle(target)
        self._here(receptacle)
        if not receptacle.openable:
            raise InvalidAction(f"the {receptacle.name} cannot be closed")
        if not receptacle.is_open:
            raise InvalidAction(f"the {receptacle.name} is already closed")
        receptacle.is_open = False
        return f"You close the {receptacle.name}."

    def _take(self, thing: str, target: str) -> str:
        item, receptacle = self._thing(thing), self._receptacle(target)
        self._here(receptacle)
        if not receptacle.reachable:
            raise InvalidAction(f"the {receptacle.name} is closed; open it first")
        if item.place != receptacle.name:
            raise InvalidAction(f"there is no {item.name} in the {receptacle.name}")
        if item.is_lamp:
            raise InvalidAction(f"the {item.name} stays where it is; 'use {item.name}' switches it")
        if self.held is not None:
            raise InvalidAction(f"your hands are full: you hold the {self.held}; put it somewhere first")
        receptacle.contents.remove(item.name)
        item.place, self.held = None, item.name
        return f"You pick up the {item.name} from the {receptacle.name}."

    def _move(self, thing: str, target: str) -> str:
        item, receptacle = self._thing(thing), self._receptacle(target)
        self._holding(item)
        self._here(receptacle)
        if not receptacle.reachable:
            raise InvalidAction(f"the {receptacle.name} is closed; open it first")
        if not item.accepts(receptacle):
            raise InvalidAction(f"{article(item.kind)} does not go in or on {article(receptacle.kind)}")
        receptacle.contents.append(item.name)
        item.place, self.held = receptacle.name, None
        return f"You move the {item.name} to the {receptacle.name}."

    def _change(self, change: str, thing: str, target: str) -> str:
        item, receptacle = self._thing(thing), self._receptacle(target)
        appliance, adjective = CHANGES[change]
        self._holding(item)
        if receptacle.kind != appliance:
            raise InvalidAction(f"you {change} things with {article(appliance)}, not {article(receptacle.kind)}")
        self._here(receptacle)
        if not getattr(OBJECTS[item.kind], f"{change}able"):
            raise InvalidAction(f"{article(item.kind)} cannot be {change}ed")
        if change == "clean":
            item.clean = True
        elif change == "heat":
            item.hot, item.cool = True, False
        else:
            item.cool, item.hot = True, False
        return f"You {change} the {item.name} using the {receptacle.name}. The {item.name} is now {adjective}."

    def _use(self, thing: str) -> str:
        item = self._thing(thing)
        if not item.is_lamp:
            raise InvalidAction(f"the {item.name} cannot be used; only lamps (desklamp, floorlamp) can")
        if self.location != item.place:
            raise InvalidAction(f"the {item.name} is not here; it is at the {item.place}")
        item.on = not item.on
        return f"You turn {'on' if item.on else 'off'} the {item.name}."

    def _examine(self, target: str) -> str:
        if target in self.receptacles:
            receptacle = self.receptacles[target]
            self._here(receptacle)
            return self.receptacle_view(receptacle)
        item = self._thing(target)
        if self.held != item.name and item.name not in self.visible():
            raise InvalidAction(f"you cannot see the {item.name} from here")
        if item.is_lamp:
            return f"The {item.name} is {'on' if item.on else 'off'}."
        states = [word for word, flag in (("clean", item.clean), ("hot", item.hot), ("cool", item.cool)) if flag]
        if not states:
            return f"There's nothing special about {item.name}."
        return f"The {item.name} is {' and '.join(states)}."

    def _look(self) -> str:
        if self.location is None:
            return self.overview()
        return f"You are facing the {self.location}. {self.receptacle_view(self.receptacles[self.location])}"

    def _inventory(self) -> str:
        return f"You are carrying: {a_list([self.held])}." if self.held else "You are not carrying anything."

    # ---- the legal commands now ---------------------------------------------------

    def admissible(self) -> list[str]:
        """Every command whose preconditions hold now (ALFWorld's admissible commands)."""
        commands = [f"go to {name}" for name in self.receptacles if name != self.location]
        commands += ["inventory", "look"]
        if self.held:
            commands.append(f"examine {self.held}")
        if self.location is not None:
            here = self.receptacles[self.location]
            commands.append(f"examine {here.name}")
            if here.openable:
                commands.append(f"{'close' if here.is_open else 'open'} {here.name}")
            for name in self.visible():
                thing = self.things[name]
                commands.append(f"examine {name}")
                if thing.is_lamp:
                    commands.append(f"use {name}")
                elif self.held is None:
                    commands.append(f"take {name} from {here.name}")
            if self.held:
                item = self.things[self.held]
                if here.reachable and item.accepts(here):
                    commands.append(f"move {item.name} to {here.name}")
                for change, (appliance, _) in CHANGES.items():
                    if here.kind == appliance and getattr(OBJECTS[item.kind], f"{change}able"):
                        commands.append(f"{change} {item.name} with {here.name}")
        return sorted(commands)
