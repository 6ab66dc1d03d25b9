"""Seeded records checked against their app's record schema when a task is built.

Each sandbox app declares ``records`` (table → the TypedDict of a stored record, see
:class:`phoneenv.app.App`). :func:`check_fixtures` validates every record a task's fixtures seed
into a sandbox app's table, so a template that seeds ``{"phone": None}`` fails when the suite is
built, with the task, table, record and field named, not when an agent trips over it.

    >>> from phoneenv.tasks import get_task
    >>> check_fixtures(get_task("contacts.favorite/0"))  # raises ValueError on a bad record
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import TypeAdapter, ValidationError

from phoneenv.contract import TaskSpec

__all__ = ["check_fixtures", "record_schemas"]


@functools.cache
def record_schemas() -> dict[str, tuple[TypeAdapter[Any], frozenset[str]]]:
    """``app.table`` → (a TypeAdapter of its record TypedDict, the allowed field names), for
    every table a sandbox app declares in ``records``; built once per process."""
    from apps import APP_CLASSES  # apps import phoneenv: load them only when asked

    out: dict[str, tuple[TypeAdapter[Any], frozenset[str]]] = {}
    for name, cls in APP_CLASSES.items():
        for table, kind in cls.records.items():
            fields = frozenset(kind.__required_keys__ | kind.__optional_keys__)
            out[f"{name}.{table}"] = (TypeAdapter(kind), fields)
    return out


def check_fixtures(task: TaskSpec) -> None:
    """Validate every record ``task.fixtures.records`` seeds into a sandbox app's table.

    Tables of apps without a sandbox module (simulated apps such as ``parcels``) are not
    checked; a table a sandbox app does not declare is an error.

    Raises:
        ValueError: naming the task id, the table, the record id and the field, e.g.
            ``task contacts.favorite/0: contacts.contacts record c_3: field 'phone': Input should
            be a valid string``.
    """
    schemas = record_schemas()
    apps = {key.split(".", 1)[0] for key in schemas}
    for table, records in task.fixtures.records.items():
        if table not in schemas:
            if table.split(".", 1)[0] in apps:
                raise ValueError(f"task {task.id}: no sandbox table {table!r} (declared: {sorted(schemas)})")
            continue
        adapter, fields = schemas[table]
        for i, rec in enumerate(records):
            rid = rec.get("id", f"#{i}") if isinstance(rec, dict) else f"#{i}"
            where = f"task {task.id}: {table} record {rid}"
            if not isinstance(rec, dict):
                raise ValueError(f"{where}: a record must be an object, not {type(rec).__name__}")
            extra = sorted(set(rec) - fields)
            if extra:
                raise ValueError(f"{where}: field {extra[0]!r}: not a field of {table} (fields: {sorted(fields)})")
            try:
                adapter.validate_python(rec)
            except ValidationError as err:
                first = err.errors()[0]
                field = ".".join(str(p) for p in first["loc"]) or "?"
                raise ValueError(f"{where}: field {field!r}: {first['msg']}") from None
