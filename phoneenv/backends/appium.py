"""UI-level tools through Appium: tap, type, read the screen's element tree, go back, wait.

For apps that have no intent or content-provider path, the agent works the app's UI. The tools
go through ``appium-python-client`` to an Appium server (``pip install -e '.[device]'``; the
server and its drivers come from npm: see docs/guides/devices.md, "UI tools through Appium")::

    >>> from phoneenv.backends.appium import AppiumBackend, AppiumSession
    >>> session = AppiumSession.uiautomator2(
    ...     "http://127.0.0.1:4723", "emulator-5554",
    ...     app_package="com.example.notes", app_activity=".MainActivity")  # doctest: +SKIP
    >>> backend = AppiumBackend(session)  # doctest: +SKIP
    >>> backend.reset(task); backend.call("ui.tap", {"text": "Sign in"})  # doctest: +SKIP
    Feedback(ok=True, result={'tapped': "text='Sign in'", 'matches': 1}, ...)

Two drivers are supported, told apart by the session's ``automationName``:

- ``UiAutomator2`` (Android devices and emulators; :meth:`AppiumSession.uiautomator2`): elements
  are found with ``-android uiautomator`` ``new UiSelector().text(...)`` selectors (resource-id
  and content-desc through ``.resourceId()`` / ``.description()``), the fastest strategy that
  driver has; the page source is UiAutomator's window hierarchy.
- ``Fake`` (Appium's official ``@appium/fake-driver``; :meth:`AppiumSession.fake`), for tests:
  it knows only XPath, id, class and CSS lookups, so elements are found with XPath
  ``//*[@text=...]`` over the app XML it loaded. It implements no ``back``, so ``ui.back`` is not
  offered on it; its page source is the app XML as loaded, so :meth:`AppiumSession.screen` reads
  the live value of each ``MockInputField`` (one request per field) into ``text``.

Composition, not a mixin: :class:`AppiumUi` holds the tool set (specs, validators, dispatch) over
one :class:`AppiumSession`; :class:`AppiumBackend` is a :class:`~phoneenv.backends.base.Backend`
that offers only those tools, and a device backend that also has adb drivers merges
``AppiumUi.tools()`` into its own and hands ``ui.*`` calls to ``AppiumUi.call``. Composition
keeps one session per device whoever owns it, and keeps the adb code free of Selenium types.

Errors are feedback built by :mod:`phoneenv.harness.feedback`: a missing element is
``not_found`` (with the nearest texts on screen as candidates and a hint naming
``ui.read_screen``); a disabled or hidden element is ``precondition_failed``; a lost session, a
dead server or any other WebDriver failure is ``device_error``; an HTTP read timeout is
``timeout`` (both infrastructure errors). ``ui.wait_for`` whose text never appears is
``not_found``, not ``timeout``: the screen answered, it just does not show that text, and the agent
can recover by reading it (an infrastructure label would let an agent turn its own mistake into a
discarded episode).
"""

from __future__ import annotations

import datetime as dt
import difflib
import io
import logging
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal
from zoneinfo import ZoneInfo

import numpy as np
from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.backends.base import Backend
from phoneenv.contract import Domain, ErrorKind, Feedback, TaskSpec
from phoneenv.errors import PhoneEnvError
from phoneenv.extras import require
from phoneenv.harness import feedback
from phoneenv.harness.feedback import from_tool_error, to_tool_error
from phoneenv.tools import ToolDef, ToolError, build_tool, tool

if TYPE_CHECKING:
    from appium.options.common.base import AppiumOptions
    from appium.webdriver.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

__all__ = [
    "DIALECTS",
    "UI_TOOLS",
    "AppiumBackend",
    "AppiumSession",
    "AppiumSessionError",
    "AppiumUi",
    "Screen",
    "SnapshotUnsupportedError",
    "UiElement",
    "exception_feedback",
    "flatten_screen",
    "parse_page_source",
    "uiselector_literal",
    "xpath_literal",
]

log = logging.getLogger(__name__)

Dialect = Literal["uiautomator2", "fake"]
DIALECTS: Mapping[str, Dialect] = {"uiautomator2": "uiautomator2", "fake": "fake"}
"""``automationName`` (lower-cased) → the dialect this module speaks with that driver."""

_MAX_DEPTH = 256
"""Deepest element tree :func:`parse_page_source` accepts (UiAutomator trees are ~30 deep)."""

# -------------------------------------------------------------------------------------------------
# Results (their JSON Schemas are the tools' ``returns``)
# -------------------------------------------------------------------------------------------------

UiElement = TypedDict(
    "UiElement",
    {
        "class": str,
        "text": str,
        "resource_id": str,
        "content_desc": str,
        "bounds": list[int],
        "clickable": bool,
        "enabled": bool,
        "password": bool,
        "children": "list[UiElement]",
    },
)
UiElement.__doc__ = """One on-screen element: its class (``android.widget.Button``; the XML tag on
the fake driver), text, resource-id, content-desc (accessibility label), ``bounds`` as
``[left, top, right, bottom]`` in screen pixels, whether it is clickable and enabled, whether it
hides its text (``password``: Android's password fields; ``ui.type`` into one is recorded as
``***``), and the elements inside it. Missing strings are ``""``."""


