"""System tools: installed apps, runtime permission requests, accounts, notifications, screen.

Tables (all built from the task's fixtures by the sandbox): ``system.apps``,
``system.permissions`` (id ``app/permission``), ``system.accounts`` (id = app),
``system.notifications`` (``system.notify`` posts one from the assistant, app ``"assistant"``).

Credentials: ``system.sign_in`` takes the password from the fixtures' vault (the phone's password
manager) when none is given; a password given as an argument is a secret parameter, shown as
``***`` in traces. No result ever carries a password.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App, id_key, listing
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import AndroidDriver, PackageTable, PermissionTable
from phoneenv.tools import ToolError, tool

AppName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=40,
        description="App name as in system.list_apps, e.g. 'phone'",
    ),
]


class InstalledApp(TypedDict):
    """An installed app."""

    id: str
    name: str
    title: str
    package: str


class AppList(TypedDict):
    """Installed apps."""

    apps: list[InstalledApp]


class PermissionState(TypedDict):
    """A runtime permission of an app."""

    app: str
    permission: str
    granted: bool


class AccountState(TypedDict):
    """An app's account and whether it is signed in."""

    app: str
    account: str | None
    signed_in: bool


class Notification(TypedDict):
    """A notification."""

    id: str
    app: str
    title: str
    text: str
    time: str
    read: bool


class AccountList(TypedDict):
    """App accounts."""

    accounts: list[AccountState]


class NotificationList(TypedDict):
    """Notifications, newest first."""

    notifications: list[Notification]


class Opened(TypedDict):
    """The app now in the foreground."""

    foreground: str


class Capture(TypedDict):
    """A screenshot was taken; the image rides in the feedback's ``image``."""

    foreground: str
    width: int
    height: int


ASSISTANT = "assistant"
"""The ``app`` of the notifications ``system.notify`` posts."""

ANDROID = AndroidDriver(
    tables={"permissions": PermissionTable(), "apps": PackageTable()},
    tools=("system.check_permission", "system.list_apps", "system.open_app", "system.request_permission"),
    unavailable={
        "system.sign_in": "no app with a driver needs an account; a device login would restore the app's data "
        "(rooted/google_apis image) or go through the app's own sign-in UI",
        "system.sign_out": "as system.sign_in",
        "system.list_accounts": "as system.sign_in",
        "system.list_notifications": "Android has no read/unread state for a notification to read back",
        "system.dismiss_notification": "Android has no read/unread state for a notification to read back",
        "system.notify": "a notification posted with `cmd notification post` comes from the shell, not the "
        "assistant, and has no read state to read back (as system.list_notifications)",
    },
    notes="Permissions: pm grant|revoke and dumpsys package; apps: pm list packages; system.request_permission "
    "applies the simulated user's answer from the fixtures with pm grant.",
)
"""System services on a device: package manager permissions and the installed packages."""


