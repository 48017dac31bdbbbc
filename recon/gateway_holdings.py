"""Holdings as the gateway's endpoint register lists them, found by what a person knows.

Moving money names a holding by three UUIDs (account, endpoint, holding); a person knows an
account number, or nothing yet. The register's rows carry no holding ref and no account
number, so each endpoint is read once; fine for the sandbox and a small register, which is
where these are used (`recon credit simulate --to 0123456789`, `recon sandbox traffic`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from upstream import EndpointRow, GatewayClient, HoldingAddress, NotFound

#: The locator form whose display carries a bank account number (docs/decisions.md).
BANK_ACCOUNT_FORM = "nigerian_bank_account"


class HoldingNotFoundError(LookupError):
    """No holding, or more than one, answers to what the person gave; the message says which."""


@dataclass(frozen=True, slots=True)
class GatewayHolding:
    """One holding of the register, with what a person recognises it by."""

    address: HoldingAddress
    template: str
    unit: str | None
    account_number: str | None

    @property
    def label(self) -> str:
        """`account 0123456789` when it has one, else `holding <holding_ref>`."""
        if self.account_number:
            return f"account {self.account_number}"
        return f"holding {self.address.holding_ref}"


def _may_have_account_number(row: EndpointRow) -> bool:
    summary = row.locator_summary
    return summary is None or BANK_ACCOUNT_FORM in summary.forms


def gateway_holdings(
    client: GatewayClient, *, with_account_number: bool = False
) -> Iterator[GatewayHolding]:
    """Every holding of the register, in its order; with `with_account_number`, only those
    an account number addresses (rows whose locator summary rules it out are not read)."""
    for row in client.iter_programmable_endpoints():
        if with_account_number and not _may_have_account_number(row):
            continue
        try:
            endpoint = client.get_programmable_endpoint(row.endpoint_ref).value.endpoint
        except NotFound:
            continue  # closed between the list and the read
        if endpoint is None or endpoint.holding_ref is None:
            continue
        numbers = [loc.account_number for loc in endpoint.locators if loc.account_number]
        if with_account_number and not numbers:
            continue
        yield GatewayHolding(
            address=HoldingAddress(
                account_ref=endpoint.account_ref,
                endpoint_ref=endpoint.endpoint_ref,
                holding_ref=endpoint.holding_ref,
            ),
            template=endpoint.template,
            unit=str(endpoint.unit) if endpoint.unit is not None else None,
            account_number=numbers[0] if numbers else None,
        )


def holding_for_account_number(client: GatewayClient, account_number: str) -> GatewayHolding:
    """The one holding the account number addresses, or HoldingNotFoundError saying why not."""
    found = [
        h
        for h in gateway_holdings(client, with_account_number=True)
        if h.account_number == account_number
    ]
    if len(found) == 1:
        return found[0]
    if not found:
        raise HoldingNotFoundError(
            f"no holding on the gateway has account number {account_number}; `recon endpoints "
            "list` lists the endpoints and `recon endpoints show ENDPOINT_REF` their numbers"
        )
    raise HoldingNotFoundError(
        f"{len(found)} holdings have account number {account_number}; name one by its "
        "ACCOUNT_REF:ENDPOINT_REF:HOLDING_REF (`recon endpoints show ENDPOINT_REF` prints it)"
    )
