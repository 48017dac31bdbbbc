"""`recon`: the shape recon first guessed (docs/decisions.md, "Webhook deliveries").

```json
{"id": "<event id>", "event": "PAYMENT_RECEIVED", "createdAt": "2026-11-22T00:48:01.123Z",
 "data": {"transferRef": "<uuid|null>", "receiptRef": "<uuid|null>", "accountRef": "<uuid>",
          "endpointRef": "<uuid>", "holdingRef": "<uuid>", "accountNumber": "0123456789",
          "bankCode": "000", "amount": "1500.50", "currency": "NGN", "status": "SUCCESSFUL",
          "narration": "text"}}
```

`amount` is a major-unit decimal string (a JSON number with the same digits is read exactly
too). Recognised by `id`, `event` and `createdAt` at the top level.
"""

from __future__ import annotations

from typing import Final

from upstream.webhooks.payloads.declared_fields import DeclaredShape, FieldPaths

NAME: Final = "recon"

PATHS: Final = FieldPaths(
    body_id="id",
    event_type="event",
    occurred_at="createdAt",
    transfer_ref="data.transferRef",
    receipt_ref="data.receiptRef",
    account_ref="data.accountRef",
    endpoint_ref="data.endpointRef",
    holding_ref="data.holdingRef",
    account_number="data.accountNumber",
    amount="data.amount",
    currency="data.currency",
    status="data.status",
    narration="data.narration",
    amount_units="major",
    required=("body_id", "event_type", "occurred_at"),
)

ADAPTER: Final = DeclaredShape(NAME, PATHS)
