"""SQLite transactions for the loop's files (the run store, the review queue).

Each thread of each process keeps one connection per file, in autocommit mode, with the
write-ahead log on (readers never block a writer; several processes share the file) and a busy
timeout of :data:`BUSY_TIMEOUT_S` for another process's write. Every call runs in one transaction
(``BEGIN IMMEDIATE`` for writes, so two writers never deadlock on a lock upgrade).

The connection is kept because closing the last one on a WAL file checkpoints it (about 7 ms, a
store of every episode of an eval paid it per episode). A kept connection is dropped and a new one
opened when the file was replaced or deleted (another inode), after a fork, or when it failed.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

BUSY_TIMEOUT_S = 30.0
"""How long (seconds) a call waits for another process's write to finish before it fails."""

_local = threading.local()


def _open(path: Path, schema: str) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=True)
    try:
        con.row_factory = sqlite3.Row
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")  # with the WAL: durable at checkpoints, never corrupt
        con.executescript(schema)
    except BaseException:
        con.close()
        raise
    return con


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


@contextlib.contextmanager
def transaction(path: Path, schema: str, *, write: bool = False) -> Iterator[sqlite3.Connection]:
    """A connection to ``path`` inside one transaction, committed when the body returns and
    rolled back when it raises. The folder, the file and the tables (``schema``, idempotent DDL)
    are made when a connection is opened.

    Raises:
        sqlite3.DatabaseError: ``path`` is not a SQLite file, or stayed locked past the timeout.
    """
    cache: dict[str, tuple[sqlite3.Connection, int | None, int]] = getattr(_local, "cons", None) or {}
    _local.cons = cache
    key = os.path.abspath(path)
    entry = cache.get(key)
    ino = _inode(path)
    if entry is not None and (entry[2] != os.getpid() or entry[1] is None or entry[1] != ino):
        if entry[2] == os.getpid():
            entry[0].close()
        del cache[key]
        entry = None
    if entry is None:
        con = _open(path, schema)
        cache[key] = (con, _inode(path), os.getpid())
    else:
        con = entry[0]
    try:
        con.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
    except sqlite3.Error:
        cache.pop(key, None)
        con.close()
        raise
