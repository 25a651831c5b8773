"""The store, policy and power table the HTCondor way: flag > environment >
user config file > HTCondor configuration (RLREP_*, read with
htcondor2.param) > default, with ``instrument`` naming each one's source."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from condor_rlrep.condor.config import load_user_config, resolve_setting
from condor_rlrep.errors import InputError

CLI = str(Path(sys.executable).parent / "condor-rlrep")
FIGURE1 = Path(__file__).resolve().parents[1] / "examples" / "figure1"


def test_precedence_ladder_by_hand() -> None:
    admin = {"RLREP_POLICY": "fixed:3"}.get
    user = {"policy": "fixed:2"}
    env = {"CONDOR_RLREP_POLICY": "single"}
    ladder = [
        (dict(flag="rl:3", environ=env, user_config=user), "rl:3", "--policy"),
        (dict(environ=env, user_config=user), "single", "$CONDOR_RLREP_POLICY"),
        (dict(environ={}, user_config=user, user_config_name="u.toml"), "fixed:2", "u.toml"),
        (dict(environ={}, user_config={}), "fixed:3", "HTCondor config RLREP_POLICY"),
    ]
    for kwargs, value, source in ladder:
        setting = resolve_setting("policy", param=admin, default="agent", **kwargs)
        assert (setting.value, setting.source) == (value, source)
    bare = resolve_setting("policy", environ={}, param=lambda knob: None, default="agent")
    assert (bare.value, bare.source) == ("agent", "default")


def test_user_config_is_checked(tmp_path: Path) -> None:
    assert load_user_config(str(tmp_path / "absent.toml")) == {}
    bad = tmp_path / "c.toml"
    bad.write_text('polcy = "fixed:2"\n')
    with pytest.raises(InputError, match=r"c.toml: unknown setting\(s\) polcy"):
        load_user_config(str(bad))
    bad.write_text("policy = 3\n")
    with pytest.raises(InputError, match="policy must be a non-empty string"):
        load_user_config(str(bad))


@pytest.fixture
def pool_admin(tmp_path: Path) -> dict[str, str]:
    """An HTCondor configuration setting all three, and a clean user."""
    (tmp_path / "power.toml").write_text('default_watts = 80\n[hosts]\n"exec1.example" = 120\n')
    config = tmp_path / "condor_config"
    config.write_text(f"RLREP_POLICY = fixed:2\nRLREP_STORE = {tmp_path}/admin.sqlite\n"
                      f"RLREP_POWER_TABLE = {tmp_path}/power.toml\n")
    shutil.copytree(FIGURE1, tmp_path / "figure1")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONDOR_RLREP_")}
    env.update(CONDOR_CONFIG=str(config), XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    return env


def instrument(tmp_path: Path, env: dict[str, str], *args: str) -> dict:
    done = subprocess.run([CLI, "instrument", "figure1/figure1.dag", "-o", f"run{len(list(tmp_path.glob('run*')))}/f.dag",
                           "--dagman-version", "25.14.0", "--json", *args],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_pool_admin_sets_them_once_and_users_override(tmp_path: Path, pool_admin: dict[str, str]) -> None:
    admin = instrument(tmp_path, pool_admin, "--policy", "agent")
    assert admin["settings"]["store"] == {"value": f"{tmp_path}/admin.sqlite", "source": "HTCondor config RLREP_STORE"}
    assert admin["settings"]["power_table"]["source"] == "HTCondor config RLREP_POWER_TABLE"
    assert admin["store"] == f"{tmp_path}/admin.sqlite" and (tmp_path / "admin.sqlite").exists()
    hooks = json.loads((tmp_path / "run0" / "f.dag.rlrep" / "hooks.json").read_text())
    assert hooks["power_default_watts"] == 80.0 and hooks["power_hosts"] == {"exec1.example": 120.0}
    # the admin's policy applies when the user names none
    plain = instrument(tmp_path, pool_admin)
    assert plain["settings"]["policy"] == {"value": "fixed:2", "source": "HTCondor config RLREP_POLICY"}
    # the user's config file beats the admin's, the environment beats both
    (tmp_path / "cfg" / "condor-rlrep").mkdir(parents=True)
    (tmp_path / "cfg" / "condor-rlrep" / "config.toml").write_text('policy = "single"\n')
    mine = instrument(tmp_path, pool_admin)
    assert mine["settings"]["policy"] == {"value": "single", "source": f"{tmp_path}/cfg/condor-rlrep/config.toml"}
    env = instrument(tmp_path, {**pool_admin, "CONDOR_RLREP_POLICY": "fixed:3",
                                "CONDOR_RLREP_STORE": str(tmp_path / "env.sqlite")})
    assert env["settings"]["policy"]["source"] == "$CONDOR_RLREP_POLICY"
    assert env["settings"]["store"]["source"] == "$CONDOR_RLREP_STORE"


def test_agent_commands_find_the_admins_store(tmp_path: Path, pool_admin: dict[str, str]) -> None:
    done = subprocess.run([CLI, "agent", "init", "--json"], capture_output=True, text=True, env=pool_admin, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "admin.sqlite").exists()