class Screen(TypedDict):
    """The screen's element tree: ``width`` × ``height`` in pixels and the top-level elements.
    Elements not displayed are left out."""

    width: int
    height: int
    elements: list[UiElement]


class Tapped(TypedDict):
    """Which selector was tapped and how many elements matched it (the first one was tapped)."""

    tapped: str
    matches: int


class Typed(TypedDict):
    """The field typed into, its text as read back from it after typing, and whether it hides
    its text (a password field: the typed text is recorded as ``***`` and not read back)."""

    field: str
    text: str
    hidden: bool


class Pressed(TypedDict):
    """The key pressed."""

    pressed: str


class Appeared(TypedDict):
    """The text that appeared and how long the wait took, in seconds."""

    found: str
    waited_s: float


# -------------------------------------------------------------------------------------------------
# Locators
# -------------------------------------------------------------------------------------------------

_FAKE_ATTR = {"text": "text", "resource_id": "id", "content_desc": "content-desc"}
_UIA2_METHOD = {"text": "text", "resource_id": "resourceId", "content_desc": "description"}


def xpath_literal(value: str) -> str:
    """``value`` as an XPath 1.0 string literal, whatever quotes it holds.

    XPath 1.0 literals have no escapes (XPath 1.0 §3.7, ``Literal``): a value without ``'`` is
    quoted with ``'``, one without ``"`` with ``"``, and one with both becomes
    ``concat('a', "'", 'b"c')``. Newlines and non-ASCII pass through unchanged.
    """
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    return "concat(" + ', "\'", '.join(f"'{part}'" for part in value.split("'")) + ")"


def uiselector_literal(value: str) -> str:
    """``value`` as a Java string literal for a UiAutomator2 ``new UiSelector()`` expression:
    double-quoted, with ``\\`` and ``"`` backslash-escaped (the escapes the UiAutomator2 server's
    selector parser undoes, as in Java source)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _describe(selector: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in selector.items())


# -------------------------------------------------------------------------------------------------
# Page source → element tree
# -------------------------------------------------------------------------------------------------


def _flag(value: str | None, default: bool) -> bool:
    return default if value is None else value.strip().lower() == "true"


def _uia2_bounds(value: str | None) -> list[int]:
    """UiAutomator's ``[left,top][right,bottom]`` bounds as four ints; zeros when absent."""
    if not value:
        return [0, 0, 0, 0]
    nums = value.replace("][", ",").strip("[]").split(",")
    try:
        out = [int(float(n)) for n in nums]
    except ValueError:
        raise ValueError(f"malformed bounds {value!r}: expected [left,top][right,bottom]") from None
    if len(out) != 4:
        raise ValueError(f"malformed bounds {value!r}: expected [left,top][right,bottom]")
    return out


def _fake_bounds(el: ET.Element) -> list[int]:
    try:
        left, top = float(el.get("left", 0)), float(el.get("top", 0))
        width, height = float(el.get("width", 0)), float(el.get("height", 0))
    except ValueError:
        raise ValueError(f"malformed geometry on <{el.tag}>: left/top/width/height must be numbers") from None
    return [round(left), round(top), round(left + width), round(top + height)]


def _node(el: ET.Element, dialect: Dialect, depth: int) -> UiElement | None:
    if depth > _MAX_DEPTH:
        raise ValueError(f"page source nests deeper than {_MAX_DEPTH} elements")
    if dialect == "uiautomator2":
        if not _flag(el.get("displayed"), True):
            return None
        record: dict[str, Any] = {
            "class": el.get("class") or el.tag,
            "text": el.get("text") or "",
            "resource_id": el.get("resource-id") or "",
            "content_desc": el.get("content-desc") or "",
            "bounds": _uia2_bounds(el.get("bounds")),
        }
    else:
        if not _flag(el.get("visible"), True):
            return None
        record = {
            "class": el.tag,
            "text": el.get("text") or "",
            "resource_id": el.get("id") or "",
            "content_desc": el.get("content-desc") or "",
            "bounds": _fake_bounds(el),
        }
    record["clickable"] = _flag(el.get("clickable"), False)
    record["enabled"] = _flag(el.get("enabled"), True)
    record["password"] = _flag(el.get("password"), False)
    record["children"] = [n for c in el if (n := _node(c, dialect, depth + 1)) is not None]
    return record  # type: ignore[return-value]


