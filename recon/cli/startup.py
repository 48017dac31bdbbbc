"""What every command does first: read the environment, load the settings, open the store.

Kept apart from `recon.cli.main`, which imports every command module, so that the command
modules can share these functions without importing the module that imports them.

Output discipline: a command's answer goes to stdout and nothing else does. Logs go to stderr,
and a one-shot command (a report, a check, a dry run) logs only warnings and errors unless the
operator asks for `recon --verbose`; the long-running processes (`web`, `worker`, `scheduler`)
log at RECON_LOG_LEVEL, since their log is their output.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from foundation import (
    STORE_GROUPS,
    ConfigError,
    Settings,
    load_settings,
    mask_url_password,
    printable,
)

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session, sessionmaker

#: Exit status for configuration and connectivity problems (usage errors are click's 2 too).
EXIT_CONFIG = 2

#: Loggers whose retries and request lines a one-shot command keeps to itself without
#: --verbose: the command reports the provider's final answer (or failure) in its own words.
CHATTY_LOGGERS = ("upstream",)


@dataclass(frozen=True)
class CliOptions:
    """The `recon` group's own options, kept on the root click context for every command."""

    verbose: bool = False


def cli_options() -> CliOptions:
    """The global options of the running command (defaults outside a click invocation)."""
    ctx = click.get_current_context(silent=True)
    options = ctx.find_root().obj if ctx is not None else None
    return options if isinstance(options, CliOptions) else CliOptions()


def fail(message: str) -> NoReturn:
    """End the command with one line per problem, for what the operator must fix outside recon."""
    for line in message.splitlines() or [""]:
        # A message may quote what it refuses (an id, a path): shown, never obeyed.
        click.echo(f"recon: {printable(line)}", err=True)
    sys.exit(EXIT_CONFIG)


# -- --env-file ---------------------------------------------------------------------------------


def read_env_file(path: Path) -> dict[str, str]:
    """`NAME=value` lines (the .env format honcho reads), comments and blank lines skipped.

    A value is taken as written up to the end of the line; one pair of matching quotes around
    it is removed. No `#` comment after a value, because a password may contain `#`.
    """
    values: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if text.startswith("export "):
            text = text[len("export ") :].lstrip()
        name, equals, value = text.partition("=")
        name = name.strip()
        if not equals or not name.isidentifier():
            fail(f"{path}:{number}: expected NAME=value, found {line[:40]!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name] = value
    return values


def apply_env_file(path: Path) -> None:
    """Put the file's variables into this process's environment, over what is there already.

    The file wins, like honcho's .env: `recon --env-file .recon/demo/env report` must see
    exactly the settings the demo ran with, whatever the shell happens to export.
    """
    os.environ.update(read_env_file(path))


# -- settings and logging -----------------------------------------------------------------------


def configure_command_logging(
    log_format: str, configured_level: str, *, serves: bool, item_sample: float = 0.0
) -> None:
    """Logs to stderr: a serving process at its configured level, a command quieter."""
    from foundation import configure_logging

    verbose = cli_options().verbose
    level = configured_level
    if not serves and not verbose and configured_level in ("debug", "info"):
        level = "warning"
    if verbose and configured_level in ("warning", "error"):
        level = "info"
    configure_logging(log_format, level, item_sample)
    quiet = not serves and not verbose
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR if quiet else logging.NOTSET)


def settings_or_exit(
    *, keeps_secrets: bool = False, serves: bool = False, store_only: bool = False
) -> Settings:
    """Load and validate the configuration, or stop with one line per bad variable.

    `store_only`: the command reads or migrates the store and nothing else (a report, a list,
    `db upgrade`), so only the store's, matching's and logging's variables are checked; the
    provider's keys and the admin token may be missing. `keeps_secrets`: the command encrypts or decrypts stored secrets (webhook registration),
    so the embedded default's key file is created now if there is none. Every other command
    leaves the disk alone. `serves`: a long-running process, whose logs are its output.
    """
    try:
        settings = load_settings(only=STORE_GROUPS if store_only else None)
    except ConfigError as exc:
        fail(str(exc))
    configure_command_logging(
        settings.logs.format,
        settings.logs.level,
        serves=serves,
        item_sample=settings.logs.item_sample,
    )
    if serves:
        from foundation import start_memory_trace

        start_memory_trace(settings.logs.trace_memory_seconds)
    if keeps_secrets:
        settings = with_secret_keys(settings)
    _register_secrets(settings)
    return settings


def with_secret_keys(settings: Settings) -> Settings:
    """The settings with encryption keys, the embedded default's key file created if missing."""
    from foundation import SharedStoreKeyError, provision_secret_keys

    try:
        provisioned = provision_secret_keys(settings)
    except SharedStoreKeyError as exc:
        fail(str(exc))
    _register_secrets(provisioned)
    return provisioned


