"""The Appium backend through a real Appium 2 server and the official fake driver.

Every test but the pure ones drives tests/appium/apps/notes.xml through a real server started on
loopback (tests/appium_server.py). Driver-side facts (click counts, field values) are read back
through the raw WebDriver, independently of the tools under test. The UiAutomator2 path needs a
device and runs only with ``PHONEENV_APPIUM_SERIAL`` set (``-m device``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from typing import Any

import pytest

pytest.importorskip(
    "appium.webdriver", reason="the Appium tests need appium-python-client (pip install -e '.[device]')"
)

from phoneenv.backends.appium import (
    UI_TOOLS,
    AppiumBackend,
    AppiumSession,
    AppiumSessionError,
    AppiumUi,
    SnapshotUnsupportedError,
    exception_feedback,
    flatten_screen,
    parse_page_source,
    uiselector_literal,
    xpath_literal,
)
from phoneenv.contract import ErrorKind, Feedback, Fixtures, StateCriterion, TaskSpec
from phoneenv.env import PhonePlanEnv
from tests import waiting
from tests.appium_server import NOTES_APP, AppiumUnavailable, appium_command, serve_appium

PKG = "com.example.notes:id/"


def E(cls: str, rid: str, bounds: list[int], *, text: str = "", desc: str = "", clickable: bool = False,
      enabled: bool = True, password: bool = False, children: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:  # fmt: skip
    """An expected element, written out by hand from notes.xml."""
    return {
        "class": cls,
        "text": text,
        "resource_id": PKG + rid if rid else "",
        "content_desc": desc,
        "bounds": bounds,
        "clickable": clickable,
        "enabled": enabled,
        "password": password,
        "children": list(children),
    }


def notes_screen(username: str = "", password: str = "", compose: str = "") -> dict[str, Any]:
    """notes.xml as read_screen must show it (the hidden Sync button left out), with the given
    live values in the three input fields."""
    return {
        "width": 360,
        "height": 640,
        "elements": [
            E("MockView", "login", [0, 0, 360, 240], children=(
                E("MockText", "title", [16, 16, 344, 48], text="Sign in to Notes"),
                E("MockInputField", "username", [16, 64, 344, 112], text=username, desc="Username", clickable=True),
                E("MockInputField", "password", [16, 120, 344, 168], text=password, desc="Password", clickable=True, password=True),
                E("MockButton", "sign_in", [16, 180, 172, 224], text="Sign in", clickable=True),
                E("MockButton", "forgot", [188, 180, 344, 224], text="Forgot password?", clickable=True, enabled=False),
            )),
            E("MockListView", "notes", [0, 256, 360, 496], children=(
                E("MockListItem", "note_1", [0, 256, 360, 312], text="Groceries", clickable=True),
                E("MockListItem", "note_2", [0, 312, 360, 368], text='Ana\'s "draft"', clickable=True),
                E("MockListItem", "note_3", [0, 368, 360, 424], text="Café ☕ 10:00", clickable=True),
            )),
            E("MockInputField", "compose", [16, 512, 264, 560], text=compose, desc="Write a note", clickable=True),
            E("MockButton", "save", [280, 512, 344, 560], text="Save", desc="Save note", clickable=True),
        ],
    }  # fmt: skip


HOSTILE = [
    "it's \"quoted\" both 'ways'",
    "back\\slash \\n not a newline",
    "line one\nline two\r\nline three\n",
    "tab\there",
    "$(rm -rf /); `reboot` && echo $HOME | cat > /dev/null",
    "100% %s %d %%",
    "Zoë 😀 👩‍👩‍👧 Привет 你好 مرحبا שלום",
    "e\u0301 combining, \u200b zero-width, \u202e right-to-left override",
    "<tag attr='x'>&amp; &lt;/tag&gt;]]>",
    "   leading and trailing spaces   ",
]


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def session(appium_server) -> AppiumSession:
    """A fresh fake-driver session on the shared server (a fresh app: no clicks, empty fields)."""
    s = AppiumSession.fake(appium_server.url, str(NOTES_APP), command_timeout_s=waiting.scaled(20))
    s.start()
    yield s
    s.quit()


@pytest.fixture
def ui(session: AppiumSession) -> AppiumUi:
    return AppiumUi(session)


@pytest.fixture
def own_server(tmp_path):
    """An Appium server of the test's own, for tests that kill or pause it."""
    try:
        appium_command()
    except AppiumUnavailable as exc:
        pytest.skip(str(exc))
    with serve_appium(tmp_path) as server:
        yield server


