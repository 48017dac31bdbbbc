"""Reading variables from the environment and turning each bad one into one line for an operator.

An `EnvReader` works in one of two modes. Strict (the default) raises `ConfigError` at the first
bad variable, which is what a group's `from_env` relies on to build a typed value. Collecting
(`collect=True`) notes the problem, carries on with the default, and lets the caller see every
problem at once: an operator fixing a deploy should not need one run per missing variable.
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Callable, Mapping
from typing import Final, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit

from foundation.secret import Secret

T = TypeVar("T")


class ConfigError(Exception):
    """Configuration values are missing or malformed; the message is one line per problem."""

    @property
    def problems(self) -> list[str]:
        """Each problem on its own, one line naming the variable and what it expects."""
        return str(self).splitlines()


#: Query parameters of a connection URL that carry a credential (libpq's `password` and
#: `sslpassword`, and the names other drivers and proxies use).
SECRET_QUERY_PARAMETERS: Final = frozenset(
    {"password", "sslpassword", "pass", "pwd", "secret", "token", "access_token", "key", "api_key"}
)

#: What a hidden value shows instead.
MASK: Final = "***"


def mask_url_password(url: str) -> str:
    """Hide the passwords of a connection URL, in the user part and in the query string; the
    rest (host, port, database) is what debugging a deploy needs."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, MASK if k.lower() in SECRET_QUERY_PARAMETERS else v) for k, v in pairs],
            safe="*",
        )
    if (netloc, query) == (parts.netloc, parts.query):
        return url  # rebuilt, `sqlite:///x.db` would lose a slash
    return parts._replace(netloc=netloc, query=query).geturl()


def mask_url_path(url: str) -> str:
    """Only the scheme and host of a URL whose path may be a credential (a Slack or Teams
    incoming webhook is its own token): enough to tell which service, never enough to post."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    hidden = f"/{MASK}" if parts.path.strip("/") or parts.query else ""
    return f"{parts.scheme}://{host}{hidden}"


class EnvReader:
    """Reads and converts variables; a bad one raises a ConfigError, or is noted (`collect`)."""

    def __init__(self, env: Mapping[str, str], *, collect: bool = False) -> None:
        self._env = env
        self._collect = collect
        self.problems: list[str] = []

    def reject(self, message: str) -> None:
        """Report one problem: raised at once when strict, noted when collecting."""
        if not self._collect:
            raise ConfigError(message)
        if message not in self.problems:
            self.problems.append(message)

    def check(self, valid: bool, message: str) -> None:
        """`reject(message)` unless `valid`: for rules spanning values, checked in a group."""
        if not valid:
            self.reject(message)

    def collected(self, read: Callable[[EnvReader], object]) -> None:
        """Run one group's `from_env` and note what it raised, so the next group is read too."""
        try:
            read(self)
        except ConfigError as exc:
            for problem in exc.problems:
                self.reject(problem)

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
            self.reject(f"{name}={value!r} is not valid: expected {expects}")
            return default

    def url(self, name: str, default: str | None, schemes: tuple[str, ...]) -> str | None:
        value = self.raw(name)
        if value is None:
            return default
        parts = urlsplit(value)
        if parts.scheme not in schemes or not (parts.netloc or parts.path):
            shown = mask_url_password(value)
            self.reject(
                f"{name}={shown!r} is not valid: expected a URL starting with "
                + " or ".join(f"{s}://" for s in schemes)
            )
            return default
        # The scheme as every comparison expects it: `HTTPS://` is https (RFC 3986 3.1), and a
        # check like `startswith("https://")` must not read it as plain http.
        return (parts.scheme + value[len(parts.scheme) :]).rstrip("/")

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
            self.reject(f"{name} is missing: set it to the credential issued by the provider")
            # Only a collecting reader gets here; its caller discards what it built.
            return Secret("", name=name)
        if any(c.isspace() for c in value.reveal()):
            self.reject(f"{name} contains white space: check for stray spaces or line breaks")
        return value

    def secrets(self, name: str) -> tuple[Secret, ...]:
        value = self.raw(name)
        if value is None:
            return ()
        return tuple(Secret(v.strip(), name=name) for v in value.split(",") if v.strip())

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        value = self.text(name, default)
        if value not in choices:
            self.reject(f"{name}={value!r} is not valid: expected one of {', '.join(choices)}")
            return default
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
            self.reject(f"{name}={value!r} is not valid: expected a UUID")
            return default
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


def ip_networks(text: str) -> tuple[str, ...]:
    """A comma-separated list of IP addresses or networks (`127.0.0.1, 10.0.0.0/8`), each
    checked; an empty item is refused, `none` stands for the empty list."""
    if text.strip().lower() == "none":
        return ()
    items = tuple(item.strip() for item in text.split(","))
    for item in items:
        ipaddress.ip_network(item, strict=False)  # a ValueError names nothing secret
    return items


def port_number(text: str) -> int:
    value = int(text)
    if not 0 < value < 65536:
        raise ValueError(text)
    return value
