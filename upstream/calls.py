"""What one exchange with a provider API is: the call we make and the 2xx reply we accept.

Kept apart from the request loop (`upstream.transport`) and from reading answers
(`upstream.responses`) because both need these shapes and neither should import the other's
machinery to get them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID


@dataclass(frozen=True, slots=True)
class Call:
    """One logical call: what to send and how safe it is to repeat.

    `safe` is True for reads and for writes that carry an Idempotency-Key; only safe calls are
    retried after an answer that may mean the request was processed (5xx, timeout, bad JSON).
    """

    operation: str
    method: str
    path: str
    params: Mapping[str, str] | None = None
    body: Mapping[str, Any] | None = None
    idempotency_key: UUID | None = None
    safe: bool = False
    capability: str | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful (2xx) answer with its decoded JSON."""

    status: int
    data: object
