"""The virtual device's system properties and clock: ``getprop``, ``setprop`` (``persist.sys.timezone``
sets the timezone; root) and ``date`` (toybox's read and set forms; root). :class:`PropsCommands` is a
part of :class:`~phoneenv.farm.virtual.VirtualDevice`."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from phoneenv.farm import android as A
from phoneenv.farm.shell import Invocation

__all__ = ["PropsCommands"]


def _parse_toybox_date(text: str, now: dt.datetime) -> dt.datetime:
    """toybox ``date``'s set format ``MMDDhhmm[[CC]YY][.ss]`` (seconds default to 0)."""
    main, _, secs = text.partition(".")
    month, day, hour, minute = int(main[0:2]), int(main[2:4]), int(main[4:6]), int(main[6:8])
    year = now.year
    if len(main) == 10:
        year = 2000 + int(main[8:10])
    elif len(main) == 12:
        year = int(main[8:12])
    return dt.datetime(year, month, day, hour, minute, int(secs) if secs else 0)


class PropsCommands:
    """``getprop``, ``setprop`` and ``date`` (module docstring)."""

    props: dict[str, str]

    def _getprop(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        if not args:
            inv.write("".join(f"[{k}]: [{v}]\n" for k, v in sorted(self.props.items())))
            return 0
        inv.write(self.props.get(args[0], args[1] if len(args) > 1 else "") + "\n")
        return 0

    def _setprop(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        if len(args) != 2:
            inv.error("usage: setprop NAME VALUE")
            return 1
        key, value = args
        if not self.is_root and (key.startswith(("persist.", "ro.", "sys.")) or key.startswith("ctl.")):
            inv.error(f"Failed to set property '{key}' to '{value}'.\nSee dmesg for error reason.")
            return 1
        if key.startswith("ro.") and key in self.props:
            inv.error(f"Failed to set property '{key}' to '{value}'.\nSee dmesg for error reason.")
            return 1
        if key == "persist.sys.timezone":
            try:
                tz = ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                inv.error(f"Failed to set property '{key}' to '{value}'.\nSee dmesg for error reason.")
                return 1
            self._retime(tz)
        self.props[key] = value
        return 0

    def _retime(self, tz: Any) -> None:
        """Change the timezone keeping every stored instant: providers hold epoch milliseconds,
        so the sandbox records' local times are re-read in ``tz``."""
        old = self.phone.tz
        state = self.phone.state
        for route in self._routes.values():
            if route.child is not None:
                continue
            for rid, rec in list(state.table(route.full_table).items()):
                row = {"_id": A.android_id(rid, route.prefix), **A.encode_row(route.mapping, rec, old)}
                kids = dict((c.uri, r) for c, r in A.encode_children(route.mapping, rec, old))
                new = A.decode_record(route.mapping, route.prefix, row, kids, tz)
                if new != rec:
                    state.update(route.full_table, rid, **{k: v for k, v in new.items() if k != "id"})
        self.phone.tz = tz

    def _date(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        utc = False
        fmt = "%a %b %e %H:%M:%S %Z %Y"
        setdate = None
        for arg in args:
            if arg == "-u":
                utc = True
            elif arg.startswith("+"):
                fmt = arg[1:]
            elif re.fullmatch(r"\d{8}(\d{2}|\d{4})?(\.\d{2})?", arg):
                setdate = arg
            else:
                inv.error(f"date: bad date '{arg}'")
                return 1
        tz = dt.timezone.utc if utc else self.phone.tz
        if setdate is not None:
            if not self.is_root:
                inv.error("date: cannot set date: Operation not permitted")
                return 1
            try:
                moment = _parse_toybox_date(setdate, dt.datetime.fromtimestamp(self.now, tz))
            except ValueError:
                inv.error(f"date: bad date '{setdate}'")
                return 1
            self.phone.state.meta["now"] = moment.replace(tzinfo=tz).timestamp()
        moment = dt.datetime.fromtimestamp(self.now, tz)
        if "%s" in fmt:
            fmt = fmt.replace("%s", str(int(self.now)))
        inv.write(moment.strftime(fmt) + "\n")
        return 0
