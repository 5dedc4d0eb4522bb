"""TextCraft: craft a Minecraft item from base materials with text commands.

Data: Minecraft 1.20's crafting-table recipes from minecraft-data (PrismarineJS, MIT licence),
folded into ``recipes.json`` by ``build_recipes.py``: one recipe per craftable item, with
ingredient *tags* where Minecraft accepts several items ("planks": any kind of planks;
"oak logs": an oak log or a stripped oak log). Items without a recipe (logs, iron ingots,
sugar cane...) are *base items*, fetched from the environment. An item's crafting
depth is the longest chain of crafts from base items to it (a tag counts as its shallowest
member): oak planks 1, stick 2, wooden pickaxe 3.

Task: craft one goal item of depth 1 to 4 (the id fixes which depths). The first observation
shows the goal and crafting commands: the recipes of every item on the way to the goal (a tag
resolved to one of its items, as TextCraft does) and a few unrelated recipes as distractors,
in random order, plus the members of each tag shown. Goals go to splits by their name, so no
train goal is a test goal.

Actions (case-insensitive; item names as shown, ``oak_planks``, ``minecraft:oak_planks`` and
simple plurals accepted):

* ``get N item``: take N of a base item (a tag fetches its first base item).
* ``craft N item using N1 ingredient1, N2 ingredient2, ...``: craft with the item's recipe.
  N must be a multiple of what one craft yields, and each ingredient's count the matching
  multiple of the recipe's. An ingredient that is a tag may be named by the tag (any of its
  items in the inventory are used, in alphabetical order) or by one of its items.
* ``inventory``: look at the inventory (it is also shown after every step).

A command that cannot be executed (unknown item, ``get`` of a craftable item, wrong counts or
ingredients, not enough in the inventory) is invalid: nothing changes and the feedback says
why, quoting the recipe where it helps.

Reward: 1 on the step the goal item enters the inventory (success, score 1), 0 otherwise.
Termination: success. Truncation: the registered step limit.

Oracle: a planner that, from the current inventory, expands the goal's recipe tree depth
first (using what the inventory holds first, a tag's item already held when there is enough,
else the task's item) and plays the first command of that plan; it recovers from any detour.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from agentgym.contract.core import InvalidAction, TextEnv
from agentgym.environments.textcraft import SPLITS

RECIPES_FILE = Path(__file__).with_name("recipes.json")
DISTRACTORS = 5
MAX_COUNT = 10_000
_GET = re.compile(r"get\s+(\d{1,6})\s+(.+)")
_CRAFT = re.compile(r"craft\s+(\d{1,6})\s+(.+?)\s+using\s+(.+)")
_INGREDIENT = re.compile(r"(\d{1,6})\s+(.+)")


@dataclass(frozen=True)
class Recipe:
    """One crafting recipe: ``count`` of ``result`` from ``ingredients`` (item or tag, number)."""

    result: str
    count: int
    ingredients: tuple[tuple[str, int], ...]

    def command(self, choose: dict[str, str] | None = None, times: int = 1) -> str:
        """The craft command for ``times`` crafts, tags replaced by ``choose[tag]`` where given."""
        parts = ", ".join(f"{number * times} {(choose or {}).get(name, name)}" for name, number in self.ingredients)
        return f"craft {self.count * times} {self.result} using {parts}"


@dataclass(frozen=True)
class CraftingBook:
    """The recipe table: recipes by result, tags by name, crafting depths of items and tags."""

    recipes: dict[str, Recipe]
    tags: dict[str, tuple[str, ...]]
    depth: dict[str, int]

    def members(self, name: str) -> tuple[str, ...]:
        """The items a recipe slot named ``name`` accepts (a tag's members, or the item itself)."""
        return self.tags.get(name, (name,))

    def is_base(self, item: str) -> bool:
        return item not in self.recipes and item not in self.tags

    def resolve(self, text: str) -> str | None:
        """The item or tag a player means by ``text``, or ``None``."""
        name = " ".join(text.lower().removeprefix("minecraft:").replace("_", " ").split())
        for candidate in (name, name[:-1] if name.endswith("s") else "", name[:-2] if name.endswith("es") else ""):
            if candidate in self.depth:
                return candidate
        return None


@cache
def crafting_book() -> CraftingBook:
    """The shipped recipe table (read once per process; it is small and never changes)."""
    table = json.loads(RECIPES_FILE.read_text())
    recipes = {
        item: Recipe(item, entry["count"], tuple(sorted(entry["ingredients"].items())))
        for item, entry in table["recipes"].items()
    }
    tags = {name: tuple(members) for name, members in table["tags"].items()}
    depth: dict[str, int] = {}

    def depth_of(name: str) -> int:
        if name not in depth:
            if name in tags:
                depth[name] = min(depth_of(member) for member in tags[name])
            elif name in recipes:
                depth[name] = 1 + max(depth_of(ingredient) for ingredient, _ in recipes[name].ingredients)
            else:
                depth[name] = 0
        return depth[name]

    for name in [*recipes, *tags]:
        depth_of(name)
    for members in tags.values():
        for member in members:
            depth_of(member)
    for recipe in recipes.values():
        for ingredient, _ in recipe.ingredients:
            depth_of(ingredient)
    return CraftingBook(recipes, tags, depth)


class TextCraftEnv(TextEnv):
    """Crafting Minecraft items with text commands; see the module docstring for the rules."""

    metadata = {**TextEnv.metadata, "inline_safe": True}
    splits = SPLITS

    def __init__(self, depths: tuple[int, ...] = (1, 2, 3, 4), render_mode: str | None = None) -> None:
        super().__init__(render_mode)
        self.book = crafting_book()
        depths = tuple(sorted(set(depths)))
        self.goals_by_depth = {
            d: sorted(item for item in self.book.recipes if self.book.depth[item] == d) for d in depths
        }
        if not depths or not all(self.goals_by_depth.values()):
            raise ValueError(f"depths must be a non-empty subset of 1..4, got {depths!r}")
        self.depths = depths
        self.goal = ""
        #: The item the task uses for each tag on the way to the goal.
        self.choices: dict[str, str] = {}
        self.shown: list[Recipe] = []
        self.inventory: Counter[str] = Counter()

    @property
    def action_syntax(self) -> str:
        return (
            "Commands: 'get N item' takes N of a base item (one without a crafting recipe); "
            "'craft N item using N1 ingredient1, N2 ingredient2' crafts with a recipe (N a multiple of "
            "what one craft makes, the ingredients scaled alike; a tag such as 'planks' may be named as "
            "the tag or as one of its items); 'inventory' shows your items. "
            "Reply with one command, e.g. 'Action: get 1 oak log'."
        )

    def _generate(self, task_id: int) -> str:
        rng = self.task_rng(task_id, self.depths)

        def goals() -> Iterator[tuple[str, str]]:
            while True:
                goal = rng.choice(self.goals_by_depth[rng.choice(self.depths)])
                yield goal, goal

        self.goal = self.splits.first_in_split(task_id, goals())
        self.choices = {}
        needed = self._choose(self.goal, rng)
        others = sorted(set(self.book.recipes) - set(needed))
        self.shown = [self.book.recipes[item] for item in needed + rng.sample(others, DISTRACTORS)]
        rng.shuffle(self.shown)
        self.inventory = Counter()
        lines = [recipe.command(self.choices) for recipe in self.shown]
        tags = sorted({name for recipe in self.shown for name, _ in recipe.ingredients if name in self.book.tags})
        lines += [f"({tag}: any of {', '.join(self.book.tags[tag])})" for tag in tags]
        return f"You are crafting in Minecraft. Goal: craft 1 {self.goal}.\n\nCrafting commands:\n" + "\n".join(lines)

    def _choose(self, item: str, rng: random.Random) -> list[str]:
        """The craftable items on the way to ``item`` (itself first), choosing an item per tag."""
        if self.book.is_base(item):
            return []
        needed = [item]
        for name, _ in self.book.recipes[item].ingredients:
            if name in self.book.tags:
                if name not in self.choices:
                    members = self.book.tags[name]
                    shallowest = min(self.book.depth[member] for member in members)
                    self.choices[name] = rng.choice([m for m in members if self.book.depth[m] == shallowest])
                name = self.choices[name]
            needed += [other for other in self._choose(name, rng) if other not in needed]
        return needed

    def _describe(self) -> str:
        if not self.inventory:
            return "Inventory: empty"
        return "Inventory: " + ", ".join(f"[{item}] {count}" for item, count in sorted(self.inventory.items()))

    def _execute(self, command: str) -> str:
        text = " ".join(command.split())
        lowered = text.lower()
        if lowered == "inventory":
            return "You look at your inventory."
        if match := _GET.fullmatch(lowered):
            return self._get(int(match[1]), match[2])
        if match := _CRAFT.fullmatch(lowered):
            return self._craft(int(match[1]), match[2], match[3])
        if lowered.startswith("craft"):
            raise InvalidAction("expected 'craft N item using N1 ingredient1, N2 ingredient2, ...'.")
        raise InvalidAction("expected 'get N item', 'craft N item using N1 ingredient1, ...' or 'inventory'.")

    def _get(self, count: int, name: str) -> str:
        item = self._item(name)
        if item in self.book.tags:
            base = [member for member in self.book.tags[item] if self.book.is_base(member)]
            if not base:
                raise InvalidAction(
                    f"{item} are craftable, not base items; craft one of {', '.join(self.book.tags[item])}."
                )
            item = base[0]
        if not self.book.is_base(item):
            raise InvalidAction(f"{item} is not a base item; craft it: {self.book.recipes[item].command()}.")
        _check_count(count)
        self.inventory[item] += count
        return f"Got {count} {item}."

    def _craft(self, count: int, name: str, ingredients_text: str) -> str:
        item = self._item(name)
        recipe = self.book.recipes.get(item)
        if recipe is None:
            raise InvalidAction(f"{item} has no crafting recipe; it is a base item: get it.")
        _check_count(count)
        if count % recipe.count:
            raise InvalidAction(f"one craft makes {recipe.count} {item}; craft a multiple of {recipe.count}.")
        times = count // recipe.count
        given: dict[str, int] = {}
        for part in re.split(r",|\band\b", ingredients_text):
            match = _INGREDIENT.fullmatch(part.strip())
            if match is None:
                raise InvalidAction(f"cannot read the ingredient {part.strip()!r}; write 'N item'.")
            ingredient = self._item(match[2])
            given[ingredient] = given.get(ingredient, 0) + int(match[1])
        expected = f"the recipe is: {recipe.command(times=times)}"
        plan: list[tuple[tuple[str, ...], int]] = []  # (items that may be used, how many)
        for slot, number in recipe.ingredients:
            named = [g for g in given if g == slot or g in self.book.tags.get(slot, ())]
            if len(named) != 1 or given[named[0]] != number * times:
                raise InvalidAction(f"wrong ingredients for {count} {item}; {expected}.")
            plan.append((self.book.members(named[0]), number * times))
            del given[named[0]]
        if given:
            raise InvalidAction(f"{', '.join(given)} is not in the recipe; {expected}.")
        for usable, number in plan:
            held = sum(self.inventory[member] for member in usable)
            if held < number:
                raise InvalidAction(f"not enough {' or '.join(usable)}: you need {number} and have {held}.")
        for usable, number in plan:
            for member in usable:
                used = min(number, self.inventory[member])
                self.inventory[member] -= used
                number -= used
        self.inventory = +self.inventory  # drop items used up
        self.inventory[item] += count
        feedback = f"Crafted {count} {item}."
        if item == self.goal:
            self.success = self.terminated = True
            self.score = 1.0
            feedback += f" You crafted the goal, {item}!"
        return feedback

    def _item(self, name: str) -> str:
        item = self.book.resolve(name)
        if item is None:
            raise InvalidAction(f"there is no item called {name.strip()!r}.")
        return item

    def oracle_action(self) -> str:
        steps: list[str] = []
        self._plan(self.goal, 1, Counter(self.inventory), steps)
        return steps[0] if steps else "inventory"

    def _plan(self, item: str, count: int, inventory: Counter[str], steps: list[str]) -> None:
        """Append the commands that put ``count`` more ``item`` into ``inventory`` and use them up."""
        used = min(count, inventory[item])
        inventory[item] -= used
        count -= used
        if count == 0:
            return
        recipe = self.book.recipes.get(item)
        if recipe is None:
            steps.append(f"get {count} {item}")
            return
        times = math.ceil(count / recipe.count)
        choose = {}
        for slot, number in recipe.ingredients:
            members = self.book.members(slot)
            held = [m for m in members if inventory[m] >= number * times]
            member = held[0] if held else self.choices.get(slot, members[0])
            choose[slot] = member
            self._plan(member, number * times, inventory, steps)
        steps.append(recipe.command(choose, times))
        inventory[item] += recipe.count * times - count

    def random_action(self, rng: random.Random) -> str:
        """A random command about the shown recipes: get one of their items, craft one, or look."""
        recipe = rng.choice(self.shown)
        slot, _ = rng.choice(recipe.ingredients)
        base = [m for m in self.book.members(slot) if self.book.is_base(m)] or [recipe.result]
        return rng.choice(
            [
                "inventory",
                f"get {rng.randint(1, 4)} {rng.choice(base)}",
                recipe.command(self.choices, rng.randint(1, 2)),
            ]
        )


def _check_count(count: int) -> None:
    if not 1 <= count <= MAX_COUNT:
        raise InvalidAction(f"the count must be between 1 and {MAX_COUNT}.")
