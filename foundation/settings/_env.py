"""Reading variables from the environment and turning a bad one into one line for an operator."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TypeVar
from urllib.parse import urlsplit

from foundation.secret import Secret

T = TypeVar("T")


class ConfigError(Exception):
    """A configuration value is missing or malformed; the message is one line for an operator."""


def mask_url_password(url: str) -> str:
    """Hide the password of a connection URL; the rest is useful when debugging a deploy."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


class EnvReader:
    """Reads and converts variables, turning the first bad one into a one-line ConfigError."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env

    def raw(self, name: str) -> str | None:
        value = self._env.get(name)
        if value is None or value.strip() == "":
            return None
        return value.strip()

    def text(self, name: str, default: str) -> str:
        return self.raw(name) or default

    def convert(self, name: str, default: T, parse: Callable[[str], T], expects: str) -> T:
        value = self.raw(name)
        if value is None:
            return default
        try:
            return parse(value)
        except ValueError:
            raise ConfigError(f"{name}={value!r} is not valid: expected {expects}") from None

    def url(self, name: str, default: str | None, schemes: tuple[str, ...]) -> str | None:
        value = self.raw(name)
        if value is None:
            return default
        parts = urlsplit(value)
        if parts.scheme not in schemes or not (parts.netloc or parts.path):
            shown = mask_url_password(value)
            raise ConfigError(
                f"{name}={shown!r} is not valid: expected a URL starting with "
                + " or ".join(f"{s}://" for s in schemes)
            )
        return value.rstrip("/")

    def required_url(self, name: str, default: str, schemes: tuple[str, ...]) -> str:
        value = self.url(name, default, schemes)
        assert value is not None  # a default was given
        return value

    def secret(self, name: str, default: str | None = None) -> Secret | None:
        # Not stripped: a stray space in a credential is reported, not silently mended.
        value = self._env.get(name) or default
        return None if value is None else Secret(value, name=name)

    def required_secret(self, name: str) -> Secret:
        value = self.secret(name)
        if value is None:
            raise ConfigError(f"{name} is missing: set it to the credential issued by the provider")
        if any(c.isspace() for c in value.reveal()):
            raise ConfigError(f"{name} contains white space: check for stray spaces or line breaks")
        return value

    def secrets(self, name: str) -> tuple[Secret, ...]:
        value = self.raw(name)
        if value is None:
            return ()
        return tuple(Secret(v.strip(), name=name) for v in value.split(",") if v.strip())

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        value = self.text(name, default)
        if value not in choices:
            raise ConfigError(
                f"{name}={value!r} is not valid: expected one of {', '.join(choices)}"
            )
        return value

    def seconds(self, name: str, default: float) -> float:
        """An interval in seconds, fractional allowed, > 0."""
        return self.convert(name, default, positive_float, "a number of seconds > 0")

    def whole_seconds(self, name: str, default: int) -> int:
        return self.convert(name, default, positive_int, "a whole number of seconds > 0")

    def uuid_text(self, name: str, default: str) -> str:
        value = self.text(name, default)
        try:
            uuid.UUID(value)
        except ValueError:
            raise ConfigError(f"{name}={value!r} is not valid: expected a UUID") from None
        return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError(text)
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError(text)
    return value


def port_number(text: str) -> int:
    value = int(text)
    if not 0 < value < 65536:
        raise ValueError(text)
    return value
