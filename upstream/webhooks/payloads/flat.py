"""`flat`: one object, no envelope, as many virtual-account providers send their callbacks.

```json
{"id": "<uuid>", "eventType": "PAYMENT_RECEIVED", "createdAt": 1795307281123,
 "reference": "<transferRef uuid|null>", "receiptReference": "<uuid|null>",
 "accountRef": "<uuid>", "endpointRef": "<uuid>", "holdingRef": "<uuid>",
 "accountNumber": "0123456789", "bankCode": "000",
 "amount": 1500.50, "currency": "NGN", "status": "SUCCESSFUL", "narration": "text"}
```

`amount` is a JSON number in major units: the reader parses numbers as `Decimal`, so 1500.50
arrives as exactly those digits and is scaled exactly. `createdAt` is Unix epoch milliseconds
(an ISO 8601 string is read too). Recognised by `id`, `eventType` and `createdAt`.
"""

from __future__ import annotations

from typing import Final

from upstream.webhooks.payloads.declared_fields import DeclaredShape, FieldPaths

NAME: Final = "flat"

PATHS: Final = FieldPaths(
    body_id="id",
    event_type="eventType",
    occurred_at="createdAt",
    transfer_ref="reference",
    receipt_ref="receiptReference",
    account_ref="accountRef",
    endpoint_ref="endpointRef",
    holding_ref="holdingRef",
    account_number="accountNumber",
    amount="amount",
    currency="currency",
    status="status",
    narration="narration",
    amount_units="major",
    timestamp_unit="epoch-millis",
    required=("body_id", "event_type", "occurred_at"),
)

ADAPTER: Final = DeclaredShape(NAME, PATHS)
