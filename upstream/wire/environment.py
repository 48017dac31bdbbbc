"""Environment status: which organisation, app and environment a key is scoped to."""

from __future__ import annotations

from uuid import UUID

import msgspec


class EnvironmentStatus(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The environment a gateway key belongs to, and what of it is unavailable."""

    environment_kind: str
    organisation_ref: UUID | None = None
    application_ref: UUID | None = None
    environment_ref: UUID | None = None
    display_name: str | None = None
    app_status: str | None = None
    environment_status: str | None = None
    allowed_actions: tuple[str, ...] = ()
    unavailable_parts: tuple[str, ...] = ()

    @property
    def is_sandbox(self) -> bool:
        """True for sandbox kinds (the spec shows `DemoSandbox`); live otherwise."""
        return "sandbox" in self.environment_kind.lower()
