"""Signing in to the console of a real `recon web` over HTTP, as a browser would."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from tests.integration.app.receiver_helpers import ADMIN_TOKEN

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(client: httpx.Client, path: str = "/console") -> str:
    """The CSRF token of a console page's forms."""
    found = _CSRF.search(client.get(path).text)
    assert found is not None, f"no form on {path}"
    return found.group(1)


def sign_in(client: httpx.Client, name: str = "Grace", token: str = ADMIN_TOKEN) -> httpx.Response:
    """Post the sign-in form with `token`; the client keeps the cookies it is given."""
    form = client.get("/console/sign-in")
    found = _CSRF.search(form.text)
    assert found is not None, form.text[:500]
    return client.post(
        "/console/sign-in",
        data={"csrf_token": found.group(1), "name": name, "token": token, "next": ""},
    )


@contextmanager
def signed_in_client(base: str, name: str = "Grace") -> Iterator[httpx.Client]:
    """A client with a console session, closed at the end of the block."""
    with httpx.Client(base_url=base, timeout=30) as client:
        answer = sign_in(client, name)
        assert answer.status_code == 303, answer.text[:500]
        yield client
