"""Encryption at rest for secrets recon must keep (webhook secrets, API keys).

Fernet (AES-128-CBC + HMAC-SHA256, from `cryptography`) is authenticated and versioned, and
`MultiFernet` decrypts with any of several keys while encrypting with the first: that is key
rotation without a flag day. RECON_SECRET_KEY holds one or more comma-separated Fernet keys,
newest first.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Final

import structlog
from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from foundation.secret import Secret
from foundation.settings import Settings

#: File name of the key the embedded default generates inside the state directory.
GENERATED_KEY_FILE: Final = "secret.key"

#: Mode of a state directory recon creates: the store and the key file inside it are the
#: owner's alone, whatever the umask says.
STATE_DIR_MODE: Final = 0o700


class SharedStoreKeyError(Exception):
    """A shared store (PostgreSQL) without RECON_SECRET_KEY: each process would invent a key.

    A key file is local to one machine and one disk; a second web process, or the same one
    restarted on an ephemeral disk, could not decrypt the webhook secret the first one stored,
    and would refuse every genuine delivery with 401.
    """


log = structlog.get_logger(__name__)


def provision_secret_keys(settings: Settings) -> Settings:
    """Settings whose store has keys: the configured ones, else the embedded default's key file.

    This is the one explicit step that may create a file: reading the settings never does. A
    process that keeps secrets (web, registration, the demo) calls it at start-up; a read-only
    command does not need to.

    Raises SharedStoreKeyError on PostgreSQL without configured keys: a key file there would
    be one process's own, and the store is shared by many.
    """
    if settings.store.secret_keys:
        return settings
    if settings.store.is_postgres:
        raise SharedStoreKeyError(
            "RECON_SECRET_KEY is missing: a PostgreSQL store is shared by every process, so they "
            "must all use the same key; make one with `recon config generate-key` and set it "
            "everywhere"
        )
    state_dir = settings.store.state_dir
    path = state_dir / GENERATED_KEY_FILE
    if not path.exists():
        make_state_dir(state_dir)
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
    key = Secret(path.read_text().strip(), name="RECON_SECRET_KEY")
    return replace(settings, store=replace(settings.store, secret_keys=(key,)))


def make_state_dir(path: Path) -> None:
    """Create the state directory (and its parents) for the owner only; an existing one stays.

    The store's SQLite file sits beside the key file in it: a world-readable directory would
    show the store to every local user even though the key file is 0600.
    """
    if path.is_dir():
        return
    path.mkdir(mode=STATE_DIR_MODE, parents=True, exist_ok=True)
    # mkdir's mode is filtered by the umask; ask for exactly 0700.
    path.chmod(STATE_DIR_MODE)


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
