"""Screenshots of the sandbox phone, drawn with Pillow.

A screen is a status bar (clock, foreground app, Wi-Fi/Bluetooth/DND marks), the app's title bar,
and the app's current list or detail view, one line per row. Returned as ``uint8`` (H, W, 3).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image, ImageDraw, ImageFont

if TYPE_CHECKING:
    from phoneenv.phone import Phone

__all__ = ["render_phone", "render_screen"]

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
    w, h = size
    img = Image.new("RGB", size, _BG)
    d = ImageDraw.Draw(img)
    small, big, body = _font(12), _font(18), _font(14)
    d.rectangle((0, 0, w, 24), fill=_BAR)
    d.text((8, 5), status, fill=(255, 255, 255), font=small)
    d.rectangle((0, 24, w, 64), fill=_TITLE)
    d.text((12, 34), title, fill=(255, 255, 255), font=big)
    y = 72
    max_chars = max(8, (w - 24) // 8)
    for line in lines:
        if y + 28 > h:
            break
        text = line if len(line) <= max_chars else line[: max_chars - 3] + "..."
        d.text((12, y + 4), text, fill=_TEXT, font=body)
        d.line((12, y + 26, w - 12, y + 26), fill=_RULE)
        y += 30
    return np.asarray(img, dtype=np.uint8)


def render_phone(phone: Phone, size: tuple[int, int] = (360, 640)) -> np.ndarray:
    """Draw the foreground app of ``phone`` (the launcher's app grid when none is open)."""
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
        return render_screen(status, "Home", titles, size)
    view = st.meta.get("view")
    title, lines = app.screen(view if view is not None and view[0] == fg else None)
    return render_screen(status, title, lines, size)