def _parse_xml(xml: str) -> tuple[ET.Element, Dialect]:
    """Parse a page source; tell its dialect by the root (``hierarchy`` from UiAutomator2,
    ``AppiumAUT`` from the fake driver). Raises ``ValueError`` for anything else."""
    try:
        root = ET.fromstring(xml)  # expat ≥ 2.4 refuses entity-expansion bombs; no external entities
    except ET.ParseError as exc:
        raise ValueError(f"the page source is not well-formed XML: {exc}") from None
    if root.tag == "hierarchy":
        return root, "uiautomator2"
    if root.tag == "AppiumAUT":
        return root, "fake"
    raise ValueError(
        f"unknown page source root <{root.tag}>: expected <hierarchy> (UiAutomator2) or <AppiumAUT> (fake)"
    )


def _screen_from_root(root: ET.Element, dialect: Dialect) -> Screen:
    if dialect == "uiautomator2":
        elements = [n for c in root if (n := _node(c, dialect, 1)) is not None]
        width = int(root.get("width") or 0) or max((e["bounds"][2] for e in elements), default=0)
        height = int(root.get("height") or 0) or max((e["bounds"][3] for e in elements), default=0)
        return {"width": width, "height": height, "elements": elements}
    app = root.find("app")
    if app is None:
        raise ValueError("fake-driver page source without an <app> element")
    try:
        width, height = int(float(app.get("width", 0))), int(float(app.get("height", 0)))
    except ValueError:
        raise ValueError("the fake app's width/height must be numbers") from None
    elements = [n for c in app if (n := _node(c, dialect, 1)) is not None]
    return {"width": width, "height": height, "elements": elements}


def parse_page_source(xml: str) -> Screen:
    """The element tree of an Appium page source, as :class:`Screen`.

    Understands UiAutomator2's window hierarchy (``<hierarchy width= height=>`` whose elements carry
    ``class``, ``text``, ``resource-id``, ``content-desc``, ``bounds="[l,t][r,b]"``,
    ``clickable``, ``enabled``, ``displayed``) and the fake driver's app XML (``<AppiumAUT><app
    width= height=>``, the tag as class, ``id`` as resource-id, ``left``/``top``/``width``/
    ``height`` as bounds, ``visible``). Elements not displayed (``displayed``/``visible`` false)
    are dropped with their subtree. ``bounds`` are pixels, ``[left, top, right, bottom]``.

    Raises:
        ValueError: not well-formed XML, an unknown root, malformed bounds, or nesting deeper
            than 256 elements.
    """
    root, dialect = _parse_xml(xml)
    return _screen_from_root(root, dialect)


def _walk(elements: list[UiElement], prefix: str = "") -> Iterator[tuple[str, UiElement]]:
    for i, el in enumerate(elements):
        path = f"{prefix}{i}"
        yield path, el
        yield from _walk(el["children"], path + "/")


def flatten_screen(screen: Screen) -> dict[str, dict[str, Any]]:
    """Every element of ``screen`` by its child-index path (``"0"``, ``"0/2"``, ...), without
    ``children``, each with its ``id`` (the path): the ``ui.elements`` table verification reads."""
    return {
        path: {"id": path, **{k: v for k, v in el.items() if k != "children"}} for path, el in _walk(screen["elements"])
    }


# -------------------------------------------------------------------------------------------------
# Session
# -------------------------------------------------------------------------------------------------


class AppiumSessionError(PhoneEnvError, RuntimeError):
    """No Appium session: the server could not be reached or refused to create one. The message
    says which server and driver, why, and what to check."""


class SnapshotUnsupportedError(PhoneEnvError, NotImplementedError):
    """Appium drives the UI only and cannot snapshot a device's state; AVD snapshots belong to
    the emulator backend (``backend="emulator"``)."""


