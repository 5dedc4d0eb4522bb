"""The grounding tasks on disk: built once per source from its pages, then only read.

A source's folder is ``<root>/<source>-<digest>/`` where ``<root>`` is ``data_dir`` if given, else
``<cache>/grounding`` (``<cache>``: ``$AGENTGYM_CACHE`` or ``~/.cache/agentgym``) and the digest
covers the source's entry in ``sources.yaml`` (but its description), the screen size and :data:`DATA_VERSION`. It holds

* ``screens/NNNNN.png``: the screenshots (the page at the screen size, as the source env showed it),
  and beside each ``NNNNN.rgb.z``, the same pixels as raw RGB rows compressed with zlib level 1: what
  ``reset`` reads, since inflating it is several times quicker than decoding a PNG (a folder without
  them gets them on first use; one that cannot be written is read from the PNGs);
* ``tasks.jsonl``: one task a line, train first, then dev, then test: ``split``, ``source``, ``screen`` (the PNG's
  path relative to the folder), ``page`` (env id / task id / step it came from), ``group``,
  ``kind``, ``instruction``, ``role``, ``box`` ([left, top, width, height] in screen pixels);
* ``manifest.json``: the source, screen, tasks and pages per split, and the build's duration.

Paths inside are relative, so a folder can be copied to another machine (point ``AGENTGYM_CACHE``
or ``data_dir=`` at the copy). :func:`load_or_build` builds a missing folder under a file lock (one
process builds, the others wait and read it); a folder is written aside and renamed into place.

**The task index, and screenshots on first use.** A build's ``tasks.jsonl`` is shipped in the package
(``tasks/<folder name>.jsonl.gz``, :func:`write_index`; the folder's name carries the digest, so an index
stands only for the spec it was built from). Where a source has one, :func:`load_or_build` builds nothing:
the tasks come from the index and each screenshot is rendered when a task of it is first used
(:func:`screen_of`, or :func:`render_screens` for many at once: the preparation of the tasks a run plays),
into the same folder, one process per screenshot (a file lock), written aside and renamed into place. The page
is played again from its key (env id, task id, oracle steps) and read: every task of the screenshot must
find its phrase and box among the page's descriptions, or the render fails rather than show a page the
tasks do not describe. Without an index (a spec changed), the source is built in full as above.

How a source is built: its env ids are taken in turn, a few task ids each round (:data:`BATCH`);
each page's group falls in a split by a stable hash (``TaskSplits.bucket``, in proportion to the
split counts), and up to ``tasks_per_page`` of its descriptions (:func:`~.describe.pick`: the kinds in
turn, each element once before any twice) become tasks of that split until it holds its count; a task equal to one
already made (same page group, phrase and box: instances that look alike) is not made twice. An env whose pages
all fall in splits already full is not played again; one that gave no task in its first round
(pages without describable elements, such as canvases) is dropped, and with the source's
``drop_after_barren_round``, one that gave no task in any round (its instances look like those already
taken). Several envs of a round render at
once (:func:`build_workers`, :meth:`~.capture.PageSource.rendered`) and their pages are consumed in the
ids' order, so the tasks are the same for any number of workers; a page whose split is already full is
loaded (its URL gives its group) but not captured (no screenshot, no elements read), and an env all of whose
pages so far fell in full splits is dropped before its next round is rendered, not after it.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import random
import time
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from agentgym.contract.core import SPLIT_NAMES, TaskSplits
from agentgym.utils.files import build_once, cache_root, file_lock, written_aside

#: Bumped when what a build writes changes (every source folder's name then changes).
DATA_VERSION = 1
#: Task ids each env plays per round of a build.
BATCH = 6
#: Rounds over a source's env ids after which a build that has not filled its splits gives up (a source's
#: ``max_rounds`` may say fewer).
MAX_ROUNDS = 500
#: Environment variable: how many envs a build renders at once (default :func:`build_workers`).
WORKERS_VARIABLE = "AGENTGYM_GROUNDING_WORKERS"
_SOURCES_FILE = Path(__file__).with_name("sources.yaml")
#: The shipped task indexes (:func:`write_index`).
INDEX_DIR = Path(__file__).with_name("tasks")
#: The suffix of a screenshot's fast copy (raw RGB rows, zlib level 1): what ``reset`` reads.
FAST_SUFFIX = ".rgb.z"


@cache
def sources_config() -> dict[str, Any]:
    """``sources.yaml``: ``{"screen": [w, h], "sources": {name: spec}}``."""
    return yaml.safe_load(_SOURCES_FILE.read_text())


def screen_size() -> tuple[int, int]:
    """The (width, height) every source renders at."""
    width, height = sources_config()["screen"]
    return int(width), int(height)


def source_spec(name: str) -> dict[str, Any]:
    """One source's entry of ``sources.yaml``; ``ValueError`` naming the known ones otherwise."""
    sources = sources_config()["sources"]
    if name not in sources:
        raise ValueError(f"unknown grounding source {name!r}; the sources are {', '.join(sources)}")
    return sources[name]


