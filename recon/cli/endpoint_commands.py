"""`recon endpoints`: list, inspect, suspend and resume programmable endpoints.

Split from recon.cli.provider_commands, whose client set-up and error handling it shares: the
same exit statuses, the same plain-words messages, no traceback and no credential. Suspend and
resume go through reconciliation.operator.provider_actions, so each leaves one audit row naming
who acted (`--by`, else the user running the command) once the gateway has applied it.
"""

from __future__ import annotations

import uuid

import click

from recon.cli.operator_door import BY, act_at_provider
from recon.cli.provider_commands import (
    EXIT_REFUSED,
    exit_with,
    gateway_and_store,
    gateway_client,
    provider_errors,
    provider_settings,
)
from recon.cli.terminal import fitted, output_width, say, width_option
from reconciliation.operator import provider_actions
from upstream import RESUME_REASONS, SUSPEND_REASONS, Endpoint, GatewayClient, WriteReplayed


@click.group()
def endpoints() -> None:
    """List, inspect, suspend and resume programmable endpoints."""


@endpoints.command("list")
@click.option(
    "--accounts/--no-accounts",
    default=True,
    show_default=True,
    help="Show each endpoint's bank account number (what `recon transfer --from/--to` takes): "
    "one request per endpoint that has a locator, as the register lists no numbers.",
)
@width_option
@provider_errors
def endpoints_list(accounts: bool, width: int | None) -> None:
    """Every programmable endpoint (follows the register to its end, 100 per page)."""
    count = 0
    columns = output_width(width)
    with gateway_client(provider_settings()) as client:
        for row in client.iter_programmable_endpoints():
            count += 1
            summary = row.locator_summary
            locators = ", ".join(summary.forms) if summary and summary.forms else "no locator"
            number = ""
            if accounts and summary and summary.forms:
                number = _account_numbers(client, row.endpoint_ref) or ""
            say(
                fitted(
                    f"{row.endpoint_ref}  {row.family}  account {row.account_ref}  "
                    f"{row.unit or '-'}  receive={row.capability_posture.receive or '-'}  "
                    f"{locators}" + (f"  account number {number}" if number else ""),
                    columns,
                )
            )
    say(f"{count} endpoint(s)")


def _account_numbers(client: GatewayClient, endpoint_ref: uuid.UUID) -> str | None:
    """The bank account numbers of one endpoint's locators, read from the endpoint itself."""
    read = client.get_programmable_endpoint(endpoint_ref).value
    if read.endpoint is None:
        return None
    numbers = [loc.account_number for loc in read.endpoint.locators if loc.account_number]
    return ", ".join(numbers) or None


def _describe(ep: Endpoint) -> list[str]:
    p = ep.capability_posture
    lines = [
        f"endpoint {ep.endpoint_ref} ({ep.template})",
        f"  account {ep.account_ref}  holding {ep.holding_ref}",
        f"  owner {ep.owner_ref} ({ep.owner_kind})  unit {ep.unit or '-'}",
        f"  posture: receive={p.receive} send={p.send} lifecycle={p.lifecycle} backing={p.backing}",
    ]
    lines += [
        f"  locator: {loc.form} {loc.display}"
        + (f" (account number {loc.account_number})" if loc.account_number else "")
        for loc in ep.locators
    ]
    if ep.holding_ref is not None:
        # What `recon transfer ... --from/--to` and `recon credit simulate --to` take.
        lines.append(f"  address: {ep.account_ref}:{ep.endpoint_ref}:{ep.holding_ref}")
    if ep.lifecycle_guard is not None:
        lines.append(f"  lifecycle guard: state version {ep.lifecycle_guard.state_version}")
    return lines


@endpoints.command("show")
@click.argument("endpoint_ref", type=click.UUID)
@provider_errors
def endpoints_show(endpoint_ref: uuid.UUID) -> None:
    """One endpoint: refs, owner, posture, locators and its current lifecycle guard."""
    with gateway_client(provider_settings()) as client:
        read = client.get_programmable_endpoint(endpoint_ref).value
    if read.endpoint is None:
        exit_with(EXIT_REFUSED, f"endpoint {endpoint_ref}: {read.kind.replace('_', ' ')}")
    say("\n".join(_describe(read.endpoint)))


@endpoints.command("readiness")
@click.argument("endpoint_ref", type=click.UUID)
@provider_errors
def endpoints_readiness(endpoint_ref: uuid.UUID) -> None:
    """Why each family of operations is ready or blocked (reserves nothing)."""
    with gateway_client(provider_settings()) as client:
        ready = client.endpoint_readiness(endpoint_ref).value
    if ready.kind != "found":
        exit_with(EXIT_REFUSED, f"endpoint {endpoint_ref}: {ready.kind.replace('_', ' ')}")
    for fam in ready.operation_families:
        say(f"{fam.family:<30} {fam.status:<8} {', '.join(fam.reason_codes)}")


def _lifecycle(endpoint_ref: uuid.UUID, operation: str, reason: str, by: str | None) -> None:
    """Send one command with the guard of a fresh read; a stale guard is reported only."""
    with gateway_and_store(provider_settings()) as (client, sessions):
        result = act_at_provider(
            sessions, by, provider_actions.change_endpoint, client, endpoint_ref, operation, reason
        )
    if isinstance(result, WriteReplayed):
        # The gateway took this command in before (same key): nothing was applied twice.
        say(f"{operation}: endpoint {endpoint_ref} already done earlier [replayed]")
        return
    a = result.value
    say(
        f"{operation}: endpoint {endpoint_ref} {a.previous_posture} -> {a.current_posture} "
        f"(state version {a.previous_state_version} -> {a.current_state_version}, {reason})"
        + (" [replayed]" if a.replayed else "")
    )


def _lifecycle_command(operation: str, reasons: tuple[str, ...], default: str, doc: str) -> None:
    """`recon endpoints suspend|resume ENDPOINT_REF`: one lifecycle command, audited."""

    @endpoints.command(operation, help=doc)
    @click.argument("endpoint_ref", type=click.UUID)
    @click.option("--reason", type=click.Choice(reasons), default=default)
    @BY
    @provider_errors
    def change(endpoint_ref: uuid.UUID, reason: str, by: str | None) -> None:
        _lifecycle(endpoint_ref, operation, reason, by)


_lifecycle_command(
    "suspend",
    SUSPEND_REASONS,
    "operator_hold",
    "Suspend an endpoint: it stays readable but refuses new operations.",
)
_lifecycle_command("resume", RESUME_REASONS, "operator_cleared", "Resume a suspended endpoint.")


COMMANDS = [endpoints]
