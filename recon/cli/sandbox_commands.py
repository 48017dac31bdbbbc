"""`recon sandbox`: the provider stand-in, standalone, for the demo, development and benchmarks.

This is the one place the recon command reaches into `sandbox/`: it only launches it. recon's
own code talks to the sandbox over HTTP like to the real provider, and never imports it.
"""

from __future__ import annotations

import click

#: Signature schemes the sandbox can sign deliveries with (docs/decisions.md).
SCHEMES = (
    "standard",
    "ed25519",
    "hmac-sha256-hex",
    "hmac-sha256-base64",
    "hmac-sha512-hex",
    "hmac-sha512-base64",
)


@click.command()
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
def sandbox(
    host: str,
    port: int,
    seed: int,
    finality_delay: float,
    projection_lag: float,
    signature_scheme: str,
    variant: str,
    fees: str,
) -> None:
    """Run the provider sandbox (gateway /v1, company API /company/v1, control API /_sandbox)."""
    from sandbox.__main__ import main as sandbox_main

    sandbox_main(
        [
            f"--host={host}",
            f"--port={port}",
            f"--seed={seed}",
            f"--finality-delay={finality_delay}",
            f"--projection-lag={projection_lag}",
            f"--signature-scheme={signature_scheme}",
            f"--variant={variant}",
            f"--fees={fees}",
        ]
    )


COMMANDS = [sandbox]
