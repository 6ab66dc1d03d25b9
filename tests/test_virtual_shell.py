"""The virtual device's shell: sh semantics over bashlex, and Android's tools as the drivers use them."""

from __future__ import annotations

import base64
import io
import shlex

import numpy as np
import pytest
from PIL import Image

from phoneenv.contract import Fixtures

pytest.importorskip("bashlex", reason="the virtual device's shell needs bashlex (pip install -e '.[device]')")

from phoneenv.farm.shell import Shell
from phoneenv.farm.virtual import VirtualDevice, input_text_decode


def run(dev: VirtualDevice, *args: str) -> tuple[str, str, int]:
    """One command built from an argument list, as the host sends it."""
    r = dev.shell(shlex.join(args), b"")
    return r.stdout.decode(), r.stderr.decode(), r.exit_code


@pytest.fixture
def dev() -> VirtualDevice:
    d = VirtualDevice(timezone="Europe/Berlin", clock="2026-11-29T09:00:00")
    d.load(Fixtures(clock="2026-11-29T09:00:00", timezone="Europe/Berlin", records={}))
    return d


# -- sh semantics ------------------------------------------------------------------------------


def test_lists_pipes_and_statuses():
    sh = Shell({})
    r = sh.run("false && echo no || echo yes; echo a | false; echo $?")
    assert (r.stdout, r.exit_code) == (b"yes\n1\n", 0)
    assert sh.run("true; exit 3; echo never").exit_code == 3
    assert sh.run("{ echo a; echo b; } >/dev/null; echo $?").stdout == b"0\n"
    assert sh.run("echo oops 1>&2").stderr == b"oops\n"


def test_quoting_and_expansion():
    sh = Shell({})
    assert sh.run("""echo 'a  b' "c  $(echo d)" e\\ f""").stdout == b"a  b c  d e f\n"
    assert sh.run("echo $(echo '  x   y  ')").stdout == b"x y\n"  # unquoted: split on blanks
    assert sh.run("echo \"$(echo '  x   y  ')\"").stdout == b"  x   y  \n"  # quoted: kept
    assert sh.run("X=1; echo ${X}$X$EMPTY").stdout == b"11\n"
    assert sh.run('echo "\\$x \\\\ \\""').stdout == b'$x \\ "\n'


def test_substitutions_run_and_are_logged_before_their_command():
    sh = Shell({})
    sh.run("echo x$(echo inner)y `echo tick`")
    assert sh.log == [["echo", "inner"], ["echo", "tick"], ["echo", "xinnery", "tick"]]


def test_unknown_commands_and_syntax_errors_answer_like_mksh():
    sh = Shell({})
    r = sh.run("reboot now")
    assert r.exit_code == 127
    assert r.stderr == b"/system/bin/sh: reboot: inaccessible or not found\n"
    r = sh.run("if true; then echo x; fi")
    assert r.exit_code == 1 and r.stderr.startswith(b"/system/bin/sh: syntax error")
    assert sh.run("echo 'unterminated").exit_code == 1


@pytest.mark.parametrize(
    "hostile",
    [
        "a; reboot",
        "$(reboot)",
        "`reboot`",
        "x && reboot",
        "x | reboot",
        "it's",
        'q"q',
        "back\\slash",
        "nl\nreboot",
        "-n",
    ],
)
def test_quoted_arguments_never_run_anything(hostile):
    sh = Shell({})
    r = sh.run(shlex.join(["echo", hostile]))
    assert sh.log == [["echo", hostile]]
    assert r.exit_code == 0


def test_unquoted_injection_really_runs(dev):
    """The point of a real parser: a host that forgets to quote runs the extra command."""
    r = dev.shell("input text hello; reboot", b"")
    assert ["reboot"] in dev.command_log
    assert r.exit_code == 127


# -- content providers -------------------------------------------------------------------------


