"""Delivery payloads: one adapter per plausible shape, one normalised notification out.

The interface is `base.PayloadAdapter`; the built-in shapes are rows of one table
(`shapes.BUILT_IN`: where each shape puts each field), each read by `declared_fields`, and
`field_map` builds one more from configuration. `reader.PayloadReader` tries them in the
configured order (RECON_PAYLOAD_SHAPES). A body without a status takes the outcome its event
type says (`base.EVENT_OUTCOMES`, replaced by RECON_EVENT_OUTCOMES). To add a shape: add its
`FieldPaths` row to `shapes.BUILT_IN` (or write a `PayloadAdapter` when paths cannot say it).
"""

from upstream.webhooks.payloads.base import (
    EVENT_OUTCOMES,
    MONEY_EVENTS,
    OUTCOME_STATUS,
    DeliveryNotification,
    NotUnderstood,
    PayloadAdapter,
    Problem,
)
from upstream.webhooks.payloads.field_map import FieldMapError, field_map_problems
from upstream.webhooks.payloads.reader import (
    SHAPE_NAMES,
    DeliveryNotUnderstood,
    PayloadConfigError,
    PayloadReader,
    configured_reader,
    reader_for,
)
from upstream.webhooks.payloads.shapes import BUILT_IN

__all__ = [
    "BUILT_IN",
    "EVENT_OUTCOMES",
    "MONEY_EVENTS",
    "OUTCOME_STATUS",
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