def _register_secrets(settings: Settings) -> None:
    from foundation import register_secrets

    register_secrets(
        [
            settings.provider.gateway_api_key,
            settings.provider.company_api_key,
            settings.web.admin_token,
            settings.alerts.webhook_secret,
            *settings.store.secret_keys,
            *settings.webhooks.secrets,
        ]
    )


# -- what a process needs before it starts --------------------------------------------------------


def ensure_port_free(host: str, port: int, *, option: str = "--port (or PORT)") -> None:
    """Stop with one line if nothing can listen on host:port, before anything else starts.

    Binding a throw-away socket the way uvicorn will (SO_REUSEADDR, so a port in TIME_WAIT is
    fine) finds a port in use in a millisecond; otherwise the process would start its workers
    and register its webhook first, then fail deep inside the server.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror} (check --host)")
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                fail(
                    f"port {port} on {host} is already in use: stop the process listening "
                    f"there, or choose another port with {option}"
                )
            fail(f"cannot listen on {host}:{port}: {exc.strerror}")


def require_redis_or_exit(settings: Settings) -> None:
    """With REDIS_URL set, stop within seconds with one line if Redis does not answer."""
    if settings.broker.redis_url is None:
        return
    from workers import BrokerUnreachableError, require_redis

    try:
        require_redis(settings.broker.redis_url)
    except BrokerUnreachableError as exc:
        fail(str(exc))


# -- the store, for commands that read it ---------------------------------------------------------


def serving_store_or_exit(settings: Settings) -> None:
    """Before a serving process (web, worker, scheduler) starts anything: its store is usable.

    The embedded default (DATABASE_URL unset) is the laptop's first run: the process creates
    and migrates its own SQLite file, so `recon web` works from nothing. A configured store is
    the operator's, made by the release step: if it cannot be reached, is not there, or has no
    tables, the process stops with one line, as every other command does, instead of serving
    /health while every request fails (and it never creates an empty SQLite file on the way).
    An outage after start is another matter: requests answer 503 and workers retry.
    """
    if settings.store.embedded:
        from sqlalchemy.exc import OperationalError

        from migrations import runner as migrate

        alembic_log = logging.getLogger("alembic")
        level = alembic_log.level
        alembic_log.setLevel(logging.WARNING)  # its plugin and step lines say nothing here
        try:
            migrate.upgrade(settings.store.database_url)
        except OperationalError as exc:
            reason = str(exc.orig).strip().splitlines()[0] if exc.orig else "cannot open it"
            fail(f"the embedded store at {settings.store.database_url} is not usable: {reason}")
        finally:
            alembic_log.setLevel(level)
        return
    with existing_store(settings):
        pass


@contextmanager
def existing_store(settings: Settings) -> Iterator[sessionmaker[Session]]:
    """Sessions on the configured store, which must already exist with its schema.

    A command that reads (a report, a dry run, a list) never creates a store: an empty one
    would only answer "no such table" and hide the real mistake, a DATABASE_URL pointing at
    the wrong place. It says there is none and how to make one instead.
    """
    from sqlalchemy.exc import OperationalError, ProgrammingError

    from reconciliation.store import StoreMissingError, make_engine, make_session_factory

    shown = mask_url_password(settings.store.database_url)
    try:
        engine = make_engine(settings.store.database_url, must_exist=True)
    except StoreMissingError as exc:
        fail(f"{exc}: create it with `recon db upgrade`, or {_where_stores_are(settings)}")
    try:
        _require_schema(engine, shown)
        yield make_session_factory(engine)
    except (OperationalError, ProgrammingError) as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else "connection failed"
        todo = "check DATABASE_URL"
        if "does not exist" in reason:
            todo = "create it, then run `recon db upgrade`; or check DATABASE_URL"
        fail(f"database unavailable at {shown}: {reason.strip()} ({todo})")
    finally:
        engine.dispose()


def _where_stores_are(settings: Settings) -> str:
    """Point at the store a first-hour user most likely means: the demo's, when there is one."""
    from recon.demo.env_file import demo_env_path

    demo_env = demo_env_path(settings.store.state_dir)
    if demo_env.is_file():
        return f"to look at the demo's store: recon --env-file {demo_env} <command>"
    return "point DATABASE_URL (or --env-file) at an existing store"


def _require_schema(engine: Engine, shown: str) -> None:
    """The store has recon's tables: Alembic's version table, holding a revision. A store
    taken down to `base` (`recon db downgrade --revision base --drop-everything`) keeps an
    empty version table and nothing else: it has no tables yet either, not an outage."""
    from sqlalchemy import inspect, text

    missing = not inspect(engine).has_table("alembic_version")
    if not missing:
        with engine.connect() as connection:
            missing = (
                connection.execute(text("SELECT version_num FROM alembic_version")).first() is None
            )
    if missing:
        fail(f"the store at {shown} has no tables yet: create them with `recon db upgrade`")