class AppiumSession:
    """One Appium (W3C WebDriver) session against an Appium server, with the lookups the UI tools
    need.

    Args:
        server_url: the Appium server, e.g. ``http://127.0.0.1:4723`` (Appium 2's default base path
            ``/``).
        options: the session's capabilities (:meth:`uiautomator2` and :meth:`fake` build them).
        command_timeout_s: HTTP read timeout of one command, seconds. A command that takes longer
            raises urllib3's ``ReadTimeoutError`` (mapped to ``timeout`` feedback); it is not
            retried, so a tap is never sent twice.
        find_timeout_s: how long a lookup waits for its element to appear, seconds (selenium's
            ``WebDriverWait``, polling every ``poll_s``); 0 looks once.
        poll_s: poll interval of waits, seconds.
        create_attempts: attempts to create the session (tenacity, exponential backoff from
            0.5 s) when the server is unreachable or refuses to create it.

    Raises:
        ValueError: an ``automationName`` this module does not speak (see :data:`DIALECTS`).
    """

    def __init__(
        self,
        server_url: str,
        options: AppiumOptions,
        *,
        command_timeout_s: float = 60.0,
        find_timeout_s: float = 0.0,
        poll_s: float = 0.1,
        create_attempts: int = 2,
    ) -> None:
        caps = options.to_capabilities()
        automation = str(caps.get("appium:automationName") or caps.get("automationName") or "")
        if automation.lower() not in DIALECTS:
            raise ValueError(f"automationName {automation!r} is not supported; use one of UiAutomator2, Fake")
        if create_attempts < 1:
            raise ValueError(f"create_attempts must be at least 1, not {create_attempts}")
        self.server_url = server_url.rstrip("/")
        self.options = options
        self.dialect: Dialect = DIALECTS[automation.lower()]
        self.command_timeout_s = command_timeout_s
        self.find_timeout_s = find_timeout_s
        self.poll_s = poll_s
        self.create_attempts = create_attempts
        self._driver: WebDriver | None = None

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def uiautomator2(
        cls,
        server_url: str,
        serial: str,
        *,
        app_package: str | None = None,
        app_activity: str | None = None,
        no_reset: bool = True,
        new_command_timeout_s: int = 300,
        **kwargs: Any,
    ) -> AppiumSession:
        """A session on an Android device or emulator through the UiAutomator2 driver.

        Args:
            server_url: the Appium server.
            serial: the adb serial (``emulator-5554``, ``127.0.0.1:5555``, a phone's serial),
                sent as ``appium:udid``.
            app_package / app_activity: the app to start (``appium:appPackage`` /
                ``appium:appActivity``); None leaves the device where it is.
            no_reset: keep the app's data between sessions (``appium:noReset``): fixtures, not
                Appium, decide the app's state.
            new_command_timeout_s: seconds without a command after which the server ends the
                session (``appium:newCommandTimeout``); an agent thinking longer loses it.
            **kwargs: :class:`AppiumSession` options.

        ``appium:autoGrantPermissions`` is off: runtime permissions are task fixtures.
        """
        require("device", "appium", feature="The Appium backend")
        from appium.options.android import UiAutomator2Options

        options = UiAutomator2Options()
        options.udid = serial
        if app_package is not None:
            options.app_package = app_package
        if app_activity is not None:
            options.app_activity = app_activity
        options.no_reset = no_reset
        options.new_command_timeout = new_command_timeout_s
        options.auto_grant_permissions = False
        return cls(server_url, options, **kwargs)

    @classmethod
    def fake(cls, server_url: str, app_path: str, **kwargs: Any) -> AppiumSession:
        """A session on Appium's fake driver (``@appium/fake-driver``) running the app XML at
        ``app_path`` (an absolute path on the server's machine): ``platformName: Fake``,
        ``appium:automationName: Fake``, ``appium:app``. ``**kwargs``: :class:`AppiumSession`
        options."""
        from appium.options.common.base import AppiumOptions

        options = AppiumOptions()
        options.set_capability("platformName", "Fake")
        options.set_capability("appium:automationName", "Fake")
        options.set_capability("appium:app", str(app_path))
        return cls(server_url, options, **kwargs)

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        """Whether a session was created and not quit (it may still have died on the server)."""
        return self._driver is not None

    @property
    def session_id(self) -> str | None:
        """The server's id of the current session, None when there is none."""
        return None if self._driver is None else self._driver.session_id

    @property
    def driver(self) -> WebDriver:
        """The live ``appium.webdriver.Remote``. Raises :class:`AppiumSessionError` before
        :meth:`start`."""
        if self._driver is None:
            raise AppiumSessionError(f"no Appium session on {self.server_url}: call start() (or reset the backend)")
        return self._driver

    def start(self) -> None:
        """Create the session (quitting any previous one), retried ``create_attempts`` times.

        Raises:
            AppiumSessionError: the server stayed unreachable or refused the session; the cause
                is chained.
        """
        require("device", "appium", feature="The Appium backend")
        import urllib3
        from appium import webdriver
        from appium.webdriver.client_config import AppiumClientConfig
        from selenium.common.exceptions import SessionNotCreatedException
        from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

        self.quit()
        retries = urllib3.Retry(total=2, connect=2, read=0, status=0, other=0, redirect=0, backoff_factor=0.05)
        config = AppiumClientConfig(
            self.server_url,
            timeout=self.command_timeout_s,
            init_args_for_pool_manager={"init_args_for_pool_manager": {"retries": retries}},
        )
        transient = (urllib3.exceptions.HTTPError, OSError, SessionNotCreatedException)
        try:
            for attempt in Retrying(
                stop=stop_after_attempt(self.create_attempts),
                wait=wait_exponential(multiplier=0.5, max=5),
                retry=retry_if_exception_type(transient),
                reraise=True,
            ):
                with attempt:
                    self._driver = webdriver.Remote(self.server_url, options=self.options, client_config=config)
        except Exception as exc:
            raise AppiumSessionError(
                f"could not start a {self.dialect} session on the Appium server at {self.server_url} "
                f"after {self.create_attempts} attempt(s): {type(exc).__name__}: {_short(exc)}. Check that the "
                "server runs (GET /status) and that the driver is installed (`appium driver list --installed`)"
            ) from exc

    def quit(self) -> None:
        """End the session; idempotent, and quiet when the server is already gone."""
        driver, self._driver = self._driver, None
        if driver is None:
            return
        try:
            driver.quit()
        except Exception as exc:  # the server may be dead: nothing left to end
            log.debug("quitting the Appium session failed: %s", exc)

    def __enter__(self) -> AppiumSession:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.quit()

    # -- lookups ------------------------------------------------------------------------------
    def locator(self, selector: Mapping[str, str]) -> tuple[str, str]:
        """The ``(by, value)`` that finds elements whose attributes equal all of ``selector``
        (keys ``text``, ``resource_id``, ``content_desc``): a ``-android uiautomator``
        ``new UiSelector()`` chain on UiAutomator2, an XPath on the fake driver.

        Raises:
            ValueError: an empty selector or an unknown key.
        """
        if not selector or set(selector) - set(_FAKE_ATTR):
            raise ValueError(f"a selector needs keys among {sorted(_FAKE_ATTR)}, got {sorted(selector)}")
        if self.dialect == "uiautomator2":
            from appium.webdriver.common.appiumby import AppiumBy

            chain = "".join(f".{_UIA2_METHOD[k]}({uiselector_literal(v)})" for k, v in selector.items())
            return AppiumBy.ANDROID_UIAUTOMATOR, f"new UiSelector(){chain}"
        conds = " and ".join(f"@{_FAKE_ATTR[k]}={xpath_literal(v)}" for k, v in selector.items())
        return "xpath", f"//*[{conds}]"

    def find(self, selector: Mapping[str, str], timeout_s: float | None = None) -> list[WebElement]:
        """Elements matching ``selector`` (see :meth:`locator`), in document order; waits up to
        ``timeout_s`` (default ``find_timeout_s``) seconds for at least one, then returns ``[]``.
        Transport and session failures propagate as Selenium/urllib3 exceptions."""
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.wait import WebDriverWait

        by, value = self.locator(selector)
        wait = WebDriverWait(self.driver, self.find_timeout_s if timeout_s is None else timeout_s, self.poll_s)
        try:
            return wait.until(lambda d: d.find_elements(by, value))
        except TimeoutException:
            return []

    def page_source(self) -> str:
        """The page source, as the driver returns it (XML text)."""
        return self.driver.page_source

    def screen(self) -> Screen:
        """The current element tree (:func:`parse_page_source` of the page source). On the fake
        driver, each ``MockInputField``'s ``text`` is its live value (the page source there is the
        app XML as loaded; typed values live on the elements): one request more, plus one per
        field."""
        root, dialect = _parse_xml(self.page_source())
        if dialect == "fake":
            fields = list(root.iter("MockInputField"))
            if fields:
                live = self.driver.find_elements("class name", "MockInputField")
                if len(live) != len(fields):
                    raise ValueError(f"the fake app has {len(fields)} input fields but the driver found {len(live)}")
                for node, element in zip(fields, live, strict=True):
                    node.set("text", element.text)
        return _screen_from_root(root, dialect)

    def screenshot(self) -> np.ndarray:
        """The screen as ``uint8`` (H, W, 3): the driver's PNG screenshot decoded with Pillow."""
        from PIL import Image

        with Image.open(io.BytesIO(self.driver.get_screenshot_as_png())) as img:
            return np.asarray(img.convert("RGB"), dtype=np.uint8)


