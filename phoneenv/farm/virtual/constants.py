"""The virtual device's constants: packages, key codes, uids and paths, settings defaults."""

from __future__ import annotations

__all__ = [
    "ACCOUNT_FILE",
    "ADB_KEYBOARD",
    "APP_DATA_LABEL",
    "DATA_DIR",
    "DATA_LIST_BASE",
    "FIRST_APP_UID",
    "KEYCODES",
    "LAUNCHER",
    "SHELL_UID",
]


LAUNCHER = "com.android.launcher3"
"""The home screen's package."""


ADB_KEYBOARD = "com.android.adbkeyboard"
"""ADBKeyBoard's package (an input method that types text sent by broadcast)."""


KEYCODES: dict[str, int] = {
    "KEYCODE_HOME": 3,
    "KEYCODE_BACK": 4,
    "KEYCODE_CALL": 5,
    "KEYCODE_ENDCALL": 6,
    "KEYCODE_DPAD_UP": 19,
    "KEYCODE_DPAD_DOWN": 20,
    "KEYCODE_DPAD_LEFT": 21,
    "KEYCODE_DPAD_RIGHT": 22,
    "KEYCODE_DPAD_CENTER": 23,
    "KEYCODE_POWER": 26,
    "KEYCODE_TAB": 61,
    "KEYCODE_SPACE": 62,
    "KEYCODE_ENTER": 66,
    "KEYCODE_DEL": 67,
    "KEYCODE_MENU": 82,
    "KEYCODE_ESCAPE": 111,
    "KEYCODE_MOVE_END": 123,
    "KEYCODE_APP_SWITCH": 187,
    "KEYCODE_SLEEP": 223,
    "KEYCODE_WAKEUP": 224,
}
"""Key names ``input keyevent`` accepts here, with Android's ``KeyEvent`` codes."""


SYSTEM_PACKAGES = (
    "android",
    "com.android.shell",
    "com.android.providers.contacts",
    "com.android.providers.telephony",
    "com.android.providers.calendar",
    "com.android.providers.blockednumber",
    "com.android.providers.settings",
    LAUNCHER,
)


DEFAULT_SORT = {"content://sms": "date DESC", "content://call_log/calls": "date DESC"}
"""Providers whose default order is not ``_id`` (Telephony.Sms and CallLog.Calls sort newest first)."""


DATA_DIR = "/data/data"
"""Where apps' private data directories live (``/data/user/0`` links here on Android)."""


SHELL_UID = 2000
"""The uid of ``adb shell`` without root (``shell``)."""


FIRST_APP_UID = 10100
"""The uid of the first app (Android's app uids start at 10000, ``Process.FIRST_APPLICATION_UID``)."""


APP_DATA_LABEL = "u:object_r:app_data_file:s0"
"""The SELinux label ``restorecon`` gives files under an app's data directory."""


ACCOUNT_FILE = "shared_prefs/account.xml"
"""Where an app keeps its sign-in session, relative to its data directory."""


SETTINGS_DEFAULTS: dict[str, dict[str, str]] = {
    "global": {"auto_time": "1", "auto_time_zone": "1", "adb_enabled": "1", "device_provisioned": "1"},
    "secure": {"default_input_method": "com.android.inputmethod.latin/.LatinIME", "user_setup_complete": "1"},
    "system": {"screen_brightness_mode": "0", "screen_off_timeout": "60000"},
}


DATA_LIST_BASE = 1_000_000_000
"""Where the ``_id`` of the data rows of labelled kinds (a contact's numbers) start."""
