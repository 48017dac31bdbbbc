"""Long lists of ids or refs cut into IN (...) lists every database takes.

SQLite refuses a statement with more bound parameters than its limit (32,766 since 3.32, 999
before), and PostgreSQL plans a very long IN list slowly; every module reading rows by a list
of keys sends them in chunks of at most CHUNK.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final, TypeVar

T = TypeVar("T")

#: Ids or fingerprints per IN (...) list: well under every database's parameter limit.
CHUNK: Final = 500


def chunks(items: Iterable[T], size: int = CHUNK) -> Iterator[list[T]]:
    """`items` in lists of at most `size`, in their order."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