def _short(exc: BaseException, limit: int = 300) -> str:
    """An exception's first line (Selenium appends server stack traces), at most ``limit`` chars."""
    msg = getattr(exc, "msg", None) or str(exc)
    first = msg.strip().splitlines()[0] if msg.strip() else type(exc).__name__
    return first[:limit]


# -------------------------------------------------------------------------------------------------
# Exceptions → feedback
# -------------------------------------------------------------------------------------------------


def exception_feedback(exc: BaseException, tool: str, *, target: str | None = None, server: str = "") -> Feedback:
    """The feedback for an exception raised while ``tool`` talked to Appium.

    ============================================================ ===========================
    exception                                                    feedback
    ============================================================ ===========================
    ``NoSuchElementException``, ``StaleElementReferenceException``  ``not_found`` (hint:
                                                                 ``ui.read_screen``)
    ``ElementNotInteractableException``, ``InvalidElementState``,  ``precondition_failed``
    ``ElementClickIntercepted``, ``UnexpectedAlertPresent``
    ``InvalidSessionIdException``, ``NoSuchDriverException``     ``device_error`` (session lost)
    Selenium ``TimeoutException``; urllib3 read/connect timeouts ``timeout``
    connection refused/reset, other ``WebDriverException``,      ``device_error``
    ``OSError``, :class:`AppiumSessionError`
    ``InvalidSelectorException``, anything else                  ``internal_error`` (logged)
    ============================================================ ===========================

    Args:
        exc: the exception.
        tool: the tool's name, for messages.
        target: the element the call was about (``"text='Sign in'"``), for ``not_found``.
        server: the Appium server's URL, for infrastructure messages.
    """
    import urllib3
    from selenium.common import exceptions as se

    where = f" (Appium server {server})" if server else ""
    if isinstance(exc, (se.NoSuchElementException, se.StaleElementReferenceException)):
        return feedback.not_found("element", target or "the element", "ui.read_screen")
    if isinstance(
        exc,
        (
            se.ElementNotInteractableException,
            se.InvalidElementStateException,
            se.ElementClickInterceptedException,
            se.UnexpectedAlertPresentException,
        ),
    ):
        return feedback.precondition_failed(
            f"the element with {target} must be visible and interactable"
            if target
            else "the element must be visible and interactable",
            "call ui.read_screen: close what covers it or wait for it with ui.wait_for, then retry",
        )
    if isinstance(exc, se.InvalidSelectorException):
        log.error("%s built an invalid selector: %s", tool, _short(exc))
        return feedback.internal_error(tool, "the Appium backend (invalid selector)")
    if isinstance(exc, (se.InvalidSessionIdException, se.NoSuchDriverException)):
        return feedback.device_error(f"the Appium session was lost{where}: {_short(exc)}")
    if isinstance(exc, se.TimeoutException):
        return feedback.timeout(f"{tool}{where}: {_short(exc)}")
    if isinstance(exc, AppiumSessionError):
        return feedback.device_error(_short(exc))
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
        exc = exc.reason
    if isinstance(exc, urllib3.exceptions.NewConnectionError):  # a ConnectTimeoutError subclass: test first
        return feedback.device_error(f"cannot reach the Appium server{where}: connection refused")
    if isinstance(exc, (urllib3.exceptions.TimeoutError, TimeoutError)):
        return feedback.timeout(f"{tool} got no answer from the Appium server{where} in time")
    if isinstance(exc, (urllib3.exceptions.HTTPError, OSError, se.WebDriverException)):
        return feedback.device_error(f"{tool} failed on the Appium server{where}: {type(exc).__name__}: {_short(exc)}")
    log.error("%s raised an unexpected %s", tool, type(exc).__name__, exc_info=exc)
    return feedback.internal_error(tool, "the Appium backend")


