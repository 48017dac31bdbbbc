"""The keys the receiver accepts right now: stored secrets plus RECON_WEBHOOK_SECRETS.

The verifier is rebuilt from the store every few seconds in a background thread, so a secret
registered or rotated by another process (`recon webhooks rotate`) is picked up without a
restart, and the request path never waits for the database to learn its keys. When a signature
fails, the receiver may ask for an early refresh (at most once a second), which makes the first
delivery after a rotation succeed instead of being refused once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Final

import structlog
from sqlalchemy.orm import Session, sessionmaker

from foundation import ConfigError, Secret, SecretBox
from reconciliation.notifications import accepted_secrets, secret_counts
from reconciliation.store import transaction
from upstream import Verifier, key_problem, make_verifier

#: Seconds between two background reloads of the stored secrets.
REFRESH_SECONDS: Final = 5.0
#: Least seconds between two refreshes forced by a failed signature.
FORCED_REFRESH_MIN_SECONDS: Final = 1.0

log = structlog.get_logger(__name__)


class SigningKeys:
    """Holds the current Verifier and keeps it in step with the store."""

    def __init__(
        self,
        *,
        session_factory: sessionmaker[Session],
        box: SecretBox,
        configured: Sequence[Secret],
        scheme: str,
        header: str,
        tolerance_seconds: int,
        refresh_seconds: float = REFRESH_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        for position, secret in enumerate(configured, start=1):
            problem = key_problem(scheme, secret)
            if problem is not None:
                raise ConfigError(
                    f"RECON_WEBHOOK_SECRETS entry {position} is not valid for "
                    f"RECON_SIGNATURE_SCHEME={scheme}: {problem}"
                )
        self._factory = session_factory
        self._box = box
        self._configured = tuple(configured)
        self._scheme = scheme
        self._header = header
        self._tolerance = tolerance_seconds
        self._refresh_seconds = refresh_seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        #: Whether "no key" has been said since keys were last present: it is said once when
        #: the state begins, not at every refresh (three times in the first second of a start).
        self._said_none = False
        self._verifier = self._build((), quiet=True)
        self._undecryptable = 0
        self._decrypted = 0
        self._refreshed_at = float("-inf")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def current(self) -> Verifier:
        """The verifier in force (a cheap attribute read on the hot path)."""
        return self._verifier

    def refresh(self) -> bool:
        """Reload stored secrets now; on failure keep the previous keys. True if reloaded."""
        with self._lock:
            self._refreshed_at = self._monotonic()
            try:
                with transaction(self._factory) as session:
                    stored = accepted_secrets(session, self._box)
                    kept = sum(secret_counts(session).values())
            except Exception as exc:  # noqa: BLE001 - keep serving with the keys we have
                log.warning("signing_keys.refresh_failed", error=type(exc).__name__)
                return False
            self._undecryptable = max(0, kept - len(stored))
            self._decrypted = len(stored)
            self._verifier = self._build(stored)
            return True

    @property
    def usable(self) -> bool:
        """Whether any genuine delivery can be verified now: at least one key is accepted."""
        return self._verifier.key_count > 0

    @property
    def decrypted(self) -> int:
        """Stored secrets in force that were decrypted at the last refresh."""
        return self._decrypted

    @property
    def undecryptable(self) -> int:
        """Stored secrets still in force that no key in RECON_SECRET_KEY decrypts."""
        return self._undecryptable

    def refresh_allowed(self) -> bool:
        """Whether a refresh forced by a failed signature may run now."""
        return self._monotonic() - self._refreshed_at >= FORCED_REFRESH_MIN_SECONDS

    def start(self) -> None:
        """Start the periodic refresh thread."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="signing-keys", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the periodic refresh thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self._refresh_seconds):
            self.refresh()

    def _build(self, stored: Sequence[Secret], *, quiet: bool = False) -> Verifier:
        usable = []
        for secret in stored:
            problem = key_problem(self._scheme, secret)
            if problem is None:
                usable.append(secret)
            else:
                log.warning(
                    "signing_keys.stored_secret_unusable",
                    scheme=self._scheme,
                    reason=problem,
                    hint="registered under another RECON_SIGNATURE_SCHEME; rotate to replace it",
                )
        keys = [*self._configured, *usable]
        if keys:
            self._said_none = False
        elif not (quiet or self._said_none):
            self._said_none = True
            log.warning(
                "signing_keys.none",
                hint="no webhook secret yet: every delivery is refused until recon registers "
                "its webhook or RECON_WEBHOOK_SECRETS is set",
            )
        return make_verifier(
            self._scheme, secrets=keys, tolerance_seconds=self._tolerance, header=self._header
        )


def require_decryptable_secrets(keys: SigningKeys) -> None:
    """Stop start-up when RECON_SECRET_KEY cannot decrypt the stored webhook secrets.

    Started anyway, such a process would answer 401 to every genuine delivery while looking
    healthy; the usual cause is a key that differs from the one the store was written with (a
    new key without the old one after it, or another environment's key). Raises ConfigError
    with one line; a store that cannot be read at all is left to /ready to report.
    """
    if not keys.refresh() or not keys.undecryptable:
        return
    if keys.decrypted:
        # An older secret in its overlap period is unreadable but the current one is fine:
        # deliveries signed with the current one verify, so this is worth a warning only.
        log.warning(
            "signing_keys.some_undecryptable",
            count=keys.undecryptable,
            hint="an older secret was stored under a key no longer in RECON_SECRET_KEY",
        )
        return
    raise ConfigError(
        f"RECON_SECRET_KEY cannot decrypt {keys.undecryptable} stored webhook secret(s): set "
        "the key this store was written with (while rotating, list the new key first and the "
        "old one after it); every genuine delivery would be refused with 401 otherwise"
    )