def call(ui: AppiumUi, name: str, **arguments: Any) -> Feedback:
    """Validate ``arguments`` against the tool's schema as the env does, then call."""
    return ui.call(name, UI_TOOLS[name].validator.validate(arguments))


def clicks(session: AppiumSession, rid: str) -> int:
    """How often the fake driver saw element ``rid`` clicked (its own counter)."""
    value = session.driver.find_element("id", PKG + rid).get_attribute("clicks")
    return int(value or 0)


def field_value(session: AppiumSession, rid: str) -> str:
    """The fake driver's own value of input field ``rid``."""
    return session.driver.find_element("id", PKG + rid).text


# -- pure parts: literals, page-source parsing, options -----------------------------------------


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        ("Sign in", "'Sign in'"),
        ("Ana's", '"Ana\'s"'),
        ('say "hi"', "'say \"hi\"'"),
        ('Ana\'s "draft"', "concat('Ana', \"'\", 's \"draft\"')"),
        ("'x'\"", "concat('', \"'\", 'x', \"'\", '\"')"),
    ],
)
def test_xpath_literal(value: str, literal: str) -> None:
    assert xpath_literal(value) == literal


def test_uiselector_literal_escapes_backslash_then_quote() -> None:
    assert uiselector_literal('a"b\\c') == '"a\\"b\\\\c"'
    assert uiselector_literal("plain") == '"plain"'


def test_locators_per_driver() -> None:
    fake = AppiumSession.fake("http://127.0.0.1:1", "/x.xml")
    assert fake.locator({"text": "Sign in"}) == ("xpath", "//*[@text='Sign in']")
    assert fake.locator({"text": "a", "resource_id": "p:id/b", "content_desc": "c"}) == (
        "xpath",
        "//*[@text='a' and @id='p:id/b' and @content-desc='c']",
    )
    uia2 = AppiumSession.uiautomator2("http://127.0.0.1:1", "emulator-5554")
    assert uia2.locator({"text": 'Say "hi"', "resource_id": "p:id/b"}) == (
        "-android uiautomator",
        'new UiSelector().text("Say \\"hi\\"").resourceId("p:id/b")',
    )
    assert uia2.locator({"content_desc": "Save note"})[1] == 'new UiSelector().description("Save note")'
    with pytest.raises(ValueError, match="selector"):
        fake.locator({})
    with pytest.raises(ValueError, match="selector"):
        fake.locator({"xpath": "//*"})


def test_uiautomator2_capabilities() -> None:
    s = AppiumSession.uiautomator2(
        "http://127.0.0.1:4723/", "emulator-5554", app_package="com.example.notes", app_activity=".Main"
    )
    from appium.options.common.base import AppiumOptions

    caps = AppiumOptions.as_w3c(s.options.to_capabilities())["capabilities"]["alwaysMatch"]  # as sent
    assert caps["platformName"] == "Android"
    assert caps["appium:automationName"].lower() == "uiautomator2"
    assert caps["appium:udid"] == "emulator-5554"
    assert caps["appium:appPackage"] == "com.example.notes"
    assert caps["appium:appActivity"] == ".Main"
    assert caps["appium:noReset"] is True
    assert caps["appium:newCommandTimeout"] == 300
    assert caps["appium:autoGrantPermissions"] is False
    assert s.dialect == "uiautomator2" and s.server_url == "http://127.0.0.1:4723"
    assert "appium:appPackage" not in AppiumSession.uiautomator2("http://h:1", "s").options.to_capabilities()


def test_unsupported_driver_and_attempts_are_refused() -> None:
    from appium.options.common.base import AppiumOptions

    opts = AppiumOptions()
    opts.set_capability("platformName", "iOS")
    opts.set_capability("appium:automationName", "XCUITest")
    with pytest.raises(ValueError, match="XCUITest"):
        AppiumSession("http://127.0.0.1:1", opts)
    with pytest.raises(ValueError, match="create_attempts"):
        AppiumSession.fake("http://127.0.0.1:1", "/x.xml", create_attempts=0)


