"""The virtual device's settings and system services: ``settings get|put|delete|list`` (the
sandbox's settings table through its Android keys), ``svc wifi|bluetooth`` and ``cmd notification|
connectivity|uimode``. :class:`SettingsCommands` is a part of :class:`~phoneenv.farm.virtual.VirtualDevice`."""

from __future__ import annotations

from typing import Any

from phoneenv.app import App
from phoneenv.farm import android as A
from phoneenv.farm.shell import Invocation
from phoneenv.phone import Phone

__all__ = ["SettingsCommands"]


class SettingsCommands:
    """``settings``, ``svc`` and ``cmd`` (module docstring)."""

    phone: Phone
    _classes: dict[str, type[App]]

    # -- settings --------------------------------------------------------------------------------
    def _build_setting_map(self) -> dict[tuple[str, str], tuple[str, str, A.SettingKey]]:
        """(namespace, Android key) → (sandbox table, sandbox key, mapping) for every mapped setting."""
        out: dict[tuple[str, str], tuple[str, str, A.SettingKey]] = {}
        for app, cls in self._classes.items():
            driver = cls.android
            for table, mapping in driver.tables.items() if driver is not None else ():
                if isinstance(mapping, A.SettingsTable):
                    for key, sk in mapping.keys.items():
                        out[(sk.namespace, sk.key)] = (f"{app}.{table}", key, sk)
        return out

    def setting(self, namespace: str, key: str) -> str | None:
        """The text ``settings get NAMESPACE KEY`` prints (None for ``null``)."""
        mapped = self._setting_map.get((namespace, key))
        if mapped is not None:
            table, rid, sk = mapped
            rec = self.phone.state.get(table, rid)
            if rec is None:
                return None
            return str(sk.codec.encode(rec["value"], A.Ctx(self.phone.tz)))
        return self.settings.get(namespace, {}).get(key)

    def set_setting(self, namespace: str, key: str, value: str | None) -> None:
        """Store a setting's text (None deletes it). A mapped key stores the sandbox value its
        codec reads from ``value``; raises :class:`~phoneenv.farm.android.MappingError` when it
        cannot (this device cannot hold ``wifi_on=7``)."""
        mapped = self._setting_map.get((namespace, key))
        if mapped is None:
            if value is None:
                self.settings.setdefault(namespace, {}).pop(key, None)
            else:
                self.settings.setdefault(namespace, {})[key] = value
            return
        table, rid, sk = mapped
        state = self.phone.state
        if value is None:
            if state.get(table, rid) is not None:
                state.delete(table, rid)
            return
        decoded = sk.codec.decode(value, A.Ctx(self.phone.tz))
        if state.get(table, rid) is not None:
            state.update(table, rid, value=decoded)
        else:
            state.insert(table, {"id": rid, "value": decoded})

    def _set_sandbox_setting(self, sandbox_key: str, value: Any) -> None:
        """What a service command does (``svc wifi enable``): set the mapped setting."""
        for (ns, key), (_, rid, sk) in self._setting_map.items():
            if rid == sandbox_key:
                self.set_setting(ns, key, str(sk.codec.encode(value, A.Ctx(self.phone.tz))))
                return
        raise KeyError(sandbox_key)

    def _settings(self, inv: Invocation) -> int:
        args = [a for a in inv.argv[1:] if a not in ("--user",)]
        if len(args) >= 2 and args[0] in ("--user",):
            args = args[2:]
        if not args or args[0] not in ("get", "put", "delete", "list", "reset"):
            inv.error("usage:  settings [--user <USER_ID> | current] get namespace key")
            return 1
        verb, rest = args[0], args[1:]
        if rest and rest[0] == "--user":
            rest = rest[2:]
        if not rest or rest[0] not in ("system", "secure", "global"):
            inv.error(f"Invalid namespace '{rest[0] if rest else ''}'")
            return 1
        ns = rest[0]
        if verb == "list":
            keys = {k for k in self.settings.get(ns, {})}
            keys |= {k for (n, k) in self._setting_map if n == ns}
            for key in sorted(keys):
                value = self.setting(ns, key)
                if value is not None:
                    inv.write(f"{key}={value}\n")
            return 0
        if len(rest) < 2:
            inv.error("Invalid arguments")
            return 1
        key = rest[1]
        if verb == "get":
            value = self.setting(ns, key)
            inv.write(("null" if value is None else value) + "\n")
            return 0
        if verb == "delete":
            existed = self.setting(ns, key) is not None
            self.set_setting(ns, key, None)
            inv.write(f"Deleted {int(existed)} rows\n")
            return 0
        if verb == "put":
            if len(rest) < 3:
                inv.error("Invalid arguments")
                return 1
            try:
                self.set_setting(ns, key, rest[2])
            except A.MappingError as exc:
                inv.error(f"this virtual device cannot hold {ns} {key}={rest[2]!r}: {exc}")
                return 1
            return 0
        inv.error("settings reset is not supported on this virtual device")
        return 1

    def _svc(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        if len(args) == 2 and args[0] in ("wifi", "bluetooth") and args[1] in ("enable", "disable"):
            self._set_sandbox_setting(args[0], args[1] == "enable")
            return 0
        inv.error(f"svc: unsupported: {' '.join(args)}")
        return 1

    def _cmd(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        service, rest = (args[0], args[1:]) if args else ("", [])
        if service == "notification" and rest[:1] == ["set_dnd"] and len(rest) == 2:
            mode = {"on": True, "none": True, "priority": True, "alarms": True, "all": False, "off": False}.get(rest[1])
            if mode is None:
                inv.error(f"Unknown set_dnd mode: {rest[1]}")
                return 1
            self._set_sandbox_setting("dnd", mode)
            return 0
        if service == "notification" and rest[:1] == ["post"]:
            return self._notify(inv, rest[1:])
        if service == "connectivity" and rest[:1] == ["airplane-mode"]:
            if len(rest) == 1:
                inv.write("enabled\n" if self.setting("global", "airplane_mode_on") == "1" else "disabled\n")
                return 0
            if rest[1] in ("enable", "disable"):
                self._set_sandbox_setting("airplane_mode", rest[1] == "enable")
                return 0
        if service == "uimode" and rest[:1] == ["night"]:
            if len(rest) == 1:
                inv.write(f"Night mode: {'yes' if self.setting('secure', 'ui_night_mode') == '2' else 'no'}\n")
                return 0
            if rest[1] in ("yes", "no"):
                self._set_sandbox_setting("dark_mode", rest[1] == "yes")
                inv.write(f"Night mode: {rest[1]}\n")
                return 0
        if service in ("notification", "connectivity", "uimode"):
            inv.error(f"Unknown command: {' '.join(rest)}")
            return 255
        inv.error(f"cmd: Can't find service: {service}")
        return 20

    def _notify(self, inv: Invocation, args: list[str]) -> int:
        title = ""
        while args and args[0].startswith("-"):
            opt = args.pop(0)
            if opt in ("-t", "--title") and args:
                title = args.pop(0)
            elif opt in ("-S", "--style", "-c", "--conversation", "-I", "--icon") and args:
                args.pop(0)
        if len(args) < 2:
            inv.error("usage: cmd notification post [flags] <tag> <text>")
            return 255
        self.phone.notify("shell", title or args[0], " ".join(args[1:]))
        inv.write("Notification posted.\n")
        return 0
