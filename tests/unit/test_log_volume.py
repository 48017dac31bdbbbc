"""Logs sized for production: per-item lines at debug (or sampled), library chatter at warning."""

from __future__ import annotations

import json
import logging

import pytest
import structlog

from foundation import IntervalSummary, configure_logging, log_item


def _events(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    lines = capsys.readouterr().err.strip().splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")]


def test_per_item_lines_stay_out_of_an_info_log(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", "info")
    log = structlog.get_logger("test.volume")
    for n in range(50):
        log_item(log, "item.done", n=n)
    log.info("pass.done", items=50)
    assert [e["event"] for e in _events(capsys)] == ["pass.done"]


def test_per_item_lines_appear_at_debug(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", "debug")
    log_item(structlog.get_logger("test.volume"), "item.done", n=1)
    (event,) = _events(capsys)
    assert event["event"] == "item.done"
    assert event["level"] == "debug"


def test_a_sample_share_of_per_item_lines_reaches_info(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", "info", item_sample=0.25)
    log = structlog.get_logger("test.volume")
    for n in range(2000):
        log_item(log, "item.done", n=n)
    events = _events(capsys)
    assert all(e["sampled"] is True and e["level"] == "info" for e in events)
    assert 300 < len(events) < 700  # a quarter of 2,000, give or take chance
    configure_logging("json", "info")


def test_scheduler_library_chatter_is_quiet_unless_debugging(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("json", "info")
    logging.getLogger("apscheduler.executors.default").info('Running job "tick"')
    logging.getLogger("apscheduler.executors.default").warning("job missed by 3 s")
    events = _events(capsys)
    assert [e["event"] for e in events] == ["job missed by 3 s"]
    configure_logging("json", "debug")
    logging.getLogger("apscheduler.executors.default").info('Running job "tick"')
    assert [e["event"] for e in _events(capsys)] == ['Running job "tick"']


def test_a_frequent_round_writes_one_info_line_an_interval_with_its_totals(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("json", "info")
    now = [1000.0]
    rounds = IntervalSummary(
        structlog.get_logger("test.volume"), "poll.round", 60.0, monotonic=lambda: now[0]
    )
    for _ in range(30):  # a round every 2 s for a minute: the first one, then nothing
        rounds.add(polled=3, failed=0)
        now[0] += 2.0
    rounds.add(polled=5, failed=1)  # 60 s after the first: the totals of the 30 since
    summaries = _events(capsys)
    assert [(e["event"], e["rounds"], e["polled"], e["failed"]) for e in summaries] == [
        ("poll.round.summary", 1, 3, 0),
        ("poll.round.summary", 30, 3 * 29 + 5, 1),
    ]
    configure_logging("json", "debug")
    rounds.add(polled=2, failed=0)  # each round is still there at debug
    assert [e["event"] for e in _events(capsys)] == ["poll.round"]
    configure_logging("json", "info")
