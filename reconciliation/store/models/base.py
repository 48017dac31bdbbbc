"""The declarative base every table shares: one metadata, naming convention, column types."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, ClassVar, Final

from sqlalchemy import (
    JSON,
    MetaData,
    Uuid,
)
from sqlalchemy.orm import DeclarativeBase

from reconciliation.store.types import UTCDateTime

#: Constraint names are deterministic so migrations can drop and alter them on both databases.
NAMING_CONVENTION: Final = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: match_status values shared by postings, transfers and notifications.
UNMATCHED: Final = "unmatched"
MATCHED: Final = "matched"
EXCEPTION: Final = "exception"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
        uuid.UUID: Uuid(),
    }
