"""Reading the console's plain HTML forms: one field, a row id, several row ids.

A bad field is the person's mistake, so it is refused with ActionRefusedError naming the field,
and the console shows that message on the page they came from.
"""

from __future__ import annotations

from litestar.datastructures import FormMultiDict

from foundation import CostlyNumberError
from foundation import row_id as untrusted_row_id
from reconciliation.operator import ActionRefusedError


def text(form: FormMultiDict, name: str) -> str:
    return str(form.get(name) or "").strip()


def row_id(form: FormMultiDict, name: str, *, required: bool = True) -> int | None:
    value = text(form, name)
    if not value:
        if required:
            raise ActionRefusedError(f"{name} is missing: pick one")
        return None
    return _row_id(value, name)


def row_ids(form: FormMultiDict, name: str) -> list[int]:
    return [_row_id(str(value), name) for value in (form.getall(name) if name in form else [])]


def _row_id(value: str, name: str) -> int:
    """A row id, or the person's mistake named: `²` (a digit to `str.isdigit`, not to `int`),
    5,000 digits and ids past 2**63 are refused before anything converts them."""
    try:
        return untrusted_row_id(value, what=name)
    except CostlyNumberError as exc:
        raise ActionRefusedError(f"{exc} (a row id, a whole number)") from None
