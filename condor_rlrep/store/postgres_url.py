"""PostgreSQL store locations: recognising a URL and keeping its secret.

A store on a server is named by a libpq URL, ``postgresql://[user[:password]@]
[host][:port][,…]/database[?param=value…]``. Credentials may sit in the URL,
in ``PGPASSFILE`` (``~/.pgpass``) or in a service file (``?service=NAME``
with ``PGSERVICEFILE`` / ``~/.pg_service.conf``); libpq reads all of them,
so this module never looks for a password. It only makes sure one is never
shown or written: :func:`redact_url` is the only form of a URL that goes into
a message, a log, a spool file or an instrumented DAG, and :func:`scrub`
takes a URL's password out of any text (a driver's error message may echo
part of a malformed URL). Imports nothing heavy: the hooks use it.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlsplit

__all__ = ["SCHEMES", "is_postgres_url", "redact_url", "scrub", "url_password", "has_password", "ambiguous"]

SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(spec: object) -> bool:
    """True for a ``postgresql://`` or ``postgres://`` URL (any other spec is a file path)."""
    return isinstance(spec, str) and spec.lower().startswith(SCHEMES)


class _Parts:
    """A URL cut as this module needs it, never raising (``urlsplit`` does on
    ``[::1`` ): ``head`` (scheme://), ``userinfo`` (None: none), ``rest``
    (hosts, path, fragment: everything after the userinfo up to ``?``) and
    ``query``. The userinfo runs to the *last* ``@`` before the query, so a
    password holding an unencoded ``@``, ``/`` or ``#`` is taken whole (and
    hidden whole), not cut where a strict parser would cut it."""

    def __init__(self, url: str):
        scheme_end = url.find("://")
        self.head = url[: scheme_end + 3] if scheme_end >= 0 else ""
        body = url[len(self.head):]
        question = body.find("?")
        before, self.query = (body, "") if question < 0 else (body[:question], body[question + 1:])
        at = before.rfind("@")
        self.userinfo = before[:at] if at >= 0 else None
        self.rest = before[at + 1:] if at >= 0 else before

    @property
    def raw_password(self) -> str | None:
        if self.userinfo is None or ":" not in self.userinfo:
            return None
        return self.userinfo.split(":", 1)[1]

    @property
    def user(self) -> str:
        return "" if self.userinfo is None else self.userinfo.split(":", 1)[0]


def url_password(url: str) -> str | None:
    """The password a URL carries (userinfo or ``?password=``), decoded; None if none."""
    parts = _Parts(url)
    if parts.raw_password is not None:
        return unquote(parts.raw_password)
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "password":
            return value
    return None


def ambiguous(url: str) -> str | None:
    """Why libpq would read ``url`` otherwise than it reads (a password with an
    unencoded ``@``, ``/`` or ``#``; a malformed IPv6 host), or None."""
    parts = _Parts(url)
    if parts.userinfo is not None and any(c in parts.userinfo for c in "@/#"):
        return "its user or password holds an unencoded '@', '/' or '#' (write them %40, %2F, %23)"
    try:
        urlsplit(url)
    except ValueError as err:
        return f"it is malformed ({err})"
    return None


def has_password(url: str) -> bool:
    return url_password(url) is not None


def redact_url(url: str) -> str:
    """``url`` without its password, otherwise as given (never raises)."""
    if not has_password(url):
        return url
    parts = _Parts(url)
    netloc = parts.rest if parts.userinfo is None else (f"{parts.user}@{parts.rest}" if parts.user else parts.rest)
    query = parts.query
    if query:
        kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "password"]
        query = "&".join(f"{quote(k, safe='')}={quote(v, safe='/')}" for k, v in kept)
    return parts.head + netloc + (f"?{query}" if query else "")


def scrub(text: str, url: str) -> str:
    """``text`` with every form of ``url``'s password (as written and decoded)
    replaced by ``***``, where it stands as a whole (a password ``se`` leaves
    "service" alone: a driver's words are not mangled)."""
    import re

    secret = url_password(url)
    if not secret:
        return text
    parts = _Parts(url)
    forms = {secret, quote(secret, safe=""), quote(secret)}
    if parts.raw_password:
        forms.add(parts.raw_password)
        # the pieces a strict parser would cut it into (and may echo): up to and after each '@', '/', '#'
        forms.update(piece for piece in re.split(r"[@/#]", parts.raw_password) if len(piece) >= 3)
    forms.update(v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k == "password")
    forms.update(piece.split("=", 1)[1] for piece in parts.query.split("&") if piece.startswith("password="))
    for form in sorted((f for f in forms if f), key=len, reverse=True):
        text = re.sub(r"(?<![A-Za-z0-9])" + re.escape(form) + r"(?![A-Za-z0-9])", "***", text)
    return text
