"""Prometheus instruments of the web process, in a registry of our own.

A registry of our own (not the global default) keeps library collectors out of /metrics and
lets tests create several apps in one process. Every delivery outcome's count is bound once here,
so the receiver's hot path does a single increment, not a label lookup.

The receiver's instruments are `HotPath...` collectors rather than the client's `Histogram` and
`Counter`: the client's `observe` takes two locks and walks the buckets in Python, about a
microsecond and a half per observation, and a delivery made two of them besides its count
(docs/decisions.md, "Receiver per-delivery cost"). Ours find the bucket with `bisect`
and take one lock, and a batch's commit waits are observed under that one lock together;
/metrics shows the same series either way (tests/unit/app/test_metrics.py compares them).
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate
from typing import Final, cast

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

#: The client's own rendering of a bucket bound as its `le` label (untyped in the client).
_le_label: Final = cast(Callable[[float], str], floatToGoString)


class HotPathHistogram(Collector):
    """An unlabelled histogram cheap enough to observe on every delivery.

    Its /metrics series are those of the client's `Histogram` of the same name and buckets:
    cumulative `_bucket` counts with `le` labels up to `+Inf`, `_count`, `_sum`, and the
    `_created` gauge (left out, as the client leaves it out, when
    PROMETHEUS_DISABLE_CREATED_SERIES is set).
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        *,
        buckets: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        bounds = [float(b) for b in buckets]
        if not bounds or bounds != sorted(bounds) or bounds[-1] == float("inf"):
            raise ValueError("buckets must be finite upper bounds in increasing order")
        self._name = name
        self._documentation = documentation
        self._bounds = tuple(bounds)
        self._labels = (*(_le_label(b) for b in bounds), "+Inf")
        # One count per bucket (not cumulative): index i holds observations in
        # (bounds[i-1], bounds[i]], the last one those above every bound.
        self._counts = [0] * (len(bounds) + 1)
        self._sum = 0.0
        self._lock = threading.Lock()
        self._created = time.time()
        self._with_created = _created_series_wanted()
        registry.register(self)

    def observe(self, amount: float) -> None:
        """Count one observation (`le` is inclusive, so the bucket is bisect_left's)."""
        index = bisect.bisect_left(self._bounds, amount)
        with self._lock:
            self._counts[index] += 1
            self._sum += amount

    def observe_each(self, amounts: Iterable[float]) -> None:
        """Count several observations under one lock (a batch's worth)."""
        bounds, counts = self._bounds, self._counts
        with self._lock:
            for amount in amounts:
                counts[bisect.bisect_left(bounds, amount)] += 1
                self._sum += amount

    def describe(self) -> Iterable[Metric]:
        """The names this collector owns, for the registry's clash check (no samples)."""
        return [HistogramMetricFamily(self._name, self._documentation)]

    def collect(self) -> Iterator[Metric]:
        """The histogram as the client's `Histogram` would render it."""
        with self._lock:
            counts, total = list(self._counts), self._sum
        buckets = list(zip(self._labels, accumulate(counts), strict=True))
        yield HistogramMetricFamily(
            self._name, self._documentation, buckets=buckets, sum_value=total
        )
        if self._with_created:
            yield GaugeMetricFamily(self._name + "_created", self._documentation, self._created)


class HotPathCount:
    """One label value of a `HotPathCounter`: what the receiver increments."""

    __slots__ = ("_lock", "value")

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self.value = 0.0

    def inc(self) -> None:
        """Count one (the client's `inc` checks its argument and state first: a third more)."""
        with self._lock:
            self.value += 1


class HotPathCounter(Collector):
    """A counter with one label whose values are all known in advance, cheap to increment.

    Its /metrics series are those of the client's `Counter` with every child bound at start:
    `<name>_total` and `<name>_created` per label value.
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        label: str,
        values: Sequence[str],
        *,
        registry: CollectorRegistry,
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._label = label
        lock = threading.Lock()
        self.children: Final = {value: HotPathCount(lock) for value in values}
        self._created = time.time() if _created_series_wanted() else None
        registry.register(self)

    def describe(self) -> Iterable[Metric]:
        """The names this collector owns, for the registry's clash check (no samples)."""
        return [CounterMetricFamily(self._name, self._documentation, labels=[self._label])]

    def collect(self) -> Iterator[Metric]:
        """The counter as the client's `Counter` would render it."""
        family = CounterMetricFamily(self._name, self._documentation, labels=[self._label])
        for value, count in self.children.items():
            family.add_metric([value], count.value, created=self._created)
        yield family


def _created_series_wanted() -> bool:
    """Whether to show `_created` series: unless PROMETHEUS_DISABLE_CREATED_SERIES says not
    to, as the client reads it."""
    setting = os.environ.get("PROMETHEUS_DISABLE_CREATED_SERIES", "False")
    return setting.lower() not in ("true", "1", "t")


#: Every outcome a webhook delivery can have at the receiver (the label values of DELIVERIES).
OUTCOMES: Final = (
    "accepted",
    "duplicate",
    "quarantined",
    "conflict",
    "bad_signature",
    "stale_timestamp",
    "too_large",
    "bad_content_type",
    "bad_method",
    "db_unavailable",
    "duplicate_header",
    "body_timeout",
)

#: The registry /metrics renders.
REGISTRY: Final = CollectorRegistry(auto_describe=True)

#: Deliveries by outcome: what was stored, what was refused and why.
DELIVERIES: Final = HotPathCounter(
    "recon_webhook_deliveries",
    "Webhook deliveries received, by outcome.",
    "outcome",
    OUTCOMES,
    registry=REGISTRY,
)
#: One count per outcome, bound once.
DELIVERY_OUTCOMES: Final = DELIVERIES.children

#: Time spent verifying a signature (all keys tried), successful or not.
VERIFICATION_SECONDS: Final = HotPathHistogram(
    "recon_webhook_verification_seconds",
    "Signature verification latency.",
    buckets=(0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05),
    registry=REGISTRY,
)

#: Time from the last body byte to the commit of the batch that held the delivery.
COMMIT_WAIT_SECONDS: Final = HotPathHistogram(
    "recon_webhook_commit_wait_seconds",
    "Time a delivery waited for its group commit.",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0),
    registry=REGISTRY,
)

#: Deliveries per group commit.
BATCH_SIZE: Final = HotPathHistogram(
    "recon_webhook_commit_batch_size",
    "Deliveries committed together in one transaction.",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
    registry=REGISTRY,
)

#: Inbox rows by state, set when /metrics is scraped.
INBOX_DEPTH: Final = Gauge(
    "recon_inbox_depth",
    "Inbox deliveries waiting (pending) or set aside (quarantined).",
    ["state"],
    registry=REGISTRY,
)

#: Enqueue calls that failed after a commit (the sweeper re-enqueues those deliveries).
ENQUEUE_FAILURES: Final = Counter(
    "recon_webhook_enqueue_failures",
    "Enqueue calls for committed deliveries that failed.",
    registry=REGISTRY,
)

#: Wrong admin tokens, by where they were sent (`console` sign-in or the `api` bearer check).
ADMIN_TOKEN_REFUSALS: Final = Counter(
    "recon_admin_token_refusals",
    "Wrong admin tokens received, by surface (console sign-in or API bearer check).",
    ["surface"],
    registry=REGISTRY,
)

#: Tries answered 429 because their client sent too many wrong admin tokens this minute.
ADMIN_TOKEN_LIMITED: Final = Counter(
    "recon_admin_token_limited",
    "Admin token checks answered 429 (too many wrong tokens from the client this minute).",
    ["surface"],
    registry=REGISTRY,
)
