"""Wire envelopes of both APIs, and the errors that render into them.

The gateway wraps success in ``{status, body, evidence}`` and errors in ``{status, problem,
evidence}``; the company API uses ``{success, message, data, timestamp}`` for errors and name
enquiry, and for its webhook operations either that or a bare ``{data}`` (the variant's
``company_envelope``). Building them in one place keeps every route spec-exact.
"""

from __future__ import annotations

import math
import time
from email.utils import formatdate
from typing import Any

import msgspec
from litestar import Response

from sandbox.config import format_timestamp
from sandbox.variants import ProviderVariant

FRESHNESS = "Current"
VISIBILITY = "Full"

# Evidence sources the spec lists.
ENGINE = "EngineRuntime"
SECURITY = "SecurityIdentity"
ACCOUNTS = "Accounts"
EVENTS = "EventRuntime"
COMPLIANCE = "ComplianceReadiness"

IDEMPOTENCY_CHANGED = (
    "An idempotent intake cannot change the request envelope for an existing identity: "
    "the Idempotency-Key was already used with different request material."
)


def json_response(
    content: Any, status: int, headers: dict[str, str] | None = None
) -> Response[bytes]:
    return Response(
        content=msgspec.json.encode(content),
        status_code=status,
        media_type="application/json",
        headers=headers,
    )


def read_body(value: Any, receipt: str, source: str) -> dict[str, Any]:
    """``{value, freshness, visibility, evidence}``: the body of every read (and named writes)."""
    return {
        "value": value,
        "freshness": FRESHNESS,
        "visibility": VISIBILITY,
        "evidence": [{"receiptRef": receipt, "source": source}],
    }


def success(status: int, body: dict[str, Any], receipts: list[str]) -> dict[str, Any]:
    return {"status": status, "body": body, "evidence": [{"receiptRef": r} for r in receipts]}


class GatewayError(Exception):
    """A gateway problem; rendered as the spec's error wrapper by the app's exception handler."""

    def __init__(
        self,
        status: int,
        kind: str,
        code: str,
        message: str,
        receipts: list[str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.code = code
        self.message = message
        self.receipts = receipts or []
        self.headers = headers

    def to_wire(self) -> dict[str, Any]:
        evidence = [{"receiptRef": r} for r in self.receipts]
        problem_evidence = [{"receiptRef": r, "source": SECURITY} for r in self.receipts]
        return {
            "status": self.status,
            "problem": {
                "kind": self.kind,
                "status": self.status,
                "code": self.code,
                "message": self.message,
                "evidence": problem_evidence,
            },
            "evidence": evidence,
        }


# One constructor per row of the error tables (spec section 7 and docs/decisions.md).
def invalid_input(message: str) -> GatewayError:
    return GatewayError(400, "InvalidInput", "invalid-Input", message)


def unauthorized() -> GatewayError:
    return GatewayError(401, "Unauthorized", "unauthorized-PermissionDenied", "PermissionDenied")


def forbidden(receipt: str) -> GatewayError:
    return GatewayError(
        403, "Forbidden", "forbidden-PermissionDenied", "PermissionDenied", [receipt]
    )


def not_found(message: str) -> GatewayError:
    return GatewayError(404, "NotFound", "not-found-ResourceMissing", message)


def conflict(code: str, message: str) -> GatewayError:
    return GatewayError(409, "Conflict", f"conflict-{code}", message)


def rate_limited(retry_after: int) -> GatewayError:
    return GatewayError(
        429,
        "RateLimited",
        "rate-limited-TooManyRequests",
        "Too many requests; retry after the Retry-After delay.",
        headers={"Retry-After": str(retry_after)},
    )


def unavailable() -> GatewayError:
    return GatewayError(
        503, "Unavailable", "unavailable-ServiceUnavailable", "The service is unavailable."
    )


class CompanyError(Exception):
    """A company API failure, rendered in the ``{success, message, data, timestamp}`` envelope."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


def company_envelope(success_: bool, message: str, data: Any, now_ms: int) -> dict[str, Any]:
    return {
        "success": success_,
        "message": message,
        "data": data,
        "timestamp": format_timestamp(now_ms),
    }


def company_success(
    variant: ProviderVariant, message: str, data: Any, now_ms: int
) -> dict[str, Any]:
    """A webhook operation's success body: ``{data}`` as the spec shows, or the full envelope."""
    if variant.company_envelope == "data":
        return {"data": data}
    return company_envelope(True, message, data, now_ms)


def company_refusal(variant: ProviderVariant, message: str) -> CompanyError:
    """A refused company request (bad input) at the variant's status: 400, 422 or 200."""
    return CompanyError(variant.company_refusal_status, message)


def retry_after_headers(seconds: float, variant: ProviderVariant) -> dict[str, str]:
    """``Retry-After`` in the variant's form: whole delta-seconds, or an HTTP date.

    The date is taken from the wall clock, not the sandbox clock, because the HTTP server's own
    ``Date`` header (which a careful client measures it against) comes from the wall clock too.
    """
    whole = max(0, math.ceil(seconds))
    if variant.retry_after_form == "http-date":
        return {"Retry-After": formatdate(math.floor(time.time()) + whole, usegmt=True)}
    return {"Retry-After": str(whole)}
