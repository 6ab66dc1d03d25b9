"""The virtual device's app data and file tools: private data directories under ``/data/data``
(the apps' own tables as JSON files, the sign-in session as ``shared_prefs/account.xml``),
``su``, ``id``, ``tar``, ``stat``, ``chown``, ``restorecon``, ``rm``, ``mkdir`` and ``cat`` (the package
docstring of :mod:`phoneenv.farm.virtual` says how they behave). :class:`AppDataCommands` is a part
of :class:`~phoneenv.farm.virtual.VirtualDevice`."""

from __future__ import annotations

import io
import json
import posixpath
import re
import shlex
import stat as st
import tarfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from phoneenv.app import App
from phoneenv.farm import android as A
from phoneenv.farm.shell import Invocation
from phoneenv.farm.virtual.constants import (
    ACCOUNT_FILE,
    APP_DATA_LABEL,
    DATA_DIR,
    SHELL_UID,
)
from phoneenv.phone import Phone

if TYPE_CHECKING:
    from phoneenv.farm.virtual import VirtualDevice

__all__ = ["AppDataCommands"]


class DataFiles:
    """The files the shell's redirections see: the device's, with app data directories kept in
    step with the tables (a read exports them, a write imports them) and ``/data/data`` refused
    to the shell user."""

    def __init__(self, device: VirtualDevice) -> None:
        self._dev = device

    def _check(self, path: str) -> str | None:
        dev = self._dev
        norm = dev.files.normpath(path)
        if (norm == DATA_DIR or norm.startswith(DATA_DIR + "/")) and not dev.is_root:
            raise PermissionError(13, "Permission denied", path)
        return dev._package_of(norm)

    def read(self, path: str) -> bytes:
        """The bytes of ``path`` (app data exported first)."""
        pkg = self._check(path)
        if pkg is not None:
            self._dev.export_data(pkg)
        return self._dev.files.read(path)

    def write(self, path: str, data: bytes, mode: int, mtime: int) -> None:
        """Write ``path``; app data is imported into the app's tables after."""
        pkg = self._check(path)
        dev = self._dev
        if pkg is not None:
            dev.export_data(pkg)  # the files show the tables as they are before this write
        dev.files.write(path, data, mode, mtime)
        if dev.is_root:
            dev.owners[dev.files.normpath(path)] = (0, 0)
        if pkg is not None:
            dev.import_data(pkg)


class _suppress_missing:
    """Ignore a missing/undecodable file (``OSError``, ``ValueError``, XML/JSON errors)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        return kind is not None and issubclass(kind, (OSError, ValueError, ET.ParseError))


def _tuples(value: Any) -> Any:
    """JSON lists back to the tuples the sandbox stores."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _account_xml(account: str | None, signed_in: bool) -> bytes:
    """An Android ``SharedPreferences`` file holding the session (``XmlUtils.writeMapXml`` layout)."""
    root = ET.Element("map")
    if account is not None:
        ET.SubElement(root, "string", name="account").text = account
    ET.SubElement(root, "boolean", name="signed_in", value="true" if signed_in else "false")
    ET.indent(root, "    ")
    return b"<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n" + ET.tostring(root, encoding="utf-8") + b"\n"


def _read_account_xml(data: bytes) -> tuple[str | None, bool]:
    """(account, signed_in) from :func:`_account_xml`'s file; raises ``ET.ParseError``."""
    root = ET.fromstring(data)
    node = root.find("string[@name='account']")
    flag = root.find("boolean[@name='signed_in']")
    return (node.text or "" if node is not None else None), (flag is not None and flag.get("value") == "true")


def _user_name(uid: int) -> str:
    """Android's name for ``uid`` (``u0_a100`` for app uid 10100)."""
    names = {0: "root", 1000: "system", SHELL_UID: "shell"}
    return names.get(uid, f"u0_a{uid - 10000}" if uid >= 10000 else str(uid))


def _uid_of(name: str) -> int | None:
    """The uid for a ``chown`` user: a number, ``root``/``system``/``shell`` or ``u0_aN``."""
    if name.isdigit():
        return int(name)
    fixed = {"root": 0, "system": 1000, "shell": SHELL_UID}
    if name in fixed:
        return fixed[name]
    m = re.fullmatch(r"u0_a(\d+)", name)
    return 10000 + int(m.group(1)) if m else None


