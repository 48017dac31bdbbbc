"""The bearer arithmetic of a transfer's legs, on its own (the store tests run it end to end)."""

from __future__ import annotations

import pytest

from reconciliation.drift.transfer_groups import GroupLeg, TransferGroup, check

A, F = 10_000, 300


def group(bearer: str | None, fee: int | None, *legs: tuple[str, str, int]) -> TransferGroup:
    made = TransferGroup(
        amount_minor=A,
        currency="NGN",
        source_ref="src",
        dest_ref="dst",
        fee_minor=fee,
        bearer=bearer,
    )
    for n, (holding, side, amount) in enumerate(legs):
        made.legs.append(GroupLeg(n, holding, side, amount, "NGN"))
    return made


SENDER = (("src", "debit", A), ("src", "debit", F), ("dst", "credit", A))
RECEIVER = (("src", "debit", A), ("dst", "credit", A - F))
APPLICATION = (("src", "debit", A), ("dst", "credit", A))
SPLIT = (("src", "debit", A), ("src", "debit", 100), ("dst", "credit", A), ("dst", "debit", 200))


@pytest.mark.parametrize(
    ("bearer", "legs"),
    [
        ("sender_pays", SENDER),
        ("receiver_pays", RECEIVER),
        ("application_pays", APPLICATION),
        ("split", SPLIT),
        (None, SENDER),
        (None, RECEIVER),
        (None, APPLICATION),
        (None, SPLIT),
    ],
)
def test_each_bearer_adds_up(bearer: str | None, legs: tuple[tuple[str, str, int], ...]) -> None:
    assert check(group(bearer, F, *legs)) is None


@pytest.mark.parametrize(
    ("bearer", "legs", "why"),
    [
        ("sender_pays", RECEIVER, "the source's debit"),
        ("receiver_pays", SENDER, "the source's debit"),
        ("application_pays", SENDER, "the source's debit"),
        ("split", (("src", "debit", A), ("src", "debit", 100), ("dst", "credit", A)), "shares"),
        (None, (("src", "debit", A), ("dst", "credit", A - 1)), "shares"),
    ],
)
def test_legs_that_do_not_add_up_say_where(
    bearer: str | None, legs: tuple[tuple[str, str, int], ...], why: str
) -> None:
    verdict = check(group(bearer, F, *legs))
    assert verdict is not None and why in verdict.reason


def test_no_fee_means_exactly_the_amount_and_an_unknown_fee_only_the_bearers_side() -> None:
    assert check(group(None, 0, *SENDER)) is not None
    assert check(group("sender_pays", None, *SENDER)) is None
    assert check(group("sender_pays", None, *RECEIVER)) is not None


def test_a_holding_not_read_yet_is_not_judged() -> None:
    assert check(group("sender_pays", F, ("src", "debit", A), ("src", "debit", F))) is None
    assert check(group("sender_pays", F, ("dst", "credit", A))) is None
    assert check(group("sender_pays", F, ("dst", "credit", A - 1))) is not None


def test_a_leg_in_another_unit_is_left_to_unit_mismatch() -> None:
    made = group("sender_pays", F, *SENDER)
    made.legs.append(GroupLeg(9, "dst", "credit", 5, "USD"))
    assert check(made) is None
