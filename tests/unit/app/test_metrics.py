"""The receiver's instruments render on /metrics exactly as the client's own would."""

from __future__ import annotations

import re

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from app import metrics
from app.metrics import HotPathCounter, HotPathHistogram

BUCKETS = (0.00001, 0.00005, 0.0001, 0.001, 0.5, 1.0, 5.0)
#: Every edge: below the first bound, on a bound (`le` is inclusive), between, above the last.
AMOUNTS = (0.0, 0.00001, 0.000011, 0.00005, 0.0009, 0.001, 0.3, 1.0, 4.99, 5.0, 5.01, 80.0)


def rendered(registry: CollectorRegistry) -> str:
    """The exposition text, with the creation time (which differs by construction) masked."""
    text = generate_latest(registry).decode()
    return re.sub(r"(_created(\{[^}]*\})?) \S+", r"\1 T", text)


def pair() -> tuple[CollectorRegistry, Histogram, CollectorRegistry, HotPathHistogram]:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    client = Histogram("x_seconds", "Some latency.", buckets=BUCKETS, registry=theirs)
    hot = HotPathHistogram("x_seconds", "Some latency.", buckets=BUCKETS, registry=ours)
    return theirs, client, ours, hot


def test_same_series_as_the_client_histogram_one_at_a_time() -> None:
    theirs, client, ours, hot = pair()
    assert rendered(ours) == rendered(theirs)  # empty, too
    for amount in AMOUNTS:
        client.observe(amount)
        hot.observe(amount)
    assert rendered(ours) == rendered(theirs)
    assert "x_seconds_created" in rendered(ours)


def test_a_batch_observed_at_once_counts_as_each_alone() -> None:
    theirs, client, ours, hot = pair()
    for amount in AMOUNTS:
        client.observe(amount)
    hot.observe_each(AMOUNTS)
    hot.observe_each([])
    assert rendered(ours) == rendered(theirs)
    assert ours.get_sample_value("x_seconds_count") == len(AMOUNTS)
    assert ours.get_sample_value("x_seconds_bucket", {"le": "0.001"}) == 6


def test_created_series_follows_the_clients_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROMETHEUS_DISABLE_CREATED_SERIES", "true")
    registry = CollectorRegistry()
    HotPathHistogram("y_seconds", "Other.", buckets=BUCKETS, registry=registry)
    assert "_created" not in generate_latest(registry).decode()


def test_a_name_taken_twice_is_refused_like_the_clients() -> None:
    registry = CollectorRegistry()
    Histogram("z_seconds", "Taken.", buckets=BUCKETS, registry=registry)
    with pytest.raises(ValueError, match="Duplicated"):
        HotPathHistogram("z_seconds", "Again.", buckets=BUCKETS, registry=registry)


@pytest.mark.parametrize("buckets", [(), (2.0, 1.0), (1.0, float("inf"))])
def test_buckets_must_be_finite_and_increasing(buckets: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="increasing"):
        HotPathHistogram("w_seconds", "Bad.", buckets=buckets, registry=CollectorRegistry())


def test_counter_same_series_as_the_clients_with_every_child_bound() -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    client = Counter("d", "Deliveries.", ["outcome"], registry=theirs)
    children = {o: client.labels(o) for o in ("accepted", "too_large", "bad_method")}
    hot = HotPathCounter("d", "Deliveries.", "outcome", tuple(children), registry=ours)
    assert rendered(ours) == rendered(theirs)
    for outcome in ("accepted", "accepted", "bad_method"):
        children[outcome].inc()
        hot.children[outcome].inc()
    assert rendered(ours) == rendered(theirs)
    assert ours.get_sample_value("d_total", {"outcome": "accepted"}) == 2
    assert "d_created" in rendered(ours)


def test_every_delivery_outcome_is_shown_from_the_start() -> None:
    shown = generate_latest(metrics.REGISTRY).decode()
    for outcome in metrics.OUTCOMES:
        assert f'recon_webhook_deliveries_total{{outcome="{outcome}"}}' in shown
