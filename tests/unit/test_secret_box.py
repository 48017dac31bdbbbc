"""Secrets at rest: encrypted, and readable across a key rotation."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from foundation import Secret, SecretBox


def _key() -> Secret:
    return Secret(Fernet.generate_key().decode())


def test_sealed_secret_is_not_plaintext_and_opens_back() -> None:
    """Invariant 8: a stored secret is encrypted at rest and opens back only with the key."""
    box = SecretBox((_key(),))
    token = box.seal("whsec_abc")
    assert "whsec_abc" not in token
    assert box.open(token).reveal() == "whsec_abc"


def test_rotation_old_key_still_decrypts_new_key_encrypts() -> None:
    old, new = _key(), _key()
    token_old = SecretBox((old,)).seal("s1")
    rotated_box = SecretBox((new, old))
    assert rotated_box.open(token_old).reveal() == "s1"
    rotated = rotated_box.rotate(token_old)
    assert SecretBox((new,)).open(rotated).reveal() == "s1"


def test_wrong_key_gives_an_actionable_message() -> None:
    token = SecretBox((_key(),)).seal("s1")
    with pytest.raises(ValueError, match="keep the old key in the list"):
        SecretBox((_key(),)).open(token)