class System(App):
    """Android system services."""

    name = "system"
    title = "System"
    domain = Domain.DEVICE
    package = "android"
    system = True
    tables: ClassVar[dict[str, str]] = {"notifications": "ntf_"}
    records: ClassVar[dict[str, Any]] = {"notifications": Notification}
    transient: ClassVar[tuple[str, ...]] = ("notifications",)
    android = ANDROID

    def _app(self, app: str) -> dict[str, Any]:
        rec = self.phone.state.get("system.apps", app)
        if rec is None:
            names = sorted(self.phone.state.table("system.apps"))
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"no installed app {app!r}",
                hint="call system.list_apps",
                candidates=names,
            )
        return rec

    @tool()
    def list_apps(self) -> AppList:
        """List the installed apps."""
        apps = [r for r in self.phone.state.table("system.apps").values() if not self.phone.apps[r["id"]].system]
        return {"apps": listing(apps, key=lambda r: r["name"])}

    @tool()
    def open_app(self, app: AppName) -> Opened:
        """Bring an app to the foreground (its main screen).

        Args:
            app: The app's name.
        """
        self._app(app)
        meta = self.phone.state.meta
        meta["foreground"] = app
        meta["view"] = None
        return {"foreground": app}

    @tool()
    def check_permission(
        self,
        app: AppName,
        permission: Annotated[str, Field(min_length=1, max_length=100)],
    ) -> PermissionState:
        """Whether an app holds a runtime permission.

        Args:
            app: The app's name.
            permission: Android permission, e.g. "android.permission.CALL_PHONE".
        """
        self._app(app)
        rec = self.phone.state.get("system.permissions", f"{app}/{permission}")
        if rec is None:
            declared = sorted(
                r["permission"] for r in self.phone.state.table("system.permissions").values() if r["app"] == app
            )
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"{app} does not declare {permission}",
                candidates=declared,
            )
        return {"app": app, "permission": permission, "granted": rec["granted"]}

    @tool(effect=Effect.WRITE, writes=("permissions",))
    def request_permission(
        self,
        app: AppName,
        permission: Annotated[str, Field(min_length=1, max_length=100)],
    ) -> PermissionState:
        """Ask the user to grant a runtime permission to an app (shows the system dialog).

        Args:
            app: The app's name.
            permission: Android permission, e.g. "android.permission.SEND_SMS".
        """
        self.check_permission(app, permission)
        rid = f"{app}/{permission}"
        rec = self.phone.state.get("system.permissions", rid)
        assert rec is not None
        if rec["granted"]:
            return {"app": app, "permission": permission, "granted": True}
        if not self.phone.fixtures.permission_responses.get(rid, True):
            raise ToolError(
                ErrorKind.PERMISSION_DENIED,
                f"the user denied {permission} to {app}",
                hint="tell the user the task cannot be done without it, or find another way",
            )
        self.patch_permission(rid, True)
        return {"app": app, "permission": permission, "granted": True}

    def patch_permission(self, rid: str, granted: bool) -> None:
        """Set the permission record ``rid`` (``app/permission``) to ``granted``."""
        self.phone.state.update("system.permissions", rid, granted=granted)

    @tool()
    def list_accounts(self) -> AccountList:
        """List app accounts and whether each is signed in."""
        accounts = sorted(self.phone.state.table("system.accounts").values(), key=lambda r: r["app"])
        return {"accounts": [{"app": r["app"], "account": r["account"], "signed_in": r["signed_in"]} for r in accounts]}

    @tool(effect=Effect.WRITE, secret=("password",), writes=("accounts",))
    def sign_in(
        self,
        app: AppName,
        account: Annotated[str, Field(min_length=1, max_length=100)],
        password: Annotated[str, Field(min_length=1, max_length=200)] | None = None,
    ) -> AccountState:
        """Sign an app in to an account. Without a password, the saved one from the phone's
        password manager is used.

        Args:
            app: The app's name.
            account: The account, usually an email address.
            password: The password, if not saved on the phone.
        """
        rec = self.phone.state.get("system.accounts", app)
        if rec is None:
            self._app(app)  # an account row may name an app served by another world (a simulated one)
            raise ToolError(ErrorKind.PRECONDITION_FAILED, f"{app} has no account to sign in to")
        if rec["account"] is not None and rec["account"].casefold() != account.casefold():
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"{account!r} is not an account of this user for {app}",
                hint="call system.list_accounts to see the user's accounts",
                candidates=[rec["account"]],
            )
        vault = self.phone.fixtures.vault
        saved = next((v for k, v in vault.items() if k.casefold() == account.casefold()), None)
        if saved is None:
            raise ToolError(
                ErrorKind.LOGIN_REQUIRED,
                f"no saved password for {account}",
                hint="ask the user to sign in",
            )
        if password is not None and password != saved.get_secret_value():
            raise ToolError(
                ErrorKind.PERMISSION_DENIED,
                "wrong password",
                hint="omit the password to use the saved one",
            )
        new = self.phone.state.update("system.accounts", app, account=rec["account"] or account, signed_in=True)
        return {"app": app, "account": new["account"], "signed_in": True}

    @tool(effect=Effect.WRITE, writes=("accounts",))
    def sign_out(self, app: AppName) -> AccountState:
        """Sign an app out of its account.

        Args:
            app: The app's name.
        """
        rec = self.phone.state.get("system.accounts", app)
        if rec is None:
            raise ToolError(ErrorKind.NOT_FOUND, f"{app} has no account")
        self.phone.state.update("system.accounts", app, signed_in=False)
        return {"app": app, "account": rec["account"], "signed_in": False}

    @tool()
    def list_notifications(self, unread_only: bool = False) -> NotificationList:
        """List notifications, newest first.

        Args:
            unread_only: Only notifications not yet marked read.
        """
        recs = [r for r in self.t("notifications").values() if not (unread_only and r["read"])]
        recs.sort(key=lambda r: (r["time"], r["id"]), reverse=True)
        return {"notifications": listing(recs)}

    @tool(name="notify", effect=Effect.WRITE, writes=("notifications",))
    def post_notification(
        self,
        title: Annotated[str, Field(min_length=1, max_length=100)],
        text: Annotated[str, Field(min_length=1, max_length=1000)],
    ) -> Notification:
        """Show the user a notification from the assistant, e.g. to pass on a reminder that
        came due. It is listed by system.list_notifications with the app "assistant".

        Args:
            title: The headline, e.g. "Reminder".
            text: The message, e.g. "Call the dentist about Thursday".
        """
        clean = " ".join(title.split()), text.strip()
        for arg, value in zip(("title", "text"), clean, strict=True):
            if not value:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS, f"the {arg} is blank", hint=f"write the {arg}", path=f"/{arg}"
                )
        self.phone.notify(ASSISTANT, *clean)
        rid = max(self.t("notifications"), key=id_key)
        return dict(self.t("notifications")[rid])  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, writes=("notifications",))
    def dismiss_notification(self, notification_id: str) -> Notification:
        """Mark a notification read.

        Args:
            notification_id: The notification's id.
        """
        self.require(
            "notifications",
            notification_id,
            "notification",
            "system.list_notifications",
        )
        return dict(self.patch("notifications", notification_id, read=True))  # type: ignore[return-value]


class Screen(App):
    """The screen: a screenshot of the foreground app as a tool result."""

    name = "screen"
    title = "Screen"
    domain = Domain.DEVICE
    package = "com.android.systemui"
    system = True
    android = AndroidDriver(tables={}, tools=("screen.capture",))

    @tool(returns_image=True)
    def capture(self) -> Capture:
        """Take a screenshot of the current screen; the image is returned with the result."""
        meta = self.phone.state.meta
        width, height = self.phone.screen_size
        return {
            "foreground": meta.get("foreground", "launcher"),
            "width": width,
            "height": height,
        }