UIA2_SOURCE = """<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy index="0" class="hierarchy" rotation="0" width="1080" height="2400">
  <android.widget.FrameLayout index="0" package="com.example.notes" class="android.widget.FrameLayout" text=""
      resource-id="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false"
      focused="false" long-clickable="false" password="false" scrollable="false" selected="false"
      bounds="[0,0][1080,2400]" displayed="true">
    <android.widget.EditText index="0" package="com.example.notes" class="android.widget.EditText"
        text="ana@example.com" resource-id="com.example.notes:id/username" content-desc="Username"
        clickable="true" enabled="true" bounds="[48,300][1032,420]" displayed="true" />
    <android.widget.EditText index="1" package="com.example.notes" class="android.widget.EditText"
        text="••••••" resource-id="com.example.notes:id/password" content-desc="Password"
        clickable="true" enabled="true" password="true" bounds="[48,420][1032,480]" displayed="true" />
    <android.widget.Button index="1" class="android.widget.Button" text="Sign in"
        resource-id="com.example.notes:id/sign_in" clickable="true" enabled="false"
        bounds="[48,480][540,600]" displayed="true" />
    <android.view.View index="2" class="android.view.View" text="offscreen" bounds="[0,0][0,0]" displayed="false">
      <android.widget.TextView class="android.widget.TextView" text="inside hidden" bounds="[1,1][2,2]" />
    </android.view.View>
  </android.widget.FrameLayout>
</hierarchy>"""


def test_parse_uiautomator2_hierarchy() -> None:
    screen = parse_page_source(UIA2_SOURCE)
    assert screen == {
        "width": 1080,
        "height": 2400,
        "elements": [
            {
                "class": "android.widget.FrameLayout",
                "text": "",
                "resource_id": "",
                "content_desc": "",
                "bounds": [0, 0, 1080, 2400],
                "clickable": False,
                "enabled": True,
                "password": False,
                "children": [
                    {
                        "class": "android.widget.EditText",
                        "text": "ana@example.com",
                        "resource_id": "com.example.notes:id/username",
                        "content_desc": "Username",
                        "bounds": [48, 300, 1032, 420],
                        "clickable": True,
                        "enabled": True,
                        "password": False,
                        "children": [],
                    },
                    {
                        "class": "android.widget.EditText",
                        "text": "••••••",
                        "resource_id": "com.example.notes:id/password",
                        "content_desc": "Password",
                        "bounds": [48, 420, 1032, 480],
                        "clickable": True,
                        "enabled": True,
                        "password": True,
                        "children": [],
                    },
                    {
                        "class": "android.widget.Button",
                        "text": "Sign in",
                        "resource_id": "com.example.notes:id/sign_in",
                        "content_desc": "",
                        "bounds": [48, 480, 540, 600],
                        "clickable": True,
                        "enabled": False,
                        "password": False,
                        "children": [],
                    },
                ],
            }
        ],
    }
    flat = flatten_screen(screen)
    assert list(flat) == ["0", "0/0", "0/1", "0/2"]
    assert flat["0/2"]["text"] == "Sign in" and flat["0/2"]["id"] == "0/2" and "children" not in flat["0/2"]
    assert [e["password"] for e in flat.values()] == [False, False, True, False]


