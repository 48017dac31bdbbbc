"""Driving the sandbox over real HTTP: what the provider's side does to raise each event."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from sandbox.config import DEFAULT_APP_ID, DEFAULT_COMPANY_KEY, DEFAULT_GATEWAY_KEY

GATEWAY = {"Authorization": f"Bearer {DEFAULT_GATEWAY_KEY}"}
COMPANY = {"X-API-Key": DEFAULT_COMPANY_KEY, "X-App-Id": DEFAULT_APP_ID}


class SandboxDriver:
    """Gateway writes and control-API calls that make the sandbox emit webhook events."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=10)

    def close(self) -> None:
        self.http.close()

    def _write(self, path: str, body: dict[str, Any], status: int) -> dict[str, Any]:
        response = self.http.post(
            path, json=body, headers={**GATEWAY, "Idempotency-Key": str(uuid.uuid4())}
        )
        assert response.status_code == status, response.text
        result: dict[str, Any] = response.json()["body"]
        return result

    def endpoint(self) -> dict[str, Any]:
        """A collection child endpoint (raises ACCOUNT_CREATED)."""
        body = self._write(
            "/v1/programmable-endpoints",
            {
                "template": "customer_balance_collection_child",
                "owner": {
                    "kind": "existing_account_owner",
                    "ownerRef": str(uuid.uuid4()),
                    "ownerKind": "business-entity",
                },
                "valueUnit": {"kind": "fiat", "currency": "NGN"},
            },
            200,
        )
        value: dict[str, Any] = body["endpoint"]["value"]
        return value

    def credit(self, endpoint: dict[str, Any], amount: int) -> None:
        """A simulated inbound credit (raises PAYMENT_RECEIVED once it posts)."""
        self._write(
            "/v1/sandbox/inbound-credits",
            {
                "accountRef": endpoint["accountRef"],
                "endpointRef": endpoint["endpointRef"],
                "holdingRef": endpoint["holdingRef"],
                "valueUnit": endpoint["unit"],
                "amountMinorUnits": str(amount),
            },
            202,
        )

    def transfer(
        self, source: dict[str, Any], target: dict[str, Any], amount: int, outcome: str
    ) -> None:
        """A transfer the rail settles or fails (TRANSACTION_COMPLETED / TRANSACTION_FAILED)."""
        queued = self.http.post("/_sandbox/transfers/outcomes", json={"outcome": outcome})
        assert queued.status_code == 200, queued.text
        self._write(
            "/v1/transfers",
            {
                "sourceAccountRef": source["accountRef"],
                "sourceEndpointRef": source["endpointRef"],
                "sourceHoldingRef": source["holdingRef"],
                "destination": {
                    "kind": "internal-endpoint",
                    "accountRef": target["accountRef"],
                    "endpointRef": target["endpointRef"],
                    "holdingRef": target["holdingRef"],
                },
                "valueUnit": source["unit"],
                "amountMinorUnits": str(amount),
            },
            202,
        )

    def kyc_verified(self, endpoint: dict[str, Any]) -> None:
        """KYC_VERIFIED through the control API."""
        response = self.http.post(
            "/_sandbox/events/kyc-verified", json={"endpointRef": endpoint["endpointRef"]}
        )
        assert response.status_code == 201, response.text

    def webhooks(self) -> list[dict[str, Any]]:
        response = self.http.get("/company/v1/webhooks", headers=COMPANY)
        assert response.status_code == 200, response.text
        hooks: list[dict[str, Any]] = response.json()["data"]["webhooks"]
        return hooks

    def set_webhook_status(self, webhook_id: str, status: str) -> None:
        response = self.http.post(
            f"/_sandbox/webhooks/{webhook_id}/status", json={"status": status}
        )
        assert response.status_code == 200, response.text

    def delivery_log(self) -> list[dict[str, Any]]:
        response = self.http.get("/_sandbox/deliveries")
        assert response.status_code == 200, response.text
        log: list[dict[str, Any]] = response.json()["deliveries"]
        return log
