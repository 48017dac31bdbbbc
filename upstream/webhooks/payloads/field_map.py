"""`field-map`: a shape recon learns from configuration, without a release.

When a provider sends a shape none of the built-in adapters reads, an operator describes it in
RECON_PAYLOAD_FIELD_MAP, a JSON object from our field names to where the provider puts them:

```json
{"eventId": "meta.id", "eventType": "meta.kind", "occurredAt": "meta.at",
 "transferRef": "payload.transactionRef", "amount": "payload.value.amount",
 "currency": "=NGN", "amountUnits": "minor", "timestampUnit": "epoch-millis"}
```

A path is dotted (`items.0.amount` indexes an array) or `header:<name>` for a request header;
a value starting with `=` is a constant, the same for every body (`"currency": "=NGN"` for a
provider that moves one currency and never names it). `eventType` and `occurredAt` are required
and never constant (with `eventId`, they are what tells one delivery from another); every other
field is optional. Without `status` (or where a body has none) the outcome is the one the event
type says (RECON_EVENT_OUTCOMES), as for the built-in shapes. `amountUnits` says
whether `amount` holds major units (`"1500.50"`, the default) or minor units (`"150050"`);
`timestampUnit` says what a numeric `occurredAt` counts (`epoch-seconds`, the default, or
`epoch-millis`). The learned shape is read by exactly the rules of the built-in ones
(`declared_fields`), so it cannot be laxer about money than they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, get_args

from upstream.webhooks.payloads.base import EVENT_OUTCOMES
from upstream.webhooks.payloads.declared_fields import (
    CONSTANT_PREFIX,
    AmountUnits,
    DeclaredShape,
    FieldPaths,
    TimestampUnit,
)

NAME: Final = "field-map"

#: Our field names as an operator writes them -> the `FieldPaths` attribute each one sets.
FIELDS: Final[dict[str, str]] = {
    "eventId": "body_id",
    "eventType": "event_type",
    "occurredAt": "occurred_at",
    "transferRef": "transfer_ref",
    "receiptRef": "receipt_ref",
    "accountRef": "account_ref",
    "endpointRef": "endpoint_ref",
    "holdingRef": "holding_ref",
    "accountNumber": "account_number",
    "amount": "amount",
    "currency": "currency",
    "status": "status",
    "narration": "narration",
}
#: Options of the map that are not paths, with the values each may take.
OPTIONS: Final[dict[str, tuple[str, ...]]] = {
    "amountUnits": get_args(AmountUnits),
    "timestampUnit": get_args(TimestampUnit),
}
#: Fields a learned shape must locate: without them a delivery says nothing we can match.
REQUIRED: Final = ("eventType", "occurredAt")
#: Fields that tell one delivery from another, so a constant would make every body look alike.
NEVER_CONSTANT: Final = ("eventId", "eventType", "occurredAt")


class FieldMapError(ValueError):
    """A field map that cannot describe a shape; the message names the entry and the fix."""


def field_map_problems(mapping: Mapping[str, Any]) -> list[str]:
    """Everything wrong with a field map, one sentence each (empty when it is usable)."""
    problems = []
    for key, value in mapping.items():
        if key in OPTIONS:
            if value not in OPTIONS[key]:
                problems.append(f"{key} must be one of {', '.join(OPTIONS[key])}, not {value!r}")
        elif key not in FIELDS:
            known = ", ".join([*FIELDS, *OPTIONS])
            problems.append(f"{key!r} is not one of our fields ({known})")
        elif not isinstance(value, str) or not value.strip():
            problems.append(f"{key} must be a dotted path, header:<name> or =<constant>")
        elif not value.strip().startswith(CONSTANT_PREFIX):
            if ".." in value:
                problems.append(f"{key} must be a dotted path without empty steps, not {value!r}")
        elif key in NEVER_CONSTANT:
            problems.append(f"{key} cannot be a constant: it must be read from each delivery")
        elif value.strip() == CONSTANT_PREFIX:
            problems.append(f"{key} is an empty constant: write the value after =")
    for key in REQUIRED:
        if key not in mapping:
            problems.append(f"{key} is required (where does the provider put it?)")
    return problems


def adapter_from_field_map(
    mapping: Mapping[str, Any], outcomes: Mapping[str, str] = EVENT_OUTCOMES
) -> DeclaredShape:
    """The adapter a field map describes; FieldMapError listing every problem if it cannot."""
    problems = field_map_problems(mapping)
    if problems:
        raise FieldMapError("RECON_PAYLOAD_FIELD_MAP: " + "; ".join(problems))
    paths = {FIELDS[key]: value.strip() for key, value in mapping.items() if key in FIELDS}
    return DeclaredShape(
        NAME,
        FieldPaths(
            **paths,
            amount_units=mapping.get("amountUnits", "major"),
            timestamp_unit=mapping.get("timestampUnit", "epoch-seconds"),
        ),
        outcomes,
    )
