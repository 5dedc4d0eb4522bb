"""The shop's search index: built in one batch (what ``ShopSite.build_golden`` does) vs haystack's default batches.

Both sides run django-oscar's ``rebuild_index`` on the shop's golden database into an empty folder of their own,
alternating, ``--rounds`` times each (the machine is shared: each side's best round is kept, with the median of the
per-round ratios). After each round the two indexes are compared: the same documents and stored fields, and the same
hits with the same scores for a few queries (the one-batch index must answer as the batched one did). Needs the shop
installed (``agentgym webapps up shop``, or any run that used it).

    python benchmarks/shop_index.py                 # writes results/shop_index.{md,json}
    python benchmarks/shop_index.py --rounds 2 --no-write
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from recording import record

from agentgym.environments.webapps.shop.site import INDEX_BATCH, SERVER, ShopSite

#: haystack's own default batch size (``update_index --batch-size``).
HAYSTACK_BATCH = 1000
QUERIES = ["shirt", "blue", "cotton", "speaker", "pan", "jacket wool", "usb", "oak", "camera", "red shirt", "steel"]

#: Run in the shop's venv: the two indexes' documents, stored fields (but the update time) and hits compared.
COMPARE = r"""
import json, sys
from whoosh import index
from whoosh.qparser import QueryParser
first, second = (index.open_dir(path, indexname="MAIN") for path in sys.argv[1:3])
queries = json.loads(sys.argv[3])
with first.searcher() as a, second.searcher() as b:
    def stored(searcher):
        return sorted((dict(fields, date_updated=None) for fields in searcher.all_stored_fields()),
                      key=lambda fields: fields["django_id"])
    assert a.doc_count() == b.doc_count() and stored(a) == stored(b), "documents differ"
    for query in queries:
        parsed = QueryParser("text", first.schema).parse(query)
        hits = [[(hit["django_id"], round(hit.score, 6)) for hit in s.search(parsed, limit=None)] for s in (a, b)]
        assert hits[0] == hits[1], f"hits differ for {query!r}"
    print(json.dumps({"documents": a.doc_count(), "segments": [len(first._segments()), len(second._segments())]}))
"""


def build_index(site: ShopSite, batch: int) -> tuple[float, Path]:
    """Seconds ``rebuild_index --batch-size batch`` took into a new folder, and that folder's index."""
    home = Path(tempfile.mkdtemp(prefix="shop-index-"))
    (home / "golden").mkdir()
    env = site._env("shop_golden") | {"SHOP_HOME": str(home)}
    command = [str(site.venv / "bin" / "python"), "-m", "django", "rebuild_index", "--noinput", "-v", "0"]
    started = time.perf_counter()
    subprocess.run([*command, "--batch-size", str(batch)], env=env, cwd=SERVER, check=True)
    return time.perf_counter() - started, home / "golden" / "whoosh"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    site = ShopSite()
    if not (site.venv / "bin" / "python").exists():
        raise SystemExit("the shop is not installed here: run `agentgym webapps up shop` first")
    site.postgres.ensure_running()
    seconds: dict[str, list[float]] = {"batched": [], "one batch": []}
    shape: dict = {}
    for _ in range(args.rounds):
        batched_s, batched = build_index(site, HAYSTACK_BATCH)
        one_s, one = build_index(site, INDEX_BATCH)
        seconds["batched"].append(batched_s)
        seconds["one batch"].append(one_s)
        compared = subprocess.run(
            [str(site.venv / "bin" / "python"), "-c", COMPARE, str(batched), str(one), json.dumps(QUERIES)],
            capture_output=True,
            text=True,
            check=True,
        )
        shape = json.loads(compared.stdout)
        for index in (batched, one):
            shutil.rmtree(index.parent.parent)
    ratio = min(seconds["one batch"]) / min(seconds["batched"])
    median = statistics.median(one / batched for one, batched in zip(seconds["one batch"], seconds["batched"]))
    row = {"rounds": args.rounds, "seconds": seconds, "ratio": ratio, "median_round_ratio": median, **shape}
    table = "\n".join(
        [
            "| products | batched (1,000): best s | one batch: best s | one batch ÷ batched | median round ratio "
            "| segments (batched / one) | same hits and scores |",
            "|---|---|---|---|---|---|---|",
            f"| {shape['documents']:,} | {min(seconds['batched']):.1f} | {min(seconds['one batch']):.1f} | "
            f"{ratio:.2f} | {median:.2f} | {shape['segments'][0]} / {shape['segments'][1]} | "
            f"yes ({len(QUERIES)} queries) |",
        ]
    )
    print(table)
    if args.no_write:
        return
    setup = f"rebuild_index on the shop's golden database, {args.rounds} alternating rounds, each side's best"
    record("shop_index", "The shop's search index: one batch vs haystack's batches", setup, table, row)


if __name__ == "__main__":
    main()
