"""Build ``recipes.json``, TextCraft's recipe table, from minecraft-data's crafting recipes.

Run once by a maintainer (the table is shipped; nothing is downloaded at run time)::

    npm pack minecraft-data@3.117.0 && tar xzf minecraft-data-3.117.0.tgz
    python -m agentgym.environments.textcraft.build_recipes package/minecraft-data/data/pc/1.20

minecraft-data (PrismarineJS, MIT licence, see ``MINECRAFT_DATA_LICENSE.txt``) lists every
crafting-table recipe of a Minecraft version with its item tags already expanded: the stick
recipe appears once per kind of planks. This script folds such variants back into tags:

* Within the variants of one result that share a grid shape, slots that always hold the same
  item as each other form a *slot class*; the items a class takes across the variants form an
  ingredient *tag* ("planks", "oak logs", "coals"). Tags get readable names (:func:`tag_name`).
* Recolouring recipes (a white bed from a dye and a bed of any colour) are dropped.
* Unpacking a storage block into 9 items and packing nuggets into an ingot are dropped, so
  ingots and the like are base items, as in TextCraft, where they are fetched, not crafted.
* An item keeps one recipe: its first in minecraft-data's order whose ingredients can all be
  made (a stick from planks, not from bamboo). A tag keeps only members shallower than the
  recipe's result, so no recipe leads back to its own result.

Output: ``{"source": ..., "tags": {name: [items]}, "recipes": {item: {"count": n,
"ingredients": {item_or_tag: n}}}}``; items are named as in Minecraft with spaces
("oak planks").
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

OUTPUT = Path(__file__).with_name("recipes.json")
WOODS = (
    "oak",
    "spruce",
    "birch",
    "jungle",
    "acacia",
    "dark_oak",
    "mangrove",
    "cherry",
    "crimson",
    "warped",
    "bamboo",
)


def tag_name(items: frozenset[str]) -> str:
    """A readable name for a set of interchangeable items (names with underscores)."""
    for wood in WOODS:
        if items <= {f"{wood}_log", f"{wood}_wood", f"stripped_{wood}_log", f"stripped_{wood}_wood"}:
            return f"{wood} logs"
        if items <= {f"{wood}_stem", f"{wood}_hyphae", f"stripped_{wood}_stem", f"stripped_{wood}_hyphae"}:
            return f"{wood} stems"
    if items <= {"bamboo_block", "stripped_bamboo_block"}:
        return "bamboo blocks"
    if len(items) <= 3:  # e.g. coal or charcoal; also different recipes of one shape (ink sac or wither rose)
        return " or ".join(sorted(items))
    if all(item.endswith(("_log", "_wood", "_stem", "_hyphae")) for item in items):
        return "logs" if "crimson_stem" in items else "logs that burn"
    suffixes = {item.rsplit("_", 1)[-1] for item in items}
    if len(suffixes) == 1:
        suffix = suffixes.pop()
        return {"slab": "wooden slabs", "planks": "planks", "wool": "wool"}.get(suffix, f"{suffix}s")
    raise ValueError(f"no name for the tag {sorted(items)}")


def slots(variant: dict) -> list[int | None]:
    if "inShape" in variant:
        return [item for row in variant["inShape"] for item in row]
    return list(variant["ingredients"])


def fold_variants(variants: list[dict], names: dict[int, str]) -> list[tuple[int, dict[frozenset[str], int]]]:
    """The recipes of one result with tag variants folded: (output count, {item set: count})."""
    by_shape: dict[tuple, list[list[int | None]]] = defaultdict(list)
    for variant in variants:
        grid = slots(variant)
        shape = (variant["result"]["count"], "inShape" in variant, len(grid), tuple(item is None for item in grid))
        by_shape[shape].append(grid)
    recipes = []
    for (count, _, _, _), grids in by_shape.items():
        filled = [i for i, item in enumerate(grids[0]) if item is not None]
        classes: list[list[int]] = []
        for position in filled:
            for members in classes:
                if all(grid[position] == grid[members[0]] for grid in grids):
                    members.append(position)
                    break
            else:
                classes.append([position])
        ingredients = Counter({frozenset(names[grid[c[0]]] for grid in grids): len(c) for c in classes})
        recipes.append((count, dict(ingredients)))
    return recipes


def is_unwanted(result: str, count: int, ingredients: dict[frozenset[str], int]) -> bool:
    """Recolouring (a white bed from a dye and a bed of any colour), unpacking a storage block
    into 9 items, and packing nuggets into an ingot: ingots and the like stay base items."""
    kind = result.rsplit("_", 1)[-1]
    if any(len(items) > 1 and all(item.endswith("_" + kind) for item in items) for items in ingredients):
        return True
    if count == 9 and list(ingredients.values()) == [1]:
        return True
    return all(item.endswith("_nugget") for items in ingredients for item in items)


def build(data_dir: Path) -> dict:
    names = {item["id"]: item["name"] for item in json.loads((data_dir / "items.json").read_text())}
    version = json.loads((data_dir / "version.json").read_text())["minecraftVersion"]
    raw = json.loads((data_dir / "recipes.json").read_text())
    candidates: dict[str, list[tuple[int, dict[frozenset[str], int]]]] = {}
    for result_id, variants in raw.items():
        result = names[int(result_id)]
        folded = [r for r in fold_variants(variants, names) if not is_unwanted(result, *r)]
        if folded:
            candidates[result] = folded
    # Crafting depth by fixed point: base items 0; a recipe 1 + its deepest slot (a tag as deep
    # as its shallowest member); an item as deep as its first recipe (in minecraft-data's order,
    # the classic one: a stick from planks, not from bamboo) whose ingredients can all be made.
    # Items left infinite only come from themselves and are dropped.
    depth: dict[str, float] = defaultdict(lambda: math.inf)
    for item in names.values():
        if item not in candidates:
            depth[item] = 0

    def recipe_depth(recipe: tuple[int, dict[frozenset[str], int]]) -> float:
        return 1 + max(min(depth[m] for m in items) for items in recipe[1])

    chosen: dict[str, tuple[int, dict[frozenset[str], int]]] = {}
    for _ in range(100):
        changed = False
        for item, recipes in candidates.items():
            recipe = next((r for r in recipes if recipe_depth(r) < math.inf), None)
            if recipe is not None and (chosen.get(item) is not recipe or recipe_depth(recipe) != depth[item]):
                chosen[item], depth[item], changed = recipe, recipe_depth(recipe), True
        if not changed:
            break
    else:
        raise RuntimeError("recipe depths do not settle")
    recipes_out: dict[str, dict] = {}
    tags: dict[str, list[str]] = {}
    for item, (count, ingredients) in sorted(chosen.items()):
        shown: dict[str, int] = {}
        for items, number in ingredients.items():
            # Only members shallower than the result: no recipe leads back to its own result.
            usable = frozenset(m for m in items if depth[m] < depth[item])
            if len(usable) == 1:
                key = next(iter(usable))
            else:
                key = tag_name(usable)
                if tags.setdefault(key, sorted(usable)) != sorted(usable):
                    key = f"{key} ({'/'.join(sorted(usable))})"  # never happens in 1.20; keeps names unique
                    tags[key] = sorted(usable)
            shown[key.replace("_", " ")] = number
        recipes_out[item.replace("_", " ")] = {"count": count, "ingredients": shown}
    return {
        "source": (
            f"minecraft-data (PrismarineJS, MIT licence, see MINECRAFT_DATA_LICENSE.txt), data/pc/{version}/"
            "recipes.json and items.json, folded by build_recipes.py"
        ),
        "tags": {
            name.replace("_", " "): [m.replace("_", " ") for m in members] for name, members in sorted(tags.items())
        },
        "recipes": recipes_out,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    table = build(Path(argv[0]))
    OUTPUT.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n")
    print(f"wrote {len(table['recipes'])} recipes and {len(table['tags'])} tags to {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