# -------------------------------------------------------------------------------------------------
# The UI tools
# -------------------------------------------------------------------------------------------------

Text = Annotated[str, Field(min_length=1, max_length=500)]
OptionalText = Annotated[str | None, Field(min_length=1, max_length=500)]


class AppiumUi:
    """The UI tools (``ui.tap``, ``ui.type``, ``ui.read_screen``, ``ui.back``, ``ui.wait_for``)
    over one :class:`AppiumSession`: specs, validation (the project's ``@tool`` machinery) and
    dispatch, for any backend to offer.

    ``tools()`` holds the tools the session's driver supports (the fake driver has no ``back``);
    ``call(name, arguments)`` runs one with validated arguments and returns a :class:`Feedback`,
    never raising.
    """

    OFFERED: ClassVar[Mapping[Dialect, tuple[str, ...]]] = {
        "uiautomator2": ("ui.back", "ui.read_screen", "ui.tap", "ui.type", "ui.wait_for"),
        "fake": ("ui.read_screen", "ui.tap", "ui.type", "ui.wait_for"),
    }
    """Tools offered per driver. The fake driver answers ``back`` with ``NotYetImplementedError``."""

    def __init__(self, session: AppiumSession) -> None:
        self.session = session
        self._tools = {name: UI_TOOLS[name] for name in self.OFFERED[session.dialect]}

    def tools(self) -> Mapping[str, ToolDef]:
        """The tools offered with this session's driver, by name (the same mapping every call)."""
        return self._tools

    def call(self, name: str, arguments: dict[str, Any]) -> Feedback:
        """Run tool ``name`` with ``arguments`` (already validated against its schema).

        Never raises: a tool's own error becomes its feedback; Appium, Selenium and transport
        exceptions are mapped by :func:`exception_feedback`.
        """
        entry = self._tools.get(name)
        if entry is None:
            return feedback.unknown_tool(name, [e.spec for e in self._tools.values()])
        try:
            result = entry.method(self, **arguments)
        except ToolError as exc:
            return from_tool_error(exc, entry.spec.parameters)
        except Exception as exc:
            sel = {k: arguments[k] for k in ("text", "resource_id", "content_desc") if arguments.get(k)}
            if name == "ui.type":
                sel = {arguments.get("by", "resource_id"): arguments.get("into", "")}
            target = _describe(sel) if sel else None
            return exception_feedback(exc, name, target=target, server=self.session.server_url)
        if name == "ui.type" and result["hidden"]:
            return Feedback(ok=True, result=result, redacted=["text"])
        return Feedback(ok=True, result=result)

    # -- helpers ------------------------------------------------------------------------------
    def _not_found(self, selector: Mapping[str, str], waited: float | None = None) -> ToolError:
        """A ``not_found`` error for ``selector``, with the closest values on screen as
        candidates (best effort: without them if the screen cannot be read)."""
        pool: list[str] = []
        try:
            for _, el in _walk(self.session.screen()["elements"]):
                pool.extend(v for k in selector if (v := el[k]))  # type: ignore[literal-required]
        except Exception as exc:  # the candidates are a courtesy; the miss stands on its own
            log.debug("no candidates for a missed element: %s", exc)
        wanted = " + ".join(selector.values())
        near = difflib.get_close_matches(wanted, list(dict.fromkeys(pool)), n=3, cutoff=0.6)
        fb = feedback.not_found("element with " + " and ".join(selector), wanted, "ui.read_screen", near or None)
        if waited is not None:
            fb = fb.model_copy(
                update={"message": f"no element with {_describe(selector)} appeared within {waited:g} s"}
            )
        return to_tool_error(fb)

    def _hides_text(self, element: WebElement, selector: Mapping[str, str]) -> bool:
        """Whether ``element`` (found by ``selector``) is a password field: its ``password``
        attribute, which UiAutomator2 reports per element (one call); a driver that reports
        none (the fake driver keeps it in its app XML only) is asked for the page source. A
        field that cannot be read counts as a password field: masking a plain field's text
        loses less than showing a password."""
        try:
            value = element.get_attribute("password")
            if value in ("true", "false"):
                return value == "true"
            elements = self.session.screen()["elements"]
        except Exception as exc:
            log.debug("password attribute unreadable, treating the field as a password field: %s", exc)
            return True
        for _, el in _walk(elements):
            if all(el[k] == v for k, v in selector.items()):  # type: ignore[literal-required]
                return el["password"]
        return False

    def _element(self, selector: Mapping[str, str]) -> tuple[WebElement, int]:
        found = self.session.find(selector)
        if not found:
            raise self._not_found(selector)
        element = found[0]
        if not element.is_enabled():
            raise to_tool_error(
                feedback.precondition_failed(
                    f"the element with {_describe(selector)} is disabled",
                    "call ui.read_screen to see what enables it (or ui.wait_for it), then retry",
                )
            )
        return element, len(found)

    # -- tools --------------------------------------------------------------------------------
    @tool(effect="write")
    def tap(
        self, text: OptionalText = None, resource_id: OptionalText = None, content_desc: OptionalText = None
    ) -> Tapped:
        """Tap the on-screen element that has all the given attributes (give at least one).

        Values must match exactly, as ui.read_screen shows them; when several elements match,
        the first in screen order is tapped.

        Args:
            text: the element's visible text, e.g. 'Sign in'.
            resource_id: the element's resource id, e.g. 'com.example.notes:id/save'.
            content_desc: the element's accessibility label (content description).
        """
        selector = {
            k: v for k, v in (("text", text), ("resource_id", resource_id), ("content_desc", content_desc)) if v
        }
        if not selector:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "ui.tap needs at least one of text, resource_id, content_desc",
                hint="pass the element's text, resource_id or content_desc as ui.read_screen shows them",
                path="",
            )
        element, matches = self._element(selector)
        element.click()
        return {"tapped": _describe(selector), "matches": matches}

    @tool(effect="write", name="type")
    def type_text(
        self,
        text: Annotated[str, Field(max_length=5000)],
        into: Text,
        by: Literal["resource_id", "text", "content_desc"] = "resource_id",
    ) -> Typed:
        """Type text into a text field, replacing what it held; returns the field's text read back.

        Args:
            text: the text to type (any characters, newlines included; '' clears the field).
            into: the field, by its resource id (default), text or accessibility label, as ui.read_screen shows it.
            by: which attribute 'into' names: 'resource_id', 'text' or 'content_desc'.
        """
        selector = {by: into}
        element, _ = self._element(selector)
        hidden = self._hides_text(element, selector)
        element.clear()
        if text:
            element.send_keys(text)
        return {"field": _describe(selector), "text": "***" if hidden and text else element.text, "hidden": hidden}

    @tool()
    def read_screen(self) -> Screen:
        """Read the screen as an element tree: each element's class, text, resource_id,
        content_desc, bounds [left, top, right, bottom] in pixels, clickable, enabled and children.
        Use the values it shows with ui.tap and ui.type."""
        return self.session.screen()

    @tool(effect="write")
    def back(self) -> Pressed:
        """Press the system Back button (close a dialog or keyboard, or go to the previous screen)."""
        self.session.driver.back()
        return {"pressed": "back"}

    @tool()
    def wait_for(self, text: Text, timeout_s: Annotated[float, Field(ge=0, le=60)] = 10.0) -> Appeared:
        """Wait until an element with exactly this text is on screen (after a tap that loads a screen).

        Args:
            text: the exact text to wait for.
            timeout_s: how long to wait at most, in seconds (0 to 60).
        """
        start = time.monotonic()
        if not self.session.find({"text": text}, timeout_s=timeout_s):
            raise self._not_found({"text": text}, waited=timeout_s)
        return {"found": _describe({"text": text}), "waited_s": round(time.monotonic() - start, 3)}


