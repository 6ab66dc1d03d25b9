"""The virtual device's package manager and dumps: ``pm grant|revoke|clear|list packages|path|uninstall``
and ``dumpsys package|activity|telephony.registry``. :class:`PackageCommands` is a part of
:class:`~phoneenv.farm.virtual.VirtualDevice`."""

from __future__ import annotations

from phoneenv.app import App
from phoneenv.farm.shell import Invocation
from phoneenv.farm.virtual.constants import (
    DATA_DIR,
    FIRST_APP_UID,
    LAUNCHER,
)
from phoneenv.phone import Phone

__all__ = ["PackageCommands"]


class PackageCommands:
    """``pm`` and ``dumpsys`` (module docstring)."""

    phone: Phone
    _classes: dict[str, type[App]]

    # -- packages and permissions ----------------------------------------------------------------
    def _app_for(self, package: str) -> str | None:
        return self._app_of_package(package)

    def _pm(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        while args[1:2] == ["--user"] and len(args) > 2:
            args = [args[0], *args[3:]]
        verb = args[0] if args else ""
        if verb in ("grant", "revoke"):
            if len(args) != 3:
                inv.error(f"Error: no permission specified for {verb}")
                return 1
            pkg, perm = args[1], args[2]
            app = self._app_for(pkg)
            if app is None:
                inv.error(
                    f"Exception occurred while executing '{verb}':\njava.lang.IllegalArgumentException: Unknown package: {pkg}"
                )
                return 255
            rid = f"{app}/{perm}"
            if self.phone.state.get("system.permissions", rid) is None:
                inv.error(
                    f"Exception occurred while executing '{verb}':\njava.lang.SecurityException: "
                    f"Package {pkg} has not requested permission {perm}"
                )
                return 255
            self.phone.state.update("system.permissions", rid, granted=verb == "grant")
            return 0
        if verb == "list" and args[1:2] == ["packages"]:
            flt = next((a for a in args[2:] if not a.startswith("-")), "")
            inv.write("".join(f"package:{p}\n" for p in self._installed_packages() if flt in p))
            return 0
        if verb == "path" and len(args) == 2:
            if args[1] not in self._installed_packages():
                return 1
            inv.write(f"package:/data/app/~~phoneenv/{args[1]}-1/base.apk\n")
            return 0
        if verb == "clear" and len(args) == 2:
            app = self._app_for(args[1])
            if app is None:
                inv.error("Failed")
                return 1
            for rid, rec in list(self.phone.state.table("system.permissions").items()):
                if rec["app"] == app:
                    self.phone.state.update("system.permissions", rid, granted=False)
            pkg = args[1]
            if pkg in self._private:
                home = f"{DATA_DIR}/{pkg}"
                if self.files.exists(home):
                    self.files.remove(home, recursive=True)
                for path in [p for p in (*self.owners, *self.labels) if p == home or p.startswith(home + "/")]:
                    self.owners.pop(path, None)
                    self.labels.pop(path, None)
                self.files.mkdir(home, 0o700, mtime=int(self.now))
                self._own(home, pkg)
                self.import_data(pkg)  # no files: every private table empty, signed out
            if self.foreground == args[1]:
                self.foreground, self.compose = LAUNCHER, None
                self._sync_meta()
            inv.write("Success\n")
            return 0
        if verb == "uninstall" and len(args) == 2:
            app = self._app_for(args[1])
            if app is None:
                inv.write("Failure [DELETE_FAILED_INTERNAL_ERROR]\n")
                return 1
            self.phone.state.delete("system.apps", app)
            for rid, rec in list(self.phone.state.table("system.permissions").items()):
                if rec["app"] == app:
                    self.phone.state.delete("system.permissions", rid)
            inv.write("Success\n")
            return 0
        inv.error(f"pm: unsupported: {' '.join(args)}")
        return 1

    def _dumpsys(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        if not args:
            inv.write("Currently running services:\n  activity\n  package\n  telephony.registry\n")
            return 0
        service, rest = args[0], args[1:]
        if service == "package":
            pkg = next((a for a in rest if not a.startswith("-")), None)
            app = self._app_for(pkg) if pkg else None
            if app is None:
                inv.write(f"Unable to find package: {pkg}\n")
                return 0
            inv.write(self._package_dump(app))
            return 0
        if service == "activity":
            what = rest[0] if rest else "activities"
            activity = self._activity()
            if what in ("activities", "a"):
                inv.write(
                    "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\n"
                    "Display #0 (activities from top to bottom):\n"
                    f"  ResumedActivity: ActivityRecord{{7f3a21 u0 {activity} t7}}\n"
                    f"  mResumedActivity: ActivityRecord{{7f3a21 u0 {activity} t7}}\n"
                )
                return 0
            if what == "top":
                inv.write(f"TASK 7 id=7 userId=0\n  ACTIVITY {activity} 7f3a21 pid=4321\n")
                return 0
            inv.write(f"Bad activity command, or no activities match: {what}\n")
            return 0
        if service == "telephony.registry":
            inv.write("last known state:\n  Phone Id=0\n    mCallState=0\n    mCallIncomingNumber=\n")
            return 0
        inv.write(f"Can't find service: {service}\n")
        return 0

    def _activity(self) -> str:
        if self.compose is not None:
            return f"{self._classes[self.compose.app].package}/.ui.conversation.ConversationActivity"
        if self.foreground == LAUNCHER:
            return f"{LAUNCHER}/.uioverrides.QuickstepLauncher"
        return f"{self.foreground}/.MainActivity"

    def _package_dump(self, app: str) -> str:
        cls = self._classes[app]
        perms = sorted(
            (r for r in self.phone.state.table("system.permissions").values() if r["app"] == app),
            key=lambda r: r["permission"],
        )
        lines = [
            "Packages:",
            f"  Package [{cls.package}] (4c1d2e0):",
            f"    userId={self.uids.get(cls.package, FIRST_APP_UID)}",
            f"    pkg=Package{{9a4f1 {cls.package}}}",
            f"    codePath=/data/app/~~phoneenv/{cls.package}-1",
            "    versionCode=1 minSdk=26 targetSdk=34",
            "    versionName=1.0",
            "    requested permissions:",
            *(f"      {r['permission']}" for r in perms),
            "    install permissions:",
            "      android.permission.INTERNET: granted=true",
            "    User 0: ceDataInode=0 installed=true hidden=false suspended=false stopped=false notLaunched=false enabled=0",
            "      gids=[3003]",
            "      runtime permissions:",
            *(
                f"        {r['permission']}: granted={'true' if r['granted'] else 'false'}, "
                "flags=[ USER_SENSITIVE_WHEN_GRANTED|USER_SENSITIVE_WHEN_DENIED]"
                for r in perms
            ),
            "",
        ]
        return "\n".join(lines)
