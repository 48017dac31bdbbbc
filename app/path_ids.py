"""Row ids taken from a request path or query, bounded to what a database row id can be.

A number past a signed 64-bit integer cannot even be bound to a query: the driver raises and
the request would end in a 500. Annotated this way, Litestar refuses it with a 400 that names
the bound before any handler runs, on the JSON API and the console alike.
"""

from __future__ import annotations

from typing import Annotated, TypeAlias

from litestar.params import PathParameter, QueryParameter

from reconciliation.notifications import MAX_ROW_ID

RowId: TypeAlias = Annotated[
    int, PathParameter(ge=1, le=MAX_ROW_ID, description=f"a row id, 1 to {MAX_ROW_ID}")
]

#: A row id given as a query parameter (`?before=`, `?after=`): optional, 0 to MAX_ROW_ID (0 is
#: "from the start"), refused with a 400 past it rather than overflowing the driver.
QueryRowId: TypeAlias = Annotated[
    int | None, QueryParameter(ge=0, le=MAX_ROW_ID, description=f"a row id, 0 to {MAX_ROW_ID}")
]
