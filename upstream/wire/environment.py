"""Environment status: which organisation, app and environment a key is scoped to."""

from __future__ import annotations

from uuid import UUID

import msgspec

from upstream.wire.reader import Fields


class EnvironmentStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The environment a gateway key belongs to, and what of it is unavailable."""

    organisation_ref: UUID | None
    application_ref: UUID | None
    environment_ref: UUID | None
    environment_kind: str
    display_name: str | None
    app_status: str | None
    environment_status: str | None
    allowed_actions: tuple[str, ...]
    unavailable_parts: tuple[str, ...]

    @property
    def is_sandbox(self) -> bool:
        """True for sandbox kinds (the spec shows `DemoSandbox`); live otherwise."""
        return "sandbox" in self.environment_kind.lower()


def parse_environment(f: Fields) -> EnvironmentStatus:
    """Read the environment status value."""
    return EnvironmentStatus(
        organisation_ref=f.opt_ref("organisationRef"),
        application_ref=f.opt_ref("applicationRef"),
        environment_ref=f.opt_ref("environmentRef"),
        environment_kind=f.text("environmentKind"),
        display_name=f.opt_text("displayName"),
        app_status=f.opt_text("appStatus"),
        environment_status=f.opt_text("environmentStatus"),
        allowed_actions=f.opt_texts("allowedActions"),
        unavailable_parts=f.opt_texts("unavailableParts"),
    )
