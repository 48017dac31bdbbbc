"""Encryption at rest for secrets recon must keep (webhook secrets, API keys).

Fernet (AES-128-CBC + HMAC-SHA256, from `cryptography`) is authenticated and versioned, and
`MultiFernet` decrypts with any of several keys while encrypting with the first: that is key
rotation without a flag day. RECON_SECRET_KEY holds one or more comma-separated Fernet keys,
newest first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

import structlog
from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from foundation.secret import Secret

#: File name of the key the embedded default generates inside the state directory.
GENERATED_KEY_FILE: Final = "secret.key"

log = structlog.get_logger(__name__)


def resolve_secret_keys(raw: str | None, state_dir: Path) -> tuple[tuple[Secret, ...], bool]:
    """Keys from RECON_SECRET_KEY, or the embedded default's generated key file.

    Returns the keys and whether the file was used, so start-up can say so once.
    """
    from foundation.settings import ConfigError

    if raw:
        keys = tuple(k.strip() for k in raw.split(",") if k.strip())
        for key in keys:
            try:
                Fernet(key.encode())
            except ValueError:
                raise ConfigError(
                    "RECON_SECRET_KEY is not valid: expected comma-separated Fernet keys "
                    "(generate one with: recon config generate-key)"
                ) from None
        return tuple(Secret(k, name="RECON_SECRET_KEY") for k in keys), False
    path = state_dir / GENERATED_KEY_FILE
    if not path.exists():
        state_dir.mkdir(parents=True, exist_ok=True)
        # O_EXCL: two processes starting at once must not both write a different key.
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "wb") as out:
                out.write(Fernet.generate_key())
            log.warning(
                "secret_key.generated",
                path=str(path),
                hint="set RECON_SECRET_KEY in production; this file is readable by its owner only",
            )
    key = path.read_text().strip()
    return (Secret(key, name="RECON_SECRET_KEY"),), True


class SecretBox:
    """Encrypts and decrypts short secrets with the configured keys."""

    def __init__(self, keys: tuple[Secret, ...]) -> None:
        if not keys:
            raise ValueError("at least one key is needed")
        self._fernet = MultiFernet([Fernet(k.reveal().encode()) for k in keys])

    def seal(self, plaintext: str) -> str:
        """Ciphertext as text, safe to store in a column."""
        return self._fernet.encrypt(plaintext.encode()).decode()

    def open(self, token: str) -> Secret:
        """The secret back, still wrapped so that it cannot leak by accident."""
        try:
            return Secret(self._fernet.decrypt(token.encode()).decode(), name="stored")
        except InvalidToken:
            raise ValueError(
                "a stored secret cannot be decrypted with any key in RECON_SECRET_KEY: "
                "keep the old key in the list (after the new one) until rotation is complete"
            ) from None

    def rotate(self, token: str) -> str:
        """Re-encrypt with the newest key (run after adding a key in front)."""
        return self._fernet.rotate(token.encode()).decode()
