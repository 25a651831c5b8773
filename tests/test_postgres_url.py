"""Store URLs: recognised, and their password never rendered (no server needed)."""

from __future__ import annotations

import subprocess
import sys
from urllib.parse import quote

from hypothesis import given, strategies as st

from condor_rlrep.store.backends import describe_store
from condor_rlrep.store.location import resolve_store as resolve
from condor_rlrep.store.postgres_url import has_password, is_postgres_url, redact_url, scrub, url_password


def test_recognised_and_redacted():
    assert is_postgres_url("postgresql://h/db") and is_postgres_url("POSTGRES://h/db")
    assert not is_postgres_url("/var/lib/agent.sqlite") and not is_postgres_url("postgresql.sqlite")
    cases = {
        "postgresql://rlrep:pw@db.example:5432/agent": "postgresql://rlrep@db.example:5432/agent",
        "postgresql://:pw@h/db": "postgresql://h/db",
        "postgresql://u@h1:5432,h2:5433/db?password=pw&sslmode=require": "postgresql://u@h1:5432,h2:5433/db?sslmode=require",
        "postgresql:///agent?host=/var/run/postgresql&service=rlrep": "postgresql:///agent?host=/var/run/postgresql&service=rlrep",
        "postgresql://u:p%40ss@h/db": "postgresql://u@h/db",
    }
    for url, shown in cases.items():
        assert redact_url(url) == shown
        assert describe_store(url) == shown
    assert url_password("postgresql://u:p%40ss@h/db") == "p@ss" and not has_password("postgresql://u@h/db")
    assert describe_store("/x/agent.sqlite") == "/x/agent.sqlite"


def test_resolution_keeps_urls():
    url = "postgresql://u@h/db"
    assert resolve(url, {}) == url
    assert resolve(None, {"CONDOR_RLREP_STORE": url}) == url
    assert resolve(None, {"XDG_DATA_HOME": "/d"}) == "/d/condor-rlrep/agent.sqlite"


_secret = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=4, max_size=30)


@given(_secret, st.sampled_from(["userinfo", "query"]))
def test_the_password_never_survives(secret, where):
    secret = "Zq#" + secret  # never a piece of the rest of the URL
    encoded = quote(secret, safe="")
    url = (f"postgresql://rlrep:{encoded}@127.0.0.1:5432/agent?sslmode=prefer" if where == "userinfo"
           else f"postgresql://rlrep@127.0.0.1:5432/agent?password={encoded}&sslmode=prefer")
    assert url_password(url) == secret
    shown = redact_url(url)
    assert encoded not in shown and not has_password(shown)
    assert shown == "postgresql://rlrep@127.0.0.1:5432/agent?sslmode=prefer"
    message = f'invalid percent-encoded token: "{encoded}" / {secret}'
    assert secret not in scrub(message, url) and encoded not in scrub(message, url)


def test_choosing_a_backend_imports_no_driver():
    code = ("import sys, condor_rlrep.store.backends as b; b.describe_store('postgresql://u:p@h/d');"
            " print([m for m in ('psycopg', 'numpy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