def source_splits(name: str) -> TaskSplits:
    """How many tasks each split of source ``name`` holds."""
    counts = source_spec(name)["splits"]
    return TaskSplits(**{split: int(counts[split]) for split in SPLIT_NAMES})


def source_folder(name: str, data_dir: str | Path | None = None) -> Path:
    """Where source ``name``'s tasks live (see the module docstring)."""
    root = Path(data_dir) if data_dir is not None else cache_root() / "grounding"
    spec = {field: value for field, value in source_spec(name).items() if field != "description"}
    key = json.dumps({"version": DATA_VERSION, "screen": screen_size(), "source": spec}, sort_keys=True)
    return root / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class SourceData:
    """A built source: its folder and its tasks per split (each a dict, as in ``tasks.jsonl``)."""

    name: str
    folder: Path
    tasks: dict[str, list[dict[str, Any]]]
    manifest: dict[str, Any]


def load(folder: Path, name: str) -> SourceData | None:
    """The source built in ``folder``, or ``None`` if the folder is missing or incomplete."""
    manifest_file, tasks_file = folder / "manifest.json", folder / "tasks.jsonl"
    if not manifest_file.is_file() or not tasks_file.is_file():
        return None
    manifest = json.loads(manifest_file.read_text())
    tasks: dict[str, list[dict[str, Any]]] = {split: [] for split in SPLIT_NAMES}
    with tasks_file.open() as lines:
        for line in lines:
            task = json.loads(line)
            tasks[task["split"]].append(task)
    expected = source_splits(name).counts()
    if {split: len(found) for split, found in tasks.items()} != expected:
        return None
    return SourceData(name, folder, tasks, manifest)


def load_or_build(name: str, data_dir: str | Path | None = None, report: Callable[[str], None] = print) -> SourceData:
    """Source ``name``'s tasks: from its built folder, else from its shipped index (screenshots rendered on first
    use), else built into its folder first (file-locked)."""
    folder = source_folder(name, data_dir)
    built = load(folder, name)
    if built is None:
        indexed = load_index(name, folder)
        if indexed is not None:
            return indexed
    return built or build_once(folder, lambda path: load(path, name), lambda path: build(name, path, report))


def index_path(name: str) -> Path:
    """Where source ``name``'s shipped task index lives (named after its folder, so after its spec's digest)."""
    return INDEX_DIR / f"{source_folder(name).name}.jsonl.gz"


def load_index(name: str, folder: Path) -> SourceData | None:
    """Source ``name``'s tasks from its shipped index, their screenshots to be rendered in ``folder``; ``None``
    without an index for the source's current spec."""
    path = index_path(name)
    if not path.is_file():
        return None
    tasks: dict[str, list[dict[str, Any]]] = {split: [] for split in SPLIT_NAMES}
    for line in gzip.decompress(path.read_bytes()).splitlines():
        task = json.loads(line)
        tasks[task["split"]].append(task)
    counts = {split: len(found) for split, found in tasks.items()}
    if counts != source_splits(name).counts():
        raise RuntimeError(f"{path} holds {counts} tasks, sources.yaml says {source_splits(name).counts()}")
    return SourceData(name, folder, tasks, {"source": name, "tasks": counts, "index": str(path)})


