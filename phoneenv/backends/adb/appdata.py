"""Apps' private data on the device: which apps a reset ``pm clear``-s (:meth:`AppData.private_apps`),
per-app data snapshots (``tar`` archives of ``/data/data/<package>`` saved after a verified
seeding and restored at later resets, with the app's uid and SELinux labels put back), and login
snapshots (captured by hand with :meth:`AppData.capture_login`, restored and verified at reset).
All need root (``adb root``, or ``su -c``). :class:`AppData` is a part of
:class:`~phoneenv.backends.adb.AdbBackend`."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import posixpath
import re
import shlex
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from phoneenv.app import App
from phoneenv.backends.adb.faults import DeviceFault, ResetError, check_package
from phoneenv.backends.adb.shell import DeviceShell, Reader, Unchecked, gather
from phoneenv.contract import TaskSpec
from phoneenv.farm import android as A

__all__ = ["DATA_DIR", "AppData"]

log = logging.getLogger(__name__)


DATA_DIR = "/data/data"
"""Where apps' private data directories are (``/data/user/0`` links here)."""


class AppData:
    """Private app data, app-data snapshots and login snapshots (module docstring)."""

    shell: DeviceShell
    snapshot_dir: str
    login_snapshots: str | os.PathLike[str] | None
    _classes: dict[str, type[App]]
    _drivers: dict[str, A.AndroidDriver]
    _root: bool | None
    _app_snaps: set[tuple[str, str]]
    _probed: set[str]
    _pushed: set[tuple[str, str]]

    # -- app data: pm clear, per-app data snapshots, logins ---------------------------------------
    def private_apps(self, installed: Sequence[str]) -> list[str]:
        """The installed apps whose mapped tables live in their own private data (a provider whose
        authority is the app's package: DeskClock's alarms). A reset ``pm clear``-s them before
        seeding (which also drops what no mapping reads: DeskClock's timers and preferences), and
        their data directories are what per-app data snapshots save and restore. Raises
        ``ValueError`` for an app whose package is not a valid package name."""
        out = []
        for app in installed:
            driver, cls = self._drivers.get(app), self._classes.get(app)
            if driver is None or cls is None or cls.system:
                continue
            pkg = check_package(cls.package)  # a name that reaches shell commands and paths
            if any(isinstance(m, A.ProviderTable) and m.uri.split("/")[2] == pkg for m in driver.tables.values()):
                out.append(app)
        return out

    def login_fixtures(self, task: TaskSpec, installed: Sequence[str]) -> dict[str, tuple[str, str | None, bool]]:
        """``app → (package, account, signed_in)`` for the task's ``accounts`` fixtures that a
        device reset applies: those of installed apps the task involves (``task.apps``); the
        others (the suite's default mail account on a task that never opens mail) are left as
        the device has them."""
        out: dict[str, tuple[str, str | None, bool]] = {}
        for app, acc in sorted(task.fixtures.accounts.items()):
            if app in task.apps and app in installed and app in self._classes and not self._classes[app].system:
                pkg = check_package(self._classes[app].package)
                out[app] = (pkg, acc.get("account"), bool(acc.get("signed_in")))
        return out

    def _is_root(self) -> bool:
        if self._root is None:
            self._root = self.shell.run("id", "-u").strip() == "0"
        return self._root

    def _as_root(self, cmd: list[str]) -> list[str]:
        """``cmd`` as root: as is when ``adb shell`` is root (``adb root``), else through ``su -c``
        (Magisk's form), the command line quoted once more for su's own shell."""
        return cmd if self._is_root() else ["su", "-c", shlex.join(cmd)]

    def _archive(self, digest: str, package: str) -> str:
        return f"{self.snapshot_dir}/{digest}/{check_package(package)}.tgz"

    def _uids(self, packages: Sequence[str]) -> dict[str, int]:
        """Each package's app uid (``userId=`` of ``dumpsys package``); :class:`DeviceFault` when absent."""
        return self._checked_uids(packages, self._run(self._uids_reader(packages)))

    def _uids_reader(self, packages: Sequence[str]) -> Reader[dict[str, int | None]]:
        """Each package's app uid, None when ``dumpsys package`` prints none (not installed)."""
        secs = yield [["dumpsys", "package", p] for p in packages]
        out: dict[str, int | None] = {}
        for pkg, sec in zip(packages, secs, strict=True):
            m = re.search(r"^\s*userId=(\d+)\s*$", sec.out, re.M)
            out[pkg] = None if m is None else int(m.group(1))
        return out

    def _checked_uids(self, packages: Sequence[str], uids: Mapping[str, int | None]) -> dict[str, int]:
        """``packages``' uids from ``uids``; :class:`DeviceFault` naming the first one without."""
        out = {}
        for pkg in packages:
            uid = uids.get(pkg)
            if uid is None:
                raise DeviceFault(f"dumpsys package {pkg} on {self.shell.serial} printed no userId=")
            out[pkg] = uid
        return out

    def _restore_commands(self, package: str, archive: str, uid: int) -> list[list[str]]:
        """Replace ``package``'s data with ``archive``: stop it, ``pm clear`` it, untar as root,
        give the files back to the app's uid and restore their SELinux labels."""
        home = f"{DATA_DIR}/{package}"
        return [
            ["am", "force-stop", package],
            ["pm", "clear", package],
            self._as_root(["tar", "-xzf", archive, "-C", DATA_DIR]),
            self._as_root(["chown", "-R", f"{uid}:{uid}", home]),
            self._as_root(["restorecon", "-R", home]),
        ]

    def _app_snapshots_ready(self, digest: str, packages: Sequence[str]) -> bool:
        """Whether every package has a saved archive for ``digest`` (this session, or found on the
        device once: a non-empty file; its contents are verified after the restore anyway)."""
        return self._run(self._app_snapshots_reader(digest, packages))

    def _app_snapshots_known(self, digest: str, packages: Sequence[str]) -> bool:
        """Whether every package's archive for ``digest`` is known to exist (no device read)."""
        return all((digest, p) in self._app_snaps for p in packages)

    def _app_snapshots_reader(self, digest: str, packages: Sequence[str]) -> Reader[bool]:
        """The reads of :meth:`_app_snapshots_ready` (a ``stat`` of each archive not known yet,
        once per digest)."""
        missing = [p for p in packages if (digest, p) not in self._app_snaps]
        if missing and digest not in self._probed:
            self._probed.add(digest)
            secs = yield [Unchecked(self._as_root(["stat", "-c", "%s", self._archive(digest, p)])) for p in missing]
            for pkg, sec in zip(missing, secs, strict=True):
                if sec.status == 0 and sec.out.strip().isdigit() and int(sec.out.strip()) > 0:
                    self._app_snaps.add((digest, pkg))
        return all((digest, p) in self._app_snaps for p in packages)

    def _save_app_snapshots(self, digest: str, packages: Sequence[str]) -> None:
        """Archive each package's (verified) data directory under the fixtures' digest."""
        cmds = [self._as_root(["mkdir", "-p", f"{self.snapshot_dir}/{digest}"])]
        for pkg in packages:
            cmds += [
                ["am", "force-stop", pkg],
                self._as_root(["tar", "-czf", self._archive(digest, pkg), "-C", DATA_DIR, pkg]),
            ]
        try:
            self.shell.apply(cmds)
        except DeviceFault as exc:
            log.warning("could not save the app data snapshots of %s on %s: %s", digest, self.shell.serial, exc.detail)
            return
        self._app_snaps.update((digest, p) for p in packages)

    def login_snapshot(self, package: str) -> tuple[Path, dict[str, Any]] | None:
        """The login snapshot of ``package`` in :attr:`login_snapshots` (``<package>.tgz`` and
        its ``<package>.json``: account and the session files that name it), None when absent."""
        if self.login_snapshots is None:
            return None
        base = Path(self.login_snapshots)
        archive, meta = base / f"{check_package(package)}.tgz", base / f"{package}.json"
        if not archive.is_file() or not meta.is_file():
            return None
        return archive, json.loads(meta.read_text())

    def _login_commands(
        self, logins: Mapping[str, tuple[str, str | None, bool]], uids: Mapping[str, int | None] | None = None
    ) -> list[list[str]]:
        """Commands applying the login fixtures: a signed-in app's login snapshot is pushed and
        restored (as :meth:`_restore_commands`; ``uids``: the packages' uids when already read),
        a signed-out app is ``pm clear``-ed. Raises :class:`ResetError` naming the capture
        command when a snapshot is missing or is another account's."""
        cmds: list[list[str]] = []
        restore = {}
        for app, (pkg, account, on) in logins.items():
            if not on:
                cmds += [["am", "force-stop", pkg], ["pm", "clear", pkg]]
                continue
            found = self.login_snapshot(pkg)
            how = (
                f"sign in to {app} ({pkg}) as {account} by hand on {self.shell.serial}, then run "
                f"`phoneenv device capture-login --app {shlex.quote(app)} --account {shlex.quote(str(account))} "
                f"--serial {shlex.quote(self.shell.serial)} --out {shlex.quote(str(self.login_snapshots or 'LOGIN_DIR'))}`"
            )
            if found is None:
                raise ResetError(f"no login snapshot for {app} signed in as {account}: {how}")
            archive, meta = found
            if meta.get("account") != account:
                raise ResetError(
                    f"the login snapshot of {pkg} is signed in as {meta.get('account')!r}, not {account!r}: {how}"
                )
            remote = f"{self.snapshot_dir}/logins/{pkg}.tgz"
            key = (pkg, hashlib.sha256(archive.read_bytes()).hexdigest())
            if key not in self._pushed:
                try:
                    self.shell.device().sync.push(archive.read_bytes(), remote)
                except Exception as exc:
                    raise self.shell._fault(exc) from exc
                self._pushed.add(key)
            restore[pkg] = remote
        if restore:
            known = uids if uids is not None and set(restore) <= set(uids) else None
            got = self._checked_uids(sorted(restore), known) if known is not None else self._uids(sorted(restore))
            for pkg, remote in restore.items():
                cmds += self._restore_commands(pkg, remote, got[pkg])
        return cmds

    def _verify_logins(self, logins: Mapping[str, tuple[str, str | None, bool]]) -> list[str]:
        """What differs between the login fixtures and the device: each login snapshot's session
        files (``markers``, the files that named the account when it was captured) are read as
        root; signed in means every one is back and names the account, signed out that none does.
        An app with no login snapshot signed out has nothing to read (``pm clear`` said Success)."""
        return self._run(self._logins_reader(logins))

    def _logins_reader(self, logins: Mapping[str, tuple[str, str | None, bool]]) -> Reader[list[str]]:
        """The reads of :meth:`_verify_logins` (every app's session files in one round trip)."""
        found = {app: self.login_snapshot(pkg) for app, (pkg, _, _) in logins.items()}
        metas = {app: f[1] for app, f in found.items() if f is not None}
        cats = {
            app: [
                Unchecked(self._as_root(["cat", f"{DATA_DIR}/{logins[app][0]}/{m}"]))
                for m in meta.get("markers", [])
                if isinstance(m, str)
            ]
            for app, meta in metas.items()
        }
        results = yield from gather([self._sections_reader(c) for c in cats.values()])
        read = dict(zip(cats, results, strict=True))
        diffs = []
        for app, (pkg, account, on) in logins.items():
            if app not in metas:
                continue
            meta = metas[app]
            named = [s.status == 0 and str(meta.get("account")) in s.out for s in read[app]]
            if on and not (named and all(named)):
                diffs.append(f"login {app}: expected {account} signed in, {pkg}'s session files do not name it")
            if not on and any(named):
                diffs.append(
                    f"login {app}: expected signed out, {pkg}'s session files still name {meta.get('account')}"
                )
        return diffs

    def capture_login(self, app: str, account: str, folder: str | os.PathLike[str]) -> Path:
        """Save ``app``'s data, signed in by hand as ``account``, as its login snapshot in
        ``folder``: ``<package>.tgz`` (``tar -czf`` of ``/data/data/<package>`` as root, read back
        with ``cat`` over ``shell,v2``) and ``<package>.json`` (``account``, ``package``, and
        ``markers``: the archive's files that contain the account's name, which verification
        reads). Returns the archive's path. Raises ``ValueError`` for an unknown app or when no
        file names the account (not signed in), :class:`DeviceFault` when the device fails."""
        cls = self._classes.get(app)
        if cls is None or cls.system:
            raise ValueError(
                f"unknown app {app!r}; apps: {', '.join(sorted(a for a, c in self._classes.items() if not c.system))}"
            )
        pkg = check_package(cls.package)
        if pkg not in self._packages():
            raise ValueError(f"{self.shell.serial} has no {pkg} installed")
        remote = f"{self.snapshot_dir}/logins/{pkg}.tgz"
        self.shell.apply(
            [
                self._as_root(["mkdir", "-p", f"{self.snapshot_dir}/logins"]),
                ["am", "force-stop", pkg],
                self._as_root(["tar", "-czf", remote, "-C", DATA_DIR, pkg]),
            ]
        )
        cmd = self._as_root(["cat", remote])
        self.shell._note([cmd])
        data, err, status = self.shell.raw(shlex.join(cmd))
        if status != 0:
            raise DeviceFault(f"reading {remote} failed on {self.shell.serial}: {err.decode('utf-8', 'replace')[:300]}")
        markers = []
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for info in tar.getmembers():
                body = tar.extractfile(info) if info.isfile() else None
                if body is not None and account.encode("utf-8") in body.read():
                    markers.append(posixpath.relpath(posixpath.normpath(info.name), pkg))
        if not markers:
            raise ValueError(f"no file in {pkg}'s data names {account!r}: sign in to {app} by hand first")
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{pkg}.tgz").write_bytes(data)
        meta = {"app": app, "package": pkg, "account": account, "markers": sorted(markers)}
        (out / f"{pkg}.json").write_text(json.dumps(meta, indent=2) + "\n")
        return out / f"{pkg}.tgz"
