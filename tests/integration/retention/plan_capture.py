"""Every statement recon's code sends to PostgreSQL, explained as it goes out.

A listener on the engine sees each statement exactly as the code built and compiled it, with
its parameters, and asks PostgreSQL for its plan (EXPLAIN without ANALYZE: nothing runs twice)
on the same connection and in the same transaction, inside a savepoint, so temporary tables the
code made are visible and a statement EXPLAIN cannot take leaves the transaction untouched.
Copies of the SQL in the test would drift from the code; these cannot.
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


def explain_everything(engine: Engine) -> PlanLog:
    """Start explaining every statement `engine` runs; returns the log they go into."""
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
        try:
            if guarded:
                probe.execute("SAVEPOINT plan_probe")
            try:
                probe.execute("EXPLAIN (FORMAT JSON) " + statement, params or None)
                plan = probe.fetchone()[0]
            except Exception:  # noqa: BLE001 - a statement EXPLAIN cannot plan is not ours to judge
                if guarded:
                    probe.execute("ROLLBACK TO SAVEPOINT plan_probe")
                return
            if guarded:
                probe.execute("RELEASE SAVEPOINT plan_probe")
        finally:
            probe.close()
        if isinstance(plan, str):
            plan = json.loads(plan)
        scans = list(_scans(plan[0]["Plan"]))
        log.explained.append(
            Explained(log.label, " ".join(statement.split()), scans, plan[0]["Plan"])
        )

    event.listen(engine, "before_cursor_execute", before)
    return log