def write_index(data: SourceData) -> Path:
    """Write the shipped task index of a source built in full (its ``tasks.jsonl``, gzipped, reproducibly)."""
    path = index_path(data.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(task) + "\n" for split in SPLIT_NAMES for task in data.tasks[split])
    path.write_bytes(gzip.compress(lines.encode(), compresslevel=9, mtime=0))
    return path


def screen_of(data: SourceData, task: dict[str, Any]) -> np.ndarray:
    """The screenshot of ``task`` (one of ``data``'s), rendered into the folder first (silently) if it is not there."""
    if not (data.folder / task["screen"]).is_file():
        render_screens(data, [task], lambda line: None)
    return read_screen(data.folder, task["screen"])


def render_screens(
    data: SourceData, tasks: Sequence[dict[str, Any]], report: Callable[[str], None] = print, workers: int = 1
) -> int:
    """Render the screenshots of ``tasks`` that ``data``'s folder lacks (see the module docstring), the pages of
    one env id in one env, ``workers`` env ids at once; returns how many were rendered here."""
    by_env: dict[str, dict[str, dict[str, Any]]] = {}
    for task in tasks:
        if not (data.folder / task["screen"]).is_file():
            by_env.setdefault(task["page"].rsplit("/", 2)[0], {}).setdefault(task["screen"], task)
    if not by_env:
        return 0
    on_screen: dict[str, list[dict[str, Any]]] = {}
    for task in (task for split in SPLIT_NAMES for task in data.tasks[split]):
        on_screen.setdefault(task["screen"], []).append(task)
    (data.folder / "screens").mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report(f"grounding {data.name}: rendering {sum(map(len, by_env.values()))} screenshots of {len(by_env)} envs")

    def render(env_id: str, screens: dict[str, dict[str, Any]]) -> int:
        from agentgym.environments.grounding.capture import PageSource

        source, made, env = PageSource(data.name, source_spec(data.name)), 0, None
        try:
            for screen, task in screens.items():
                with file_lock(data.folder / f"{screen}.lock"):
                    if (data.folder / screen).is_file():  # another process rendered it meanwhile
                        continue
                    if env is None:
                        env = source.make(env_id)
                    pixels = checked_pixels(source.page(env, task["page"]), on_screen[screen])
                    write_screen(data.folder / screen, pixels)
                    made += 1
        finally:
            if env is not None:
                env.close()
        return made

    with ThreadPoolExecutor(max(1, workers), thread_name_prefix="grounding-render") as pool:
        made = sum(pool.map(lambda job: render(*job), by_env.items()))
    report(f"grounding {data.name}: {made} screenshots rendered in {time.perf_counter() - started:.1f} s")
    return made


def checked_pixels(page: Any, tasks: Sequence[dict[str, Any]]) -> np.ndarray:
    """``page``'s screenshot, once every task of it is found among the page's descriptions (its phrase, its box
    within a pixel): else ``RuntimeError``, since the page no longer looks as the tasks say."""
    from agentgym.environments.grounding.describe import describe

    width, height = screen_size()
    if page.pixels is None or page.pixels.shape != (height, width, 3):
        raise RuntimeError(f"{page.key}: no screenshot of {width} x {height} pixels")
    found = [(f"Click {d.phrase}.", d.element.box) for d in describe(page.elements, width, height)]
    for task in tasks:
        if not any(
            instruction == task["instruction"] and all(abs(a - b) <= 1 for a, b in zip(box, task["box"], strict=True))
            for instruction, box in found
        ):
            raise RuntimeError(
                f"grounding: page {page.key} rendered here does not show {task['instruction']!r} at {task['box']} "
                "as its task index says (other fonts or a changed page?); its screenshot is not written"
            )
    return page.pixels


def write_screen(png: Path, pixels: np.ndarray) -> None:
    """Write a screenshot and its fast copy, each atomically (the PNG last: its presence says both are there)."""
    from PIL import Image

    write_fast_screen(png, pixels)
    partial = png.with_name(f".{png.name}.{os.getpid()}")  # a killed writer's leftover is no ``*.png``
    Image.fromarray(pixels).save(partial, format="PNG", compress_level=6)
    os.replace(partial, png)


