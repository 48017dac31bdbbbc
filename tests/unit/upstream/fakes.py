"""A scripted in-process transport: answers in order, records every request it saw."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import httpx

Answer = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]

KEY = "ak_test_s3cr3t-value-123"
REF = "6f1c2a34-0000-4000-8000-0000000000a1"


class Script:
    """Hands out the scripted answers in order; the last one repeats."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            return answer(request)
        return answer

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    def keys(self) -> list[str | None]:
        return [r.headers.get("Idempotency-Key") for r in self.requests]


def ok(value: Any, status: int = 200, member: str | None = None) -> httpx.Response:
    section = {"value": value, "freshness": "Current", "visibility": "Full", "evidence": []}
    body = section if member is None else {member: section}
    return httpx.Response(status, json={"status": status, "body": body, "evidence": []})


def problem(
    status: int, kind: str, code: str, message: str, headers: dict[str, str] | None = None
) -> httpx.Response:
    rcpt = str(uuid.uuid4())
    return httpx.Response(
        status,
        headers=headers,
        json={
            "status": status,
            "problem": {
                "kind": kind,
                "status": status,
                "code": code,
                "message": message,
                "evidence": [{"receiptRef": rcpt, "source": "SecurityIdentity"}],
            },
            "evidence": [{"receiptRef": rcpt}],
        },
    )


def garbled(status: int = 200) -> httpx.Response:
    return httpx.Response(status, content=b'{"status": 200, "bo\x00}')


def environment_value(kind: str = "DemoSandbox") -> dict[str, Any]:
    return {
        "organisationRef": REF,
        "applicationRef": REF,
        "environmentRef": REF,
        "environmentKind": kind,
        "displayName": "recon sandbox",
        "appStatus": "Active",
        "environmentStatus": "Active",
        "allowedActions": ["ViewEnvironmentShell"],
        "unavailableParts": [],
    }


def transfer_value(stage: str = "PrincipalReserved", amount: str = "1000") -> dict[str, Any]:
    value: dict[str, Any] = {
        "transferRef": str(uuid.uuid4()),
        "requestedAt": "2026-11-22T00:48:01.123Z",
        "decidedAt": "2026-11-22T00:48:01.125Z",
        "stage": stage,
        "revision": 2 if stage == "PrincipalReserved" else 1,
        "sourceAccountRef": REF,
        "sourceEndpointRef": REF,
        "sourceHoldingRef": REF,
        "destination": {
            "kind": "internal-endpoint",
            "accountRef": REF,
            "endpointRef": REF,
            "holdingRef": REF,
        },
        "valueUnit": {"kind": "fiat", "currency": "NGN"},
        "amountMinorUnits": amount,
        "requestedBy": str(uuid.uuid4()),
        "materialFingerprint": "fp:transfer-initiation-material:00",
    }
    if stage == "ReservationDenied":
        value["denialReason"] = "InsufficientAvailableBalance"
    return value


def body_of(request: httpx.Request) -> Any:
    return json.loads(request.content)