def test_content_insert_query_update_delete_sms(dev):
    out, err, code = run(
        dev, "content", "insert", "--uri", "content://sms", "--bind", "address:s:+4915111111111",
        "--bind", "body:s:hi, body=x", "--bind", "type:i:1", "--bind", "date:l:1795939200000",
    )  # fmt: skip
    assert (out, err, code) == ("", "", 0)
    rec = dev.phone.state.get("messages.messages", "m_1")
    # date 1795939200000 ms is 2026-11-29T08:00:00Z, 09:00 in Berlin; read defaults to 0.
    assert rec == {
        "id": "m_1",
        "number": "+4915111111111",
        "direction": "in",
        "body": "hi, body=x",
        "time": "2026-11-29T09:00:00",
        "read": False,
    }
    out, _, _ = run(dev, "content", "query", "--uri", "content://sms", "--projection", "_id:type:read:body")
    assert out == "Row: 0 _id=1, type=1, read=0, body=hi, body=x\n"
    assert run(dev, "content", "update", "--uri", "content://sms", "--bind", "read:i:1", "--where", "_id=1")[2] == 0
    assert dev.phone.state.get("messages.messages", "m_1")["read"] is True
    assert run(dev, "content", "delete", "--uri", "content://sms", "--where", "address LIKE '+49%'")[2] == 0
    assert run(dev, "content", "query", "--uri", "content://sms")[0] == "No result found.\n"


def test_content_where_runs_in_sqlite_and_errors_like_android(dev):
    for n in (1, 2, 3):
        run(dev, "content", "insert", "--uri", "content://call_log/calls", "--bind", f"number:s:+49{n}",
            "--bind", f"type:i:{n}", "--bind", f"date:l:{n}000", "--bind", f"duration:l:{n * 10}")  # fmt: skip
    out, _, _ = run(
        dev, "content", "query", "--uri", "content://call_log/calls", "--projection", "_id:duration",
        "--where", "type IN (1,3) AND duration > 5", "--sort", "duration DESC",
    )  # fmt: skip
    assert out == "Row: 0 _id=3, duration=30\nRow: 1 _id=1, duration=10\n"
    out, err, code = run(
        dev, "content", "query", "--uri", "content://call_log/calls", "--where", "1); DROP TABLE t; --"
    )
    assert code == 1 and "SQLiteException" in err and err.startswith("Error while accessing provider:call_log")
    _, err, code = run(dev, "content", "query", "--uri", "content://nope/x")
    assert code == 1 and "Could not find provider: nope" in err
    _, err, code = run(dev, "content", "insert", "--uri", "content://sms", "--bind", "starred:i:1")
    assert code == 1 and "has no column named starred" in err


def test_contacts_are_raw_contacts_and_data_rows(dev):
    uri = "content://com.android.contacts/raw_contacts?caller_is_syncadapter=true"
    run(dev, "content", "insert", "--uri", uri, "--bind", "_id:i:4", "--bind", "starred:i:1")
    data = "content://com.android.contacts/data"
    for mime, value in (("name", "Ana Lima"), ("phone_v2", "+4915111111111"), ("contact_event", "--04-12")):
        assert run(dev, "content", "insert", "--uri", data, "--bind", "raw_contact_id:i:4",
                   "--bind", f"mimetype:s:vnd.android.cursor.item/{mime}", "--bind", f"data1:s:{value}")[2] == 0  # fmt: skip
    rec = dev.phone.state.get("contacts.contacts", "c_4")
    assert rec == {
        "id": "c_4",
        "name": "Ana Lima",
        "phone": "+4915111111111",
        "email": None,
        "relation": None,
        "favorite": True,
        "birthday": "04-12",
    }
    where = "raw_contact_id=4 AND mimetype='vnd.android.cursor.item/phone_v2'"
    assert run(dev, "content", "delete", "--uri", data, "--where", where)[2] == 0
    assert dev.phone.state.get("contacts.contacts", "c_4")["phone"] is None
    out, _, _ = run(dev, "content", "query", "--uri", data, "--projection", "raw_contact_id:mimetype:data1")
    assert out.splitlines() == [
        "Row: 0 raw_contact_id=4, mimetype=vnd.android.cursor.item/name, data1=Ana Lima",
        "Row: 1 raw_contact_id=4, mimetype=vnd.android.cursor.item/contact_event, data1=--04-12",
    ]
    assert run(dev, "content", "delete", "--uri", uri, "--where", "_id=4")[2] == 0
    assert dev.phone.state.table("contacts.contacts") == {}


