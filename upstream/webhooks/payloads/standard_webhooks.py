"""`standard-webhooks`: the payload Standard Webhooks recommends, `{id, type, timestamp, data}`.

```json
{"id": "evt_2b9c...", "type": "PAYMENT_RECEIVED", "timestamp": "2026-11-22T00:48:01.123Z",
 "data": {"transferRef": "<uuid|null>", "receiptRef": "<uuid|null>", "accountRef": "<uuid>",
          "endpointRef": "<uuid>", "holdingRef": "<uuid>", "accountNumber": "0123456789",
          "bankCode": "000", "amountMinorUnits": "150050", "currency": "NGN",
          "status": "SUCCESSFUL", "narration": "text"}}
```

Amounts are strings of minor units, as the gateway sends them, so nothing is scaled. A provider
following the recommendation usually sends a `webhook-id` header of its own (`msg_...`) that
differs from the body's `id`; the header is the delivery's identity, the body id is evidence.
Recognised by `id`, `type` and `timestamp` at the top level.
"""

from __future__ import annotations

from typing import Final

from upstream.webhooks.payloads.declared_fields import DeclaredShape, FieldPaths

NAME: Final = "standard-webhooks"

PATHS: Final = FieldPaths(
    body_id="id",
    event_type="type",
    occurred_at="timestamp",
    transfer_ref="data.transferRef",
    receipt_ref="data.receiptRef",
    account_ref="data.accountRef",
    endpoint_ref="data.endpointRef",
    holding_ref="data.holdingRef",
    account_number="data.accountNumber",
    amount="data.amountMinorUnits",
    currency="data.currency",
    status="data.status",
    narration="data.narration",
    amount_units="minor",
    required=("body_id", "event_type", "occurred_at"),
)

ADAPTER: Final = DeclaredShape(NAME, PATHS)
