"""Seeded records checked against their app's record schema when a task is built.

Each sandbox app declares ``records`` (table → the TypedDict of a stored record, see
:class:`phoneenv.app.App`). :func:`check_fixtures` validates every record a task's fixtures seed
into a sandbox app's table, so a template that seeds ``{"phone": None}`` fails when the suite is
built, with the task, table, record and field named, not when an agent trips over it.

    >>> from phoneenv.tasks import get_task
    >>> check_fixtures(get_task("contacts.favorite/0"))  # raises ValueError on a bad record
"""

from __future__ import annotations

from phoneenv.contract import TaskSpec

__all__ = ["check_fixtures"]


def check_fixtures(task: TaskSpec) -> None:
    """Validate every record ``task.fixtures.records`` seeds into a sandbox app's table
    (:func:`phoneenv.phone.check_records` with every app).

    Tables of apps without a sandbox module (simulated apps such as ``parcels``) are not
    checked; a table a sandbox app does not declare is an error.

    Raises:
        ValueError: naming the task id, the table, the record id and the field, e.g.
            ``task contacts.favorite/0: contacts.contacts record c_3: field 'phone': Input should
            be a valid string``.
    """
    from phoneenv.phone import app_classes, check_records

    try:
        check_records(task.fixtures.records, app_classes())
    except ValueError as exc:
        raise ValueError(f"task {task.id}: {exc}") from None
