"""The virtual device's UI: activities (``am start|broadcast|force-stop``; an app's
:class:`~phoneenv.farm.android.TypedInsert` intent opens its compose screen), typing (``input text``
with Android's rules, ADBKeyBoard's broadcasts), keys and taps (``input keyevent|tap|swipe``) and the
screen (``screencap``, the sandbox's rendering). :class:`UiCommands` is a part of
:class:`~phoneenv.farm.virtual.VirtualDevice`."""

from __future__ import annotations

import base64
import io
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from phoneenv.app import App
from phoneenv.farm import android as A
from phoneenv.farm.shell import Invocation
from phoneenv.farm.virtual.constants import (
    KEYCODES,
    LAUNCHER,
)
from phoneenv.phone import Phone

__all__ = ["UiCommands", "input_text_decode"]


@dataclass
class Compose:
    """A compose screen with its focused text field."""

    app: str
    table: str
    typed: A.TypedInsert
    fields: dict[str, str]
    text: str = ""


def input_text_decode(arg: str) -> str:
    """What ``input text ARG`` types: Android's ``Input.sendText`` turns ``%s`` into a space
    (a ``%`` followed by ``s``, the ``%`` dropped); every other character is typed as is.
    Source: AOSP ``frameworks/base/cmds/input/src/com/android/commands/input/Input.java``."""
    buff = list(arg)
    escape = False
    i = 0
    while i < len(buff):
        if escape:
            escape = False
            if buff[i] == "s":
                buff[i] = " "
                del buff[i - 1]
                i -= 1
        if buff[i] == "%":
            escape = True
        i += 1
    return "".join(buff)


def _parse_intent(args: list[str]) -> dict[str, Any] | None:
    """``am`` intent arguments: ``-a -d -c -n -t -f -p``, ``--es/--ez/--ei/--el/-e KEY VALUE``,
    ``-W``, and a trailing package, component or data URI; None when malformed."""
    out: dict[str, Any] = {"extras": {}}
    names = {
        "-a": "action",
        "-d": "data",
        "-c": "category",
        "-n": "component",
        "-t": "type",
        "-f": "flags",
        "-p": "package",
    }
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-W", "-S", "--wait"):
            out["wait"] = True
            i += 1
        elif a in names or a in ("--user", "--receiver-permission"):
            if i + 1 >= len(args):
                return None
            if a in names:
                out[names[a]] = args[i + 1]
            i += 2
        elif a in ("--es", "--ez", "--ei", "--el", "-e"):
            if i + 2 >= len(args):
                return None
            out["extras"][args[i + 1]] = args[i + 2]
            i += 3
        elif a.startswith("-"):
            return None
        else:
            if "/" in a and "://" not in a:
                out["component"] = a
            elif ":" in a:
                out["data"] = a
            else:
                out["package"] = a
            i += 1
    return out


def _describe_intent(intent: Mapping[str, Any]) -> str:
    parts = []
    if intent.get("action"):
        parts.append(f"act={intent['action']}")
    if intent.get("category"):
        parts.append(f"cat=[{intent['category']}]")
    if intent.get("data"):
        parts.append(f"dat={intent['data']}")
    if intent.get("package"):
        parts.append(f"pkg={intent['package']}")
    if intent.get("component"):
        parts.append(f"cmp={intent['component']}")
    if intent.get("extras"):
        parts.append("(has extras)")
    return " ".join(parts)


