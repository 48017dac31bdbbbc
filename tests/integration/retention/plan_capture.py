"""Every statement recon's code sends to PostgreSQL, explained as it goes out.

A listener on the engine sees each statement exactly as the code built and compiled it, with
its parameters, and asks PostgreSQL for its plan (EXPLAIN without ANALYZE: nothing runs twice)
on the same connection and in the same transaction, inside a savepoint, so temporary tables the
code made are visible and a statement EXPLAIN cannot take leaves the transaction untouched.
Copies of the SQL in the test would drift from the code; these cannot.

With `analyze`, each statement is run once more under EXPLAIN ANALYZE, its effects rolled back
with the savepoint, to count the rows each table gave (`rows_read`): what a read costs, not
what the planner guessed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from sqlalchemy import Engine, event

#: Statement openings EXPLAIN can plan; everything else (SET, COPY, DDL, savepoints) is skipped.
EXPLAINABLE: Final = ("select", "with", "update", "delete", "insert", "create temporary table")


@dataclass(slots=True)
class Explained:
    """One statement the code ran, and its plan's scans."""

    label: str
    statement: str
    scans: list[tuple[str, str]]  # (node type, relation)
    plan: dict[str, Any]
    #: Rows each relation's scans gave, over all their loops (EXPLAIN ANALYZE only).
    rows_read: dict[str, int] = field(default_factory=dict)

    def seq_scans_of(self, tables: frozenset[str]) -> list[str]:
        return [rel for node, rel in self.scans if node == "Seq Scan" and rel in tables]


@dataclass(slots=True)
class PlanLog:
    """Statements explained while a label was set, by label."""

    label: str = "(none)"
    explained: list[Explained] = field(default_factory=list)

    @contextmanager
    def running(self, label: str) -> Iterator[None]:
        previous, self.label = self.label, label
        try:
            yield
        finally:
            self.label = previous


def _scans(node: dict[str, Any]) -> Iterator[tuple[str, str]]:
    if "Relation Name" in node:
        yield node["Node Type"], node["Relation Name"]
    for child in node.get("Plans", ()):
        yield from _scans(child)
    for key in ("InitPlan", "SubPlan"):
        for child in node.get(key, ()):
            yield from _scans(child)


def _rows_read(node: dict[str, Any], into: dict[str, int]) -> dict[str, int]:
    if "Relation Name" in node:
        rows = int(node.get("Actual Rows", 0)) * int(node.get("Actual Loops", 1))
        into[node["Relation Name"]] = into.get(node["Relation Name"], 0) + rows
    for key in ("Plans", "InitPlan", "SubPlan"):
        for child in node.get(key, ()):
            _rows_read(child, into)
    return into


def explain_everything(engine: Engine, *, analyze: bool = False) -> PlanLog:
    """Start explaining every statement `engine` runs; returns the log they go into."""
    how = "(ANALYZE, FORMAT JSON)" if analyze else "(FORMAT JSON)"
    log = PlanLog()

    def before(
        conn: Any, cursor: Any, statement: str, parameters: Any, _ctx: Any, many: bool
    ) -> None:
        opening = statement.lstrip().lower()
        if not opening.startswith(EXPLAINABLE):
            return
        if opening.startswith("insert") and " select " not in opening.replace("\n", " "):
            return  # a plain INSERT ... VALUES reads no table
        params = parameters[0] if many and parameters else parameters
        raw = conn.connection.dbapi_connection
        probe = raw.cursor()
        guarded = not raw.autocommit
        if analyze and not guarded:
            return  # a statement run twice outside a transaction could not be undone
        try:
            if guarded:
                probe.execute("SAVEPOINT plan_probe")
            try:
                probe.execute(f"EXPLAIN {how} " + statement, params or None)
                plan = probe.fetchone()[0]
            except Exception:  # noqa: BLE001 - a statement EXPLAIN cannot plan is not ours to judge
                if guarded:
                    probe.execute("ROLLBACK TO SAVEPOINT plan_probe")
                return
            if analyze:  # it ran: undo whatever it wrote
                probe.execute("ROLLBACK TO SAVEPOINT plan_probe")
            if guarded:
                probe.execute("RELEASE SAVEPOINT plan_probe")
        finally:
            probe.close()
        if isinstance(plan, str):
            plan = json.loads(plan)
        scans = list(_scans(plan[0]["Plan"]))
        root = plan[0]["Plan"]
        read = _rows_read(root, {}) if analyze else {}
        log.explained.append(Explained(log.label, " ".join(statement.split()), scans, root, read))

    event.listen(engine, "before_cursor_execute", before)
    return log
