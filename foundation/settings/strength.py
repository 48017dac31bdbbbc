"""How strong a credential must be, and when a weaker one is tolerated.

A published, short or patterned admin token (or webhook secret) is fine against a sandbox and
refused against a live provider, where it guards reports, alerts and transfers of real money.
Live or sandbox is RECON_PROVIDER_MODE, or else the gateway key's own prefix: never the
gateway URL, since a live key behind a local proxy has a loopback URL. An alert signing secret must decode strictly to a real key: a lenient decoder
turns `whsec_!!!!` into an empty key that anyone can sign with.
"""

from __future__ import annotations

import math
from collections import Counter
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

#: Prefix of the gateway's test keys (the gateway spec names it): a key with it only reaches a
#: test environment.
TEST_GATEWAY_KEY_PREFIX: Final = "ak_test_"
#: Prefix of the gateway's live keys: a key with it moves real money, so RECON_PROVIDER_MODE
#: cannot call its provider a sandbox (whose rules accept the admin token `admin`).
LIVE_GATEWAY_KEY_PREFIX: Final = "ak_live_"

#: RECON_PROVIDER_MODE values: whether the provider is the real one (strict credentials) or a
#: sandbox (the published demo values are fine).
PROVIDER_MODES: Final = ("live", "sandbox")

#: Fewest bits of randomness a live credential may show (estimated from its characters): a
#: `secrets.token_urlsafe(32)` token shows about 200, `secrets.token_hex(16)` about 110; 32
#: times `a` shows none. Set below the hex token's figure so a random one never fails by chance,
#: and far past what any guessing over HTTP could try.
MIN_CREDENTIAL_BITS: Final = 88

#: A run this long seen twice in a credential means it repeats a pattern rather than being
#: random (the odds of it by chance in 64 random characters are below one in ten million).
REPEATED_RUN: Final = 8

#: Share of neighbouring characters that follow from the ones before (one code point apart,
#: `abcd`; the same stride as the pair before, `aceg`, `02468`; neighbours on a keyboard,
#: `qwerty`, `asdf`) above which a credential is a walk: random hex has about one such pair in
#: five, random base64 about one in ten; a keyboard run or an alphabet step nearly every pair.
MAX_STEP_SHARE: Final = 0.5

#: A US keyboard's keys row after row, left to right: neighbours here (case folded) are side by
#: side on a keyboard, or one row's end and the next row's start (`p` then `a` in `qwertyuiopa`).
KEYBOARD_ORDER: Final = "`1234567890-=qwertyuiop[]\\asdfghjkl;'zxcvbnm,./"
#: Each key's place in KEYBOARD_ORDER.
_KEY_AT: Final = {char: place for place, char in enumerate(KEYBOARD_ORDER)}

#: Fewest bits a webhook or alert key's bytes may show (estimated from the bytes as
#: `credential_problem` does from characters): 24 random bytes show about 105, 32 about 150;
#: 24 zero bytes none, and a counting sequence is refused as a walk.
MIN_KEY_BITS: Final = 64

#: Fewest bytes an alert signing key may decode to: below this a key can be guessed, and an
#: empty one (what a lenient decoder makes of `whsec_!!!!`) lets anyone forge an alert.
MIN_ALERT_KEY_BYTES: Final = 24


def alert_secret_problem(raw: str, *, live: bool = True) -> str | None:
    """What is wrong with a `whsec_` alert secret, or None: strict base64, a real key length,
    and (against a live provider) bytes that look random."""
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
    return key_bytes_problem(key) if live else None


def key_bytes_problem(key: bytes) -> str | None:
    """Why a key's bytes are no random key (all zeros, a repeated or counting pattern), or
    None. Never shows the key."""
    bits = estimated_bits(key)
    if bits < MIN_KEY_BITS:
        return (
            f"the key's bytes have too little randomness (about {bits:.0f} bits; at least "
            f"{MIN_KEY_BITS} needed): use random bytes, never zeros or a pattern"
        )
    if _patterned(list(key), keyboard=False):
        return "the key's bytes follow a pattern (a repeated run or a walk), not chance"
    return None


def estimated_bits(values: bytes | str) -> float:
    """Bits of randomness `values` shows from how often each byte or character occurs: what a
    guesser who knows the symbols' frequencies must still try (zero for one symbol repeated)."""
    counts = Counter(values)
    total = len(values)
    return sum(n * math.log2(total / n) for n in counts.values())


def _patterned(codes: list[int], *, keyboard: bool) -> bool:
    """A repeated run of REPEATED_RUN symbols, or more than MAX_STEP_SHARE of neighbouring
    pairs that follow from what came before (see MAX_STEP_SHARE)."""
    runs = [tuple(codes[i : i + REPEATED_RUN]) for i in range(len(codes) - REPEATED_RUN + 1)]
    if len(set(runs)) < len(runs):
        return True
    predictable = 0
    for i in range(1, len(codes)):
        stride = codes[i] - codes[i - 1]
        if (
            abs(stride) == 1
            or (i >= 2 and stride == codes[i - 1] - codes[i - 2])
            or (keyboard and _keyboard_neighbours(chr(codes[i - 1]), chr(codes[i])))
        ):
            predictable += 1
    return predictable > MAX_STEP_SHARE * (len(codes) - 1)