def test_non_exported_provider_needs_root():
    dev = VirtualDevice(root=False)
    _, err, code = run(dev, "content", "query", "--uri", "content://com.google.android.deskclock/alarms")
    assert code == 1 and "SecurityException: Permission Denial" in err
    rooted = VirtualDevice()
    assert run(rooted, "content", "query", "--uri", "content://com.google.android.deskclock/alarms")[2] == 0


# -- settings, packages, permissions, clock ------------------------------------------------------


def test_settings_and_services(dev):
    assert run(dev, "settings", "get", "global", "wifi_on") == ("null\n", "", 0)
    run(dev, "settings", "put", "global", "wifi_on", "0")
    assert dev.phone.state.get("settings.settings", "wifi") == {"id": "wifi", "value": False}
    run(dev, "svc", "wifi", "enable")
    assert run(dev, "settings", "get", "global", "wifi_on")[0] == "1\n"
    run(dev, "cmd", "notification", "set_dnd", "priority")
    assert run(dev, "settings", "get", "global", "zen_mode")[0] == "1\n"
    run(dev, "settings", "put", "system", "screen_brightness", "153")
    assert dev.phone.state.get("settings.settings", "brightness")["value"] == 60  # 153/255 = 60 %
    assert run(dev, "settings", "delete", "global", "wifi_on")[0] == "Deleted 1 rows\n"
    assert dev.phone.state.get("settings.settings", "wifi") is None
    assert run(dev, "settings", "put", "global", "wifi_on", "7")[2] == 1  # not a Wi-Fi state
    assert run(dev, "settings", "get", "global", "auto_time")[0] == "1\n"  # an unmapped Android key


def test_pm_and_dumpsys_runtime_permissions(dev):
    assert run(dev, "pm", "revoke", "com.android.contacts", "android.permission.READ_CONTACTS")[2] == 0
    out, _, _ = run(dev, "dumpsys", "package", "com.android.contacts")
    section = out[out.index("runtime permissions:") :].splitlines()
    assert section[1].strip().startswith("android.permission.READ_CONTACTS: granted=false")
    assert section[2].strip().startswith("android.permission.WRITE_CONTACTS: granted=true")
    _, err, code = run(dev, "pm", "grant", "com.android.contacts", "android.permission.CAMERA")
    assert code == 255 and "has not requested permission android.permission.CAMERA" in err
    _, err, code = run(dev, "pm", "grant", "com.example.none", "android.permission.CAMERA")
    assert code == 255 and "Unknown package" in err
    pkgs = run(dev, "pm", "list", "packages")[0].splitlines()
    assert "package:com.google.android.apps.messaging" in pkgs and "package:android" in pkgs
    assert run(dev, "pm", "uninstall", "com.google.android.keep")[0] == "Success\n"
    assert "package:com.google.android.keep" not in run(dev, "pm", "list", "packages")[0].splitlines()


def test_clock_and_timezone(dev):
    assert run(dev, "date", "+%Y-%m-%dT%H:%M:%S %Z")[0] == "2026-11-29T09:00:00 CET\n"
    assert run(dev, "date", "-u", "113007302026.15")[2] == 0  # toybox: MMDDhhmmCCYY.ss
    assert run(dev, "date", "+%s")[0] == "1796023815\n"  # 2026-11-30T07:30:15Z
    assert run(dev, "setprop", "persist.sys.timezone", "Asia/Tokyo")[2] == 0
    assert run(dev, "date", "+%H:%M %Z")[0] == "16:30 JST\n"
    assert run(dev, "getprop", "persist.sys.timezone")[0] == "Asia/Tokyo\n"
    user = VirtualDevice(root=False)
    assert run(user, "date", "-u", "113007302026")[2] == 1
    assert run(user, "setprop", "persist.sys.timezone", "Asia/Tokyo")[2] == 1


