"""Read a verified delivery with the configured shapes, in order; first one that fits wins.

The bytes were verified before this runs (invariant 1, docs/architecture.md); here they are
parsed once, with JSON numbers as exact `Decimal`s (never floats: invariant 5), and handed to
each adapter in turn. The parse is msgspec's (about six times faster than the standard
library's, which counts when a rebuild reads a million bodies again), with the standard
library's as the judge of anything msgspec refuses: a body msgspec cannot read is parsed again
by `json.loads`, which accepts what it always accepted (a UTF-8 byte order mark, UTF-16, escaped
lone surrogates) and words the error of what it refuses, so the outcome of every body is the one
the standard library alone gives. Where msgspec reads a body, both give the same values:
decimals as `Decimal` from their own digits, integers of any size exact, the last of duplicate
keys. When no shape fits, the result says which shape the body came closest to and everything
that shape missed, which is what the alert about it shows a person.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

import msgspec

from foundation import excerpt
from upstream.webhooks.payloads.base import (
    EVENT_OUTCOMES,
    DeliveryNotification,
    NotUnderstood,
    PayloadAdapter,
    Problem,
)
from upstream.webhooks.payloads.declared_fields import DeclaredShape
from upstream.webhooks.payloads.field_map import NAME as FIELD_MAP
from upstream.webhooks.payloads.field_map import adapter_from_field_map
from upstream.webhooks.payloads.shapes import BUILT_IN

if TYPE_CHECKING:
    from foundation import WebhookSettings

#: Every name RECON_PAYLOAD_SHAPES may list.
SHAPE_NAMES: Final = (*BUILT_IN, FIELD_MAP)
#: The pseudo-shape a body that is not a JSON object "comes closest" to.
NOT_JSON: Final = "json"
#: Longest excerpt of an exception's message a failed reading keeps (`_failed`).
FAILURE_EXCERPT: Final = 200
#: The fast parse: JSON decimals as `Decimal` from their own digits, never through a float.
_DECIMAL_JSON: Final = msgspec.json.Decoder(float_hook=Decimal)


class PayloadConfigError(ValueError):
    """The configured shapes cannot make a reader; the message names the setting to fix."""


@dataclass(frozen=True, slots=True)
class DeliveryNotUnderstood:
    """No configured shape reads this delivery: the nearest one's problems, and every try."""

    closest: NotUnderstood
    tried: tuple[NotUnderstood, ...]
    #: Top-level member names of the body (no values): what the provider's shape looks like.
    top_level: tuple[str, ...]

    def describe(self) -> str:
        names = ", ".join(t.shape for t in self.tried) or NOT_JSON
        return (
            f"no configured payload shape fits (tried {names}); closest: {self.closest.describe()}"
        )

    def signature(self) -> tuple[str, ...]:
        """What identifies this shape problem, values left out: the closest shape and its gaps."""
        return (self.closest.shape, *(f"{p.kind}:{p.path}" for p in self.closest.problems))


class PayloadReader:
    """An ordered list of adapters; stateless, shared by every worker thread."""

    def __init__(self, adapters: Sequence[PayloadAdapter]) -> None:
        if not adapters:
            raise PayloadConfigError("RECON_PAYLOAD_SHAPES names no shape: list at least one")
        self.adapters = tuple(adapters)

    @property
    def shapes(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.adapters)

    def read(
        self, body: bytes, headers: Mapping[str, str]
    ) -> DeliveryNotification | DeliveryNotUnderstood:
        """The notification of the first shape that fits, or why none did."""
        try:
            doc = _parse(body)
        except (UnicodeDecodeError, ValueError) as exc:
            return _not_json(f"body is not valid JSON ({exc})")
        except RecursionError:
            # Both decoders stop at about a thousand levels: such a body stays quarantined.
            return _not_json("body is nested too deeply to read (about a thousand levels or more)")
        if not isinstance(doc, dict):
            return _not_json(f"body is JSON but not an object (a {type(doc).__name__})")
        lowered = {name.lower(): value for name, value in headers.items()}
        tried: list[NotUnderstood] = []
        for adapter in self.adapters:
            try:
                result = adapter.read(doc, lowered)
            except Exception as exc:  # noqa: BLE001 - any failure is this body's, and said
                # MemoryError and RecursionError included: one body that breaks a shape's
                # reading is that body's problem, kept with its reason, never its batch's.
                result = _failed(adapter.name, exc)
            if isinstance(result, DeliveryNotification):
                return result
            tried.append(result)
        closest = min(tried, key=NotUnderstood.closeness)
        return DeliveryNotUnderstood(closest, tuple(tried), tuple(sorted(doc)))


def configured_reader(
    shapes: Sequence[str] | None = None,
    field_map: Mapping[str, Any] | None = None,
    outcomes: Mapping[str, str] | None = None,
) -> PayloadReader:
    """The reader settings describe: `shapes` in order (default: the learned field map, if any,
    then every built-in shape), each giving a body without a status the outcome its event type
    says in `outcomes` (default `EVENT_OUTCOMES`). A field map is tried first by default because
    an operator who wrote one did so for a body the built-ins misread."""
    if outcomes is None:
        outcomes = EVENT_OUTCOMES
    if shapes is None:
        shapes = ((FIELD_MAP,) if field_map else ()) + tuple(BUILT_IN)
    adapters: list[PayloadAdapter] = []
    for name in shapes:
        if name == FIELD_MAP:
            if not field_map:
                raise PayloadConfigError(
                    "RECON_PAYLOAD_SHAPES lists field-map but RECON_PAYLOAD_FIELD_MAP is not set"
                )
            adapters.append(adapter_from_field_map(field_map, outcomes))
        elif name in BUILT_IN:
            adapters.append(DeclaredShape(name, BUILT_IN[name], outcomes))
        else:
            raise PayloadConfigError(
                f"RECON_PAYLOAD_SHAPES names {name!r}: expected some of {', '.join(SHAPE_NAMES)}"
            )
    return PayloadReader(adapters)


def _not_json(detail: str) -> DeliveryNotUnderstood:
    closest = NotUnderstood(NOT_JSON, (Problem("body", "invalid", detail),))
    return DeliveryNotUnderstood(closest, (), ())


def _failed(shape: str, exc: BaseException) -> NotUnderstood:
    """What a shape whose reading raised says: the exception's type and a bounded excerpt of
    its message, never a whole (possibly expanded) value."""
    said = excerpt(str(exc), FAILURE_EXCERPT)
    detail = f"reading the body failed: {type(exc).__name__} ({said})"
    return NotUnderstood(shape, (Problem("body", "invalid", detail),))


def _parse(body: bytes) -> Any:
    """The body as JSON, numbers exact; msgspec first, the standard library for what it refuses
    (see the module docstring: the standard library's outcome, always)."""
    try:
        return _DECIMAL_JSON.decode(body)
    except (msgspec.MsgspecError, ValueError):
        return json.loads(body, parse_float=Decimal, parse_constant=_refuse_constant)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def reader_for(webhooks: WebhookSettings) -> PayloadReader:
    """The reader RECON_PAYLOAD_SHAPES, RECON_PAYLOAD_FIELD_MAP and RECON_EVENT_OUTCOMES
    describe."""
    outcomes = webhooks.event_outcomes
    return configured_reader(
        webhooks.payload_shapes,
        dict(webhooks.payload_field_map) or None,
        dict(outcomes) if outcomes is not None else None,
    )
