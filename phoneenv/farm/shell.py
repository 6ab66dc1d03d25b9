"""The virtual device's ``/system/bin/sh``: command lines parsed with bashlex, executed like sh.

    >>> sh = Shell({"greet": lambda inv: inv.write(f"hi {inv.argv[1]}\\n") or 0})
    >>> r = sh.run("greet 'a b' && echo $(echo nested) `echo tick`; nope")
    >>> r.stdout
    b'hi a b\\nnested tick\\n'
    >>> r.stderr, r.exit_code
    (b'/system/bin/sh: nope: inaccessible or not found\\n', 127)
    >>> sh.log[-2:]
    [['echo', 'nested', 'tick'], ['nope']]

A command line is what ``adb shell`` sends (one line for ``/system/bin/sh -c``). It is parsed by
`bashlex <https://github.com/idank/bashlex>`_ (a port of bash's own grammar) and run the way a
POSIX shell runs it, so a quoting mistake on the host really runs an extra command here, and every
simple command that runs is logged (:attr:`Shell.log`):

- lists ``;``, ``&&``, ``||`` (left to right, equal precedence) and newlines; pipelines ``|`` (each
  command's stdout is the next one's stdin, the status is the last one's); ``{ ...; }`` and
  ``( ... )`` groups;
- words: single quotes, double quotes (``\\`` escapes ``$ ` " \\`` and newline), backslash
  escapes, parameters (``$?``, ``$$``, ``$NAME``, ``${NAME}``), command substitution ``$(...)`` and
  backticks (trailing newlines removed; unquoted results split into fields on blanks);
- ``NAME=value`` assignments; redirections ``>``/``>>``/``<`` to files of the device (``/dev/null``
  included), ``2>&1`` and ``>&2``.

Not supported (answered as sh answers a syntax error, status 1): ``if``/``for``/``while``/``case``,
functions, here-documents, arithmetic ``$((...))``, globbing (words stay literal, as sh leaves a
pattern that matches nothing). An unknown command answers like Android's mksh: status 127 and
``/system/bin/sh: NAME: inaccessible or not found`` on stderr.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from phoneenv.extras import needs
from phoneenv.farm.adbwire import ShellResult

with needs("device", feature="The virtual device's shell (phoneenv.farm.shell)"):
    import bashlex
    import bashlex.ast
    import bashlex.errors

__all__ = ["LOG_LIMIT", "SHELL", "Invocation", "Shell", "ShellResult"]

log = logging.getLogger(__name__)

SHELL = "/system/bin/sh"
"""The shell's name in its error messages (Android's mksh)."""

LOG_LIMIT = 100_000
"""Commands :attr:`Shell.log` keeps: past twice this many, the oldest are dropped down to it."""

_BIN_DIRS = ("/system/bin/", "/system/xbin/", "/vendor/bin/", "/bin/", "/usr/bin/")
_BLANKS = " \t\n"


class Files(Protocol):
    """The device files redirections read and write (the transport's ``VirtualFiles``)."""

    def read(self, path: str) -> bytes:
        """The bytes of ``path``; raises ``FileNotFoundError``/``IsADirectoryError``."""

    def write(self, path: str, data: bytes, mode: int, mtime: int) -> None:
        """Create or replace ``path`` (``mode``: permission bits, ``mtime``: seconds)."""


@dataclass
class Invocation:
    """One simple command being run: its expanded ``argv`` (``argv[0]`` the command name as
    called, e.g. ``content``), ``stdin`` bytes, and the stdout/stderr buffers it writes to.
    ``shell`` is the running :class:`Shell` (for its variables)."""

    argv: list[str]
    stdin: bytes
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    shell: Shell | None = None

    def write(self, text: str | bytes) -> None:
        """Append to stdout (text is UTF-8 encoded)."""
        self.stdout += text.encode("utf-8") if isinstance(text, str) else text

    def error(self, text: str) -> None:
        """Append a line to stderr (a newline is added when missing)."""
        self.stderr += (text if text.endswith("\n") else text + "\n").encode("utf-8")


Command = Callable[[Invocation], int]
"""A command implementation: reads ``inv.argv``/``inv.stdin``, writes ``inv.stdout``/``inv.stderr``,
returns the exit status."""


class _Exit(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Unsupported(Exception):
    pass


class Shell:
    """A POSIX-sh subset over bashlex ASTs, with commands supplied by the device.

    Args:
        commands: command name → implementation (``echo``, ``true``, ``false``, ``exit``, ``:``
            and ``export`` are built in unless given here).
        variables: initial shell variables (``HOME``, ``PATH``...).
        files: device files for redirections (None: only ``/dev/null``).
        clock: seconds since the epoch for files' ``mtime`` (default 0).

    ``log`` lists the argv of every simple command run, in order (command substitutions
    included, before the command that uses them), the latest :data:`LOG_LIMIT` at least.
    """

    def __init__(
        self,
        commands: Mapping[str, Command],
        *,
        variables: Mapping[str, str] | None = None,
        files: Files | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.commands: dict[str, Command] = {
            "echo": _echo,
            "true": lambda inv: 0,
            "false": lambda inv: 1,
            ":": lambda inv: 0,
            "exit": _exit,
            "export": self._export,
        }
        self.commands.update(commands)
        self.variables: dict[str, str] = {"HOME": "/", "PATH": ":".join(d.rstrip("/") for d in _BIN_DIRS[:3])}
        self.variables.update(variables or {})
        self.files = files
        self.clock = clock or (lambda: 0.0)
        self.log: list[list[str]] = []
        self.log_limit = LOG_LIMIT
        self.status = 0
        self._src = ""

    # -- entry point -----------------------------------------------------------------------------
    def run(self, line: str, stdin: bytes = b"") -> ShellResult:
        """Run one command line as ``sh -c line`` would; never raises for anything in ``line``.

        Returns the transport's :class:`~phoneenv.farm.adbwire.ShellResult`: stdout, stderr, and the status of the last command
        (or of ``exit``). A line that does not parse gives status 1 and a syntax error on stderr.
        """
        out, err = bytearray(), bytearray()
        if not line.strip():
            return ShellResult(b"", b"", 0)
        try:
            trees = bashlex.parse(line)
        except (bashlex.errors.ParsingError, NotImplementedError, IndexError, AttributeError, TypeError) as exc:
            msg = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            return ShellResult(b"", f"{SHELL}: syntax error: {msg}\n".encode(), 1)
        prev_src = self._src
        self._src = line
        try:
            for tree in trees:
                self.status = self._node(tree, stdin, out, err)
        except _Exit as done:
            self.status = done.status & 0xFF
        except _Unsupported as exc:
            err += f"{SHELL}: syntax error: {exc} is not supported\n".encode()
            self.status = 1
        finally:
            self._src = prev_src
        return ShellResult(bytes(out), bytes(err), self.status)

    # -- nodes -----------------------------------------------------------------------------------
    def _node(self, node: Any, stdin: bytes, out: bytearray, err: bytearray) -> int:
        kind = node.kind
        if kind == "list":
            return self._list(node, stdin, out, err)
        if kind == "pipeline":
            return self._pipeline(node, stdin, out, err)
        if kind == "command":
            return self._command(node, stdin, out, err)
        if kind == "compound":
            redirects = list(getattr(node, "redirects", None) or [])
            inner_out, inner_err = (bytearray(), bytearray()) if redirects else (out, err)
            try:
                stdin = self._redirect_input(redirects, stdin)
            except OSError as exc:
                err += f"{SHELL}: {exc}\n".encode()
                return 1
            status = self.status
            for part in node.list:
                if part.kind in ("reservedword", "operator"):
                    continue
                status = self._node(part, stdin, inner_out, inner_err)
                self.status = status
            if redirects:
                try:
                    self._redirect_output(redirects, inner_out, inner_err, out, err)
                except OSError as exc:
                    err += f"{SHELL}: {exc}\n".encode()
                    return 1
            return status
        raise _Unsupported(f"'{kind}'")

    def _list(self, node: Any, stdin: bytes, out: bytearray, err: bytearray) -> int:
        status = self.status
        skip = False
        for part in node.parts:
            if part.kind == "operator":
                op = part.op
                if op in (";", "\n"):
                    skip = False
                elif op == "&&":
                    skip = status != 0
                elif op == "||":
                    skip = status == 0
                elif op == "&":
                    raise _Unsupported("'&' (background jobs)")
                continue
            if skip:
                continue
            status = self._node(part, stdin, out, err)
            self.status = status
        return status

    def _pipeline(self, node: Any, stdin: bytes, out: bytearray, err: bytearray) -> int:
        data = stdin
        status = 0
        cmds = [p for p in node.parts if p.kind != "pipe"]
        negate = False
        for i, part in enumerate(cmds):
            if part.kind == "reservedword" and part.word == "!":
                negate = True
                continue
            buf = bytearray() if i < len(cmds) - 1 else out
            status = self._node(part, data, buf, err)
            data = bytes(buf)
        if negate:
            status = 0 if status else 1
        return status

    def _command(self, node: Any, stdin: bytes, out: bytearray, err: bytearray) -> int:
        argv: list[str] = []
        assigns: list[tuple[str, str]] = []
        redirects = []
        for part in node.parts:
            if part.kind == "word":
                argv.extend(self._expand(part, err))
            elif part.kind == "assignment":
                name, _, _ = part.word.partition("=")
                value = "".join(self._expand(part, err, split=False))
                assigns.append((name, value.partition("=")[2]))
            elif part.kind == "redirect":
                redirects.append(part)
            else:
                raise _Unsupported(f"'{part.kind}'")
        if not argv:
            for name, value in assigns:
                self.variables[name] = value
            return 0
        cmd_out, cmd_err = bytearray(), bytearray()
        try:
            stdin = self._redirect_input(redirects, stdin)
        except OSError as exc:
            err += f"{SHELL}: {exc}\n".encode()
            return 1
        self.log.append(list(argv))
        if len(self.log) > 2 * self.log_limit:
            del self.log[: len(self.log) - self.log_limit]
        name = argv[0]
        for prefix in _BIN_DIRS:
            if name.startswith(prefix) and "/" not in name[len(prefix) :]:
                name = name[len(prefix) :]
                break
        impl = self.commands.get(name)
        if impl is None:
            cmd_err += f"{SHELL}: {argv[0]}: inaccessible or not found\n".encode()
            status = 127
        else:
            inv = Invocation([name, *argv[1:]], stdin, cmd_out, cmd_err, self)
            try:
                status = impl(inv)
            except _Exit:
                raise
            except Exception as exc:  # a command implementation bug must not kill the device
                log.exception("command %r raised", argv)
                cmd_err += f"{name}: internal error: {type(exc).__name__}\n".encode()
                status = 1
        try:
            self._redirect_output(redirects, cmd_out, cmd_err, out, err)
        except OSError as exc:
            err += f"{SHELL}: {exc}\n".encode()
            return 1
        return int(status) & 0xFF

    # -- redirections ----------------------------------------------------------------------------
    def _target(self, part: Any) -> str:
        out = part.output
        if isinstance(out, int):
            return str(out)
        return "".join(self._expand(out, bytearray(), split=False))

    def _redirect_input(self, redirects: list[Any], stdin: bytes) -> bytes:
        for r in redirects:
            if r.type == "<":
                path = self._target(r)
                if path == "/dev/null":
                    stdin = b""
                elif self.files is None:
                    raise OSError(f"can't open {path}: No such file or directory")
                else:
                    stdin = self.files.read(path)
        return stdin

    def _redirect_output(
        self, redirects: list[Any], cmd_out: bytearray, cmd_err: bytearray, out: bytearray, err: bytearray
    ) -> None:
        sinks: dict[int, tuple[str, Any]] = {1: ("pipe", out), 2: ("pipe", err)}
        for r in redirects:
            if r.type == "<":
                continue
            fd = r.input if isinstance(r.input, int) else 1
            if r.type in (">&", "&>") and isinstance(r.output, int):
                sinks[fd] = sinks[r.output]
            elif r.type in (">", ">>", ">|", "&>"):
                path = self._target(r)
                sinks[fd] = ("file", (path, r.type == ">>"))
                if r.type == "&>":
                    sinks[2] = sinks[1]
            else:
                raise _Unsupported(f"redirection '{r.type}'")
        files: dict[str, bytearray] = {}
        for fd, data in ((1, cmd_out), (2, cmd_err)):
            kind, target = sinks[fd]
            if kind == "pipe":
                target += data
                continue
            path, append = target
            if path == "/dev/null":
                continue
            if self.files is None:
                raise OSError(f"can't create {path}: Read-only file system")
            if path not in files:
                old = b""
                if append:
                    try:
                        old = self.files.read(path)
                    except (FileNotFoundError, KeyError):
                        old = b""
                files[path] = bytearray(old)
            files[path] += data
        for path, data in files.items():
            assert self.files is not None
            self.files.write(path, bytes(data), 0o644, int(self.clock()))

    # -- words -----------------------------------------------------------------------------------
    def _expand(self, word: Any, err: bytearray, split: bool = True) -> list[str]:
        """The fields of a word after quote removal, parameter and command substitution, and
        field splitting of unquoted substitutions (no globbing)."""
        src = self._src
        start, end = word.pos
        parts = {p.pos[0]: p for p in getattr(word, "parts", []) or []}
        fields: list[str] = []
        cur: list[str] = []
        have = False  # the current field exists (quotes or text seen)
        i = start
        dq = False

        def add_expansion(text: str, quoted: bool) -> None:
            nonlocal cur, have
            if quoted or not split:
                cur.append(text)
                have = True
                return
            pieces = _split_blanks(text)
            if not pieces:
                if text and any(ch in _BLANKS for ch in text) and (have or cur):
                    fields.append("".join(cur))
                    cur, have = [], False
                return
            if text[0] in _BLANKS and (have or cur):
                fields.append("".join(cur))
                cur, have = [], False
            for k, piece in enumerate(pieces):
                if k:
                    fields.append("".join(cur))
                    cur = []
                cur.append(piece)
                have = True
            if text[-1] in _BLANKS:
                fields.append("".join(cur))
                cur, have = [], False

        while i < end:
            part = parts.get(i)
            if part is not None:
                add_expansion(self._substitute(part, err), dq)
                i = part.pos[1]
                continue
            ch = src[i]
            if dq:
                if ch == '"':
                    dq = False
                elif ch == "\\" and i + 1 < end and src[i + 1] in '$`"\\\n':
                    if src[i + 1] != "\n":
                        cur.append(src[i + 1])
                    i += 1
                else:
                    cur.append(ch)
                i += 1
                continue
            if ch == "'":
                close = src.index("'", i + 1)
                cur.append(src[i + 1 : close])
                have = True
                i = close + 1
            elif ch == '"':
                dq = True
                have = True
                i += 1
            elif ch == "\\" and i + 1 < end:
                if src[i + 1] != "\n":
                    cur.append(src[i + 1])
                    have = True
                i += 2
            else:
                cur.append(ch)
                have = True
                i += 1
        if have or cur:
            fields.append("".join(cur))
        if not split:
            return ["".join(fields)]
        return fields

    def _substitute(self, part: Any, err: bytearray) -> str:
        kind = part.kind
        if kind == "commandsubstitution":
            buf = bytearray()
            saved = self.status
            try:
                status = self._node(part.command, b"", buf, err)
            except _Exit as done:
                status = done.status
            self.status = status if status is not None else saved
            return buf.decode("utf-8", "surrogateescape").rstrip("\n")
        if kind == "parameter":
            return self._parameter(part.value)
        if kind == "tilde":
            return self.variables.get("HOME", "/")
        raise _Unsupported(f"'{kind}' expansion")

    def _parameter(self, name: str) -> str:
        if name == "?":
            return str(self.status)
        if name == "$":
            return "1"
        if name in ("#", "0"):
            return {"#": "0", "0": SHELL}[name]
        return self.variables.get(name, "")

    # -- builtins needing the shell --------------------------------------------------------------
    def _export(self, inv: Invocation) -> int:
        for arg in inv.argv[1:]:
            name, eq, value = arg.partition("=")
            if eq:
                self.variables[name] = value
        return 0


def _split_blanks(text: str) -> list[str]:
    return text.split()


def _echo(inv: Invocation) -> int:
    """``echo [-n] [ARG...]``: the arguments joined by spaces, newline unless ``-n``."""
    args = inv.argv[1:]
    newline = True
    if args and args[0] == "-n":
        newline = False
        args = args[1:]
    inv.write(" ".join(args) + ("\n" if newline else ""))
    return 0


def _exit(inv: Invocation) -> int:
    """``exit [N]``: stop the command line with status N (default: the last status)."""
    args = inv.argv[1:]
    if not args:
        raise _Exit(inv.shell.status if inv.shell else 0)
    try:
        raise _Exit(int(args[0]))
    except ValueError:
        inv.error(f"{SHELL}: exit: {args[0]}: bad number")
        raise _Exit(2) from None