def _keyboard_neighbours(a: str, b: str) -> bool:
    """Two characters side by side in KEYBOARD_ORDER, case folded."""
    at, bt = _KEY_AT.get(a.lower()), _KEY_AT.get(b.lower())
    return at is not None and bt is not None and abs(at - bt) == 1


def provider_mode(r: EnvReader) -> str:
    """`live` or `sandbox`: RECON_PROVIDER_MODE when set, else from the gateway key itself.

    Never from the gateway URL's host: a live key reached through a local egress proxy (a
    loopback URL), or left with no URL at all, is still a live key.

    A mode that contradicts the key is refused when it would relax the rules (`sandbox` with a
    live key: the key moves real money); `live` with a test key is stricter than needed and
    allowed (`recon config check` says so).
    """
    explicit = r.raw("RECON_PROVIDER_MODE")
    key = r.raw("RECON_GATEWAY_API_KEY") or ""
    if explicit is not None:
        mode = r.choice("RECON_PROVIDER_MODE", "live", PROVIDER_MODES)
        r.check(
            not (mode == "sandbox" and key.startswith(LIVE_GATEWAY_KEY_PREFIX)),
            f"RECON_PROVIDER_MODE=sandbox contradicts RECON_GATEWAY_API_KEY, a live key "
            f"({LIVE_GATEWAY_KEY_PREFIX}...): the sandbox's relaxed rules would guard real "
            "money; remove RECON_PROVIDER_MODE, or use the sandbox's test key",
        )
        return mode
    return "sandbox" if key.startswith(TEST_GATEWAY_KEY_PREFIX) else "live"


def credential_problem(raw: str) -> str | None:
    """Why `raw` is too weak to guard a live provider's money, or None: long enough, random
    enough (estimated bits), and no repeated run or walk of characters. Never shows `raw`."""
    if len(raw) < MIN_ADMIN_TOKEN_LENGTH:
        return (
            f"is too short ({len(raw)} characters): use at least "
            f"{MIN_ADMIN_TOKEN_LENGTH} random characters"
        )
    bits = estimated_bits(raw)
    if bits < MIN_CREDENTIAL_BITS:
        return (
            f"has too little randomness (about {bits:.0f} bits from its characters; at least "
            f"{MIN_CREDENTIAL_BITS} needed)"
        )
    if _patterned([ord(c) for c in raw], keyboard=True):
        return (
            "follows a pattern (a repeated run, a walk of characters or a keyboard run), not chance"
        )
    return None


#: How to make a credential that passes, for every message above.
MAKE_ONE: Final = "(python -c 'import secrets; print(secrets.token_urlsafe(32))')"


def admin_token_from_env(r: EnvReader) -> Secret:
    """RECON_ADMIN_TOKEN, surrounding white space removed, strong unless on a sandbox.

    A token read from a file usually ends with a line break; kept, it would make every
    request 401 with a token that looks right. A short, patterned or published token is
    refused against a live provider (`provider_mode`): the token guards reports, alerts and
    transfers of real money.
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
    if provider_mode(r) == "sandbox":
        return token
    if raw in KNOWN_DEMO_ADMIN_TOKENS:
        r.reject(
            "RECON_ADMIN_TOKEN is a published demo value and the provider is live: "
            f"set a random one {MAKE_ONE}"
        )
        return token
    problem = credential_problem(raw)
    r.check(problem is None, f"RECON_ADMIN_TOKEN {problem}, and the provider is live {MAKE_ONE}")
    return token


def webhook_secrets_from_env(r: EnvReader) -> tuple[Secret, ...]:
    """RECON_WEBHOOK_SECRETS, each strong enough to keep forged deliveries out when live.

    A `whsec_` secret must decode to at least MIN_ALERT_KEY_BYTES random bytes, a plain one
    must pass `credential_problem`; Ed25519 keys (`whpk_`, `whsk_`) are public or fixed-size
    and are checked by their scheme. Problems name the entry's position, never its value.
    """
    found = r.secrets("RECON_WEBHOOK_SECRETS")
    if provider_mode(r) == "sandbox":
        return found
    for position, secret in enumerate(found, start=1):
        raw = secret.reveal()
        if raw.startswith("whpk_"):
            continue  # a public key: nothing secret to guess
        if raw.startswith("whsk_"):
            problem = _seed_problem(raw)
        elif raw.startswith("whsec_"):
            problem = alert_secret_problem(raw)
        else:
            weak = credential_problem(raw)
            problem = f"a plain secret {weak}" if weak else None
        r.check(
            problem is None,
            f"RECON_WEBHOOK_SECRETS entry {position} is too weak for a live provider: {problem}",
        )
    return found


def _seed_problem(raw: str) -> str | None:
    """What is wrong with a `whsk_` Ed25519 seed's randomness, or None (its format is the
    signature scheme's to check: upstream.signatures)."""
    import base64
    import binascii

    encoded = raw.removeprefix("whsk_")
    try:
        seed = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None  # refused with its own words when the scheme reads it
    return key_bytes_problem(seed)