def _match_compose(compose: A.Intent, action: str | None, data: str | None, pkg: str | None) -> dict[str, str] | None:
    """The record fields named in ``compose.data`` (``smsto:{number}``) when an ``am start``
    matches the compose intent, else None."""
    if action != compose.action or data is None or compose.data is None:
        return None
    if pkg is not None and compose.package is not None and pkg != compose.package:
        return None
    pattern = ""
    names = []
    for literal, name, _, _ in _formatter.parse(compose.data):
        pattern += re.escape(literal)
        if name:
            names.append(name)
            pattern += f"(?P<{name}>.+)"
    m = re.fullmatch(pattern, data)
    return None if m is None else {n: m.group(n) for n in names}


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class UiCommands:
    """``am``, ``input`` and ``screencap`` (module docstring)."""

    phone: Phone
    _classes: dict[str, type[App]]

    # -- UI: activities, typing, keys, screen ----------------------------------------------------
    def _am(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        verb = args[0] if args else ""
        if verb == "force-stop" and len(args) == 2:
            if self.foreground == args[1]:
                self.foreground, self.compose = LAUNCHER, None
                self._sync_meta()
            return 0
        if verb not in ("start", "broadcast"):
            inv.error(f"am: unsupported: {' '.join(args)}")
            return 1
        intent = _parse_intent(args[1:])
        if intent is None:
            inv.error("Error: bad intent arguments")
            return 1
        if verb == "broadcast":
            return self._broadcast(inv, intent)
        return self._start(inv, intent)

    def _start(self, inv: Invocation, intent: dict[str, Any]) -> int:
        shown = _describe_intent(intent)
        inv.write(f"Starting: Intent {{ {shown} }}\n")
        pkg = intent.get("package") or (intent.get("component") or "").split("/")[0] or None
        action, data = intent.get("action"), intent.get("data")
        target = None
        if action == "android.intent.action.MAIN" or intent.get("component"):
            if pkg is not None and self._app_of_package(pkg) is not None:
                target = pkg
                self.compose = None
        else:
            for app, cls in self._classes.items():
                driver = cls.android
                if driver is None or self.phone.state.get("system.apps", app) is None:
                    continue
                for table, typed in driver.typed.items():
                    fields = _match_compose(typed.compose, action, data, pkg)
                    if fields is not None:
                        target = cls.package
                        self.compose = Compose(app, table, typed, fields)
        if target is None:
            inv.error(f"Error: Activity not started, unable to resolve Intent {{ {shown} }}")
            return 1
        self.foreground = target
        self._sync_meta()
        if intent.get("wait"):
            inv.write(
                f"Status: ok\nLaunchState: COLD\nActivity: {self._activity()}\nTotalTime: 0\nWaitTime: 0\nComplete\n"
            )
        return 0

    def _broadcast(self, inv: Invocation, intent: dict[str, Any]) -> int:
        inv.write(f"Broadcasting: Intent {{ {_describe_intent(intent)} flg=0x400000 }}\n")
        action = intent.get("action")
        extras = intent.get("extras", {})
        if self.adb_keyboard and action in ("ADB_INPUT_B64", "ADB_INPUT_TEXT") and "msg" in extras:
            text = extras["msg"]
            if action == "ADB_INPUT_B64":
                try:
                    text = base64.b64decode(text, validate=True).decode("utf-8")
                except (ValueError, UnicodeDecodeError):
                    text = ""
            self._type(text)
        inv.write("Broadcast completed: result=0\n")
        return 0

    def _type(self, text: str) -> None:
        if self.compose is not None:
            self.compose.text += text

    def _input(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        if args and args[0] in ("keyboard", "touchscreen", "dpad", "touchpad"):
            args = args[1:]
        verb = args[0] if args else ""
        if verb == "text":
            if len(args) < 2:
                inv.error('Error: Argument expected after "text"')
                return 1
            text = input_text_decode(args[1])
            bad = [ch for ch in text if not (" " <= ch <= "~" or ch in "\n\t")]
            if bad:
                inv.error(
                    "Exception occurred while executing 'text':\njava.lang.NullPointerException: "
                    "Attempt to get length of null array"
                )
                return 255
            for ch in text:
                if ch == "\n":
                    self._key(KEYCODES["KEYCODE_ENTER"])
                elif ch != "\t":
                    self._type(ch)
            return 0
        if verb == "keyevent":
            keys = [a for a in args[1:] if a not in ("--longpress", "--doubletap")]
            if not keys:
                inv.error('Error: Argument expected after "keyevent"')
                return 1
            for key in keys:
                code = (
                    int(key) if key.isdigit() else KEYCODES.get(key if key.startswith("KEYCODE_") else f"KEYCODE_{key}")
                )
                if code is None:
                    inv.error(f"Error: Unknown keycode: {key}")
                    return 1
                self._key(code)
            return 0
        if verb in ("tap", "swipe", "draganddrop", "roll", "press", "motionevent"):
            nums = args[1:]
            if verb == "tap" and (len(nums) != 2 or not all(_is_number(n) for n in nums)):
                inv.error("Error: tap needs X Y")
                return 1
            if verb == "swipe" and (len(nums) not in (4, 5) or not all(_is_number(n) for n in nums)):
                inv.error("Error: swipe needs X1 Y1 X2 Y2 [DURATION(ms)]")
                return 1
            return 0
        inv.error(f"Error: Unknown command: {verb}")
        return 1

    def _key(self, code: int) -> None:
        if code in (KEYCODES["KEYCODE_HOME"], KEYCODES["KEYCODE_BACK"]):
            self.compose = None
            self.foreground = LAUNCHER
            self._sync_meta()
        elif code == KEYCODES["KEYCODE_DEL"]:
            if self.compose is not None:
                self.compose.text = self.compose.text[:-1]
        elif code == KEYCODES["KEYCODE_ENTER"] and self.compose is not None and self.compose.text:
            self._submit(self.compose)
            self.compose.text = ""

    def _submit(self, compose: Compose) -> None:
        """The app writes what was typed as a new row (Messages: a sent SMS, read, dated now)."""
        if (compose.app, compose.table) == ("messages", "messages"):
            route = self._routes[self._classes["messages"].android.tables["messages"].uri]  # type: ignore[union-attr]
            self._insert(
                route,
                {
                    "address": compose.fields.get("number", ""),
                    "body": compose.text,
                    "type": 2,
                    "date": round(self.now * 1000),
                    "read": 1,
                },
            )

    def _screencap(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        png = "-p" in args
        path = next((a for a in args if not a.startswith("-")), None)
        image = self.screen()
        if png or (path is not None and path.endswith(".png")):
            buf = io.BytesIO()
            from PIL import Image

            Image.fromarray(image).save(buf, format="PNG")
            data = buf.getvalue()
        else:
            h, w, _ = image.shape
            rgba = np.concatenate([image, np.full((h, w, 1), 255, dtype=np.uint8)], axis=2)
            data = np.array([w, h, 1], dtype="<u4").tobytes() + rgba.tobytes()
        if path is not None:
            try:
                self.files.write(path, data, 0o660, int(self.now))
            except (OSError, ValueError) as exc:
                inv.error(f"Error opening file: {path} ({exc})")
                return 1
            return 0
        inv.write(data)
        return 0

    def screen(self) -> np.ndarray:
        """The screen now, ``uint8`` (H, W, 3): the sandbox's rendering of the foreground app, or
        the compose screen with the text being typed."""
        from phoneenv.screen import render_phone, render_screen

        size = self.phone.screen_size
        if self.compose is not None:
            cls = self._classes[self.compose.app]
            status = self.phone.local_now().strftime("%a %d %b %H:%M")
            to = " ".join(self.compose.fields.values())
            return render_screen(status, f"{cls.title}: {to}", [f"> {self.compose.text}_"], size)
        return render_phone(self.phone, size)


_formatter = string.Formatter()
