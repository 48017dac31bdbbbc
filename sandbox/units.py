"""Value units as the sandbox keeps them: one key string per unit, and the wire object back.

The gateway spec shows only `{"kind": "fiat", "currency": ...}`; for other kinds it names
`asset`, `network` and `instrumentRef` as query parameters but shows no `valueUnit` with them.
The sandbox reads and writes them under those names (and, as the `unit_asset_member` variant
choice, may write a non-fiat asset under `currency` instead). Internally a unit is a key: the
currency for fiat ("NGN"), `kind:asset@network#instrumentRef` otherwise, so a holding, a
transfer and a credit compare units by comparing strings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

#: The kind the spec shows.
FIAT: Final = "fiat"

#: Decimals the sandbox writes a major-unit amount of a non-fiat asset with (its webhooks'
#: `amount`); an asset not listed counts whole base units.
ASSET_DECIMALS: Final = {"USDC": 6, "USDT": 6, "ETH": 18, "WEI": 0, "BTC": 8}

_CURRENCY: Final = re.compile(r"^[A-Z]{3}$")
#: A kind, asset, network or instrument ref: printable, without the key's own separators.
_PART: Final = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")

#: Where a non-fiat unit's asset goes on the wire (ProviderVariant.unit_asset_member).
_asset_member = "asset"


def write_asset_under(member: str) -> None:
    """Play the variant's choice of member for a non-fiat asset ("asset" or "currency")."""
    global _asset_member  # noqa: PLW0603 - one provider per sandbox process, set at start-up
    _asset_member = member


def unit_key(unit: Mapping[str, Any], name: str = "valueUnit") -> str:
    """The key of a wire `valueUnit`; ValueError saying what is wrong otherwise."""
    kind = unit.get("kind")
    if kind == FIAT:
        currency = unit.get("currency")
        if not isinstance(currency, str) or not _CURRENCY.match(currency):
            raise ValueError(f"`{name}.currency` must be a three-letter currency code.")
        return currency
    if not isinstance(kind, str) or not _PART.match(kind):
        raise ValueError(f"`{name}.kind` must be `fiat` or another kind's name.")
    asset = unit.get("asset", unit.get("currency"))
    if not isinstance(asset, str) or not _PART.match(asset):
        raise ValueError(f"`{name}.asset` is required for a `{kind}` value unit.")
    key = f"{kind}:{asset}"
    for member, mark in (("network", "@"), ("instrumentRef", "#")):
        value = unit.get(member)
        if value is None:
            continue
        if not isinstance(value, str) or not _PART.match(value):
            raise ValueError(f"`{name}.{member}` must be a short name.")
        key += f"{mark}{value}"
    return key


def unit_wire(key: str) -> dict[str, Any]:
    """The wire `valueUnit` of a key."""
    if ":" not in key:
        return {"kind": FIAT, "currency": key}
    kind, rest = key.split(":", 1)
    rest, _, instrument = rest.partition("#")
    asset, _, network = rest.partition("@")
    unit: dict[str, Any] = {"kind": kind, _asset_member: asset}
    if network:
        unit["network"] = network
    if instrument:
        unit["instrumentRef"] = instrument
    return unit


def asset_decimals(key: str) -> int | None:
    """Decimals of a non-fiat unit's major amount; None for a fiat currency."""
    if ":" not in key:
        return None
    asset = key.split(":", 1)[1].split("@", 1)[0].split("#", 1)[0]
    return ASSET_DECIMALS.get(asset.upper(), 0)


#: Currencies whose major unit does not have two decimals (all others have two).
_EXPONENTS = {"JPY": 0, "KRW": 0, "XOF": 0, "XAF": 0, "BHD": 3, "KWD": 3, "OMR": 3, "TND": 3}


def exponent(currency: str) -> int:
    """Decimals of the unit's major amount: the currency's, or a non-fiat asset's own."""
    decimals = asset_decimals(currency)
    return decimals if decimals is not None else _EXPONENTS.get(currency, 2)


def major_units(amount_minor: int, currency: str) -> str:
    """Exact decimal text of minor units: 150050 NGN -> ``"1500.50"``; never a float."""
    exp = exponent(currency)
    if exp == 0:
        return str(amount_minor)
    sign = "-" if amount_minor < 0 else ""
    whole, frac = divmod(abs(amount_minor), 10**exp)
    return f"{sign}{whole}.{frac:0{exp}d}"
