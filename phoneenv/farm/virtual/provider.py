"""The virtual device's content providers: ``content query|insert|update|delete`` over the sandbox
phone's tables through the apps' Android mappings (``--where``, ``--projection`` and ``--sort`` run
in SQLite over the provider's rows, as Android's providers do). :class:`ProviderCommands` is a part
of :class:`~phoneenv.farm.virtual.VirtualDevice`."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phoneenv.app import App
from phoneenv.farm import android as A
from phoneenv.farm.shell import Invocation
from phoneenv.farm.virtual.constants import (
    DATA_LIST_BASE,
    DEFAULT_SORT,
)
from phoneenv.phone import Phone

__all__ = ["ProviderCommands"]


class _ProviderError(Exception):
    """An error a provider raises: printed as ``Error while accessing provider`` plus the Java
    exception line, status 1."""

    def __init__(self, java_class: str, message: str) -> None:
        super().__init__(message)
        self.java_class = java_class
        self.message = message


@dataclass(frozen=True)
class _Route:
    """Where a content URI leads: an app's provider table, or one of its child row sets."""

    uri: str
    app: str
    table: str
    mapping: A.ProviderTable
    prefix: str
    child: A.ChildRows | None = None

    @property
    def full_table(self) -> str:
        return f"{self.app}.{self.table}"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _show(value: Any) -> str:
    """A cell as Android's ``content query`` prints it (``Cursor.getType`` per column)."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return "BLOB"
    if isinstance(value, float):
        return repr(value) if value != int(value) or abs(value) >= 1e7 else f"{value:.1f}"
    return str(value)


def _parse_bind(arg: str) -> tuple[str, A.Wire]:
    """``COLUMN:TYPE:VALUE`` as Android's ``Content.parseBindValue`` reads it (value = everything
    after the second colon)."""
    first = arg.find(":")
    second = arg.find(":", first + 1) if first >= 0 else -1
    if first < 0 or second < 0:
        raise ValueError(f"Binding not well formed: {arg}")
    column, kind, value = arg[:first], arg[first + 1 : second], arg[second + 1 :]
    if kind == "s":
        return column, value
    k = kind.lower()
    try:
        if k == "b":
            return column, int(value.lower() == "true")
        if k in ("i", "l"):
            return column, int(value)
        if k in ("f", "d"):
            return column, float(value)
    except ValueError:
        raise ValueError(f"Invalid {kind} value: {value}") from None
    if k == "n":
        return column, None
    raise ValueError(f"Unsupported type: {kind}")


class ProviderCommands:
    """``content`` and the providers' routes (module docstring)."""

    phone: Phone
    _classes: dict[str, type[App]]

    # -- content providers -----------------------------------------------------------------------
    def _build_routes(self) -> dict[str, _Route]:
        routes: dict[str, _Route] = {}
        for app, cls in self._classes.items():
            driver = cls.android
            if driver is None:
                continue
            for table, mapping in driver.tables.items():
                if not isinstance(mapping, A.ProviderTable):
                    continue
                prefix = cls.tables[table]
                routes[mapping.uri] = _Route(mapping.uri, app, table, mapping, prefix)
                for child in mapping.children:
                    routes[child.uri] = _Route(child.uri, app, table, mapping, prefix, child)
        return routes

    def _route(self, uri: str) -> tuple[_Route, int | None]:
        base = uri.split("?", 1)[0]
        route = self._routes.get(base)
        row_id = None
        if route is None:
            head, _, tail = base.rpartition("/")
            if tail.isdigit() and head in self._routes:
                route, row_id = self._routes[head], int(tail)
        if route is None:
            authority = uri.split("/")[2] if uri.startswith("content://") and uri.count("/") >= 2 else uri
            if any(r.split("/")[2] == authority for r in self._routes):
                raise _ProviderError("java.lang.IllegalArgumentException", f"Unknown URI {uri}")
            raise _ProviderError("java.lang.IllegalArgumentException", f"Could not find provider: {authority}")
        if route.mapping.root and not self.is_root:
            authority = route.uri.split("/")[2]
            raise _ProviderError(
                "java.lang.SecurityException",
                f"Permission Denial: opening provider {authority} from (pid=4242, uid=2000) that is not exported",
            )
        authority = route.uri.split("/")[2]
        owner = self._classes[route.app].package
        if authority == owner and self.phone.state.get("system.apps", route.app) is None:
            # an app's own provider disappears with the app (DeskClock's alarms)
            raise _ProviderError("java.lang.IllegalArgumentException", f"Could not find provider: {authority}")
        if authority == owner and owner in self._unreadable:
            raise _ProviderError(
                "android.database.sqlite.SQLiteCantOpenDatabaseException",
                "unknown error (code 14 SQLITE_CANTOPEN): Could not open database (its files are not owned by "
                f"uid {self.uids[owner]})",
            )
        return route, row_id

    def _rows(self, route: _Route) -> tuple[list[str], list[dict[str, A.Wire]]]:
        """The provider's columns and rows for ``route``, from the sandbox table."""
        tz = self.phone.tz
        records = list(self.phone.state.table(route.full_table).values())
        mapping = route.mapping
        child = route.child
        if child is None:
            rows = []
            for rec in records:
                row: dict[str, A.Wire] = {"_id": A.android_id(rec["id"], route.prefix)}
                row.update(A.encode_row(mapping, rec, tz))
                rows.append(row)
            for row in rows:
                for col, fn in mapping.computed.items():
                    row[col] = fn(row, rows)
            columns = ["_id", *(c.name for c in mapping.columns), *mapping.derived, *mapping.computed]
            return columns, rows
        rows = []
        for rec in records:
            n = A.android_id(rec["id"], route.prefix)
            children = dict((c.uri, r) for c, r in A.encode_children(mapping, rec, tz))
            if isinstance(child, A.DataRows):
                rows += self._data_rows(child, n, children[child.uri])
            else:
                for i, crow in enumerate(children[child.uri]):
                    rows.append({"_id": n * 1000 + i + 1, child.parent_column: n, **crow})
        return list(child.columns), rows

    @staticmethod
    def _data_rows(child: A.DataRows, n: int, encoded: Sequence[Mapping[str, A.Wire]]) -> list[dict[str, A.Wire]]:
        """Record ``n``'s data rows with their ``_id``: ``16n + k + 1`` for the row of simple kind
        ``k``; ``DATA_LIST_BASE + 1000n + i + 1`` for the ``i``-th row of the labelled kinds (a
        contact's numbers and addresses, in order)."""
        kinds = list(child.kinds.values())
        out, i = [], 0
        for crow in encoded:
            k = next((j for j, kd in enumerate(kinds) if kd.mimetype == crow[child.kind_column]), None)
            if k is not None:
                rid = n * 16 + k + 1
            else:
                i += 1
                rid = DATA_LIST_BASE + n * 1000 + i
            out.append({"_id": rid, child.parent_column: n, **crow})
        return out

    def _set_data(self, route: _Route, rec: Mapping[str, Any], rows: Sequence[Mapping[str, A.Wire]]) -> None:
        """Make record ``rec``'s data-row fields what ``rows`` (its data rows, in ``_id`` order) say;
        optional fields at their empty value are left out, as the sandbox stores them."""
        child = route.child
        assert isinstance(child, A.DataRows)
        new = {**rec, **child.decode(sorted(rows, key=lambda r: int(r["_id"] or 0)), A.Ctx(self.phone.tz))}
        for name in route.mapping.optional:
            if new.get(name) in (None, (), []):
                new.pop(name, None)
        self.phone.state.replace(route.full_table, rec["id"], new)

    def _current_data(self, route: _Route, rec: Mapping[str, Any]) -> list[dict[str, A.Wire]]:
        child = route.child
        assert isinstance(child, A.DataRows)
        n = A.android_id(rec["id"], route.prefix)
        encoded = dict((c.uri, r) for c, r in A.encode_children(route.mapping, rec, self.phone.tz))
        return self._data_rows(child, n, encoded[child.uri])

    def _select(
        self,
        columns: Sequence[str],
        rows: Sequence[Mapping[str, A.Wire]],
        projection: Sequence[str] | None,
        where: str | None,
        sort: str | None,
        authority: str,
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Run ``SELECT projection FROM rows WHERE (where) ORDER BY sort`` in SQLite, as Android's
        SQLiteQueryBuilder would; a SQL error becomes the provider's ``SQLiteException``."""
        db = self._db
        cols = ", ".join(_ident(c) for c in columns)
        db.execute("DROP TABLE IF EXISTS t")
        db.execute(f"CREATE TABLE t ({cols})")
        if rows:
            marks = ", ".join("?" for _ in columns)
            db.executemany(f"INSERT INTO t VALUES ({marks})", [tuple(r.get(c) for c in columns) for r in rows])
        sql = f"SELECT {', '.join(projection) if projection else '*'} FROM t"
        if where:
            sql += f" WHERE ({where})"
        sql += f" ORDER BY {sort}" if sort else ""
        try:
            cur = db.execute(sql)
        except (sqlite3.Error, sqlite3.Warning) as exc:
            raise _ProviderError(
                "android.database.sqlite.SQLiteException", f"{exc} (code 1 SQLITE_ERROR): , while compiling: {sql}"
            ) from None
        names = [d[0] for d in cur.description]
        return names, cur.fetchall()

    def _matching(self, route: _Route, where: str | None, row_id: int | None) -> list[dict[str, A.Wire]]:
        columns, rows = self._rows(route)
        if row_id is not None:
            where = f"_id={row_id}" + (f" AND ({where})" if where else "")
        _, ids = self._select(columns, rows, ["_id"], where, None, route.uri)
        wanted = {r[0] for r in ids}
        return [r for r in rows if r["_id"] in wanted]

    def _content(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        if not args or args[0] not in ("query", "insert", "update", "delete"):
            inv.error("usage: adb shell content [query|insert|update|delete] --uri <URI> ...")
            return 1
        sub, opts = args[0], args[1:]
        uri = where = sort = None
        projection: list[str] | None = None
        binds: dict[str, A.Wire] = {}
        i = 0
        try:
            while i < len(opts):
                opt = opts[i]
                val = opts[i + 1] if i + 1 < len(opts) else None
                if val is None and opt in ("--uri", "--where", "--sort", "--projection", "--bind", "--user", "--extra"):
                    raise ValueError(f'Argument expected after "{opt}"')
                if opt == "--uri":
                    uri = val
                elif opt == "--where":
                    where = val
                elif opt == "--sort":
                    sort = val
                elif opt == "--projection":
                    projection = [p for p in (val or "").split(":") if p]
                elif opt == "--bind":
                    col, value = _parse_bind(val or "")
                    binds[col] = value
                elif opt in ("--user", "--extra"):
                    pass
                else:
                    raise ValueError(f"Unsupported argument: {opt}")
                i += 2
        except ValueError as exc:
            inv.error(f"Error: {exc}")
            return 1
        if uri is None:
            inv.error("Error: Content provider URI not specified")
            return 1
        authority = uri.split("/")[2] if uri.startswith("content://") and uri.count("/") >= 2 else uri
        try:
            route, row_id = self._route(uri)
            if sub == "query":
                self._query(inv, route, row_id, projection, where, sort)
            elif sub == "insert":
                if not binds:
                    raise _ProviderError("java.lang.IllegalArgumentException", "Bindings not specified")
                self._insert(route, binds)
            elif sub == "update":
                self._update(route, binds, where, row_id)
            else:
                self._delete(route, where, row_id)
        except _ProviderError as exc:
            inv.error(f"Error while accessing provider:{authority}\n{exc.java_class}: {exc.message}")
            return 1
        except A.MappingError as exc:
            inv.error(f"Error while accessing provider:{authority}\njava.lang.IllegalArgumentException: {exc}")
            return 1
        return 0

    def _query(
        self,
        inv: Invocation,
        route: _Route,
        row_id: int | None,
        projection: list[str] | None,
        where: str | None,
        sort: str | None,
    ) -> None:
        columns, rows = self._rows(route)
        if row_id is not None:
            where = f"_id={row_id}" + (f" AND ({where})" if where else "")
        names, result = self._select(columns, rows, projection, where, sort or DEFAULT_SORT.get(route.uri), route.uri)
        if not result:
            inv.write("No result found.\n")
            return
        lines = []
        for n, values in enumerate(result):
            cells = ", ".join(f"{name}={_show(v)}" for name, v in zip(names, values, strict=True))
            lines.append(f"Row: {n} {cells}\n")
        inv.write("".join(lines))

    def _known_columns(self, route: _Route) -> set[str]:
        mapping = route.mapping
        if route.child is None:
            return {"_id", *(c.name for c in mapping.columns), *mapping.derived, *mapping.computed}
        return set(route.child.columns)

    def _check_columns(self, route: _Route, values: Mapping[str, A.Wire]) -> None:
        known = self._known_columns(route)
        for col in values:
            if col not in known:
                table = route.uri.rsplit("/", 1)[-1]
                raise _ProviderError(
                    "android.database.sqlite.SQLiteException",
                    f"table {table} has no column named {col} (code 1 SQLITE_ERROR)",
                )

    def _insert(self, route: _Route, values: dict[str, A.Wire]) -> int:
        """Insert a row; returns its ``_id``."""
        self._check_columns(route, values)
        state = self.phone.state
        tz = self.phone.tz
        mapping = route.mapping
        table = state.table(route.full_table)
        child = route.child
        if child is None:
            ids = [A.android_id(rid, route.prefix) for rid in table]
            n = values.get("_id")
            n = int(n) if n is not None else max(ids, default=0) + 1
            if n in ids:
                raise _ProviderError(
                    "android.database.sqlite.SQLiteConstraintException", "UNIQUE constraint failed: _id (code 1555)"
                )
            row = {c.name: values.get(c.name, c.default) for c in mapping.columns}
            row["_id"] = n
            rec = A.decode_record(mapping, route.prefix, row, {}, tz)
            state.insert(route.full_table, rec)
            return n
        parent = values.get(child.parent_column)
        rid = A.sandbox_id(parent, route.prefix) if parent is not None else None
        rec = table.get(rid) if rid is not None else None
        if rec is None:
            raise _ProviderError(
                "android.database.sqlite.SQLiteConstraintException",
                f"FOREIGN KEY constraint failed: {child.parent_column}",
            )
        ctx = A.Ctx(tz, row=values)
        if isinstance(child, A.DataRows):
            mimetype = str(values.get(child.kind_column))
            if mimetype not in child.mimetypes:
                raise _ProviderError(
                    "java.lang.IllegalArgumentException",
                    f"this virtual device stores no data rows of mimetype {values.get(child.kind_column)!r}",
                )
            rows = self._current_data(route, rec)
            n = A.android_id(rec["id"], route.prefix)
            kinds = [k.mimetype for k in child.kinds.values()]
            if mimetype in kinds:
                new_id = n * 16 + kinds.index(mimetype) + 1
                rows = [r for r in rows if r["_id"] != new_id]
            else:
                new_id = DATA_LIST_BASE + n * 1000 + sum(1 for r in rows if r["_id"] >= DATA_LIST_BASE) + 1
            row = {c: values.get(c) for c in child.columns if c not in ("_id", child.parent_column)}
            try:
                self._set_data(route, rec, [*rows, {**row, "_id": new_id, child.parent_column: n}])
            except A.MappingError as exc:
                raise _ProviderError("java.lang.IllegalArgumentException", str(exc)) from None
            return new_id
        item = child.item.codec.decode(values.get(child.item.name), ctx)
        items = (*tuple(rec.get(child.field) or ()), item)
        state.update(route.full_table, rec["id"], **{child.field: items})
        return A.android_id(rec["id"], route.prefix) * 1000 + len(items)

    def _update(self, route: _Route, values: dict[str, A.Wire], where: str | None, row_id: int | None) -> int:
        if not values:
            raise _ProviderError("java.lang.IllegalArgumentException", "Empty values")
        self._check_columns(route, values)
        state = self.phone.state
        tz = self.phone.tz
        mapping = route.mapping
        matched = self._matching(route, where, row_id)
        child = route.child
        for row in matched:
            merged = {**row, **values}
            if child is None:
                old_id = A.sandbox_id(row["_id"], route.prefix)
                old = state.get(route.full_table, old_id)
                assert old is not None
                kids = dict((c.uri, r) for c, r in A.encode_children(mapping, old, tz))
                rec = A.decode_record(mapping, route.prefix, merged, kids, tz)
                if rec["id"] != old_id:
                    if state.get(route.full_table, rec["id"]) is not None:
                        raise _ProviderError(
                            "android.database.sqlite.SQLiteConstraintException",
                            "UNIQUE constraint failed: _id (code 1555)",
                        )
                    state.delete(route.full_table, old_id)
                    state.insert(route.full_table, rec)
                else:
                    state.update(route.full_table, old_id, **{k: v for k, v in rec.items() if k != "id"})
                continue
            parent = A.sandbox_id(row[child.parent_column], route.prefix)
            rec = state.get(route.full_table, parent)
            assert rec is not None
            ctx = A.Ctx(tz, row=merged)
            if isinstance(child, A.DataRows):
                if str(merged[child.kind_column]) not in child.mimetypes:
                    raise _ProviderError("java.lang.IllegalArgumentException", "unsupported mimetype")
                rows = [merged if r["_id"] == row["_id"] else r for r in self._current_data(route, rec)]
                try:
                    self._set_data(route, rec, rows)
                except A.MappingError as exc:
                    raise _ProviderError("java.lang.IllegalArgumentException", str(exc)) from None
            else:
                index = int(row["_id"]) % 1000 - 1
                items = list(rec.get(child.field) or ())
                items[index] = child.item.codec.decode(merged.get(child.item.name), ctx)
                state.update(route.full_table, parent, **{child.field: tuple(items)})
        return len(matched)

    def _delete(self, route: _Route, where: str | None, row_id: int | None) -> int:
        state = self.phone.state
        matched = self._matching(route, where, row_id)
        child = route.child
        if child is None:
            for row in matched:
                state.delete(route.full_table, A.sandbox_id(row["_id"], route.prefix))
            return len(matched)
        drop: dict[str, set[int]] = {}
        for row in matched:
            parent = A.sandbox_id(row[child.parent_column], route.prefix)
            drop.setdefault(parent, set()).add(int(row["_id"]))
        for parent, ids in drop.items():
            rec = state.get(route.full_table, parent)
            assert rec is not None
            if isinstance(child, A.DataRows):
                self._set_data(route, rec, [r for r in self._current_data(route, rec) if int(r["_id"] or 0) not in ids])
            else:
                items = [
                    x
                    for k, x in enumerate(rec.get(child.field) or ())
                    if (A.android_id(parent, route.prefix) * 1000 + k + 1) not in ids
                ]
                state.update(route.full_table, parent, **{child.field: tuple(items)})
        return len(matched)
