"""Benchmark: what writing a pass's matches costs in each way they could be stored.

    .venv/bin/python bench/match_layouts.py --pairs 200000 --rounds 3

Issue #30 asked whether storing matches as one row per match group (naming its items), or
fewer index entries, would bring a full pass near 3x a bare hash join. This writes the same
result, `--pairs` posting legs of half as many transfers (two legs each, one notification per
transfer, as a settled transfer is), into each layout on a fresh migrated PostgreSQL database,
each INSERT .. SELECT timed alone, and prints each as a ratio to the bare join of those rows
(the bench's reference, as in bench/reconcile.py), min / median / max over `--rounds`:

- `matches`: the store's own table (migrations), a row per leg, its three partial indexes;
- `matches, posting index only`: the same rows without the transfer and notification indexes
  (what dropping the two would save; the console and unmatching read by them);
- `group + link`: a row per transfer (rule, transfer, notification: indexed by both) and a row
  per posting naming its group (keyed by posting, indexed by group);
- `heap only`: the same rows as `matches` with no index and no key: no layout that stores a row
  per leg writes for less.

Run it on an idle machine; ratios are same-run.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Final

import psycopg
from harness import plain, postgres_database, spread

#: The result to write: one row per leg, two legs per transfer, a notification per transfer.
SOURCE: Final = (
    "CREATE TEMP TABLE legs AS SELECT g AS posting_id, (g + 1) / 2 AS transfer_id, "
    "(g + 1) / 2 AS notification_id FROM generate_series(1, %(pairs)s) g"
)
#: The reference: the rows a pass joins, joined bare (hash join, counted, nothing written).
BARE_JOIN: Final = (
    "SELECT count(*) FROM legs a JOIN legs b "
    "ON b.transfer_id = a.transfer_id AND b.posting_id = a.posting_id"
)
#: Each layout: statements that make its (empty) tables, and the INSERTs that write the result.
LAYOUTS: Final[dict[str, tuple[list[str], list[str]]]] = {
    "matches": (
        ["TRUNCATE matches"],
        [
            "INSERT INTO matches (rule, posting_id, transfer_id, notification_id, matched_at, "
            "matched_by) SELECT 'receipt', posting_id, transfer_id, notification_id, now(), "
            "'recon' FROM legs"
        ],
    ),
    "matches, posting index only": (
        [
            "CREATE TABLE m_one (LIKE matches INCLUDING DEFAULTS INCLUDING CONSTRAINTS)",
            "ALTER TABLE m_one ADD PRIMARY KEY (id)",
            "CREATE INDEX ON m_one (posting_id) WHERE posting_id IS NOT NULL",
        ],
        [
            "INSERT INTO m_one (rule, posting_id, transfer_id, notification_id, matched_at, "
            "matched_by) SELECT 'receipt', posting_id, transfer_id, notification_id, now(), "
            "'recon' FROM legs"
        ],
    ),
    "group + link": (
        [
            "CREATE TABLE m_group (id bigint PRIMARY KEY, rule varchar(32), transfer_id bigint, "
            "notification_id bigint, matched_at timestamptz, matched_by varchar(128))",
            "CREATE INDEX ON m_group (transfer_id)",
            "CREATE INDEX ON m_group (notification_id)",
            "CREATE TABLE m_link (posting_id bigint PRIMARY KEY, group_id bigint)",
            "CREATE INDEX ON m_link (group_id)",
        ],
        [
            "INSERT INTO m_group SELECT DISTINCT transfer_id, 'receipt', transfer_id, "
            "notification_id, now(), 'recon' FROM legs",
            "INSERT INTO m_link SELECT posting_id, transfer_id FROM legs",
        ],
    ),
    "heap only": (
        ["CREATE TABLE m_heap (LIKE matches INCLUDING DEFAULTS)"],
        [
            "INSERT INTO m_heap (rule, posting_id, transfer_id, notification_id, matched_at, "
            "matched_by) SELECT 'receipt', posting_id, transfer_id, notification_id, now(), "
            "'recon' FROM legs"
        ],
    ),
}


def _timed(cursor: Any, statements: list[str]) -> float:
    started = time.perf_counter()
    for statement in statements:
        cursor.execute(statement)
    return time.perf_counter() - started


def one_round(url: str, pairs: int) -> dict[str, float]:
    """Seconds of the bare join and of each layout's write, in one connection, fresh tables."""
    seconds: dict[str, float] = {}
    with psycopg.connect(plain(url), autocommit=True) as connection, connection.cursor() as cur:
        cur.execute(SOURCE, {"pairs": pairs})
        cur.execute("ANALYZE legs")
        cur.execute(BARE_JOIN)  # warm the rows into the buffer cache for every contender alike
        seconds["bare join"] = _timed(cur, [BARE_JOIN])
        for name, (setup, writes) in LAYOUTS.items():
            for statement in setup:
                cur.execute(statement)
            seconds[name] = _timed(cur, writes)
        for table in ("m_one", "m_group", "m_link", "m_heap"):
            cur.execute(f"DROP TABLE {table}")
        cur.execute("DROP TABLE legs")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=200_000, help="posting legs matched")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rounds: list[dict[str, float]] = []
    with postgres_database("match_layouts") as url:
        for n in range(args.rounds):
            rounds.append(one_round(url, args.pairs))
            shown = ", ".join(f"{k} {v:.3f} s" for k, v in rounds[-1].items())
            print(f"round {n + 1}: {shown}", flush=True)
    print(f"\n{args.pairs:,} legs; each write / the bare join, min / median / max:")
    for name in LAYOUTS:
        ratios = [r[name] / r["bare join"] for r in rounds]
        per_row = statistics.median(r[name] for r in rounds) / args.pairs * 1e6
        print(f"  {name:<30} {spread(ratios)}x  ({per_row:.2f} us per leg, median)")
    print(f"  {'bare join':<30} {spread([r['bare join'] for r in rounds], '{:.3f}')} s")


if __name__ == "__main__":
    main()
