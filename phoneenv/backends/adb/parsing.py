"""Reading what Android's tools print (``content query`` listings, ``dumpsys package``'s runtime
permissions) and typing text with ``input text`` / ADBKeyBoard: pure functions, no device.

``content query`` prints values raw (``Row: 0 _id=3, body=...``, ``NULL`` for null), which a
hostile value can make ambiguous; :func:`parse_rows` accepts a listing only when every separator
occurs exactly once per row (counted against an ``_id``-only listing of the same rows)."""

from __future__ import annotations

import base64
import itertools
import re
from collections.abc import Sequence

from phoneenv.backends.adb.faults import DeviceFault

__all__ = ["input_text_commands", "parse_ids", "parse_rows", "parse_runtime_permissions"]


INPUT_TEXT_CHUNK = 200
"""Characters per ``input text`` command (Android's ``input`` types them one key event each)."""


B64_TEXT_CHUNK = 300
"""Characters per ADBKeyBoard broadcast."""


_ROW = re.compile(r"Row: (\d+) _id=(-?\d+)")


def parse_ids(text: str) -> list[int]:
    """The ``_id`` of each row of a ``content query --projection _id`` listing (``Row: N _id=M``
    lines, ``No result found.`` for none). Raises :class:`DeviceFault` for anything else."""
    body = text.strip()
    if body in ("", "No result found."):
        return []
    ids = []
    for n, line in enumerate(body.split("\n")):
        m = _ROW.fullmatch(line.strip())
        if m is None or int(m.group(1)) != n:
            raise DeviceFault(f"unexpected content query output: {line[:200]!r}")
        ids.append(int(m.group(2)))
    return ids


def parse_rows(text: str, columns: Sequence[str], ids: Sequence[int]) -> list[dict[str, str]] | None:
    """The cells of a ``content query`` listing whose projection is ``columns`` (``_id`` first),
    whose rows have ``ids`` in order; None when the listing is ambiguous.

    Android prints ``Row: <n> <c1>=<v1>, <c2>=<v2>, ...`` with values raw (``Content.java``), so a
    value holding ``, <c>=`` or a newline followed by ``Row: `` could shift cells. The listing is
    accepted only when ``\\nRow: `` occurs ``len(ids) - 1`` times and each ``, <c>=`` exactly
    ``len(ids)`` times: then no value holds a separator, and the first-occurrence split is the
    only one (no separator overlaps itself or another, since each begins with ``, `` or ``\\n``).
    """
    if columns[0] != "_id":
        raise ValueError("the projection must start with _id")
    if text.endswith("\n"):
        text = text[:-1]
    if not ids:
        return [] if text.strip() == "No result found." else None
    n = len(ids)
    if not text.startswith("Row: 0 ") or text.count("\nRow: ") != n - 1:
        return None
    if any(text.count(f", {c}=") != n for c in columns[1:]):
        return None
    rows = []
    for i, chunk in enumerate(text[len("Row: ") :].split("\nRow: ")):
        head = f"{i} _id="
        if not chunk.startswith(head):
            return None
        rest = chunk[len(head) :]
        cells: dict[str, str] = {}
        for prev, nxt in itertools.pairwise(columns):
            k = rest.find(f", {nxt}=")
            if k < 0:
                return None
            cells[prev] = rest[:k]
            rest = rest[k + len(nxt) + 3 :]
        cells[columns[-1]] = rest
        if cells["_id"] != str(ids[i]):
            return None
        rows.append(cells)
    return rows


def parse_runtime_permissions(text: str) -> dict[str, bool]:
    """``permission → granted`` from the ``runtime permissions:`` section of ``dumpsys package``
    (lines ``android.permission.X: granted=true, flags=[...]``, indented under the header)."""
    out: dict[str, bool] = {}
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() != "runtime permissions:":
            continue
        indent = len(line) - len(line.lstrip())
        for sub in lines[i + 1 :]:
            if not sub.strip():
                continue
            if len(sub) - len(sub.lstrip()) <= indent:
                break
            m = re.match(r"\s*([\w.]+): granted=(true|false)", sub)
            if m:
                out[m.group(1)] = m.group(2) == "true"
        break
    return out


def _input_text_chunks(text: str) -> list[str]:
    """Arguments for ``input text`` that type ``text`` exactly (printable ASCII only).

    Android's ``Input.sendText`` turns ``%s`` into a space and types everything else as is, and
    has no escape for a literal ``%s``. So spaces are written ``%s``, and a ``%`` followed by ``s``
    ends one argument so that the ``s`` starts the next (each ``input`` call is decoded alone).
    """
    chunks: list[str] = []
    cur: list[str] = []
    count = 0
    prev = ""
    for ch in text:
        if (ch == "s" and prev == "%") or count >= INPUT_TEXT_CHUNK:
            chunks.append("".join(cur))
            cur, count = [], 0
        cur.append("%s" if ch == " " else ch)
        count += 1
        prev = ch
    if cur:
        chunks.append("".join(cur))
    return chunks


def input_text_commands(text: str) -> list[list[str]]:
    """Commands that type ``text`` into the focused field, exactly.

    Printable ASCII goes through ``input text`` (see :func:`_input_text_chunks` for its escaping);
    any other text (non-ASCII, newlines, tabs) through ADBKeyBoard
    (https://github.com/senzhk/ADBKeyBoard): ``am broadcast -a ADB_INPUT_B64 --es msg <base64 of
    UTF-8>``, which needs ADBKeyBoard installed and selected as the input method
    (``ime set com.android.adbkeyboard/.AdbIME``). Empty text types nothing.
    """
    if all(" " <= ch <= "~" for ch in text):
        return [["input", "text", chunk] for chunk in _input_text_chunks(text)]
    out = []
    for i in range(0, len(text), B64_TEXT_CHUNK):
        b64 = base64.b64encode(text[i : i + B64_TEXT_CHUNK].encode("utf-8")).decode("ascii")
        out.append(["am", "broadcast", "-a", "ADB_INPUT_B64", "--es", "msg", b64])
    return out
