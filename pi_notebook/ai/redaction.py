"""``Redactor``: the credentials one request carried, and text with them blanked out.

Every error text of a reply passes through ``MessageBuilder.fail``, which scrubs it with the
request's ``Redactor``; the HTTP layer scrubs its error bodies with one too, and cassettes scrub
what they write. A request's credentials are its API key (the call's and the provider's
environment variable), every header value whose name looks like a credential (in
``model.headers`` and the per-call headers), any other per-call header value longer than a few
characters (a caller may name a key header anything), and the user and password in a URL.
Servers echo these back in error bodies and in malformed stream lines, which error texts quote.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlsplit

from .models import get_env_api_key

if TYPE_CHECKING:
    from .options import StreamOptions
    from .types import Model

__all__ = ["REDACTED", "Redactor", "is_credential_header", "request_redactor"]

REDACTED = "***"

_MIN_SECRET = 4
"""Shorter values are not blanked (they would mangle ordinary words)."""
_MIN_UNNAMED = 6
"""Per-call header values under a neutral name are blanked from this length on."""
_CREDENTIAL_NAME = re.compile(
    r"auth|key|token|secret|passw|cookie|session|signature|credential", re.IGNORECASE
)
_AUTH_SCHEME = re.compile(r"^(?:bearer|basic|token|digest|apikey|key)\s+(\S+)$", re.IGNORECASE)
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s'\"]+)@")


def is_credential_header(name: str) -> bool:
    """Whether a header named ``name`` (``Authorization``, ``x-api-key``, ``api-key``, …) carries
    a credential."""
    return bool(_CREDENTIAL_NAME.search(name))


class Redactor:
    """The secret strings of one request; ``scrub`` blanks them (and any URL userinfo) out."""

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        found: set[str] = set()
        for secret in secrets:
            if secret and len(secret) >= _MIN_SECRET:
                found.update(_spellings(secret))
        # Longest first: a key that contains another is replaced whole.
        self._secrets = sorted(found, key=len, reverse=True)

    @classmethod
    def for_request(
        cls,
        *,
        api_keys: Iterable[str | None] = (),
        model_headers: Mapping[str, str] | None = None,
        call_headers: Mapping[str, str] | None = None,
        urls: Iterable[str] = (),
    ) -> Redactor:
        """The credentials a request carries (see the module docstring for what counts)."""
        secrets: list[str | None] = list(api_keys)
        for name, value in (model_headers or {}).items():
            if is_credential_header(name):
                secrets.extend(_header_secrets(value))
        for name, value in (call_headers or {}).items():
            if is_credential_header(name) or len(value) >= _MIN_UNNAMED:
                secrets.extend(_header_secrets(value))
        for url in urls:
            secrets.extend(_userinfo(url))
        return cls(secrets)

    def merged(self, other: Redactor) -> Redactor:
        merged = Redactor()
        merged._secrets = sorted(set(self._secrets) | set(other._secrets), key=len, reverse=True)
        return merged

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(self._secrets)

    def scrub(self, text: str) -> str:
        """``text`` without any of the secrets, and without the userinfo of any URL in it."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        if "@" in text:
            text = _URL_USERINFO.sub(lambda m: m["scheme"] + REDACTED + "@", text)
        return text


def _spellings(secret: str) -> set[str]:
    """The secret as it may appear in a text: raw, JSON-escaped, percent-encoded or decoded."""
    forms = {secret, json.dumps(secret, ensure_ascii=False)[1:-1], json.dumps(secret)[1:-1]}
    forms.add(quote(secret, safe=""))
    forms.add(unquote(secret))
    return {form for form in forms if len(form) >= _MIN_SECRET}


def _header_secrets(value: str) -> list[str]:
    """A credential header's value, and its token alone (``Bearer <token>``)."""
    value = value.strip()
    match = _AUTH_SCHEME.match(value)
    return [value, match[1]] if match else [value]


def _userinfo(url: str) -> list[str]:
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    out: list[str] = []
    if parts.username:
        out.append(parts.username)
    if parts.password:
        out.append(parts.password)
        netloc = parts.netloc
        out.append(netloc.rsplit("@", 1)[0])
    return out


def request_redactor(model: Model, options: StreamOptions | None = None) -> Redactor:
    """The ``Redactor`` of asking ``model`` with ``options``: the call's key, the provider's
    environment key, the model's and the call's headers, and the base URL's userinfo."""
    keys = [options.api_key if options is not None else None, get_env_api_key(model.provider)]
    return Redactor.for_request(
        api_keys=keys,
        model_headers=model.headers,
        call_headers=options.headers if options is not None else None,
        urls=[model.base_url],
    )