def test_a_timezone_change_keeps_stored_instants(dev):
    run(dev, "content", "insert", "--uri", "content://sms", "--bind", "address:s:+1", "--bind", "body:s:x",
        "--bind", "type:i:1", "--bind", "date:l:1795939200000")  # fmt: skip
    assert dev.phone.state.get("messages.messages", "m_1")["time"] == "2026-11-29T09:00:00"  # Berlin
    run(dev, "setprop", "persist.sys.timezone", "America/New_York")
    assert dev.phone.state.get("messages.messages", "m_1")["time"] == "2026-11-29T03:00:00"  # the same instant
    out, _, _ = run(dev, "content", "query", "--uri", "content://sms", "--projection", "date")
    assert out == "Row: 0 date=1795939200000\n"


# -- UI: typing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arg", "typed"),
    [
        ("hello%sworld", "hello world"),
        ("100%", "100%"),
        ("a%%sb", "a% b"),  # Input.java: the second % escapes the s
        ("%s%s", "  "),
        ("s", "s"),
        ("%x%", "%x%"),
    ],
)
def test_input_text_decoding_follows_input_java(arg, typed):
    assert input_text_decode(arg) == typed


def test_compose_input_text_and_enter_send_an_sms(dev):
    out, _, code = run(dev, "am", "start", "-W", "-a", "android.intent.action.SENDTO", "-d", "smsto:+4916022222222",
                       "com.google.android.apps.messaging")  # fmt: skip
    assert code == 0 and "Status: ok" in out
    run(dev, "input", "text", "Running%s10%")
    run(dev, "input", "text", "s%slate")  # a literal "%s" is typed as "%" then "s..."
    assert run(dev, "input", "text", "é")[2] == 255  # not in the virtual keyboard's map
    run(dev, "am", "broadcast", "-a", "ADB_INPUT_B64", "--es", "msg", base64.b64encode(" 😀\n二".encode()).decode())
    run(dev, "input", "keyevent", "KEYCODE_ENTER")
    [rec] = dev.phone.state.table("messages.messages").values()
    assert rec["body"] == "Running 10%s late 😀\n二"
    assert rec["direction"] == "out" and rec["read"] is True and rec["number"] == "+4916022222222"
    assert rec["time"] == "2026-11-29T09:00:00"


def test_without_adb_keyboard_a_broadcast_types_nothing():
    dev = VirtualDevice(adb_keyboard=False)
    run(dev, "am", "start", "-a", "android.intent.action.SENDTO", "-d", "smsto:+1555")
    run(dev, "am", "broadcast", "-a", "ADB_INPUT_B64", "--es", "msg", base64.b64encode(b"hi").decode())
    run(dev, "input", "keyevent", "66")
    assert dev.phone.state.table("messages.messages") == {}


def test_input_text_newline_presses_enter(dev):
    run(dev, "am", "start", "-a", "android.intent.action.SENDTO", "-d", "smsto:+1555")
    run(dev, "input", "text", "one\ntwo")
    [rec] = dev.phone.state.table("messages.messages").values()
    assert rec["body"] == "one"  # Enter sent the first line; "two" waits in the field
    assert dev.compose is not None and dev.compose.text == "two"


def test_unresolvable_intent(dev):
    _, err, code = run(dev, "am", "start", "-a", "android.intent.action.VIEW", "-d", "https://example.com")
    assert code == 1 and "unable to resolve Intent" in err


