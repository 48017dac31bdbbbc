"""The demo's verdict counts open alerts per kind against the faults it injected.

A set comparison passed five open alerts for four faults (a second `amount_mismatch` when the
re-sent body arrived first); the README promises exit 0 only for exactly the four faults.
"""

from __future__ import annotations

from datetime import UTC, datetime

from recon.demo.run import DemoOutcome
from recon.demo.scenario import EXPECTED_ALERT_KINDS, ScenarioRecord
from reconciliation.reports.model import Report, ReportWindow

FAULTS = list(EXPECTED_ALERT_KINDS)


def outcome(open_kinds: dict[str, int]) -> DemoOutcome:
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    report = Report(window=ReportWindow(until=moment), generated_at=moment)
    record = ScenarioRecord(injected=list(FAULTS))
    return DemoOutcome(record=record, report=report, open_kinds=open_kinds, text_report="")


def one_each() -> dict[str, int]:
    return {EXPECTED_ALERT_KINDS[f]: 1 for f in FAULTS}


def test_one_alert_per_fault_passes() -> None:
    found = outcome(one_each())
    assert found.ok
    assert found.tally().startswith("4 open alerts for 4 injected faults")


def test_a_second_alert_of_an_injected_kind_fails() -> None:
    kinds = one_each()
    kinds["amount_mismatch"] = 2
    found = outcome(kinds)
    assert not found.ok
    assert found.unexpected == ["amount_mismatch: 2 open for 1 fault injected"]
    assert found.tally().startswith("5 open alerts for 4 injected faults")


def test_a_missing_and_a_foreign_kind_are_both_named() -> None:
    kinds = one_each()
    del kinds["finality_overdue"]
    kinds["balance_mismatch"] = 1
    found = outcome(kinds)
    assert found.missing == ["finality_overdue: 0 open for 1 fault injected"]
    assert found.unexpected == ["balance_mismatch: 1 open for 0 faults injected"]
