"""Reading the console's plain HTML forms: one field, a row id, several row ids.

A bad field is the person's mistake, so it is refused with ActionRefusedError naming the field,
and the console shows that message on the page they came from.
"""

from __future__ import annotations

from litestar.datastructures import FormMultiDict

from reconciliation.operator import ActionRefusedError


def text(form: FormMultiDict, name: str) -> str:
    return str(form.get(name) or "").strip()


def row_id(form: FormMultiDict, name: str, *, required: bool = True) -> int | None:
    value = text(form, name)
    if not value:
        if required:
            raise ActionRefusedError(f"{name} is missing: pick one")
        return None
    if not value.isdigit():
        raise ActionRefusedError(f"{name} {value!r} is not a row id (a whole number)")
    return int(value)


def row_ids(form: FormMultiDict, name: str) -> list[int]:
    found: list[int] = []
    for value in form.getall(name) if name in form else []:
        if not str(value).isdigit():
            raise ActionRefusedError(f"{name} {value!r} is not a row id (a whole number)")
        found.append(int(value))
    return found
