"""The shapes recon reads without configuration, as data: one `FieldPaths` each.

`recon`, the shape recon first guessed (docs/decisions.md, "Webhook deliveries"); recognised by
`id`, `event` and `createdAt`; `amount` a major-unit decimal string (a JSON number with the same
digits is read exactly too):

```json
{"id": "<event id>", "event": "PAYMENT_RECEIVED", "createdAt": "2026-11-22T00:48:01.123Z",
 "data": {"transferRef": "<uuid|null>", "receiptRef": "<uuid|null>", "accountRef": "<uuid>",
          "endpointRef": "<uuid>", "holdingRef": "<uuid>", "accountNumber": "0123456789",
          "bankCode": "000", "amount": "1500.50", "currency": "NGN", "status": "SUCCESSFUL",
          "narration": "text"}}
```

`standard-webhooks`, the payload Standard Webhooks recommends; recognised by `id`, `type` and
`timestamp`; the same `data` but `amountMinorUnits`, a string of minor units as the gateway
writes amounts, so nothing is scaled. Such a provider usually sends a `webhook-id` header of its
own (`msg_...`): the header is the delivery's identity, the body id is evidence.

```json
{"id": "evt_2b9c...", "type": "PAYMENT_RECEIVED", "timestamp": "2026-11-22T00:48:01.123Z",
 "data": {..., "amountMinorUnits": "150050", "currency": "NGN", "status": "SUCCESSFUL"}}
```

`flat`, one object with no envelope, as many virtual-account providers send their callbacks;
recognised by `id`, `eventType` and `createdAt` (Unix epoch milliseconds; ISO 8601 is read
too); `amount` a JSON number in major units, which the reader parsed as an exact `Decimal`:

```json
{"id": "<uuid>", "eventType": "PAYMENT_RECEIVED", "createdAt": 1795307281123,
 "reference": "<transferRef uuid|null>", "receiptReference": "<uuid|null>",
 "accountRef": "<uuid>", "endpointRef": "<uuid>", "holdingRef": "<uuid>",
 "accountNumber": "0123456789", "bankCode": "000",
 "amount": 1500.50, "currency": "NGN", "status": "SUCCESSFUL", "narration": "text"}
```

In every shape `status` may be absent: the event type then says the outcome
(`base.EVENT_OUTCOMES`). To add a shape, add its row here; it is read by the same rules
(`declared_fields`) as these and as an operator's field map.
"""

from __future__ import annotations

from typing import Final

from upstream.webhooks.payloads.declared_fields import AmountUnits, FieldPaths

#: The body's id, the event type and the time mark a built-in shape: without them it is not it.
_MARKS: Final = ("body_id", "event_type", "occurred_at")


def _enveloped(event_type: str, occurred_at: str, amount: str, units: AmountUnits) -> FieldPaths:
    """An `{id, <type>, <time>, data{...}}` envelope: everything but its marks is in `data`."""
    return FieldPaths(
        body_id="id",
        event_type=event_type,
        occurred_at=occurred_at,
        transfer_ref="data.transferRef",
        receipt_ref="data.receiptRef",
        account_ref="data.accountRef",
        endpoint_ref="data.endpointRef",
        holding_ref="data.holdingRef",
        account_number="data.accountNumber",
        amount=amount,
        currency="data.currency",
        status="data.status",
        narration="data.narration",
        amount_units=units,
        required=_MARKS,
    )


#: Shape name (as RECON_PAYLOAD_SHAPES lists it) -> where it puts each field; the order is the
#: default order tried: our first guess, then the Standard Webhooks recommendation, then flat.
BUILT_IN: Final[dict[str, FieldPaths]] = {
    "recon": _enveloped("event", "createdAt", "data.amount", "major"),
    "standard-webhooks": _enveloped("type", "timestamp", "data.amountMinorUnits", "minor"),
    "flat": FieldPaths(
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
        required=_MARKS,
    ),
}
