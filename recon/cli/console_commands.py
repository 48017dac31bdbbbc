"""`recon console sessions list|end-all`: the console's sessions, seen and ended from a shell.

`end-all` is what to run when a cookie may have been copied (a shared machine, a laptop left
open, a screenshot of the developer tools): every session ends at once in every web process,
because sessions live in the store. Everyone signs in again; nothing else changes, and the
admin token need not be rotated. The audit trail records who ended them.
"""

from __future__ import annotations

import click

from recon.cli.operator_door import BY, act
from recon.cli.startup import existing_store, settings_or_exit


@click.group()
def console() -> None:
    """The operator console's sessions."""


@console.group()
def sessions() -> None:
    """Sessions signed in to the console (kept in the store, shared by every web process)."""


@sessions.command("list")
def list_sessions() -> None:
    """How many sessions can still sign someone in."""
    from reconciliation.operator import SessionRules, count_live
    from reconciliation.store import transaction

    settings = settings_or_exit()
    rules = SessionRules(
        absolute_seconds=settings.web.console_session_seconds,
        idle_seconds=settings.web.console_idle_seconds,
    )
    with existing_store(settings) as factory, transaction(factory) as session:
        live = count_live(session, rules)
    click.echo(f"{live} console session(s) signed in")


@sessions.command("end-all")
@BY
def end_all_sessions(by: str | None) -> None:
    """End every console session now: everyone signs in again."""
    from reconciliation.operator import actions

    ended = act(settings_or_exit(), by, actions.end_all_sessions)
    click.echo(f"ended {ended} console session(s); everyone signs in again")


COMMANDS = [console]
