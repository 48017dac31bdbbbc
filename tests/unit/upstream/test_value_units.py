"""Value units of every kind: what the sandbox writes under each variant, and the code recon
keeps for it (the same unit, however its members are named)."""

from __future__ import annotations

import pytest

from sandbox.units import unit_key, unit_wire, write_asset_under
from upstream.wire.common import ValueUnit
from upstream.wire.decoding import decode


@pytest.mark.parametrize("member", ["asset", "currency"])
@pytest.mark.parametrize(
    ("unit", "code"),
    [
        ({"kind": "fiat", "currency": "JPY"}, "JPY"),
        ({"kind": "token", "asset": "USDC", "network": "ethereum"}, "token:USDC@ethereum"),
        (
            {"kind": "token", "asset": "USDC", "network": "polygon", "instrumentRef": "usdc-1"},
            "token:USDC@polygon#usdc-1",
        ),
        ({"kind": "stock", "asset": "ACME"}, "stock:ACME"),
    ],
)
def test_every_unit_keeps_one_code_whatever_member_carries_its_asset(
    member: str, unit: dict[str, str], code: str
) -> None:
    write_asset_under(member)
    try:
        wire = unit_wire(unit_key(unit))
    finally:
        write_asset_under("asset")
    if unit["kind"] != "fiat":
        assert wire[member] == unit["asset"]
    assert str(decode(wire, ValueUnit, "valueUnit")) == code


def test_units_differing_in_any_part_have_different_codes() -> None:
    base = {"kind": "token", "asset": "USDC", "network": "ethereum"}
    variants = [
        base,
        {**base, "network": "polygon"},
        {**base, "asset": "USDT"},
        {**base, "kind": "stablecoin"},
        {**base, "instrumentRef": "x"},
    ]
    codes = {str(decode(v, ValueUnit, "valueUnit")) for v in variants}
    assert len(codes) == len(variants)
