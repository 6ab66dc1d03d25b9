"""The ``emulator`` and ``device`` backends: the sandbox apps' tools on an Android device over adb.

    >>> import gymnasium as gym, phoneenv
    >>> from phoneenv.backends.adb import AdbBackend
    >>> env = gym.make("PhonePlan-v0", tasks="app:contacts",
    ...                backend=AdbBackend(serial="emulator-5554"))  # doctest: +SKIP

Each tool of an app with an Android driver (:class:`~phoneenv.farm.android.AndroidDriver`,
declared beside the app) runs the *same* Python method as in the sandbox, against a
:class:`DevicePhone` whose state (:class:`DeviceState`) reads and writes the device: every table
read is a ``content query`` / ``settings get`` / ``dumpsys package`` / ``pm list packages`` over
adb (cached for the rest of that tool call, dropped on a write), every write a ``content
insert|update|delete`` / ``settings put`` (or the service's own command, ``svc wifi enable``) /
``pm grant|revoke``. A tool the drivers do not list is not offered (never faked). Inserts an app
makes through its UI (:class:`~phoneenv.farm.android.TypedInsert`: Messages' send) open the
compose screen with an intent, type the text with ``input text`` (escaped for ``input``'s own
rules, see :func:`input_text_commands`; text that is not printable ASCII goes through ADBKeyBoard's
``ADB_INPUT_B64`` broadcast) and press Enter; the app writes the row, which is then read back and
compared, so text that does not arrive intact is a ``device_error``.

Shell commands are built from argument lists, each argument ``shlex.quote``-d; several commands
go in one ``adb shell`` round trip, each followed by ``echo <nonce>:<i>:$?`` so that every
command's output and exit status can be told apart (the nonce is 64 random bits per round trip).
``content query`` prints values raw (``Row: 0 _id=3, body=...``, ``NULL`` for null), which a
hostile value can make ambiguous; :func:`parse_rows` accepts a listing only when every separator
occurs exactly once per row (counted against an ``_id``-only listing of the same rows), and
otherwise each text cell is read alone; ``NULL`` is told from the text ``"NULL"`` with an
``IS NULL`` query.

Reset applies the task's fixtures (the same fixture state the sandbox builds, restricted to the
mapped tables): timezone (``setprop persist.sys.timezone``) and clock (``date -u``; both need
``adb root``), settings, runtime permissions (``pm grant|revoke``), and provider rows (delete all,
insert the fixture's), then reads everything back and raises :class:`ResetError` naming the
differences unless the device equals the fixture state. With a console (``emulator-N`` serials
through ``adb emu``, or ``console_port``), a verified state is saved as a snapshot named after the
fixtures' digest, and later resets load it (``avd snapshot load``) and verify; a failed load or
verification falls back to re-seeding. Apps whose own data holds mapped tables
(:meth:`AdbBackend.private_apps`) are ``pm clear``-ed before seeding; on phones (no console),
their verified data directories are saved as per-app ``tar`` archives and restored at later
resets (``app_snapshots``), and logins are applied by restoring a login snapshot captured by
hand (:meth:`AdbBackend.capture_login`), both verified and both needing root (``adb root`` or
``su -c``). Fixture records of tables with no mapping (mail, notes,
timers, accounts) cannot be reached by any offered tool and are not applied; :meth:`AdbBackend.can_run`
refuses tasks whose plan or criteria need them.

The episode clock is the sandbox's: the fixture clock, one second more per tool call; tools
timestamp records with it, so device rows carry the same times as the sandbox's.

Faults (adbutils' ``AdbError``/``AdbTimeout``, a connection reset, a device offline, unauthorized
or gone, the adb server restarted or killed, a shell cut short) become ``device_error`` /
``timeout`` feedback (infrastructure errors, :mod:`phoneenv.harness.feedback`); :meth:`AdbBackend.call`
never raises. After a fault, the next call first re-runs ``adb connect`` for a ``host:port``
serial. Nothing is retried inside a call (a write may have half-happened).

Modules, one concern each (every public name is re-exported here):

- :mod:`~phoneenv.backends.adb.faults`: the exceptions and the package-name guard;
- :mod:`~phoneenv.backends.adb.shell`: the transport (:class:`DeviceShell`), command batching and
  the :data:`Reader` generators that share round trips (:func:`gather`);
- :mod:`~phoneenv.backends.adb.parsing`: what Android's tools print, and typing text (pure);
- :mod:`~phoneenv.backends.adb.state`: :class:`DeviceState` and :class:`DevicePhone`;
- :mod:`~phoneenv.backends.adb.tables`: reading and writing mapped tables (:class:`TableIO`);
- :mod:`~phoneenv.backends.adb.appdata`: private app data, app-data and login snapshots (:class:`AppData`);
- :mod:`~phoneenv.backends.adb.backend`: :class:`AdbBackend`, reset and verification, the facade.
"""

from phoneenv.backends.adb.appdata import DATA_DIR, AppData
from phoneenv.backends.adb.backend import CLOCK_TOLERANCE_S, ENV_TOOLS, AdbBackend
from phoneenv.backends.adb.faults import DeviceFault, ReadFault, ResetError, UnmappedTable, check_package
from phoneenv.backends.adb.parsing import input_text_commands, parse_ids, parse_rows, parse_runtime_permissions
from phoneenv.backends.adb.shell import MAX_SCRIPT_BYTES, DeviceShell, Reader, Unchecked, gather
from phoneenv.backends.adb.state import DevicePhone, DeviceState
from phoneenv.backends.adb.tables import TableIO

__all__ = [
    "CLOCK_TOLERANCE_S",
    "DATA_DIR",
    "ENV_TOOLS",
    "MAX_SCRIPT_BYTES",
    "AdbBackend",
    "AppData",
    "DeviceFault",
    "DevicePhone",
    "DeviceShell",
    "DeviceState",
    "ReadFault",
    "Reader",
    "ResetError",
    "TableIO",
    "Unchecked",
    "UnmappedTable",
    "check_package",
    "gather",
    "input_text_commands",
    "parse_ids",
    "parse_rows",
    "parse_runtime_permissions",
]