@pytest.mark.parametrize(
    ("xml", "match"),
    [
        ("<hierarchy><unclosed></hierarchy>", "well-formed"),
        ("<html/>", "unknown page source root"),
        ('<hierarchy width="10" height="10"><node bounds="[1,2][3]"/></hierarchy>', "malformed bounds"),
        ('<hierarchy><node bounds="[a,b][c,d]"/></hierarchy>', "malformed bounds"),
        ("<AppiumAUT><other/></AppiumAUT>", "without an <app>"),
        ('<AppiumAUT><app width="w"/></AppiumAUT>', "numbers"),
        ("<hierarchy>" + "<n>" * 300 + "</n>" * 300 + "</hierarchy>", "deeper than 256"),
        (
            '<!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
            '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">'
            '<!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">'
            '<!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;"><!ENTITY h "&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;">]>'
            '<hierarchy><n text="&h;&h;&h;&h;&h;&h;&h;&h;&h;&h;"/></hierarchy>',
            "well-formed",
        ),
    ],
)
def test_parse_rejects_bad_page_sources(xml: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_page_source(xml)


def test_tool_specs_and_validation() -> None:
    assert sorted(UI_TOOLS) == ["ui.back", "ui.read_screen", "ui.tap", "ui.type", "ui.wait_for"]
    tap = UI_TOOLS["ui.tap"].spec
    assert set(tap.parameters["properties"]) == {"text", "resource_id", "content_desc"}
    assert tap.parameters["required"] == [] and tap.effect.value == "write" and tap.app == "ui"
    typ = UI_TOOLS["ui.type"].spec.parameters
    assert typ["required"] == ["text", "into"]
    assert typ["properties"]["by"]["enum"] == ["resource_id", "text", "content_desc"]
    assert UI_TOOLS["ui.read_screen"].spec.effect.value == "read"
    assert "UiElement" in json.dumps(UI_TOOLS["ui.read_screen"].spec.returns)
    from phoneenv.tools import ArgumentError

    for name, bad in [
        ("ui.tap", {"text": 5}),
        ("ui.tap", {"text": ""}),
        ("ui.tap", {"xpath": "//*"}),
        ("ui.type", {"text": "x"}),
        ("ui.type", {"text": "x", "into": "f", "by": "xpath"}),
        ("ui.wait_for", {"text": "x", "timeout_s": 61}),
        ("ui.wait_for", {"text": "x", "timeout_s": "5"}),
    ]:
        with pytest.raises(ArgumentError):
            UI_TOOLS[name].validator.validate(bad)


def test_exception_mapping_without_a_server() -> None:
    import urllib3
    from selenium.common import exceptions as se

    refused = urllib3.exceptions.MaxRetryError(
        None, "/session/x/source", urllib3.exceptions.NewConnectionError(None, "Connection refused")
    )
    read = urllib3.exceptions.MaxRetryError(None, "/x", urllib3.exceptions.ReadTimeoutError(None, "/x", "timed out"))
    cases = [
        (se.NoSuchElementException("gone"), ErrorKind.NOT_FOUND),
        (se.StaleElementReferenceException("stale"), ErrorKind.NOT_FOUND),
        (se.ElementNotInteractableException("hidden"), ErrorKind.PRECONDITION_FAILED),
        (se.InvalidSessionIdException("ended"), ErrorKind.DEVICE_ERROR),
        (se.TimeoutException("slow"), ErrorKind.TIMEOUT),
        (refused, ErrorKind.DEVICE_ERROR),
        (read, ErrorKind.TIMEOUT),
        (ConnectionResetError("reset"), ErrorKind.DEVICE_ERROR),
        (se.WebDriverException("boom"), ErrorKind.DEVICE_ERROR),
        (AppiumSessionError("no session"), ErrorKind.DEVICE_ERROR),
        (se.InvalidSelectorException("bad"), ErrorKind.INTERNAL_ERROR),
        (KeyError("bug"), ErrorKind.INTERNAL_ERROR),
    ]
    for exc, kind in cases:
        fb = exception_feedback(exc, "ui.tap", target="text='x'", server="http://127.0.0.1:1")
        assert (fb.ok, fb.error) == (False, kind), exc
        assert fb.recoverable is (kind in (ErrorKind.NOT_FOUND, ErrorKind.PRECONDITION_FAILED)), exc
    assert "ui.read_screen" in exception_feedback(se.NoSuchElementException("x"), "ui.tap").hint


# -- through the real server and the fake driver -------------------------------------------------


def test_read_screen_is_the_exact_tree_of_our_app(ui: AppiumUi) -> None:
    fb = call(ui, "ui.read_screen")
    assert fb.ok, fb
    assert fb.result == notes_screen()
    # the same result validates against the tool's declared return schema
    import jsonschema

    jsonschema.validate(fb.result, UI_TOOLS["ui.read_screen"].spec.returns)


def test_offered_tools_follow_the_driver(ui: AppiumUi, session: AppiumSession) -> None:
    from selenium.common.exceptions import UnknownMethodException

    assert sorted(ui.tools()) == ["ui.read_screen", "ui.tap", "ui.type", "ui.wait_for"]
    with pytest.raises(UnknownMethodException):  # the reason ui.back is not offered on this driver
        session.driver.back()
    fb = ui.call("ui.back", {})
    assert fb.error is ErrorKind.UNKNOWN_TOOL
    assert sorted(AppiumUi.OFFERED["uiautomator2"]) == sorted(UI_TOOLS)


def test_tap_by_text_by_id_and_by_description(ui: AppiumUi, session: AppiumSession) -> None:
    fb = call(ui, "ui.tap", text="Sign in")
    assert fb.ok and fb.result == {"tapped": "text='Sign in'", "matches": 1}
    assert clicks(session, "sign_in") == 1

    fb = call(ui, "ui.tap", resource_id=PKG + "note_1")
    assert fb.ok and fb.result["matches"] == 1
    assert call(ui, "ui.tap", resource_id=PKG + "note_1").ok
    assert clicks(session, "note_1") == 2

    assert call(ui, "ui.tap", content_desc="Save note").ok
    assert clicks(session, "save") == 1
    assert call(ui, "ui.tap", text="Save", content_desc="Save note", resource_id=PKG + "save").ok
    assert clicks(session, "save") == 2

    # quotes of both kinds and non-ASCII in the selector itself
    assert call(ui, "ui.tap", text='Ana\'s "draft"').ok
    assert clicks(session, "note_2") == 1
    assert call(ui, "ui.tap", text="Café ☕ 10:00").ok
    assert clicks(session, "note_3") == 1
    assert clicks(session, "sign_in") == 1  # nothing else was tapped


def test_type_into_a_field_and_read_it_back(ui: AppiumUi, session: AppiumSession) -> None:
    fb = call(ui, "ui.type", text="ana@example.com", into=PKG + "username")
    assert fb.ok and fb.result == {"field": f"resource_id='{PKG}username'", "text": "ana@example.com", "hidden": False}
    assert fb.redacted is None
    fb = call(ui, "ui.type", text="Buy milk", into="Write a note", by="content_desc")
    assert fb.ok and fb.result["text"] == "Buy milk"
    assert field_value(session, "username") == "ana@example.com"
    assert field_value(session, "compose") == "Buy milk"
    assert call(ui, "ui.read_screen").result == notes_screen(username="ana@example.com", compose="Buy milk")
    # typing replaces; an empty text clears
    assert call(ui, "ui.type", text="Call Ben", into=PKG + "compose").result["text"] == "Call Ben"
    assert call(ui, "ui.type", text="", into=PKG + "username").result["text"] == ""
    assert call(ui, "ui.read_screen").result == notes_screen(compose="Call Ben")


def test_text_typed_into_a_password_field_is_redacted_everywhere(appium_server) -> None:
    """A password the agent types into a field marked ``password`` (not a fixture secret: the
    env cannot know it beforehand) is typed for real but recorded as ``***`` in the trace, and
    masked in what comes after: the screen read back, a message, the finish answer."""
    session = AppiumSession.fake(appium_server.url, str(NOTES_APP), command_timeout_s=waiting.scaled(20))
    typed = "hunter2-Zq9"
    task = TaskSpec(
        id="ui.password",
        domain="device",
        goal="Sign in to Notes.",
        criteria=[StateCriterion(table="ui.elements", where={"resource_id": PKG + "password"}, change="present")],
        backends=["appium"],
    )
    env = PhonePlanEnv(task=task, backend=AppiumBackend(session), skills=False)
    try:
        env.reset(seed=0)
        seen = []
        for action in (
            {"name": "ui.type", "arguments": {"text": typed, "into": PKG + "password"}},
            {"name": "ui.read_screen", "arguments": {}},
            {"name": "ui.type", "arguments": {"text": f"my password is {typed}", "into": PKG + "compose"}},
            {"name": "finish", "arguments": {"answer": f"signed in with {typed}"}},
        ):
            obs, _, _, _, info = env.step(action)
            assert info["feedback"].ok, info["feedback"]
            seen += [obs, info["feedback"].model_dump_json()]
        assert field_value(session, "password") == typed  # the real value reached the field
        first = env.trace.steps[0]
        assert first.action.arguments["text"] == "***" and first.feedback.redacted == ["text"]
        assert first.feedback.result["hidden"] is True and first.feedback.result["text"] == "***"
        artifacts = [env.trace.model_dump_json(), env.verdict.model_dump_json(), json.dumps(seen, default=str)]
        assert not any(typed in a for a in artifacts)
        env.reset(seed=0)  # the typed password was this episode's secret, not the next one's
        assert typed not in env._masker.secrets
    finally:
        env.close()


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_text_arrives_intact(ui: AppiumUi, session: AppiumSession, text: str) -> None:
    fb = call(ui, "ui.type", text=text, into=PKG + "compose")
    assert fb.ok, fb
    assert fb.result["text"] == text
    assert field_value(session, "compose") == text
    screen = call(ui, "ui.read_screen").result
    assert screen == notes_screen(compose=text)
    # the same text as a selector: an honest miss, never a broken selector
    miss = call(ui, "ui.tap", text=text)
    assert miss.error is ErrorKind.NOT_FOUND, miss


def test_missing_element_is_not_found_with_a_hint(ui: AppiumUi, session: AppiumSession) -> None:
    fb = call(ui, "ui.tap", text="Sign In")
    assert fb.error is ErrorKind.NOT_FOUND and fb.recoverable is True and not fb.infrastructure
    assert "ui.read_screen" in fb.hint
    assert fb.candidates and fb.candidates[0] == "Sign in"
    assert "Sign In" in fb.message
    fb = call(ui, "ui.type", text="x", into=PKG + "usrname")
    assert fb.error is ErrorKind.NOT_FOUND and fb.candidates[0] == PKG + "username"
    fb = call(ui, "ui.tap", content_desc="Nothing like it at all")
    assert fb.error is ErrorKind.NOT_FOUND and fb.candidates is None and "ui.read_screen" in fb.hint
    fb = ui.call("ui.tap", {})
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and "at least one" in fb.message
    assert clicks(session, "sign_in") == 0


def test_disabled_and_hidden_elements_are_preconditions(ui: AppiumUi, session: AppiumSession) -> None:
    fb = call(ui, "ui.tap", text="Forgot password?")
    assert fb.error is ErrorKind.PRECONDITION_FAILED and "disabled" in fb.message and fb.recoverable
    assert clicks(session, "forgot") == 0
    fb = call(ui, "ui.tap", text="Sync")  # in the app, not displayed: the driver refuses the click
    assert fb.error is ErrorKind.PRECONDITION_FAILED and "ui.read_screen" in fb.hint
    assert fb.message == "precondition not met: the element with text='Sync' must be visible and interactable"
    assert clicks(session, "sync") == 0


def test_wait_for(ui: AppiumUi) -> None:
    fb = call(ui, "ui.wait_for", text="Groceries", timeout_s=5)
    assert fb.ok and fb.result["found"] == "text='Groceries'" and 0 <= fb.result["waited_s"] < 2
    t0 = time.monotonic()
    fb = call(ui, "ui.wait_for", text="Welcome back", timeout_s=0.6)
    waited = time.monotonic() - t0
    assert fb.error is ErrorKind.NOT_FOUND and not fb.infrastructure
    assert fb.message == "no element with text='Welcome back' appeared within 0.6 s"
    assert 0.6 <= waited < 5


def test_session_deleted_on_the_server_is_device_error(ui: AppiumUi, session: AppiumSession) -> None:
    import urllib.request

    req = urllib.request.Request(f"{session.server_url}/session/{session.session_id}", method="DELETE")
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200
    fb = call(ui, "ui.tap", text="Sign in")
    assert fb.error is ErrorKind.DEVICE_ERROR and fb.infrastructure and fb.recoverable is False
    assert "session was lost" in fb.message


def test_killed_server_mid_episode_is_device_error(own_server) -> None:
    session = AppiumSession.fake(own_server.url, str(NOTES_APP), command_timeout_s=10)
    backend = AppiumBackend(session)
    task = TaskSpec(
        id="ui.sign_in",
        domain="device",
        goal="Type ana@example.com as the user name and tap Sign in.",
        criteria=[StateCriterion(table="ui.elements", where={"resource_id": PKG + "username"}, change="present")],
        backends=["appium"],
    )
    env = PhonePlanEnv(task=task, backend=backend, skills=False)
    try:
        env.reset(seed=0)
        _, _, _, _, info = env.step(
            {"name": "ui.type", "arguments": {"text": "ana@example.com", "into": PKG + "username"}}
        )
        assert info["feedback"].ok
        own_server.kill()
        for action in (
            {"name": "ui.tap", "arguments": {"text": "Sign in"}},
            json.dumps({"name": "ui.read_screen", "arguments": {}}),
            {"name": "ui.wait_for", "arguments": {"text": "Sign in", "timeout_s": 1}},
        ):
            t0 = time.monotonic()
            obs, _, terminated, truncated, info = env.step(action)
            fb = info["feedback"]
            assert fb.error is ErrorKind.DEVICE_ERROR and fb.infrastructure and fb.recoverable is False
            assert "connection refused" in fb.message
            assert json.loads(obs["feedback"])["error"] == "device_error"
            assert time.monotonic() - t0 < 5 and not (terminated or truncated)
        _, reward, terminated, _, info = env.step({"name": "finish", "arguments": {"answer": "done"}})
        assert terminated and reward == 0.0
        assert info["infrastructure_error"] is True and info["verdict"]["infrastructure_error"] is True
        assert env.render() is None
        assert backend.screenshot().shape == (640, 360, 3)  # a dead device gives a black frame
    finally:
        env.close()


def test_hung_server_is_timeout_and_recovers(own_server) -> None:
    session = AppiumSession.fake(own_server.url, str(NOTES_APP), command_timeout_s=1)
    ui = AppiumUi(session)
    session.start()
    try:
        own_server.pause()
        t0 = time.monotonic()
        fb = call(ui, "ui.read_screen")
        waited = time.monotonic() - t0
        own_server.resume()
        assert fb.error is ErrorKind.TIMEOUT and fb.infrastructure and fb.recoverable is False
        assert 1.0 <= waited < 3.0  # one read timeout, not retried
        fb = call(ui, "ui.read_screen")
        assert fb.ok and fb.result == notes_screen()
    finally:
        own_server.resume()
        session.quit()


def test_session_start_failure_is_typed(tmp_path) -> None:
    from tests.llm_server import _free_port

    dead = AppiumSession.fake(f"http://127.0.0.1:{_free_port()}", str(NOTES_APP), create_attempts=2)
    with pytest.raises(AppiumSessionError, match="2 attempt"):
        dead.start()
    assert not dead.started
    fb = AppiumUi(dead).call("ui.read_screen", {})
    assert fb.error is ErrorKind.DEVICE_ERROR and "start()" in fb.message


def test_backend_episode_through_the_env(appium_server) -> None:
    """A whole episode on the env: typed tool calls, verification over ui.elements, and a reset
    that gives a fresh app (the second episode starts with an empty compose field)."""
    session = AppiumSession.fake(appium_server.url, str(NOTES_APP), command_timeout_s=waiting.scaled(20))
    backend = AppiumBackend(session)
    task = TaskSpec(
        id="ui.compose",
        domain="notes",
        goal="Write a note that says Buy milk and save it.",
        criteria=[
            StateCriterion(
                table="ui.elements",
                where={"resource_id": PKG + "compose", "text": "Buy milk"},
                change="updated",
                count=1,
            )
        ],
        backends=["appium"],
        fixtures=Fixtures(timezone="Asia/Tokyo"),
    )
    env = PhonePlanEnv(task=task, backend=backend, skills=False)
    try:
        obs, info = env.reset(seed=0)
        names = sorted(t["function"]["name"] for t in info["tools"])
        assert [n for n in names if n.startswith("ui.")] == ["ui.read_screen", "ui.tap", "ui.type", "ui.wait_for"]
        assert "finish" in names  # the env adds its own tools
        # a malformed call is feedback, not an exception
        _, _, _, _, info = env.step({"name": "ui.type", "arguments": {"text": 7, "into": PKG + "compose"}})
        assert info["feedback"].error is ErrorKind.INVALID_ARGUMENTS and info["feedback"].path == "/text"
        _, _, _, _, info = env.step({"name": "ui__type", "arguments": {"text": "Buy milk", "into": PKG + "compose"}})
        assert info["feedback"].ok
        _, _, _, _, info = env.step({"name": "ui.tap", "arguments": {"text": "Save"}})
        assert info["feedback"].ok and clicks(session, "save") == 1
        _, reward, terminated, _, info = env.step({"name": "finish", "arguments": {"answer": "saved"}})
        assert terminated and reward == 1.0 and info["success"] and not info["infrastructure_error"]

        env.reset(seed=1)
        assert field_value(session, "compose") == "" and clicks(session, "save") == 0
        _, reward, terminated, _, info = env.step({"name": "finish", "arguments": {"answer": "saved"}})
        assert terminated and reward == 0.0 and not info["success"]
        frame = backend.screenshot()
        assert frame.dtype.name == "uint8" and frame.ndim == 3 and frame.shape[2] == 3 and frame.any()
        assert backend.format_clock(0) == "1970-01-01T09:00:00"  # the task's timezone
        with pytest.raises(SnapshotUnsupportedError):
            backend.snapshot()
    finally:
        env.close()
    assert not session.started


def test_backend_refuses_fixtures_it_cannot_apply(appium_server) -> None:
    backend = AppiumBackend(AppiumSession.fake(appium_server.url, str(NOTES_APP)))
    task = TaskSpec(
        id="ui.seeded",
        domain="contacts",
        goal="g",
        criteria=[StateCriterion(table="ui.elements", change="present")],
        backends=["appium"],
        fixtures=Fixtures(records={"contacts.contacts": [{"id": "c_1", "name": "Ana"}]}),
    )
    with pytest.raises(ValueError, match="records"):
        backend.reset(task)
    assert not backend.can_run(TaskSpec(id="t", domain="device", goal="g", criteria=[]))
    backend.close()


# -- the UiAutomator2 path: a real device or emulator --------------------------------------------


@pytest.mark.device
def test_uiautomator2_on_a_device(tmp_path) -> None:
    """Settings on a real device through the UiAutomator2 driver: read the screen, tap an element
    by its text, go back. Needs PHONEENV_APPIUM_SERIAL (an adb serial), `appium` on PATH with the
    uiautomator2 driver installed (`appium driver install uiautomator2`), and the device online."""
    serial = os.environ.get("PHONEENV_APPIUM_SERIAL")
    if not serial:
        pytest.skip("no device: set PHONEENV_APPIUM_SERIAL to an adb serial to run the UiAutomator2 path")
    appium = shutil.which("appium")
    if appium is None:
        pytest.skip("`appium` is not on PATH: npm i -g appium && appium driver install uiautomator2")
    import subprocess

    from tests.llm_server import _free_port

    port = _free_port()
    log = open(tmp_path / "appium.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([appium, "--address", "127.0.0.1", "--port", str(port)], stdout=log, stderr=log)
    try:
        from appium.webdriver.appium_service import is_service_listening

        assert is_service_listening(f"http://127.0.0.1:{port}/status", timeout=60)
        session = AppiumSession.uiautomator2(
            f"http://127.0.0.1:{port}", serial, app_package="com.android.settings", app_activity=".Settings"
        )
        ui = AppiumUi(session)
        session.start()
        try:
            screen = call(ui, "ui.read_screen").result
            assert screen["width"] > 0 and screen["height"] > 0
            flat = flatten_screen(screen)
            target = next(e for e in flat.values() if e["text"] and e["enabled"])
            assert call(ui, "ui.wait_for", text=target["text"], timeout_s=5).ok
            assert call(ui, "ui.tap", text=target["text"]).ok
            assert call(ui, "ui.back").ok
        finally:
            session.quit()
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def test_password_attribute_comes_from_the_element_when_the_driver_reports_it() -> None:
    """UiAutomator2 reports ``password`` per element: one call, no page source read (a screen
    read here would fail and count the field as a password field)."""

    class Element:
        def __init__(self, value: str | None) -> None:
            self.value = value

        def get_attribute(self, name: str) -> str | None:
            assert name == "password"
            return self.value

    class NoScreen:
        def screen(self) -> Any:
            raise ConnectionError("page source read")

    ui = AppiumUi.__new__(AppiumUi)
    ui.session = NoScreen()  # type: ignore[assignment]
    selector = {"resource_id": PKG + "password"}
    assert ui._hides_text(Element("false"), selector) is False  # type: ignore[arg-type]
    assert ui._hides_text(Element("true"), selector) is True  # type: ignore[arg-type]
    assert ui._hides_text(Element(None), selector) is True  # type: ignore[arg-type]  # unknown: masked
