"""A virtual Android phone: the sandbox phone behind an Android-like shell, served over adb.

    >>> from phoneenv.farm.virtual import VirtualDevice
    >>> dev = VirtualDevice()
    >>> dev.shell("getprop ro.build.version.sdk", b"").stdout
    b'34\\n'
    >>> dev.shell("content insert --uri content://sms --bind address:s:+4915111111111 "
    ...           "--bind body:s:'hi there' --bind type:i:1 --bind date:l:0", b"").exit_code
    0
    >>> print(dev.shell("content query --uri content://sms --projection _id:address:body", b"").stdout.decode())
    Row: 0 _id=1, address=+4915111111111, body=hi there
    <BLANKLINE>
    >>> dev.phone.state.get("messages.messages", "m_1")["body"]
    'hi there'

:class:`VirtualDevice` implements the transport's ``DeviceHandler`` (``banner()``,
``shell(command, stdin)``, ``files``, ``on_reboot(target)``), so
``phoneenv.farm.adbwire.AdbDeviceServer(VirtualDevice())`` is a phone the real ``adb`` server
connects to. Its state is a sandbox :class:`~phoneenv.phone.Phone`; its content
providers, settings and permissions present that phone's tables through the apps' Android
mappings (:mod:`phoneenv.farm.android`), so what a host writes with ``content insert`` is what the
sandbox apps would see, and the screen (``screencap``) is the sandbox's rendering.

Command lines run through :class:`~phoneenv.farm.shell.Shell` (a real shell grammar, so a host
quoting bug runs an extra command, logged in :attr:`VirtualDevice.command_log`). Commands, with
the output format of Android 14's own tools:

- ``getprop [KEY]``, ``setprop KEY VALUE`` (``persist.sys.timezone`` sets the timezone; root);
- ``date [-u] [+FORMAT]``, ``date [-u] MMDDhhmm[[CC]YY][.ss]`` (toybox's set form; root); the clock
  stands still unless set;
- ``content query|insert|update|delete --uri URI [--user N] [--bind COL:TYPE:VALUE]...
  [--where W] [--projection A:B] [--sort S]``: ``--where``, ``--projection`` and ``--sort`` run
  in SQLite over the provider's rows, as Android's providers do;
- ``settings get|put|delete|list NAMESPACE [KEY [VALUE]]``;
- ``pm grant|revoke PKG PERM``, ``pm clear PKG``, ``pm list packages [FILTER]``, ``pm path PKG``,
  ``pm uninstall PKG``;
- ``am start [-W] [-a A] [-d D] [-c C] [-n PKG/CLS] [PKG]``, ``am broadcast -a A [--es K V]...``
  (``ADB_INPUT_B64``/``ADB_INPUT_TEXT`` type into the focused field through ADBKeyBoard),
  ``am force-stop PKG``;
- ``input text TEXT`` (Android's rules: ``%s`` is a space, one argument, printable ASCII only, a
  newline presses Enter), ``input keyevent KEY...``, ``input tap X Y``, ``input swipe ...``;
- ``svc wifi|bluetooth enable|disable``; ``cmd notification set_dnd|post``, ``cmd connectivity
  airplane-mode``, ``cmd uimode night``;
- ``screencap [-p] [FILE]``; ``dumpsys package PKG``, ``dumpsys activity [activities|top]``,
  ``dumpsys telephony.registry``; ``echo``, ``true``, ``false``, ``exit``;
- app data (:ref:`below <app-data>`): ``su -c CMDLINE`` / ``su 0|root CMD...`` (with ``su=True``),
  ``id [-u]``, ``tar -c|-x [-z] -f ARCHIVE [-C DIR] [MEMBER...]``, ``stat -c FORMAT PATH...``
  (``%u %g %U %G %a %s %n %C``), ``chown [-R] UID[:GID] PATH...``, ``restorecon [-R] [-F] PATH...``,
  ``rm [-r] [-f] PATH...``, ``mkdir [-p] PATH...``, ``cat PATH...``.

.. _app-data:

App data: every installed app has a private data directory ``/data/data/<package>`` owned by
its uid (``userId=`` in ``dumpsys package``, from 10100 up) with the SELinux label
``u:object_r:app_data_file:s0``. It holds the app's tables whose Android home is the app itself,
one JSON file each (``databases/<table>.json``, a list of records): tables with no Android
mapping (timers, notes, mail) and provider tables whose authority is the app's own package
(DeskClock's alarms); and its sign-in session, ``shared_prefs/account.xml`` (an Android
``SharedPreferences`` XML map with ``account`` and ``signed_in``). Reading those files (``cat``,
``tar -c``, ``stat``, a ``<`` redirection) shows the tables as they are now; writing them (``tar
-x``, ``rm``, ``>``) changes the tables: a missing or unparsable file is an empty table (an app
finding a corrupt database starts afresh) or a signed-out app. Files the app's uid does not own
(``chown`` not done after a root ``tar -x``) cannot be opened by the app: its own provider answers
``SQLiteCantOpenDatabaseException`` until ownership is fixed. ``/data/data`` is reachable as root
only (``root=True``, or through ``su``); the shell user gets ``Permission denied``.
``pm clear PKG`` empties the data directory (the directory stays, owned by the app), wipes those
tables, signs the app out and resets its runtime permissions (AOSP ``clearApplicationUserData`` →
``PermissionManager.resetRuntimePermissions``: user grants revoked; this sandbox has no
system-fixed or default grants to keep).

Anything else answers like Android's mksh: status 127 and ``/system/bin/sh: NAME: inaccessible or
not found``. The UI model: a foreground package, and the focused text field of a compose screen
opened by an app's :class:`~phoneenv.farm.android.TypedInsert` intent (Messages' ``SENDTO
smsto:``); Enter sends it, and the app writes the row itself.

Modules, one command family each (every public name is re-exported here):
:mod:`~phoneenv.farm.virtual.device` (:class:`VirtualDevice`, the facade and its command table),
:mod:`~phoneenv.farm.virtual.props` (``getprop``/``setprop``/``date``),
:mod:`~phoneenv.farm.virtual.provider` (``content``),
:mod:`~phoneenv.farm.virtual.settings` (``settings``/``svc``/``cmd``),
:mod:`~phoneenv.farm.virtual.packages` (``pm``/``dumpsys``),
:mod:`~phoneenv.farm.virtual.appdata` (app data and ``su``/``tar``/``stat``/... file tools),
:mod:`~phoneenv.farm.virtual.ui` (``am``/``input``/``screencap``),
:mod:`~phoneenv.farm.virtual.constants`.
"""

from phoneenv.farm.virtual.constants import (
    ACCOUNT_FILE,
    ADB_KEYBOARD,
    APP_DATA_LABEL,
    DATA_DIR,
    DATA_LIST_BASE,
    FIRST_APP_UID,
    KEYCODES,
    LAUNCHER,
    SHELL_UID,
)
from phoneenv.farm.virtual.device import VirtualDevice
from phoneenv.farm.virtual.ui import input_text_decode

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
    "VirtualDevice",
    "input_text_decode",
]
