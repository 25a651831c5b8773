"""Settings the HTCondor way: a pool admin sets them once for every user.

Three settings can come from more than a flag — the agent store, the
replica policy and the power table of the execute hosts — and each is
taken from the first of, in this order:

1. the command's flag (``--store``, ``--policy``, ``--power-table``);
2. the environment (``CONDOR_RLREP_STORE``, ``CONDOR_RLREP_POLICY``,
   ``CONDOR_RLREP_POWER_TABLE``);
3. the user's config file: ``instrument --config FILE``, else
   ``$XDG_CONFIG_HOME/condor-rlrep/config.toml`` (keys ``store``,
   ``policy``, ``power_table``);
4. HTCondor's configuration (``RLREP_STORE``, ``RLREP_POLICY``,
   ``RLREP_POWER_TABLE`` in ``condor_config`` or a
   ``config.d`` file), read with ``htcondor2.param`` — what
   ``condor_config_val RLREP_STORE`` prints;
5. the built-in default.

:func:`resolve_setting` says which one it took (``Setting.source``), so
``instrument`` can show where each value came from. The hooks never read
any of this: ``instrument`` resolves once and writes the result into the run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SETTINGS", "Setting", "htcondor_param", "resolve_setting", "user_config_path", "load_user_config",
]

# setting -> (flag, environment variable, HTCondor configuration knob)
SETTINGS: dict[str, tuple[str, str, str]] = {
    "store": ("--store", "CONDOR_RLREP_STORE", "RLREP_STORE"),
    "policy": ("--policy", "CONDOR_RLREP_POLICY", "RLREP_POLICY"),
    "power_table": ("--power-table", "CONDOR_RLREP_POWER_TABLE", "RLREP_POWER_TABLE"),
}


@dataclass(frozen=True)
class Setting:
    name: str
    value: Any
    source: str
    """``--store``, ``$CONDOR_RLREP_STORE``, ``FILE`` (a user config),
    ``HTCondor config RLREP_STORE`` or ``default``."""


def htcondor_param(knob: str) -> str | None:
    """``knob`` from HTCondor's configuration (``$CONDOR_CONFIG`` and the
    files it names), None when unset, empty or there are no bindings."""
    try:
        import htcondor2
    except ImportError:
        return None
    try:
        value = htcondor2.param.get(knob)
    except Exception:  # noqa: BLE001 - a broken HTCondor config must not stop a command that has a default
        return None
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def user_config_path(environ: Mapping[str, str] | None = None) -> str:
    """``$XDG_CONFIG_HOME/condor-rlrep/config.toml`` (``~/.config`` when unset)."""
    env = os.environ if environ is None else environ
    home = env.get("HOME") or os.path.expanduser("~")
    return os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "condor-rlrep", "config.toml")


def load_user_config(path: str) -> dict[str, Any]:
    """The user config file's settings (empty when there is no file)."""
    from condor_rlrep.errors import InputError
    from condor_rlrep.safeload import LoadError, load_toml

    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read config: {getattr(err, 'strerror', None) or err}", path=path) from err
    try:
        data = load_toml(text)
    except LoadError as err:
        raise InputError(f"not valid TOML: {err}", path=path) from err
    unknown = sorted(set(data) - set(SETTINGS))
    if unknown:
        raise InputError(f"unknown setting(s) {', '.join(unknown)} (known: {', '.join(SETTINGS)})", path=path)
    for key, value in data.items():
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{key} must be a non-empty string, got {value!r}", path=path)
    return data


def resolve_setting(
    name: str,
    flag: Any = None,
    *,
    environ: Mapping[str, str] | None = None,
    user_config: Mapping[str, Any] | None = None,
    user_config_name: str = "user config",
    default: Any = None,
    param: Callable[[str], str | None] = htcondor_param,
) -> Setting:
    """``name``'s value and where it came from: flag > environment > user
    config > HTCondor config > ``default`` (module doc)."""
    flag_name, env_name, knob = SETTINGS[name]
    if flag is not None and flag != "":
        return Setting(name, flag, flag_name)
    env = os.environ if environ is None else environ
    if env.get(env_name):
        return Setting(name, env[env_name], f"${env_name}")
    if user_config and user_config.get(name):
        return Setting(name, user_config[name], user_config_name)
    value = param(knob)
    if value is not None:
        return Setting(name, value, f"HTCondor config {knob}")
    return Setting(name, default, "default")