def test_activities_notifications_clear_and_reboot(dev):
    run(
        dev,
        "am",
        "start",
        "-a",
        "android.intent.action.MAIN",
        "-c",
        "android.intent.category.LAUNCHER",
        "com.google.android.deskclock",
    )
    assert "ACTIVITY com.google.android.deskclock/.MainActivity" in run(dev, "dumpsys", "activity", "top")[0]
    assert dev.phone.state.meta["foreground"] == "clock"
    assert run(dev, "input", "tap", "100", "200")[2] == 0
    assert run(dev, "input", "swipe", "1", "2", "3")[2] == 1  # needs X1 Y1 X2 Y2
    run(dev, "content", "insert", "--uri", "content://com.google.android.deskclock/alarms", "--bind", "hour:i:7",
        "--bind", "minutes:i:5", "--bind", "enabled:i:1")  # fmt: skip
    assert dev.phone.state.get("clock.alarms", "al_1") == {
        "id": "al_1",
        "time": "07:05",
        "label": None,
        "enabled": True,
        "days": (),
    }
    assert run(dev, "pm", "clear", "com.google.android.deskclock")[0] == "Success\n"
    assert dev.phone.state.table("clock.alarms") == {}  # its own provider's rows went with its data
    assert run(dev, "pm", "clear", "com.android.contacts")[2] == 0
    perms = dev.phone.state.table("system.permissions")
    assert not any(r["granted"] for r in perms.values() if r["app"] == "contacts")  # runtime grants reset
    out, _, code = run(dev, "cmd", "notification", "post", "-t", "Title", "tag1", "some text")
    assert code == 0 and out == "Notification posted.\n"
    [note] = dev.phone.state.table("system.notifications").values()
    assert (note["app"], note["title"], note["text"], note["read"]) == ("shell", "Title", "some text", False)
    assert run(dev, "am", "force-stop", "com.google.android.deskclock")[2] == 0
    assert dev.foreground == "com.android.launcher3"
    dev.on_reboot("bootloader")
    assert dev.reboots == ["bootloader"]
    assert run(dev, "cmd", "nosuch")[2] == 20


# -- screen ----------------------------------------------------------------------------------


def test_screencap_png_is_the_sandbox_rendering(dev):
    run(
        dev,
        "am",
        "start",
        "-a",
        "android.intent.action.MAIN",
        "-c",
        "android.intent.category.LAUNCHER",
        "com.android.settings",
    )
    r = dev.shell("screencap -p", b"")
    image = np.asarray(Image.open(io.BytesIO(r.stdout)).convert("RGB"))
    assert image.shape == (640, 360, 3)
    assert np.array_equal(image, dev.screen())
    raw = dev.shell("screencap", b"").stdout
    w, h, fmt = np.frombuffer(raw[:12], dtype="<u4")
    assert (w, h, fmt) == (360, 640, 1) and len(raw) == 12 + 360 * 640 * 4
    assert run(dev, "screencap", "-p", "/sdcard/s.png")[2] == 0
    assert dev.files.read("/sdcard/s.png").startswith(b"\x89PNG")


# -- through the real adb server ---------------------------------------------------------------


def test_real_adb_shell_reaches_the_virtual_device(adb_server):
    from tests.adb import adb_cli, served_device

    dev = VirtualDevice(model="Virtual_Phone")
    with served_device(adb_server, dev) as (server, device):
        assert device.shell("getprop ro.product.model") == "Virtual_Phone"
        res = device.shell2("content query --uri content://sms; nope", v2=True)
        assert res.returncode == 127 and "inaccessible or not found" in res.stderr
        assert res.stdout == "No result found.\n"
        cli = adb_cli(adb_server.port, "-s", server.serial, "shell", "settings", "put", "global", "wifi_on", "0")
        assert cli.returncode == 0
        assert dev.phone.state.get("settings.settings", "wifi") == {"id": "wifi", "value": False}
        listed = adb_cli(adb_server.port, "devices", "-l").stdout.decode()
        assert server.serial in listed and "model:Virtual_Phone" in listed
