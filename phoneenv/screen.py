"""Screenshots of the sandbox phone, drawn with Pillow.

A screen is a status bar (clock, foreground app, Wi-Fi/Bluetooth/DND marks), the app's title bar,
and the app's current list or detail view, one line per row. Returned as ``uint8`` (H, W, 3), or
as text (:func:`render_screen_text`: the same rows, cut the same way, for ``render_mode="ansi"``).
"""

from __future__ import annotations

import functools
import unicodedata
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image, ImageDraw, ImageFont

if TYPE_CHECKING:
    from phoneenv.phone import Phone

__all__ = ["one_line", "phone_screen", "render_phone", "render_phone_text", "render_screen", "render_screen_text"]

_BG = (250, 250, 252)
_BAR = (33, 37, 41)
_TITLE = (13, 110, 253)
_TEXT = (33, 37, 41)
_RULE = (222, 226, 230)


@functools.lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


def render_screen(status: str, title: str, lines: list[str], size: tuple[int, int] = (360, 640)) -> np.ndarray:
    """Draw one screen.

    Args:
        status: status-bar text (clock and marks), drawn white on dark.
        title: the app's title bar text.
        lines: rows of the view; rows that do not fit are dropped, long rows are cut with ``...``.
        size: (width, height) in pixels.

    Returns:
        ``uint8`` array of shape (height, width, 3).
    """
    w = size[0]
    img = Image.new("RGB", size, _BG)
    d = ImageDraw.Draw(img)
    small, big, body = _font(12), _font(18), _font(14)
    d.rectangle((0, 0, w, 24), fill=_BAR)
    d.text((8, 5), one_line(status), fill=(255, 255, 255), font=small)
    d.rectangle((0, 24, w, 64), fill=_TITLE)
    d.text((12, 34), one_line(title), fill=(255, 255, 255), font=big)
    y = 72
    for text in _visible_rows(lines, size):
        d.text((12, y + 4), text, fill=_TEXT, font=body)
        d.line((12, y + 26, w - 12, y + 26), fill=_RULE)
        y += 30
    return np.asarray(img, dtype=np.uint8)


def _row_chars(width: int) -> int:
    """The characters a row of a screen ``width`` pixels wide shows."""
    return max(8, (width - 24) // 8)


_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def one_line(text: str) -> str:
    """``text`` as one row of a screen: line breaks (``\\n``, U+2028, ...), tabs and other control
    characters (a terminal's escape sequences among them) become spaces, lone surrogates U+FFFD,
    and bidirectional overrides are dropped; a record's value, which a tool call may fill with
    any of them, then neither splits a row nor reaches a terminal as a command."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in _BIDI:
            continue
        out.append(" " if cat in ("Cc", "Zl", "Zp") else "\ufffd" if cat == "Cs" else ch)
    return "".join(out)


def _cut(line: str, n: int) -> str:
    line = one_line(line)
    return line if len(line) <= n else line[: n - 3] + "..."


def _visible_rows(lines: list[str], size: tuple[int, int]) -> list[str]:
    """The rows a screen of ``size`` shows: those that fit (30 px each below the bars), each cut
    to the row's width with ``...``."""
    fit = max(0, (size[1] - 72 + 2) // 30)  # a row needs 28 px of its 30
    n = _row_chars(size[0])
    return [_cut(line, n) for line in lines[:fit]]


def render_screen_text(status: str, title: str, lines: list[str], size: tuple[int, int] = (360, 640)) -> str:
    """One screen as text: what :func:`render_screen` draws, the same rows cut the same way.

    Args:
        status: the status-bar text.
        title: the app's title.
        lines: rows of the view (those that do not fit the screen are dropped, as in the image).
        size: (width, height) in pixels of the screen this text stands for.

    Returns:
        Lines joined by ``\\n`` in an ASCII frame ``+---+``, each as wide as a row of the screen
        (``(width - 24) // 8`` characters, at least 8) plus the frame.
    """
    n = _row_chars(size[0])
    rule = "+" + "-" * (n + 2) + "+"
    out = [rule, f"| {_cut(status, n):<{n}} |", f"| {_cut(title, n):<{n}} |", rule]
    out += [f"| {row:<{n}} |" for row in _visible_rows(lines, size)]
    out.append(rule)
    return "\n".join(out)


def render_phone(phone: Phone, size: tuple[int, int] = (360, 640)) -> np.ndarray:
    """Draw the foreground app of ``phone`` (the launcher's app grid when none is open)."""
    return render_screen(*phone_screen(phone), size)


def render_phone_text(phone: Phone, size: tuple[int, int] = (360, 640)) -> str:
    """The screen :func:`render_phone` draws, as text (:func:`render_screen_text`)."""
    return render_screen_text(*phone_screen(phone), size)


def phone_screen(phone: Phone) -> tuple[str, str, list[str]]:
    """What the screen of ``phone`` shows: (status-bar text, title, rows) of the foreground app,
    or of the launcher's app grid when none is open."""
    st = phone.state
    settings_app = phone.apps.get("settings")
    marks = []
    if settings_app is not None and hasattr(settings_app, "value"):
        marks = [
            name for key, name in (("wifi", "WiFi"), ("bluetooth", "BT"), ("dnd", "DND")) if settings_app.value(key)
        ]
    status = " ".join([phone.local_now().strftime("%a %d %b %H:%M"), *marks])
    fg = st.meta.get("foreground", "launcher")
    app = phone.apps.get(fg)
    if app is None:
        titles = [rec["title"] for rec in st.tables.get("system.apps", {}).values() if not phone.apps[rec["id"]].system]
        return status, "Home", titles
    view = st.meta.get("view")
    title, lines = app.screen(view if view is not None and view[0] == fg else None)
    return status, title, lines
