"""Delivery payloads: one adapter per plausible shape, one normalised notification out.

The interface is `base.PayloadAdapter`; each built-in shape is a module of its own
(`recon_shape`, `standard_webhooks`, `flat`), each a declaration read by `declared_fields`, and
`field_map` builds one more from configuration. `reader.PayloadReader` tries them in the
configured order (RECON_PAYLOAD_SHAPES). To add a shape: write a module with its `FieldPaths`
(or its own `PayloadAdapter` when paths cannot say it), and list it in `reader.BUILT_IN`.
"""

from upstream.webhooks.payloads.base import (
    MONEY_EVENTS,
    DeliveryNotification,
    NotUnderstood,
    PayloadAdapter,
    Problem,
)
from upstream.webhooks.payloads.field_map import FieldMapError, field_map_problems
from upstream.webhooks.payloads.reader import (
    BUILT_IN,
    SHAPE_NAMES,
    DeliveryNotUnderstood,
    PayloadConfigError,
    PayloadReader,
    configured_reader,
    reader_for,
)

__all__ = [
    "BUILT_IN",
    "MONEY_EVENTS",
    "SHAPE_NAMES",
    "DeliveryNotUnderstood",
    "DeliveryNotification",
    "FieldMapError",
    "NotUnderstood",
    "PayloadAdapter",
    "PayloadConfigError",
    "PayloadReader",
    "Problem",
    "configured_reader",
    "field_map_problems",
    "reader_for",
]
