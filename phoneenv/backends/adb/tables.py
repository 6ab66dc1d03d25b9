"""Mapped tables on the device: reading them (``content query``, ``settings get``, ``pm list
packages``, ``dumpsys``) as :data:`~phoneenv.backends.adb.shell.Reader` generators that share
round trips, and writing them (``content insert|update|delete``, ``settings put``, ``pm
grant|revoke``, the app's UI for typed inserts). :class:`TableIO` is a part of
:class:`~phoneenv.backends.adb.AdbBackend`."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from phoneenv.app import App
from phoneenv.backends.adb.faults import DeviceFault, ReadFault, UnmappedTable
from phoneenv.backends.adb.parsing import input_text_commands, parse_ids, parse_rows, parse_runtime_permissions
from phoneenv.backends.adb.shell import DeviceShell, Reader, Section, gather
from phoneenv.backends.adb.state import DevicePhone, DeviceState, Table
from phoneenv.farm import android as A

__all__ = ["TableIO"]

T = TypeVar("T")


def _norm(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_norm(v) for v in value)
    return value


def norm_table(tbl: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    return {rid: {k: _norm(v) for k, v in rec.items()} for rid, rec in tbl.items()}


def _child_type(child: A.ChildRows, col: str, row: Mapping[str, A.Wire]) -> A.BindType:
    if isinstance(child, A.DataRows):
        if col == child.kind_column:
            return "s"
        for kind in child.kinds.values():
            if row.get(child.kind_column) == kind.mimetype:
                if col == kind.value.name:
                    return kind.value.type
                if col in kind.extra:
                    return kind.extra[col][0]
        for lk in child.labelled:
            if row.get(child.kind_column) == lk.mimetype and col in (lk.type_column, lk.primary_column):
                return "i"
        return "s"
    if col == child.item.name:
        return child.item.type
    return child.derived[col][0] if col in child.derived else "s"


def _sql_text(text: str) -> str:
    """A SQL string literal (quotes doubled)."""
    return "'" + text.replace("'", "''") + "'"


class TableIO:
    """Reading and writing the mapped tables through the device's shell (module docstring)."""

    shell: DeviceShell
    state: DeviceState
    phone: DevicePhone
    _classes: dict[str, type[App]]
    _drivers: dict[str, A.AndroidDriver]
    _null_columns: dict[tuple[str, str | None], tuple[str, ...]]
    _installed: tuple[str, ...]

    # -- mapping ---------------------------------------------------------------------------------
    def mapped_tables(self) -> dict[str, Table]:
        """Every table with an Android mapping, by full name (``messages.messages``)."""
        out: dict[str, Table] = {}
        for app, driver in self._drivers.items():
            cls = self._classes[app]
            for table, mapping in driver.tables.items():
                out[f"{app}.{table}"] = Table(f"{app}.{table}", app, mapping, cls.tables.get(table, ""))
        return out

    def _wanted(self, name: str) -> bool:
        app = name.split(".", 1)[0]
        return app in self._installed or app == "system"

    # -- reading tables --------------------------------------------------------------------------
    def _run(self, reader: Reader[T], writes: Sequence[Sequence[str]] = ()) -> T:
        """Drive ``reader`` (see :data:`Reader`): its first commands run in the round trip of the
        last of ``writes`` (:meth:`DeviceShell.apply`'s ``then``), the rest in :meth:`DeviceShell.batch`.
        With ``writes``, a write that fails raises :class:`DeviceFault` and any read that fails
        (the device's answer or what the reader makes of it) :class:`ReadFault`."""
        writing = False
        try:
            try:
                cmds = next(reader)
            except StopIteration as stop:
                writing = True
                self.shell.apply(writes)
                return stop.value
            writing = bool(writes)
            secs = self.shell.apply(writes, then=cmds) if writes else self.shell.batch(cmds)
            writing = False
            while True:
                try:
                    cmds = reader.send(secs)
                except StopIteration as stop:
                    return stop.value
                secs = self.shell.batch(cmds)
        except DeviceFault as exc:
            if not writes or writing or isinstance(exc, ReadFault):
                raise
            raise ReadFault(exc.detail, exc.kind) from exc

    def read_table(self, spec: Table) -> dict[str, dict[str, Any]]:
        """Read one mapped table from the device (id → record)."""
        return self._run(self._table_reader(spec))

    def _table_reader(self, spec: Table) -> Reader[dict[str, dict[str, Any]]]:
        """The reads of one mapped table (id → record)."""
        m = spec.mapping
        if isinstance(m, A.ProviderTable):
            return (yield from self._provider_reader(spec, m))
        if isinstance(m, A.SettingsTable):
            return (yield from self._settings_reader(m))
        if isinstance(m, A.PackageTable):
            return self._package_records((yield from self._packages_reader()))
        if isinstance(m, A.PermissionTable):
            return (yield from self._permissions_reader())
        if isinstance(m, A.CallStateTable):
            [sec] = yield [["dumpsys", "telephony.registry"]]
            states = re.findall(r"mCallState=(\d+)", sec.out)
            if not states:
                raise DeviceFault("dumpsys telephony.registry printed no mCallState")
            if any(s != "0" for s in states):
                raise DeviceFault("a call is in progress on the device, which the phone driver cannot describe")
            return {}
        raise UnmappedTable(spec.name)

    def _query(self, uri: str, projection: Sequence[str], where: str | None = None) -> list[str]:
        cmd = ["content", "query", "--uri", uri, "--projection", ":".join(projection), "--sort", "_id ASC"]
        return [*cmd, "--where", where] if where else cmd

    def _null_query(self, uri: str, column: str, where: str | None) -> list[str]:
        return self._query(uri, ["_id"], f"({where}) AND {column} IS NULL" if where else f"{column} IS NULL")

    def _rows(self, uri: str, columns: Sequence[A.Column], where: str | None = None) -> list[dict[str, A.Wire]]:
        """All rows of ``uri`` (``_id`` and ``columns``), typed, unambiguously (see :func:`parse_rows`)."""
        return self._run(self._rows_reader(uri, columns, where))

    def _rows_reader(
        self, uri: str, columns: Sequence[A.Column], where: str | None = None
    ) -> Reader[list[dict[str, A.Wire]]]:
        """The reads of :meth:`_rows`. A text cell that lists as ``NULL`` is told from the text
        ``"NULL"`` with an ``IS NULL`` query; the columns that needed one at an earlier read of
        ``uri`` get theirs in the listing's round trip (a column's first, in one more)."""
        names = ["_id", *(c.name for c in columns)]
        kinds = {c.name: c.type for c in columns}
        text_cols = [c.name for c in columns if c.type == "s"]
        guessed = [c for c in self._null_columns.get((uri, where), ()) if c in text_cols]
        secs = yield [
            self._query(uri, ["_id"], where),
            self._query(uri, names, where),
            *(self._null_query(uri, c, where) for c in guessed),
        ]
        ids = parse_ids(secs[0].out)
        cells = parse_rows(secs[1].out, names, ids)
        nulls = {c: set(parse_ids(s.out)) for c, s in zip(guessed, secs[2:], strict=True)}
        if cells is None:  # a value holds a separator: read each text cell on its own
            cells = [{"_id": str(i)} for i in ids]
            per_cell = [(k, col) for k in range(len(ids)) for col in names[1:]]
            cmds = [self._query(uri, [col], f"_id={ids[k]}") for k, col in per_cell]
            for (k, col), s in zip(per_cell, (yield cmds), strict=True):
                body = s.out[:-1] if s.out.endswith("\n") else s.out
                head = f"Row: 0 {col}="
                if not body.startswith(head):
                    raise DeviceFault(f"unexpected content query output for {uri} _id={ids[k]}: {body[:200]!r}")
                cells[k][col] = body[len(head) :]
        maybe_null = [c for c in text_cols if any(row[c] == "NULL" for row in cells)]
        self._null_columns[(uri, where)] = tuple(dict.fromkeys([*guessed, *maybe_null]))
        missing = [c for c in maybe_null if c not in nulls]
        if missing:
            secs = yield [self._null_query(uri, c, where) for c in missing]
            nulls |= {c: set(parse_ids(s.out)) for c, s in zip(missing, secs, strict=True)}
        out = []
        for row in cells:
            rid = int(row["_id"])
            typed: dict[str, A.Wire] = {"_id": rid}
            for name in names[1:]:
                raw = row[name]
                if kinds[name] == "s":
                    typed[name] = None if rid in nulls.get(name, ()) else raw
                elif raw == "NULL":
                    typed[name] = None
                elif kinds[name] in ("f", "d"):
                    typed[name] = float(raw)
                else:
                    try:
                        typed[name] = int(raw)
                    except ValueError:
                        raise DeviceFault(f"{uri}: column {name} holds {raw!r}, not an integer") from None
            out.append(typed)
        return out

    def _provider_reader(self, spec: Table, m: A.ProviderTable) -> Reader[dict[str, dict[str, Any]]]:
        tz = self.phone.tz
        readers = [self._rows_reader(m.uri, m.columns, m.read_where)]
        for child in m.children:
            if isinstance(child, A.DataRows):
                cols = [A.Column(child.parent_column, "i"), A.Column(child.kind_column, "s")]
                cols += [A.Column(c, "s") for c in dict.fromkeys(k.value.name for k in child.kinds.values())]
                for lk in child.labelled:
                    for col in (
                        A.Column(lk.value_column, "s"),
                        A.Column(lk.type_column, "i", A.INT),
                        A.Column(lk.primary_column, "i", A.INT),
                    ):
                        if all(c.name != col.name for c in cols):
                            cols.append(col)
            else:
                cols = [A.Column(child.parent_column, "i"), child.item]
            readers.append(self._rows_reader(child.uri, cols))
        main, *kid_rows = yield from gather(readers)
        children: dict[str, dict[int, list[dict[str, A.Wire]]]] = {}
        for child, rows in zip(m.children, kid_rows, strict=True):
            grouped: dict[int, list[dict[str, A.Wire]]] = {}
            for row in rows:
                grouped.setdefault(int(row[child.parent_column] or 0), []).append(row)
            children[child.uri] = grouped
        out: dict[str, dict[str, Any]] = {}
        for row in main:
            n = int(row["_id"] or 0)
            kids = {uri: grouped.get(n, []) for uri, grouped in children.items()}
            rec = A.decode_record(m, spec.prefix, row, kids, tz)
            out[rec["id"]] = rec
        return out

    def _settings_reader(self, m: A.SettingsTable) -> Reader[dict[str, dict[str, Any]]]:
        keys = list(m.keys.items())
        secs = yield [sk.get_args() for _, sk in keys]
        out: dict[str, dict[str, Any]] = {}
        ctx = A.Ctx(self.phone.tz)
        for (key, sk), sec in zip(keys, secs, strict=True):
            text = sec.out.strip()
            if text == "null":
                continue
            out[key] = {"id": key, "value": sk.codec.decode(text, ctx)}
        return out

    def _packages(self) -> set[str]:
        return self._run(self._packages_reader())

    def _packages_reader(self) -> Reader[set[str]]:
        [sec] = yield [["pm", "list", "packages"]]
        return {line[len("package:") :].strip() for line in sec.out.splitlines() if line.startswith("package:")}

    def _package_records(self, pkgs: set[str]) -> dict[str, dict[str, Any]]:
        return {
            name: {"id": name, "name": name, "title": cls.title, "package": cls.package}
            for name, cls in self._classes.items()
            if cls.package in pkgs
        }

    def _permissions_reader(self) -> Reader[dict[str, dict[str, Any]]]:
        """Runtime permissions of the installed apps that declare any: ``pm list packages`` and
        every such app's ``dumpsys package`` in one round trip (an app not installed is left out)."""
        apps = [a for a, cls in self._classes.items() if cls.permissions]
        pkgs, *secs = yield from gather(
            [
                self._packages_reader(),
                *(self._sections_reader([["dumpsys", "package", self._classes[a].package]]) for a in apps),
            ]
        )
        out: dict[str, dict[str, Any]] = {}
        for app, [sec] in zip(apps, secs, strict=True):
            if self._classes[app].package not in pkgs:
                continue
            granted = parse_runtime_permissions(sec.out)
            for perm in self._classes[app].permissions:
                rid = f"{app}/{perm}"
                out[rid] = {"id": rid, "app": app, "permission": perm, "granted": granted.get(perm, False)}
        return out

    @staticmethod
    def _sections_reader(commands: Sequence[list[str]]) -> Reader[list[Section]]:
        """The sections of ``commands``, as a reader."""
        return (yield list(commands))

    # -- writing ---------------------------------------------------------------------------------
    def _bind(self, column: str, kind: A.BindType, value: A.Wire) -> list[str]:
        if value is None:
            return ["--bind", f"{column}:n:"]
        if isinstance(value, bool):
            value = int(value)
        return ["--bind", f"{column}:{kind}:{value}"]

    def _types(self, m: A.ProviderTable) -> dict[str, A.BindType]:
        types: dict[str, A.BindType] = {c.name: c.type for c in m.columns}
        types.update({col: t for col, (t, _) in m.derived.items()})
        return types

    def _insert_commands(self, spec: Table, m: A.ProviderTable, record: Mapping[str, Any]) -> list[list[str]]:
        tz = self.phone.tz
        n = A.android_id(record["id"], spec.prefix)
        row = A.encode_row(m, record, tz)
        types = self._types(m)
        cmd = ["content", "insert", "--uri", m.writes_to, "--bind", f"_id:i:{n}"]
        for col, value in row.items():
            cmd += self._bind(col, types[col], value)
        cmds = [cmd]
        cmds += self._child_inserts(m, record, n)
        return cmds

    def _child_inserts(self, m: A.ProviderTable, record: Mapping[str, Any], n: int) -> list[list[str]]:
        cmds = []
        for child, rows in A.encode_children(m, record, self.phone.tz):
            for crow in rows:
                cmd = ["content", "insert", "--uri", child.uri, "--bind", f"{child.parent_column}:i:{n}"]
                for col, value in crow.items():
                    cmd += self._bind(col, _child_type(child, col, crow), value)
                cmds.append(cmd)
        return cmds

    def _child_deletes(self, m: A.ProviderTable, n: int) -> list[list[str]]:
        cmds = []
        for child in m.children:
            where = f"{child.parent_column}={n}"
            if isinstance(child, A.DataRows):
                kinds = ", ".join(_sql_text(k) for k in child.mimetypes)
                where += f" AND {child.kind_column} IN ({kinds})"
            cmds.append(["content", "delete", "--uri", child.uri, "--where", where])
        return cmds

    def write_insert(self, spec: Table, record: dict[str, Any], typed: bool = False) -> None:
        """Write a new record (through the app's UI when its driver types such inserts and
        ``typed``)."""
        m = spec.mapping
        if isinstance(m, A.SettingsTable):
            self._write_setting(m, record["id"], record["value"])
            return
        if not isinstance(m, A.ProviderTable):
            raise A.MappingError(f"{spec.name} cannot be inserted into on a device")
        ui = self._drivers[spec.app].typed.get(spec.name.split(".", 1)[1])
        if typed and ui is not None and ui.applies(record):
            self._typed_insert(spec, m, ui, record)
            return
        self.shell.apply(self._insert_commands(spec, m, record))

    def write_update(self, spec: Table, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """Make record ``old`` read as ``new`` on the device."""
        m = spec.mapping
        if isinstance(m, A.SettingsTable):
            self._write_setting(m, new["id"], new["value"])
            return
        if isinstance(m, A.PermissionTable):
            if set(new) != set(old) or any(new[k] != old[k] for k in new if k != "granted"):
                raise A.MappingError("only a permission's 'granted' can change on a device")
            app = self._classes[new["app"]]
            self.shell.apply([["pm", "grant" if new["granted"] else "revoke", app.package, new["permission"]]])
            return
        if not isinstance(m, A.ProviderTable):
            raise A.MappingError(f"{spec.name} is read-only on a device")
        n = A.android_id(old["id"], spec.prefix)
        row = A.encode_row(m, new, self.phone.tz)
        types = self._types(m)
        cmds = []
        if row:
            cmd = ["content", "update", "--uri", m.writes_to, "--where", f"_id={n}"]
            for col, value in row.items():
                cmd += self._bind(col, types[col], value)
            cmds.append(cmd)
        child_fields = {c.field for c in m.children if isinstance(c, A.ListRows)}
        child_fields |= {f for c in m.children if isinstance(c, A.DataRows) for f in c.fields}
        if any(_norm(old.get(f)) != _norm(new.get(f)) for f in child_fields):
            cmds += self._child_deletes(m, n)
            cmds += self._child_inserts(m, new, n)
        self.shell.apply(cmds)

    def write_delete(self, spec: Table, old: Mapping[str, Any]) -> None:
        """Delete record ``old`` on the device (its child rows first)."""
        m = spec.mapping
        if isinstance(m, A.SettingsTable):
            self.shell.apply([m.keys[old["id"]].delete_args()])
            return
        if not isinstance(m, A.ProviderTable):
            raise A.MappingError(f"{spec.name} cannot be deleted from on a device")
        n = A.android_id(old["id"], spec.prefix)
        cmds = self._child_deletes(m, n)
        cmds.append(["content", "delete", "--uri", m.writes_to, "--where", f"_id={n}"])
        self.shell.apply(cmds)

    def _write_setting(self, m: A.SettingsTable, key: str, value: Any) -> None:
        sk = m.keys.get(key)
        if sk is None:
            raise A.MappingError(f"setting {key!r} has no Android home: {m.unmapped.get(key, 'unmapped')}")
        self.shell.apply([sk.put_args(value, A.Ctx(self.phone.tz))])

    def _typed_insert(self, spec: Table, m: A.ProviderTable, ui: A.TypedInsert, record: dict[str, Any]) -> None:
        """Insert ``record`` the way a user would: open the compose screen, type the text, submit;
        then find the row the app wrote, give it the record's id and other fields, and check the
        text arrived intact (a :class:`DeviceFault` when it did not)."""
        text = record[ui.text_field]
        before = set(parse_ids(self.shell.run(*self._query(m.uri, ["_id"]))))
        cmds = [ui.compose.args(record), *input_text_commands(text), *(["input", "keyevent", k] for k in ui.submit)]
        self.shell.apply(cmds)
        after = parse_ids(self.shell.run(*self._query(m.uri, ["_id"])))
        new = [i for i in after if i not in before]
        if len(new) != 1:
            raise DeviceFault(
                f"typing into {self._classes[spec.app].package} wrote {len(new)} rows to {m.uri}, expected 1 "
                "(is it the default app, with Enter set to send, and is ADBKeyBoard the input method?)"
            )
        n = A.android_id(record["id"], spec.prefix)
        row = A.encode_row(m, record, self.phone.tz)
        text_col = m.fields[ui.text_field]
        assert isinstance(text_col, A.Column)
        types = self._types(m)
        cmd = ["content", "update", "--uri", m.writes_to, "--where", f"_id={new[0]}"]
        if new[0] != n:
            cmd += ["--bind", f"_id:i:{n}"]
        for col, value in row.items():
            if col != text_col.name:
                cmd += self._bind(col, types[col], value)
        self.shell.apply([cmd])
        arrived = self.shell.run(*self._query(m.uri, [text_col.name], f"_id={n}"))
        head = f"Row: 0 {text_col.name}="
        got = arrived[len(head) : -1] if arrived.startswith(head) and arrived.endswith("\n") else None
        if got != text:
            raise DeviceFault(f"the text typed into {spec.app} arrived as {got!r} instead of {text!r}")

    def _seed_commands(self, expected: Mapping[str, Mapping[str, Mapping[str, Any]]], tz: dt.tzinfo) -> list[list[str]]:
        cmds: list[list[str]] = [["input", "keyevent", "KEYCODE_HOME"]]
        ctx = A.Ctx(tz)
        for name, spec in self.mapped_tables().items():
            m = spec.mapping
            if name not in expected:
                continue
            want = expected[name]
            if isinstance(m, A.SettingsTable):
                for key, sk in m.keys.items():
                    cmds.append(sk.put_args(want[key]["value"], ctx) if key in want else sk.delete_args())
            elif isinstance(m, A.PermissionTable):
                for rec in want.values():
                    pkg = self._classes[rec["app"]].package
                    cmds.append(["pm", "grant" if rec["granted"] else "revoke", pkg, rec["permission"]])
            elif isinstance(m, A.ProviderTable):
                cmds.append(["content", "delete", "--uri", m.writes_to])
                for child in m.children:
                    if isinstance(child, A.ListRows):
                        cmds.append(["content", "delete", "--uri", child.uri])
                for rec in want.values():
                    cmds += self._insert_commands(spec, m, rec)
        return cmds

    def read_all(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Every mapped table as the device holds it now (what verification reads), read in one
        round trip (two when a text cell reads ``NULL`` in a column that held none before, or a
        value holds a separator)."""
        self.state.begin_call()
        try:
            return self._run(self._all_reader())
        finally:
            self.state.end_call()

    def _all_reader(self) -> Reader[dict[str, dict[str, dict[str, Any]]]]:
        names = [name for name in self.state.mapped if self._wanted(name)]
        tables = yield from gather([self._table_reader(self.state.mapped[name]) for name in names])
        return dict(zip(names, tables, strict=True))
