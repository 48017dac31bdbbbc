"""`recon sandbox`: the provider stand-in, standalone; `recon sandbox traffic`: a day's business on it.

`recon sandbox` alone runs the sandbox, for the demo, development and benchmarks. This is the
one place the recon command reaches into `sandbox/`: it only launches it. recon's own code
talks to the sandbox over HTTP like to the real provider, and never imports it; so does
`recon sandbox traffic`, which drives a sandbox already running (`make sandbox`) through the
provider's APIs and the sandbox's `/_sandbox` control API.

Exit status of `traffic`: 0 done; 1 refused (not a sandbox, a fault nothing would carry, a
balance that never landed); 2 usage or configuration; 3 the sandbox unreachable.
"""

from __future__ import annotations

import random

import click

from foundation import format_money
from recon.cli.provider_commands import (
    EXIT_REFUSED,
    exit_with,
    provider_errors,
    provider_settings,
)
from recon.cli.terminal import say

#: Signature schemes the sandbox can sign deliveries with (docs/decisions.md).
SCHEMES = (
    "standard",
    "ed25519",
    "hmac-sha256-hex",
    "hmac-sha256-base64",
    "hmac-sha512-hex",
    "hmac-sha512-base64",
)


@click.group(invoke_without_command=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8080, show_default=True, type=int, help="Port to listen on.")
@click.option("--seed", default=1, show_default=True, type=int, help="Makes faults reproducible.")
@click.option(
    "--finality-delay",
    default=2.0,
    show_default=True,
    type=float,
    help="Seconds before a reserved transfer reaches its terminal outcome.",
)
@click.option(
    "--projection-lag",
    default=0.5,
    show_default=True,
    type=float,
    help="Seconds before a posting shows in the balance.",
)
@click.option(
    "--signature-scheme",
    default="standard",
    show_default=True,
    type=click.Choice(SCHEMES),
    help="How webhook deliveries are signed.",
)
@click.option(
    "--variant",
    default="recon",
    show_default=True,
    envvar="RECON_SANDBOX_VARIANT",
    help="Which provider to play where the specs say 'not shown': a preset (recon, standard, "
    "sparse) and optional choice=value overrides, comma-separated (docs/decisions.md).",
)
@click.option(
    "--fees",
    default="",
    envvar="RECON_SANDBOX_FEES",
    help="Fee schedule charged on transfers: flat=<minor units>,bp=<basis points>,"
    "bearer=<sender_pays|application_pays|receiver_pays|split>, optionally drift=<minor units> "
    "and <bearer>.flat / <bearer>.bp. Empty: no fees.",
)
@click.pass_context
def sandbox(ctx: click.Context, /, **options: object) -> None:
    """Run the provider sandbox (gateway /v1, company API /company/v1, control API /_sandbox).

    With a command after it, that command instead: `recon sandbox traffic` drives a day's
    business against a sandbox already running. The options above are the server's only.
    """
    # Each option goes to the sandbox's own command line under the same name.
    flags = {name: f"--{name.replace('_', '-')}" for name in options}
    if ctx.invoked_subcommand is not None:
        given = [
            flag
            for name, flag in flags.items()
            if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
        ]
        if given:
            raise click.UsageError(
                f"{', '.join(given)} configure(s) the sandbox server, which `recon sandbox "
                f"{ctx.invoked_subcommand}` does not start: it talks to the sandbox at "
                "RECON_GATEWAY_URL"
            )
        return
    from sandbox.__main__ import main as sandbox_main

    sandbox_main([f"{flags[name]}={value}" for name, value in options.items()])


@sandbox.command(
    "traffic", short_help="A business day against a running sandbox: credits, transfers, faults."
)
@click.option(
    "--accounts",
    default=3,
    show_default=True,
    type=click.IntRange(min=1),
    help="Customer accounts to spread the day over: the gateway's first ones in the currency, "
    "opened when there are fewer.",
)
@click.option(
    "--credits",
    default=6,
    show_default=True,
    type=click.IntRange(min=0),
    help="Inbound payments (100.00 to 50,000.00 each), round the accounts.",
)
@click.option(
    "--transfers",
    default=3,
    show_default=True,
    type=click.IntRange(min=0),
    help="Transfers out of the account credited most, to the others, within half of what "
    "it received today.",
)
@click.option(
    "--faults",
    "faults_text",
    default="",
    metavar="NAME,...",
    help="Faults to inject, one extra credit or transfer each: "
    "dropped-webhook, amount-mismatch, duplicate-delivery, conflicting-delivery, "
    "stuck-transfer. Webhook faults need recon's web process registered at the sandbox.",
)
@click.option("--currency", default="NGN", show_default=True)
@click.option("--seed", type=int, default=None, help="Draw the same amounts as another run.")
@provider_errors
def traffic(
    accounts: int,
    credits: int,
    transfers: int,
    faults_text: str,
    currency: str,
    seed: int | None,
) -> None:
    """Drive a business day against a running sandbox (`make sandbox`): credits, transfers and
    faults on request, each said before it is sent.

    It uses recon's settings (RECON_GATEWAY_URL and its key, DATABASE_URL for the transfers'
    intents), so the processes started from the Procfile find the day to reconcile.
    """
    from recon.cli.provider_commands import gateway_and_store
    from recon.demo.scenario import SandboxControl
    from recon.demo.traffic import (
        DayPlan,
        Traffic,
        TrafficError,
        parse_faults,
        run_day,
    )

    try:
        faults = parse_faults(faults_text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--faults") from None
    settings = provider_settings()
    unit = currency.upper()
    plan = DayPlan(accounts, credits, transfers, tuple(faults), unit)
    control = SandboxControl(settings.provider.gateway_url)
    try:
        with gateway_and_store(settings) as (client, sessions):
            env = client.environment().value
            if not env.is_sandbox:
                exit_with(
                    EXIT_REFUSED,
                    f"refused: the gateway at {settings.provider.gateway_url} is "
                    f"{env.environment_kind}, not a sandbox; traffic is only made in a sandbox",
                )
            say(f"sandbox: {settings.provider.gateway_url} ({env.environment_kind})")
            day = Traffic(client, sessions, control, say, random.Random(seed))
            record = run_day(day, plan)
    except TrafficError as exc:
        exit_with(EXIT_REFUSED, str(exc))
    finally:
        control.close()
    total = format_money(record.credited, unit)
    say(
        f"done: {record.credits} credit(s) of {total} in all, {len(record.transfers)} "
        f"transfer(s) ({record.denied} denied), {record.opened} account(s) opened, faults: "
        + (", ".join(record.faults) or "none")
    )
    say(
        "recon reads it at its next poll and reconciles it at its next pass; then "
        "`recon alerts list` and `recon report` (or `recon reconcile` now)"
    )


COMMANDS = [sandbox]
