"""The CLI's door to the operator service: who acts, and one way to run any action.

Every command that changes what a person decides (`recon alerts ack|resolve`, `recon
match|accept|unmatch`, `recon deliveries replay|choose`, `recon console sessions end-all`) runs
it through `act` (`act_at_provider` for those that ask the provider for something: `recon
transfer create|track`, `recon endpoints suspend|resume`, `recon webhooks register|rotate`,
`recon credit simulate`), so it is audited as the console's and the API's changes are: one row naming
the person and the door `cli`, committed with the change. Who: `--by NAME`, else the user
running the command (as the operating system names them), so a shell on a shared account
should say `--by`.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

import click

from recon.cli.startup import existing_store, fail

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from foundation import Settings
    from reconciliation.operator import Actor

P = ParamSpec("P")
T = TypeVar("T")

#: The `--by` option of every command that changes something.
BY = click.option(
    "--by",
    default=None,
    help="Who acts, for the audit trail (default: the user running the command).",
)


def user_running() -> str:
    """The operating system's name for the user running the command; none is refused."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        fail("cannot tell who is running this command: say who acts with --by NAME")


def act(
    settings: Settings,
    by: str | None,
    action: Callable[Concatenate[Session, Actor, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """Run `action` as `by` (default: the user running the command) through the door `cli`,
    in its own transaction; a refusal ends the command with its message."""
    from reconciliation.operator import CLI, ActionRefusedError, OperatorService

    name = user_running() if by is None else by
    with existing_store(settings) as store:
        try:
            return OperatorService(store, name, CLI).perform(action, *args, **kwargs)
        except ActionRefusedError as exc:
            fail(str(exc))


def act_at_provider(
    store: sessionmaker[Session],
    by: str | None,
    action: Callable[Concatenate[sessionmaker[Session], Actor, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """Run `action`, which asks the provider for something between transactions of its own
    (reconciliation.operator.provider_actions), as `by` through the door `cli`. A refusal ends
    the command with its message and status 1, as every provider command's refusal does; the
    provider's own errors are left to the command's handling (`provider_errors`)."""
    from recon.cli.provider_commands import EXIT_REFUSED, exit_with
    from reconciliation.operator import CLI, ActionRefusedError, OperatorService

    name = user_running() if by is None else by
    try:
        return OperatorService(store, name, CLI).perform_at_provider(action, *args, **kwargs)
    except ActionRefusedError as exc:
        exit_with(EXIT_REFUSED, str(exc))
