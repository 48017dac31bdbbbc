"""How strong a credential must be, and when a weaker one is tolerated.

A published or short admin token is fine against the sandbox (on this machine, or a gateway
test key) and refused against a live provider, where it guards reports, alerts and transfers
of real money. An alert signing secret must decode strictly to a real key: a lenient decoder
turns `whsec_!!!!` into an empty key that anyone can sign with.
"""

from __future__ import annotations

from typing import Final

from foundation.secret import Secret
from foundation.settings._env import ConfigError, EnvReader

#: Admin tokens shipped in our own files (the Makefile, the demo, the docs): anyone who has
#: read them knows these, so they are refused against a live provider.
KNOWN_DEMO_ADMIN_TOKENS: Final = frozenset(
    {
        "demo-admin-token-change-me",
        "replace_with_a_long_random_token",
        "change-me",
        "changeme",
        "admin",
        "secret",
        "token",
    }
)

#: Shortest admin token accepted against a live provider: 32 characters of
#: `secrets.token_urlsafe` carry about 190 bits, far past guessing over HTTP.
MIN_ADMIN_TOKEN_LENGTH: Final = 32

#: Prefix of the gateway's test keys: a key with it only reaches a test environment.
TEST_GATEWAY_KEY_PREFIX: Final = "ak_test_"

#: Host names that mean "this machine": a gateway there is a sandbox, not the provider.
LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1"})

#: Fewest bytes an alert signing key may decode to: below this a key can be guessed, and an
#: empty one (what a lenient decoder makes of `whsec_!!!!`) lets anyone forge an alert.
MIN_ALERT_KEY_BYTES: Final = 24


def alert_secret_problem(raw: str) -> str | None:
    """What is wrong with a `whsec_` alert secret, or None: strict base64, a real key length."""
    import base64
    import binascii

    if not raw.startswith("whsec_"):
        return "expected a whsec_ secret (whsec_ followed by base64)"
    encoded = raw.removeprefix("whsec_")
    try:
        # Unpadded secrets are common, so the padding is restored; nothing else is forgiven.
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        return "the part after whsec_ is not base64"
    if len(key) < MIN_ALERT_KEY_BYTES:
        return (
            f"the key decodes to {len(key)} bytes; use at least {MIN_ALERT_KEY_BYTES} random "
            "bytes (python -c 'import base64, secrets; "
            'print("whsec_" + base64.b64encode(secrets.token_bytes(32)).decode())\')'
        )
    return None


def is_sandbox_gateway(gateway_url: str, gateway_api_key: str | None) -> bool:
    """True when the gateway is a sandbox: on this machine, or reached with a test key."""
    from urllib.parse import urlsplit

    host = (urlsplit(gateway_url).hostname or "").lower()
    on_this_machine = host in LOOPBACK_HOSTS or host.startswith("127.")
    return on_this_machine or (gateway_api_key or "").startswith(TEST_GATEWAY_KEY_PREFIX)


def admin_token_from_env(r: EnvReader, sandbox_root: str) -> Secret:
    """RECON_ADMIN_TOKEN, surrounding white space removed, strong unless on a sandbox.

    A token read from a file usually ends with a line break; kept, it would make every
    request 401 with a token that looks right. A short or published token is refused when
    the gateway is a live provider (not on this machine, not a test key): the token guards
    reports, alerts and transfers of real money.
    """
    raw = r.raw("RECON_ADMIN_TOKEN")
    if raw is None:
        raise ConfigError(
            "RECON_ADMIN_TOKEN is missing: set a long random token that guards the reports, "
            "alerts and inbox API (for example: python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))')"
        )
    token = Secret(raw, name="RECON_ADMIN_TOKEN")
    r.check(
        not any(c.isspace() for c in raw),
        "RECON_ADMIN_TOKEN contains white space inside it: a token is one word",
    )
    gateway_url = r.raw("RECON_GATEWAY_URL") or sandbox_root
    if is_sandbox_gateway(gateway_url, r.raw("RECON_GATEWAY_API_KEY")):
        return token
    r.check(
        raw not in KNOWN_DEMO_ADMIN_TOKENS,
        "RECON_ADMIN_TOKEN is a published demo value and the gateway is a live provider: "
        "set a random one (python -c 'import secrets; print(secrets.token_urlsafe(32))')",
    )
    r.check(
        len(raw) >= MIN_ADMIN_TOKEN_LENGTH,
        f"RECON_ADMIN_TOKEN is too short ({len(raw)} characters) for a live provider: "
        f"use at least {MIN_ADMIN_TOKEN_LENGTH} random characters "
        "(python -c 'import secrets; print(secrets.token_urlsafe(32))')",
    )
    return token
