"""One SQLite connection per call, for the loop's files (the run store, the review queue).

Each call opens its own connection in autocommit mode, turns the write-ahead log on (so readers
never block a writer and several processes can share the file), waits up to
:data:`BUSY_TIMEOUT_S` for another process's write, and runs the body in one transaction
(``BEGIN IMMEDIATE`` for writes, so two writers never deadlock on a lock upgrade).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

BUSY_TIMEOUT_S = 30.0
"""How long (seconds) a call waits for another process's write to finish before it fails."""


@contextlib.contextmanager
def transaction(
    path: Path, schema: str, *, write: bool = False, ready: list[bool] | None = None
) -> Iterator[sqlite3.Connection]:
    """A connection to ``path`` inside one transaction, committed when the body returns and
    rolled back when it raises. The folder and the tables (``schema``, idempotent DDL) are made
    on the first call; ``ready`` (a one-item list the caller keeps) remembers that they are.

    Raises:
        sqlite3.DatabaseError: ``path`` is not a SQLite file, or stayed locked past the timeout.
    """
    first = ready is None or not ready[0]
    if first:
        path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        con.row_factory = sqlite3.Row
        if first:
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(schema)
            if ready is not None:
                ready[0] = True
        con.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
    finally:
        con.close()
