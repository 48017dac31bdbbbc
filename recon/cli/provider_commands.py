"""Operator commands on the provider clients: `recon check`, and the shared client set-up.

`recon endpoints` (recon.cli.endpoint_commands) and `recon transfer` / `recon credit`
(recon.cli.transfer_commands) share this module's client set-up and error handling
(`gateway_client`, `gateway_and_store`, `provider_errors`, `HOLDING` and `resolve_holding`).

Thin on purpose: each command builds a client from the settings, calls one or two methods and
prints the answer in plain words. Every provider failure ends the command with the client's own
message (which says what to do) and a non-zero status; no traceback, no credential.

Exit status: 0 done; 1 refused by the provider (bad credentials, missing capability, invalid
input, a denied transfer, a stale guard); 2 configuration; 3 provider unreachable.
"""

from __future__ import annotations

import functools
import logging
import re
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from foundation import Settings
from recon.cli.startup import fail, settings_or_exit
from recon.cli.terminal import say
from recon.gateway_holdings import HoldingNotFoundError, holding_for_account_number
from upstream import (
    TEST_ACCOUNT_NUMBER,
    CompanyClient,
    Forbidden,
    GatewayClient,
    HoldingAddress,
    ProviderError,
    RateLimited,
    RetryPolicy,
    Unauthorized,
    Unavailable,
)

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

F = TypeVar("F", bound=Callable[..., Any])
EXIT_REFUSED, EXIT_UNREACHABLE = 1, 3
#: An operator is waiting: try a few times, but answer within seconds.
CLI_RETRY = RetryPolicy(max_attempts=4, base_delay=0.2, max_delay=2.0, deadline=15.0)


def exit_with(code: int, message: str) -> NoReturn:
    say(f"recon: {message}", err=True)
    sys.exit(code)


def provider_errors(func: F) -> F:
    """Turn a provider failure into its plain message and an exit status."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (Unavailable, RateLimited) as exc:
            exit_with(EXIT_UNREACHABLE, str(exc))
        except ProviderError as exc:
            exit_with(EXIT_REFUSED, str(exc))
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None

    return wrapper  # type: ignore[return-value]


def provider_settings() -> Settings:
    settings = settings_or_exit()
    if settings.logs.level != "debug":
        # One line per HTTP request is for workers; an operator wants the answer (retries,
        # logged as warnings, still show).
        logging.getLogger("upstream").setLevel(logging.WARNING)
    return settings


@contextmanager
def gateway_client(settings: Settings, *, durable_keys: bool = False) -> Iterator[GatewayClient]:
    """A gateway client; with `durable_keys`, Idempotency-Keys are kept in the store."""
    from sqlalchemy.exc import SQLAlchemyError

    keys = None
    if durable_keys:
        from reconciliation.store import make_engine, make_session_factory
        from reconciliation.transfers import StoreIdempotencyKeys

        engine = make_engine(settings.store.database_url)
        keys = StoreIdempotencyKeys(make_session_factory(engine))
    client = GatewayClient(
        settings.provider.gateway_url,
        settings.provider.gateway_api_key.reveal(),
        idempotency=keys,
        retry=CLI_RETRY,
    )
    try:
        yield client
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        reason = str(orig).strip().splitlines()[0] if orig else type(exc).__name__
        fail(
            f"the store could not record the Idempotency-Key ({reason}); check DATABASE_URL "
            "and that `recon db upgrade` has run"
        )
    finally:
        client.close()


@contextmanager
def gateway_and_store(settings: Settings) -> Iterator[tuple[GatewayClient, sessionmaker[Session]]]:
    """A gateway client keeping its keys in the store, and the store's sessions for the rest."""
    from reconciliation.store import make_engine, make_session_factory

    engine = make_engine(settings.store.database_url)
    try:
        with gateway_client(settings, durable_keys=True) as client:
            yield client, make_session_factory(engine)
    finally:
        engine.dispose()


#: An account number as typed: digits only (the sandbox's are ten, a bank's up to 32).
ACCOUNT_NUMBER = re.compile(r"[0-9]{6,32}")


class HoldingParam(click.ParamType[HoldingAddress | str, Any]):
    """`ACCOUNT:ENDPOINT:HOLDING` (three UUIDs naming one balance) or its bank account number.

    An account number is kept as typed and looked up on the gateway by `resolve_holding`, once
    the command has a client.
    """

    name = "account-number|account:endpoint:holding"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> HoldingAddress | str:
        if isinstance(value, HoldingAddress):
            return value
        text = str(value).strip()
        if ACCOUNT_NUMBER.fullmatch(text):
            return text
        try:
            account, endpoint, holding = (uuid.UUID(p) for p in text.split(":"))
        except ValueError:
            self.fail(
                f"{value!r} is neither an account number (digits) nor "
                "ACCOUNT_REF:ENDPOINT_REF:HOLDING_REF (three UUIDs); `recon endpoints list` "
                "lists the endpoints, `recon endpoints show ENDPOINT_REF` prints both forms"
            )
        return HoldingAddress(account_ref=account, endpoint_ref=endpoint, holding_ref=holding)