UI_TOOLS: Mapping[str, ToolDef] = {
    d.spec.name: d
    for d in (
        build_tool("ui", Domain.DEVICE, m)
        for m in (AppiumUi.back, AppiumUi.read_screen, AppiumUi.tap, AppiumUi.type_text, AppiumUi.wait_for)
    )
}
"""Every UI tool by name (``ui.back``, ``ui.read_screen``, ``ui.tap``, ``ui.type``,
``ui.wait_for``); :attr:`AppiumUi.OFFERED` says which a driver gets."""


# -------------------------------------------------------------------------------------------------
# The backend
# -------------------------------------------------------------------------------------------------

_UNAPPLIED_FIXTURES = ("records", "permissions", "accounts", "simulated")


class AppiumBackend(Backend):
    """A world reached only through its UI: the :class:`AppiumUi` tools over one session.

    ``reset`` starts a fresh session (the fake driver reloads its app XML; UiAutomator2 starts
    ``appPackage``/``appActivity``). It applies no data fixtures: a task that seeds records,
    permissions, accounts or simulated results is refused (those need the adb device backend,
    which can offer these same tools through :class:`AppiumUi`). Verification reads the table
    ``ui.elements`` (:func:`flatten_screen` of the screen). The clock is the host's (a device
    keeps network time), shown in the task's timezone. Snapshots are not supported
    (:class:`SnapshotUnsupportedError`). Tasks run here if they name ``"appium"`` in ``backends``.

    Args:
        session: the session to drive (started on the first ``reset``); the backend owns it and
            quits it on ``close``.
    """

    name = "appium"

    def __init__(self, session: AppiumSession) -> None:
        self.session = session
        self.ui = AppiumUi(session)
        self._tz: dt.tzinfo = dt.timezone.utc
        self._shape: tuple[int, int, int] = (640, 360, 3)

    def reset(self, task: TaskSpec) -> None:
        """Start a fresh session for ``task``.

        Raises:
            ValueError: the task seeds fixtures this backend cannot apply.
            AppiumSessionError: no session could be created.
        """
        fx = task.fixtures
        unapplied = [name for name in _UNAPPLIED_FIXTURES if getattr(fx, name)]
        if unapplied:
            raise ValueError(
                f"task {task.id!r} seeds {', '.join(unapplied)}, which the appium backend cannot apply: "
                "run it on a device backend that applies fixtures over adb"
            )
        self._tz = ZoneInfo(fx.timezone)
        self.session.start()

    def tools(self) -> Mapping[str, ToolDef]:
        """The UI tools the session's driver supports."""
        return self.ui.tools()

    def call(self, name: str, arguments: dict[str, Any]) -> Feedback:
        """Run a UI tool (see :meth:`AppiumUi.call`); never raises."""
        return self.ui.call(name, arguments)

    def snapshot(self) -> Any:
        """Not supported: raises :class:`SnapshotUnsupportedError`."""
        raise SnapshotUnsupportedError(
            "the appium backend cannot snapshot a device; use backend='emulator' for AVD snapshots"
        )

    def restore(self, snapshot: Any) -> None:
        """Not supported: raises :class:`SnapshotUnsupportedError`."""
        raise SnapshotUnsupportedError(
            "the appium backend cannot restore a device; use backend='emulator' for AVD snapshots"
        )

    def tables(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """``{"ui.elements": flatten_screen(screen)}`` read live. When the screen cannot be read
        (the session or server is gone), logs a warning and returns an empty ``ui.elements``
        so that verification ends the episode instead of raising."""
        try:
            screen = self.session.screen()
        except Exception as exc:
            log.warning("cannot read the screen for verification: %s", exc)
            return {"ui.elements": {}}
        return {"ui.elements": flatten_screen(screen)}

    def clock_seconds(self) -> float:
        """The host's clock, seconds since the Unix epoch."""
        return time.time()

    def format_clock(self, seconds: float) -> str:
        """``seconds`` in the task's timezone, ``YYYY-MM-DDTHH:MM:SS``."""
        return dt.datetime.fromtimestamp(seconds, self._tz).replace(tzinfo=None).isoformat(timespec="seconds")

    def screenshot(self) -> np.ndarray:
        """The device screen, ``uint8`` (H, W, 3). When it cannot be taken, logs a warning and
        returns a black frame of the last size seen (observations never raise)."""
        try:
            frame = self.session.screenshot()
        except Exception as exc:
            log.warning("cannot take a screenshot: %s", exc)
            return np.zeros(self._shape, dtype=np.uint8)
        self._shape = frame.shape  # type: ignore[assignment]
        return frame

    def close(self) -> None:
        """Quit the session. Idempotent."""
        self.session.quit()
