"""The `recon` command: one entry point for every process and operator task.

Each command group lives in its own module and is registered below. Configuration errors and an
unreachable database end the command with one line on stderr and exit status 2, never with a
traceback: the person reading it at 3 a.m. needs the variable name, not a stack.
"""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """recon: webhook receiver and reconciliation worker for the provider's gateway and company API."""


def _register() -> None:
    from recon.cli import config_commands, db_commands

    cli.add_command(db_commands.db)
    cli.add_command(config_commands.config)
    # Later command groups register here, one line each.
    for name in (
        "recon.cli.sandbox_commands",
        "recon.cli.provider_commands",
        "recon.cli.endpoint_commands",
        "recon.cli.web_commands",
        "recon.cli.webhook_commands",
        "recon.cli.delivery_commands",
        "recon.cli.worker_commands",
        "recon.cli.reconcile_commands",
        "recon.cli.alert_commands",
        "recon.cli.report_commands",
        "recon.cli.demo_commands",
    ):
        _add_module_commands(name)


def _add_module_commands(module_name: str) -> None:
    """Add every click command a module exports in `COMMANDS`; a module not written yet is skipped."""
    import importlib
    import importlib.util

    if importlib.util.find_spec(module_name) is None:
        return
    module = importlib.import_module(module_name)
    for command in getattr(module, "COMMANDS", ()):
        cli.add_command(command)


_register()


def main() -> None:
    cli()