def build_workers() -> int:
    """How many envs a build renders at once: ``$AGENTGYM_GROUNDING_WORKERS``, else one per CPU core, at most 4.

    The output is the same for any number (pages are consumed in order); the time is Chromium's, in its own
    processes, so more workers than cores only add contention."""
    configured = os.environ.get(WORKERS_VARIABLE, "").strip()
    if configured:
        try:
            workers = int(configured)
        except ValueError:
            raise ValueError(f"{WORKERS_VARIABLE} must be a whole number, got {configured!r}") from None
        if workers < 1:
            raise ValueError(f"{WORKERS_VARIABLE} must be at least 1, got {workers}")
        return workers
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def build(name: str, folder: Path, report: Callable[[str], None] = print, workers: int | None = None) -> SourceData:
    """Render source ``name``'s pages and write its tasks into ``folder`` (see the module docstring), ``workers``
    envs at once (default :func:`build_workers`); the output does not depend on ``workers``."""
    from PIL import Image

    from agentgym.environments.grounding.capture import PageSource
    from agentgym.environments.grounding.describe import describe, pick

    spec, splits, (width, height) = source_spec(name), source_splits(name), screen_size()
    need = splits.counts()
    per_page = int(spec["tasks_per_page"])
    source = PageSource(name, spec)
    started = time.perf_counter()
    tasks: dict[str, list[dict[str, Any]]] = {split: [] for split in SPLIT_NAMES}
    pages: dict[str, int] = dict.fromkeys(SPLIT_NAMES, 0)
    groups_of: dict[str, set[str]] = {}
    seen: set[tuple[str, str, tuple[int, ...]]] = set()
    yielded: dict[str, int] = {}
    rendered = captured = 0  # pages loaded, and of them those whose screenshot and elements were read
    active = source.env_ids()
    # An env that shows other views from round to round shows other groups too: it is never played out.
    shows_views = bool(source.views or source.variants)
    drop_barren = bool(spec.get("drop_after_barren_round", False))
    workers = build_workers() if workers is None else workers

    def wanted(group: str) -> bool:
        """Whether a page of ``group`` can still give tasks (its split is not full): pages of a full split are
        not captured. Called by the render threads; a split only fills up, so a refusal is never premature."""
        split = splits.bucket(group)
        return len(tasks[split]) < need[split]

    def played_out(env_id: str) -> bool:
        """Whether every page ``env_id`` showed so far fell in a split now full: it is not played again (the rule
        below, applied before its next round as well as after each; a source's env shows the same groups
        from round to round, MiniWoB++'s one page group per env, so skipping it skips only pages of full splits)."""
        shown = groups_of.get(env_id)
        return not shows_views and bool(shown) and all(not wanted(group) for group in shown)

    report(f"grounding {name}: rendering pages of {len(active)} envs for {splits.total} tasks, {workers} at once")
    with written_aside(folder) as work:
        (work / "screens").mkdir()
        for round_number in range(int(spec.get("max_rounds", MAX_ROUNDS))):
            if all(len(tasks[split]) >= need[split] for split in SPLIT_NAMES) or not active:
                break
            task_ids = range(round_number * BATCH, (round_number + 1) * BATCH)
            for env_id, env_pages in source.rendered(list(active), task_ids, wanted, workers, played_out):
                yielded_before = yielded.get(env_id, 0)
                for page in env_pages:
                    rendered += 1
                    captured += page.captured
                    groups_of.setdefault(env_id, set()).add(page.group)
                    split = splits.bucket(page.group)
                    room = need[split] - len(tasks[split])
                    if room <= 0:
                        continue
                    assert page.pixels is not None, f"{page.key}: a wanted page was not captured"
                    if page.pixels.shape != (height, width, 3):
                        raise RuntimeError(
                            f"{page.key}: screenshot of shape {page.pixels.shape}, expected "
                            f"({height}, {width}, 3): set the source's size in sources.yaml's make_kwargs"
                        )
                    rng = random.Random(f"{name}|{page.key}")
                    fresh = [
                        description
                        for description in describe(page.elements, width, height)
                        if _task_key(page.group, description) not in seen
                    ]
                    chosen = pick(fresh, min(per_page, room), rng)
                    if not chosen:
                        continue
                    screen = f"screens/{sum(pages.values()):05d}.png"
                    Image.fromarray(page.pixels).save(work / screen, compress_level=6)
                    write_fast_screen(work / screen, page.pixels)
                    pages[split] += 1
                    yielded[env_id] = yielded.get(env_id, 0) + len(chosen)
                    for description in chosen:
                        seen.add(_task_key(page.group, description))
                        element = description.element
                        tasks[split].append(
                            {
                                "split": split,
                                "source": name,
                                "screen": screen,
                                "page": page.key,
                                "group": page.group,
                                "kind": description.kind,
                                "instruction": f"Click {description.phrase}.",
                                "role": element.role,
                                "box": list(element.box),
                            }
                        )
                full = {split for split in SPLIT_NAMES if len(tasks[split]) >= need[split]}
                barren = yielded.get(env_id, 0) == yielded_before
                if (barren and (round_number == 0 or drop_barren)) or (
                    not shows_views and {splits.bucket(group) for group in groups_of.get(env_id, ())} <= full
                ):
                    active.remove(env_id)
            report(
                f"grounding {name}: round {round_number + 1}: "
                + ", ".join(f"{split} {len(tasks[split])}/{need[split]}" for split in SPLIT_NAMES)
                + f" ({rendered} pages loaded, {captured} captured, {time.perf_counter() - started:.0f} s)"
            )
        missing = {split: need[split] - len(tasks[split]) for split in SPLIT_NAMES if len(tasks[split]) < need[split]}
        if missing:
            raise RuntimeError(f"grounding source {name} gave too few tasks: {missing} missing; add pages to it")
        with (work / "tasks.jsonl").open("w") as out:
            for split in SPLIT_NAMES:
                for task in tasks[split]:
                    out.write(json.dumps(task) + "\n")
        manifest = {
            "version": DATA_VERSION,
            "source": name,
            "spec": spec,
            "screen": [width, height],
            "tasks": {split: len(tasks[split]) for split in SPLIT_NAMES},
            "pages": pages,
            "build_seconds": round(time.perf_counter() - started, 1),
        }
        (work / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    report(f"grounding {name}: {splits.total} tasks on {sum(pages.values())} screenshots in {folder}")
    found = load(folder, name)
    assert found is not None
    return found


def _task_key(group: str, description: Any) -> tuple[str, str, tuple[int, ...]]:
    """What makes two tasks the same: one page group, one phrase, one place (a page seeded alike twice)."""
    return group, description.phrase, tuple(round(value) for value in description.element.box)


def fast_screen_path(png: Path) -> Path:
    """Where the fast copy of the screenshot ``png`` lives: ``NNNNN.rgb.z`` beside ``NNNNN.png``."""
    return png.with_suffix(FAST_SUFFIX)


def write_fast_screen(png: Path, pixels: np.ndarray) -> None:
    """Write the fast copy of ``png`` (its pixels, raw RGB rows, zlib level 1), atomically."""
    target = fast_screen_path(png)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    partial.write_bytes(zlib.compress(np.ascontiguousarray(pixels, dtype=np.uint8).tobytes(), 1))
    os.replace(partial, target)


def read_screen(folder: Path, screen: str, size: tuple[int, int] | None = None) -> np.ndarray:
    """A screenshot of a source folder as uint8 (height, width, 3): from its fast copy where there is one
    (a zlib inflate, about 7x quicker than decoding the PNG), else from the PNG, which then gets its fast copy
    (a cache made before fast copies, or one missing some); a folder that cannot be written keeps reading PNGs."""
    width, height = size or screen_size()
    fast = fast_screen_path(folder / screen)
    try:
        raw = zlib.decompress(fast.read_bytes())
        if len(raw) == width * height * 3:
            return np.frombuffer(raw, dtype=np.uint8).reshape(height, width, 3)
    except (OSError, zlib.error):
        pass
    pixels = read_png(folder / screen)
    with contextlib.suppress(OSError):
        write_fast_screen(folder / screen, pixels)
    return pixels


def read_png(png: Path) -> np.ndarray:
    """A PNG screenshot as uint8 (height, width, 3)."""
    from PIL import Image

    with Image.open(png) as image:
        return np.asarray(image.convert("RGB"))
