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

from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

__all__ = ["SCHEMES", "is_postgres_url", "redact_url", "scrub", "url_password", "has_password"]

SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(spec: object) -> bool:
    """True for a ``postgresql://`` or ``postgres://`` URL (any other spec is a file path)."""
    return isinstance(spec, str) and spec.lower().startswith(SCHEMES)


def _split_userinfo(netloc: str) -> tuple[str | None, str]:
    if "@" not in netloc:
        return None, netloc
    userinfo, hosts = netloc.rsplit("@", 1)
    return userinfo, hosts


def url_password(url: str) -> str | None:
    """The password a URL carries (userinfo or ``?password=``), decoded; None if none."""
    parts = urlsplit(url)
    userinfo, _ = _split_userinfo(parts.netloc)
    if userinfo is not None and ":" in userinfo:
        return unquote(userinfo.split(":", 1)[1])
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "password":
            return value
    return None


def has_password(url: str) -> bool:
    return url_password(url) is not None


def redact_url(url: str) -> str:
    """``url`` without its password, otherwise as given."""
    if not has_password(url):
        return url
    parts = urlsplit(url)
    userinfo, hosts = _split_userinfo(parts.netloc)
    netloc = parts.netloc
    if userinfo is not None:
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}@{hosts}" if user else hosts
    query = parts.query
    if query:
        kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "password"]
        query = "&".join(f"{quote(k, safe='')}={quote(v, safe='/')}" for k, v in kept)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def scrub(text: str, url: str) -> str:
    """``text`` with every form of ``url``'s password (as written and decoded) replaced by ``***``."""
    secret = url_password(url)
    if not secret:
        return text
    parts = urlsplit(url)
    userinfo, _ = _split_userinfo(parts.netloc)
    forms = {secret, quote(secret, safe=""), quote(secret)}
    if userinfo is not None and ":" in userinfo:
        forms.add(userinfo.split(":", 1)[1])
    forms.update(v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k == "password")
    raw_query = [piece.split("=", 1)[1] for piece in parts.query.split("&") if piece.startswith("password=")]
    forms.update(raw_query)
    for form in sorted((f for f in forms if f), key=len, reverse=True):
        text = text.replace(form, "***")
    return text
