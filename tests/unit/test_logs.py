"""No secret reaches a log line, whatever the field is called and however deep it hides."""

from __future__ import annotations

import json
import logging

import pytest
import structlog

from foundation import (
    Secret,
    bind_correlation_id,
    clear_correlation,
    configure_logging,
    register_secrets,
)

API_KEY = "ak_live_9f8e7d6c5b4a39281706"
OPAQUE = "x9Q2-opaque-credential-without-any-telltale-prefix"


@pytest.fixture
def json_lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    configure_logging("json", "debug")
    register_secrets([OPAQUE])
    log = structlog.get_logger("test")
    bind_correlation_id("corr-123")
    log.info(
        "odd.fields",
        xApiKey=API_KEY,
        misc=OPAQUE,
        nested={"deep": [{"Authorization": "Bearer abc.def"}]},
    )
    log.info("odd.values", note=f"key was {API_KEY}", hook="whsec_c2VjcmV0c2VjcmV0c2VjcmV0")
    log.info("wrapped", thing=Secret("plain-value-1234", name="X"))
    try:
        raise RuntimeError(f"upstream said no to {OPAQUE}")
    except RuntimeError:
        log.exception("failed")
    logging.getLogger("stdlib.lib").warning("stdlib line with %s", OPAQUE)
    clear_correlation()
    err = capsys.readouterr().err
    return [json.loads(line) for line in err.splitlines() if line.strip()]


def test_secret_values_are_masked_everywhere(json_lines: list[dict[str, object]]) -> None:
    text = json.dumps(json_lines)
    for secret in (API_KEY, OPAQUE, "abc.def", "c2VjcmV0c2VjcmV0c2VjcmV0", "plain-value-1234"):
        assert secret not in text
    assert len(json_lines) == 5


def test_oddly_named_field_holding_a_registered_secret_is_masked(
    json_lines: list[dict[str, object]],
) -> None:
    first = json_lines[0]
    assert first["misc"] == "********"
    assert first["xApiKey"] == "********"


def test_every_line_of_a_request_carries_its_correlation_id(
    json_lines: list[dict[str, object]],
) -> None:
    structured = [line for line in json_lines if line.get("logger") == "test"]
    assert structured and all(line["correlation_id"] == "corr-123" for line in structured)


def test_secret_wrapper_never_shows_its_value() -> None:
    secret = Secret("very-secret-value", name="RECON_ADMIN_TOKEN")
    assert "very-secret-value" not in f"{secret} {secret!r} {[secret]}"
    assert secret.reveal() == "very-secret-value"
