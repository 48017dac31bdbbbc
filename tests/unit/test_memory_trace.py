"""RECON_TRACE_MEMORY_SECONDS: the setting, and a report that names where memory grew."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from foundation import ConfigError, configure_logging, load_settings, start_memory_trace
from foundation.memory_trace import report_growth


def test_off_by_default_and_refused_when_not_a_sensible_interval(
    base_env: dict[str, str],
) -> None:
    assert load_settings(base_env).logs.trace_memory_seconds == 0.0
    assert start_memory_trace(0.0) is False
    assert not tracemalloc.is_tracing()
    for bad in ("5", "-1", "soon", "nan"):
        with pytest.raises(ConfigError, match="RECON_TRACE_MEMORY_SECONDS"):
            load_settings({**base_env, "RECON_TRACE_MEMORY_SECONDS": bad})
    every = load_settings({**base_env, "RECON_TRACE_MEMORY_SECONDS": "600"})
    assert every.logs.trace_memory_seconds == 600.0


def _hoard() -> list[bytearray]:
    return [bytearray(4096) for _ in range(500)]


def test_the_report_names_the_call_site_that_grew(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", "info")
    tracemalloc.start(6)
    try:
        before = tracemalloc.take_snapshot()
        kept = _hoard()  # about 2 MB held between the two snapshots
        report_growth(before)
    finally:
        tracemalloc.stop()
    (line,) = [json.loads(x) for x in capsys.readouterr().err.splitlines() if "memory.grew" in x]
    top = line["sites"][0]
    assert top["grew_kb"] >= 1900
    assert any("test_memory_trace.py" in frame for frame in top["where"])
    assert len(kept) == 500