class AppDataCommands:
    """App data directories and the file tools (module docstring)."""

    phone: Phone
    _classes: dict[str, type[App]]

    # -- app data: private data directories, su, tar and file tools ------------------------------
    @property
    def is_root(self) -> bool:
        """Whether the command running now runs as root (``root=True``, or inside ``su``)."""
        return self.root or self._as_root

    def _build_private(self) -> dict[str, tuple[str, dict[str, str]]]:
        """package → (app, {file path in its data directory: full table name}) for every
        non-system app: its unmapped tables and its own-authority provider tables."""
        out: dict[str, tuple[str, dict[str, str]]] = {}
        for app, cls in self._classes.items():
            if cls.system:
                continue
            driver = cls.android
            files: dict[str, str] = {}
            for table in cls.tables:
                mapping = driver.tables.get(table) if driver is not None else None
                own = isinstance(mapping, A.ProviderTable) and mapping.uri.split("/")[2] == cls.package
                if mapping is None or own:
                    files[f"databases/{table}.json"] = f"{app}.{table}"
            out[cls.package] = (app, files)
        return out

    def _own(self, path: str, package: str) -> None:
        uid = self.uids[package]
        self.owners[path] = (uid, uid)
        self.labels[path] = APP_DATA_LABEL

    def _owner(self, path: str) -> tuple[int, int]:
        inside = path == DATA_DIR or path.startswith(DATA_DIR + "/")
        return self.owners.get(path, (0, 0) if inside else (SHELL_UID, SHELL_UID))

    def _package_of(self, path: str) -> str | None:
        """The package whose data directory holds ``path`` (None elsewhere)."""
        try:
            norm = self.files.normpath(path)
        except (TypeError, ValueError):
            return None
        parts = norm.split("/")
        if norm.startswith(DATA_DIR + "/") and len(parts) >= 4 and parts[3] in self._private:
            return parts[3]
        return None

    def _subtree(self, path: str) -> list[str]:
        out = [path]
        if self.files.stat(path).is_dir:
            for name, _ in self.files.listdir(path):
                out += self._subtree(posixpath.join(path, name))
        return out

    def _put(self, package: str, rel: str, data: bytes) -> None:
        """Write ``data`` to ``rel`` in the app's data directory as the app would (owned by it),
        leaving an identical file (and its owner) alone."""
        home = f"{DATA_DIR}/{package}"
        path = f"{home}/{rel}"
        with _suppress_missing():
            if self.files.read(path) == data:
                return
        parent = posixpath.dirname(path)
        if not self.files.exists(parent):
            self.files.mkdir(parent, 0o771, mtime=int(self.now))
            self._own(parent, package)
        self.files.write(path, data, 0o660, int(self.now))
        self._own(path, package)

    def export_data(self, package: str) -> None:
        """Write the app's private tables and sign-in session to its data directory (what the
        app would have on disk now)."""
        app, tables = self._private[package]
        home = f"{DATA_DIR}/{package}"
        if self._app_of_package(package) is None or not self.files.exists(home):
            return
        state = self.phone.state
        for rel, table in tables.items():
            records = sorted(state.table(table).values(), key=lambda r: r["id"])
            if not records and not self.files.exists(f"{home}/{rel}"):
                continue  # an app creates a database when it first stores something
            self._put(package, rel, (json.dumps(records, sort_keys=True, ensure_ascii=False) + "\n").encode())
        acc = state.get("system.accounts", app)
        path = f"{home}/{ACCOUNT_FILE}"
        if acc is not None and (acc.get("signed_in") or acc.get("account")):
            self._put(package, ACCOUNT_FILE, _account_xml(acc.get("account"), bool(acc.get("signed_in"))))
        elif self.files.exists(path):
            self.files.remove(path)

    def import_data(self, package: str) -> None:
        """Read the app's data directory back into its tables (files changed on disk): a missing
        or unparsable table file is an empty table, a missing session file a signed-out app;
        files it opens (or their folders) not owned by the app's uid or not labelled
        ``app_data_file`` make its provider unreadable."""
        app, tables = self._private[package]
        home = f"{DATA_DIR}/{package}"
        state = self.phone.state
        for rel, table in tables.items():
            records: Any = []
            with _suppress_missing():
                records = json.loads(self.files.read(f"{home}/{rel}").decode("utf-8"))
            if not isinstance(records, list) or not all(
                isinstance(r, dict) and isinstance(r.get("id"), str) and r["id"] for r in records
            ):
                records = []
            state.tables[table] = {r["id"]: {k: _tuples(v) for k, v in r.items()} for r in records}
        account, signed_in, present = None, False, False
        with _suppress_missing():
            account, signed_in = _read_account_xml(self.files.read(f"{home}/{ACCOUNT_FILE}"))
            present = True
        accounts = state.table("system.accounts")
        if present or app in accounts:
            state.replace("system.accounts", app, {"id": app, "app": app, "account": account, "signed_in": signed_in})
        uid = self.uids[package]
        paths = [home] if self.files.exists(home) else []
        for rel in [*tables, ACCOUNT_FILE]:  # the files the app opens, and their folders
            if self.files.exists(f"{home}/{rel}"):
                paths += [posixpath.dirname(f"{home}/{rel}"), f"{home}/{rel}"]
        if any(self._owner(p) != (uid, uid) or self.labels.get(p) != APP_DATA_LABEL for p in paths):
            self._unreadable.add(package)
        else:
            self._unreadable.discard(package)

    def _denied(self, inv: Invocation, path: str) -> bool:
        """Refuse the shell user a path under ``/data/data`` (mode 0771 dirs owned by system and
        apps) with ``Permission denied``; export app data about to be read."""
        try:
            norm = self.files.normpath(path)
        except ValueError:
            return False
        if (norm == DATA_DIR or norm.startswith(DATA_DIR + "/")) and not self.is_root:
            inv.error(f"{inv.argv[0]}: {path}: Permission denied")
            return True
        pkg = self._package_of(norm)
        if pkg is not None:
            self.export_data(pkg)
        return False

    def _fresh(self, paths: Sequence[str]) -> None:
        """Export the app data under ``paths`` before a command changes it (files show the
        tables as they are now)."""
        for pkg in dict.fromkeys(p for p in map(self._package_of, paths) if p is not None):
            self.export_data(pkg)

    def _changed(self, paths: Sequence[str]) -> None:
        for pkg in dict.fromkeys(p for p in map(self._package_of, paths) if p is not None):
            self.import_data(pkg)

    def _su(self, inv: Invocation) -> int:
        if not (self.su or self.root):
            inv.error(f"/system/bin/sh: {inv.argv[0]}: inaccessible or not found")
            return 127
        args = inv.argv[1:]
        if len(args) == 2 and args[0] == "-c":
            line = args[1]
        elif len(args) >= 2 and args[0] in ("0", "root"):
            line = shlex.join(args[1:])
        else:
            inv.error("usage: su -c CMDLINE | su 0 COMMAND [ARG...]")
            return 1
        before = self._as_root
        self._as_root = True
        try:
            res = self._sh.run(line, inv.stdin)
        finally:
            self._as_root = before
        inv.write(res.stdout)
        inv.stderr += res.stderr
        return res.exit_code

    def _id(self, inv: Invocation) -> int:
        uid = 0 if self.is_root else SHELL_UID
        if inv.argv[1:] == ["-u"]:
            inv.write(f"{uid}\n")
            return 0
        name = _user_name(uid)
        inv.write(f"uid={uid}({name}) gid={uid}({name}) groups={uid}({name})\n")
        return 0

    def _tar(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        mode = archive = None
        gz = False
        where = "/"
        members: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            if a == "-C" and i + 1 < len(args):
                where = args[i + 1]
                i += 2
                continue
            if (a.startswith("-") and a != "-") or (i == 0 and a and set(a) <= set("cxtzvf")):
                takes = 0
                for ch in a.lstrip("-"):
                    if ch in "cxt":
                        mode = ch
                    elif ch == "z":
                        gz = True
                    elif ch == "f":
                        takes += 1
                    elif ch != "v":
                        inv.error(f"tar: Unknown option '{ch}'")
                        return 1
                if takes:
                    if i + 1 >= len(args):
                        inv.error("tar: Needs -f argument")
                        return 1
                    archive = args[i + 1]
                    i += 1
                i += 1
                continue
            members.append(a)
            i += 1
        if mode not in ("c", "x") or archive is None or (mode == "c" and not members):
            inv.error("usage: tar -c|-x [-z] -f ARCHIVE [-C DIR] [MEMBER...]")
            return 1
        if not where.startswith("/"):
            inv.error(f"tar: chdir '{where}': No such file or directory")
            return 1
        return (
            self._tar_create(inv, archive, where, members, gz)
            if mode == "c"
            else self._tar_extract(inv, archive, where, gz)
        )

    def _tar_create(self, inv: Invocation, archive: str, where: str, members: list[str], gz: bool) -> int:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w", format=tarfile.GNU_FORMAT) as tar:
            for member in members:
                top = posixpath.join(where, member)
                if self._denied(inv, top):
                    return 1
                try:
                    paths = self._subtree(self.files.normpath(top))
                except (OSError, ValueError):
                    inv.error(f"tar: {member}: No such file or directory")
                    return 1
                base = self.files.normpath(where)
                for path in paths:
                    info = tarfile.TarInfo(posixpath.relpath(path, base))
                    fst = self.files.stat(path)
                    info.mode = st.S_IMODE(fst.mode)
                    info.mtime = fst.mtime
                    info.uid, info.gid = self._owner(path)
                    info.uname, info.gname = _user_name(info.uid), _user_name(info.gid)
                    if fst.is_dir:
                        info.type = tarfile.DIRTYPE
                        tar.addfile(info)
                    else:
                        data = self.files.read(path)
                        info.size = len(data)
                        tar.addfile(info, io.BytesIO(data))
        if self._denied(inv, archive):
            return 1
        try:
            self.files.write(archive, buf.getvalue(), 0o600 if self.is_root else 0o644, int(self.now))
        except (OSError, ValueError) as exc:
            inv.error(f"tar: {archive}: {exc}")
            return 1
        self.owners[self.files.normpath(archive)] = (0, 0) if self.is_root else (SHELL_UID, SHELL_UID)
        self._changed([archive])
        return 0

    def _tar_extract(self, inv: Invocation, archive: str, where: str, gz: bool) -> int:
        if self._denied(inv, archive):
            return 1
        try:
            data = self.files.read(archive)
        except (OSError, ValueError):
            inv.error(f"tar: {archive}: No such file or directory")
            return 1
        base = self.files.normpath(where)
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz" if gz else "r:*") as tar:
                entries = []
                for info in tar.getmembers():
                    name = posixpath.normpath(info.name)
                    if name.startswith("/") or name == ".." or name.startswith("../"):
                        inv.error(f"tar: refusing to extract {info.name!r} outside {where}")
                        return 1
                    if not (info.isdir() or info.isfile()):
                        inv.error(f"tar: {info.name}: links and devices are not supported here")
                        return 1
                    entries.append((info, tar.extractfile(info).read() if info.isfile() else None))  # type: ignore[union-attr]
        except (tarfile.TarError, EOFError, OSError) as exc:
            inv.error(f"tar: {archive}: not a {'gzip ' if gz else ''}tar archive ({exc})")
            return 1
        written = []
        for info, body in entries:
            path = posixpath.join(base, posixpath.normpath(info.name))
            if self._denied(inv, path):
                return 1
            try:
                if body is None:
                    self.files.mkdir(path, info.mode, mtime=info.mtime)
                else:
                    self.files.write(path, body, info.mode, info.mtime)
            except (OSError, ValueError) as exc:
                inv.error(f"tar: {info.name}: {exc}")
                return 1
            # root keeps the archive's owners (tar's --same-owner); the label is the creator's
            self.owners[path] = (info.uid, info.gid) if self.is_root else (SHELL_UID, SHELL_UID)
            self.labels[path] = "u:object_r:system_data_file:s0"
            written.append(path)
        self._changed(written)
        return 0

    def _stat(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        if len(args) < 3 or args[0] != "-c":
            inv.error("stat: this device's stat needs -c FORMAT PATH...")
            return 1
        fmt, status = args[1], 0
        for path in args[2:]:
            if self._denied(inv, path):
                status = 1
                continue
            try:
                norm = self.files.normpath(path)
                fst = self.files.stat(norm)
            except (OSError, ValueError):
                inv.error(f"stat: '{path}': No such file or directory")
                status = 1
                continue
            uid, gid = self._owner(norm)
            fields = {
                "u": str(uid),
                "g": str(gid),
                "U": _user_name(uid),
                "G": _user_name(gid),
                "a": f"{st.S_IMODE(fst.mode):o}",
                "s": str(fst.size),
                "n": path,
                "F": "directory" if fst.is_dir else "regular file",
                "C": self.labels.get(norm, "u:object_r:system_data_file:s0"),
                "%": "%",
            }
            inv.write(re.sub(r"%(.)", lambda m, f=fields: f.get(m.group(1), m.group(0)), fmt) + "\n")
        return status

    def _paths_with_flags(self, inv: Invocation, flags: str) -> tuple[set[str], list[str]] | None:
        seen: set[str] = set()
        rest = []
        for a in inv.argv[1:]:
            if a.startswith("-") and len(a) > 1 and not rest:
                if set(a[1:]) - set(flags):
                    inv.error(f"{inv.argv[0]}: Unknown option '{a}'")
                    return None
                seen |= set(a[1:])
            else:
                rest.append(a)
        return seen, rest

    def _chown(self, inv: Invocation) -> int:
        parsed = self._paths_with_flags(inv, "Rhf")
        if parsed is None:
            return 1
        flags, rest = parsed
        if len(rest) < 2:
            inv.error("usage: chown [-R] USER[:GROUP] FILE...")
            return 1
        user, _, group = rest[0].replace(".", ":", 1).partition(":")
        uid, gid = _uid_of(user), _uid_of(group or user)
        if uid is None or gid is None:
            inv.error(f"chown: bad user or group '{rest[0]}'")
            return 1
        if not self.is_root:
            inv.error(f"chown: {rest[1]}: Operation not permitted")
            return 1
        self._fresh(rest[1:])
        changed = []
        for path in rest[1:]:
            try:
                paths = self._subtree(self.files.normpath(path)) if "R" in flags else [self.files.normpath(path)]
                self.files.stat(paths[0])
            except (OSError, ValueError):
                inv.error(f"chown: {path}: No such file or directory")
                return 1
            for p in paths:
                self.owners[p] = (uid, gid)
            changed += paths
        self._changed(changed)
        return 0

    def _restorecon(self, inv: Invocation) -> int:
        parsed = self._paths_with_flags(inv, "RFvnD")
        if parsed is None:
            return 1
        flags, rest = parsed
        if not self.is_root:
            inv.error("SELinux: Could not set context: Permission denied")
            return 1
        self._fresh(rest)
        changed = []
        for path in rest:
            try:
                paths = self._subtree(self.files.normpath(path)) if "R" in flags else [self.files.normpath(path)]
            except (OSError, ValueError):
                inv.error(f"SELinux: Could not get canonical path for {path} restorecon: No such file or directory.")
                return 255
            for p in paths:
                if self._package_of(p) is not None:
                    self.labels[p] = APP_DATA_LABEL
            changed += paths
        self._changed(changed)
        return 0

    def _rm(self, inv: Invocation) -> int:
        parsed = self._paths_with_flags(inv, "rRf")
        if parsed is None:
            return 1
        flags, rest = parsed
        status = 0
        for path in rest:
            if self._denied(inv, path):
                status = 1
                continue
            try:
                norm = self.files.normpath(path)
                if self.files.stat(norm).is_dir and not flags & {"r", "R"}:
                    inv.error(f"rm: {path}: Is a directory")
                    status = 1
                    continue
                gone = self._subtree(norm)
                self.files.remove(norm, recursive=True)
            except (OSError, ValueError):
                if "f" not in flags:
                    inv.error(f"rm: {path}: No such file or directory")
                    status = 1
                continue
            for p in gone:
                self.owners.pop(p, None)
                self.labels.pop(p, None)
            self._changed([norm])
        return status

    def _mkdir(self, inv: Invocation) -> int:
        parsed = self._paths_with_flags(inv, "p")
        if parsed is None:
            return 1
        flags, rest = parsed
        for path in rest:
            if self._denied(inv, path):
                return 1
            try:
                norm = self.files.normpath(path)
                if self.files.exists(norm) and "p" not in flags:
                    inv.error(f"mkdir: {path}: File exists")
                    return 1
                self.files.mkdir(norm, 0o775, mtime=int(self.now))
            except (OSError, ValueError) as exc:
                inv.error(f"mkdir: {path}: {exc}")
                return 1
            if self.is_root:
                self.owners.setdefault(norm, (0, 0))
            self._changed([norm])
        return 0

    def _cat(self, inv: Invocation) -> int:
        status = 0
        if not inv.argv[1:]:
            inv.write(inv.stdin)
        for path in inv.argv[1:]:
            if self._denied(inv, path):
                status = 1
                continue
            try:
                inv.write(self.files.read(path))
            except (OSError, ValueError):
                inv.error(f"cat: {path}: No such file or directory")
                status = 1
        return status
