"""The JSON API's door to the operator service: who acts, and one way to run any action.

Every API change a person asks for (`/alerts/{id}/ack|resolve`, `/deliveries/{row}/replay`,
`/deliveries/replay`, `/deliveries/{row}/choose`) runs through `perform`: one audit row naming
the person and the door `api`, committed with the change; a refusal is a 400 with the service's
message, an id that names nothing a 404. Those that ask the provider for something (`POST
/transfers`, `POST /transfers/{ref}/track`) run through `perform_at_provider`, whose action
says which of its transactions carries the row (reconciliation.operator.provider_actions).

Who: the admin token proves the right to act but names nobody (one token is shared, see
app.auth), so the name is the request's `by`, as the console's is the name given at sign-in
with the same token. A request that can name no one (a replay, which has no body) is recorded
as ADMIN_TOKEN_ACTOR.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Concatenate, Final, ParamSpec, TypeVar

from litestar.datastructures import State
from litestar.exceptions import NotFoundException, ValidationException
from sqlalchemy.orm import Session, sessionmaker

from app import state_keys
from reconciliation.operator import (
    API,
    ActionRefusedError,
    Actor,
    OperatorService,
    UnknownSubjectError,
)

P = ParamSpec("P")
T = TypeVar("T")

#: The actor of an API change whose request names no one: all the bearer token says.
ADMIN_TOKEN_ACTOR: Final = "admin token"


def perform(
    state: State,
    by: str | None,
    action: Callable[Concatenate[Session, Actor, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """Run `action` as `by` through the door `api`, in its own transaction."""
    with _answered():
        return _service(state, by).perform(action, *args, **kwargs)


def perform_at_provider(
    state: State,
    by: str | None,
    action: Callable[Concatenate[sessionmaker[Session], Actor, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """Run `action`, which asks the provider for something between transactions of its own,
    as `by` through the door `api`; the provider's errors are left to the route's handlers."""
    with _answered():
        return _service(state, by).perform_at_provider(action, *args, **kwargs)


def _service(state: State, by: str | None) -> OperatorService:
    return OperatorService(
        state[state_keys.SESSION_FACTORY], ADMIN_TOKEN_ACTOR if by is None else by, API
    )


@contextmanager
def _answered() -> Iterator[None]:
    """A refusal as the API answers it: 404 for an id that names nothing, else 400."""
    try:
        yield
    except UnknownSubjectError as exc:
        raise NotFoundException(detail=str(exc)) from None
    except ActionRefusedError as exc:
        raise ValidationException(detail=str(exc)) from None