HOLDING = HoldingParam()


def resolve_holding(
    client: GatewayClient, given: HoldingAddress | str
) -> tuple[HoldingAddress, str]:
    """The holding's address and how to name it to a person; an account number is looked up
    on the gateway's register (a usage error when no holding, or several, answer to it)."""
    if isinstance(given, HoldingAddress):
        return given, f"holding {given.holding_ref}"
    try:
        found = holding_for_account_number(client, given)
    except HoldingNotFoundError as exc:
        raise click.BadParameter(str(exc)) from None
    return found.address, f"{found.label} (holding {found.address.holding_ref})"


# -- recon check ------------------------------------------------------------------------------


def _check_company(settings: Settings, account_number: str) -> tuple[bool | None, list[str]]:
    lines = [f"company API  {settings.provider.company_url}/company/v1"]
    client = CompanyClient(
        settings.provider.company_url,
        settings.provider.company_api_key.reveal(),
        settings.provider.company_app_id,
        retry=CLI_RETRY,
    )
    try:
        answer = client.name_enquiry(account_number)
    except Unauthorized as exc:
        if exc.local:
            return False, [*lines, f"  credentials: BAD. {exc}"]
        lines += [
            "  credentials: BAD. The company API refused RECON_COMPANY_API_KEY and "
            "RECON_COMPANY_APP_ID (401).",
            "  Check both for stray spaces or characters, and that the key belongs to this app.",
        ]
        return False, lines
    except ProviderError as exc:
        lines.append(f"  credentials: could not be checked: {exc}")
        return None, lines
    finally:
        client.close()
    said = f" ({answer.message})" if answer.message else ""
    lines.append(f"  credentials: good; name enquiry for {account_number} answered{said}")
    return True, lines


def _check_gateway(settings: Settings) -> tuple[bool | None, list[str]]:
    lines = [f"gateway      {settings.provider.gateway_url}/v1"]
    client = GatewayClient(
        settings.provider.gateway_url, settings.provider.gateway_api_key.reveal(), retry=CLI_RETRY
    )
    try:
        env = client.environment().value
    except Unauthorized as exc:
        if exc.local:
            return False, [*lines, f"  credentials: BAD. {exc}"]
        lines += [
            "  credentials: BAD. The gateway refused RECON_GATEWAY_API_KEY (401).",
            "  Check it for stray spaces or characters, and that it is a key for this "
            "environment (sandbox keys begin ak_test_).",
        ]
        return False, lines
    except Forbidden:
        lines += [
            "  credentials: good, but the key lacks EnvironmentStatusRead, so the environment "
            "cannot be named. Ask the provider to grant it."
        ]
        return True, lines
    except ProviderError as exc:
        lines.append(f"  credentials: could not be checked: {exc}")
        return None, lines
    finally:
        client.close()
    kind = "sandbox" if env.is_sandbox else "live"
    name = f', "{env.display_name}"' if env.display_name else ""
    lines += [
        "  credentials: good",
        f"  environment: {kind} ({env.environment_kind}{name}); app {env.app_status or '?'}, "
        f"environment {env.environment_status or '?'}",
        "  unavailable parts: "
        + (", ".join(env.unavailable_parts) if env.unavailable_parts else "none"),
    ]
    return True, lines


@click.command()
@click.option(
    "--account-number",
    default=TEST_ACCOUNT_NUMBER,
    show_default=True,
    help="Account number for the company API's name enquiry (a 10-digit test number works).",
)
def check(account_number: str) -> None:
    """Check both provider credentials and name the environment, in plain words.

    The verdict is the first line, the findings for each API follow it; the retries that led
    there are logged only under `recon --verbose`.
    """
    # settings_or_exit keeps the clients' retry warnings quiet unless --verbose.
    settings = settings_or_exit()
    company_ok, company_lines = _check_company(settings, account_number)
    gateway_ok, gateway_lines = _check_gateway(settings)
    verdict, code = _verdict(company_ok, gateway_ok)
    say("\n".join([f"verdict: {verdict}", *company_lines, *gateway_lines]))
    if code:
        sys.exit(code)


def _verdict(company_ok: bool | None, gateway_ok: bool | None) -> tuple[str, int]:
    """One line and the exit status: refused beats unreachable, which beats good."""
    results = (("company API", company_ok), ("gateway", gateway_ok))
    bad = [name for name, ok in results if ok is False]
    if bad:
        return f"credentials BAD for the {' and the '.join(bad)}", EXIT_REFUSED
    unchecked = [name for name, ok in results if ok is None]
    if unchecked:
        return (
            f"could not check the {' and the '.join(unchecked)}: unreachable (details below)",
            EXIT_UNREACHABLE,
        )
    return "credentials good", 0


COMMANDS = [check]
