"""Prometheus instruments of the web process, in a registry of our own.

A registry of our own (not the global default) keeps library collectors out of /metrics and
lets tests create several apps in one process. Counter children are bound once here, so the
receiver's hot path does a single increment, not a label lookup.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

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
DELIVERIES: Final = Counter(
    "recon_webhook_deliveries",
    "Webhook deliveries received, by outcome.",
    ["outcome"],
    registry=REGISTRY,
)
#: Pre-bound children, one per outcome.
DELIVERY_OUTCOMES: Final = {outcome: DELIVERIES.labels(outcome) for outcome in OUTCOMES}

#: Time spent verifying a signature (all keys tried), successful or not.
VERIFICATION_SECONDS: Final = Histogram(
    "recon_webhook_verification_seconds",
    "Signature verification latency.",
    buckets=(0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05),
    registry=REGISTRY,
)

#: Time from the last body byte to the commit of the batch that held the delivery.
COMMIT_WAIT_SECONDS: Final = Histogram(
    "recon_webhook_commit_wait_seconds",
    "Time a delivery waited for its group commit.",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0),
    registry=REGISTRY,
)

#: Deliveries per group commit.
BATCH_SIZE: Final = Histogram(
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
