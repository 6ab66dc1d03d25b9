"""A pool of Android devices that leases them to episodes, checks their health and heals them.

    from phoneenv.farm.pool import DevicePool

    pool = DevicePool.from_file("farm.json")          # or DevicePool.from_serials([...], adb_port=5037)
    with pool.lease(timeout_s=60) as lease:           # a healthy, free device
        backend = AdbBackend(serial=lease.serial, adb_host=lease.adb_host, adb_port=lease.adb_port)
        ...                                           # an InfrastructureError here releases it as failed
    print(pool.report())
    pool.close()

Devices are virtual devices (:mod:`phoneenv.farm.virtual` served over adb), emulators and phones,
all reached through one adb server. Every :meth:`DevicePool.lease` first checks the device it
picks (:func:`check_health`): the adb state is ``device``, ``sys.boot_completed`` is 1, the shell
echoes a nonce within :attr:`HealthPolicy.shell_deadline_s`, ``/data`` has at least
:attr:`HealthPolicy.min_free_mb` free (``df``), and, when :attr:`HealthPolicy.clock_tolerance_s`
is set, the device clock is that close to the host's. So a device is checked before each
episode, which is also between any two episodes it plays.

A device that fails a check, or that a lease hands back with ``release(lease, failed=reason)``,
is quarantined, and a background thread tries to heal it in escalating steps
(:data:`RECOVERY_STEPS`), each bounded by its deadline (:attr:`HealthPolicy.deadlines`):

1. ``reconnect``: ``adb connect`` (a network serial) or ``adb reconnect`` (USB);
2. ``reattach``: drop and rebuild the adb server's connection to it (``adb disconnect`` +
   ``adb connect``; network serials only);
3. ``reboot``: ``adb reboot``, then wait for ``sys.boot_completed``;
4. ``restart``: the farm file's ``restart`` argv (restart the worker process or container), or
   for an emulator without one, restart it from its snapshot through
   ``phoneenv.farm.emulator.restart_from_snapshot`` when that exists (a :class:`PoolDevice`
   ``restart_hook`` overrides both).

The connection steps repeat their action until it succeeds or the deadline passes; after each
step the device is checked again until the step's deadline; the first step after which it is
healthy returns it to the pool. A device no step heals is retired with the reason
(its last failed check and what each step said), which :meth:`DevicePool.report` lists.
Retries and waits use tenacity; adb calls go through :class:`~phoneenv.backends.adb.DeviceShell`
(adbutils, never starting an adb server of its own).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import re
import secrets
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Protocol

import tenacity
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from phoneenv.errors import PhoneEnvError
from phoneenv.extras import require
from phoneenv.llm import InfrastructureError

__all__ = [
    "RECOVERY_STEPS",
    "AdbOps",
    "DeviceKind",
    "DeviceOps",
    "DevicePool",
    "FarmAdb",
    "FarmDevice",
    "FarmFile",
    "FarmFileError",
    "HealthPolicy",
    "HealthResult",
    "Lease",
    "PoolDevice",
    "PoolExhausted",
    "StepUnavailable",
    "check_health",
    "farm_summary",
    "guess_kind",
    "parse_df",
    "pool_for_eval",
]

log = logging.getLogger(__name__)

RECOVERY_STEPS: tuple[str, ...] = ("reconnect", "reattach", "reboot", "restart")
"""The recovery steps, in the order they are tried (module docstring)."""

_NETWORK_SERIAL = re.compile(r"\[?[\w.:-]+\]?:\d+")


class DeviceKind(str, Enum):
    """What a pooled device is: a virtual device served over adb, an emulator, or a phone."""

    VIRTUAL = "virtual"
    EMULATOR = "emulator"
    PHONE = "phone"

    def __str__(self) -> str:
        return self.value


def guess_kind(serial: str) -> DeviceKind:
    """The kind a bare serial most likely names: ``emulator-N`` an emulator, ``host:port`` a
    virtual device (a network endpoint), anything else a phone (a USB serial)."""
    if re.fullmatch(r"emulator-\d+", serial):
        return DeviceKind.EMULATOR
    if _NETWORK_SERIAL.fullmatch(serial):
        return DeviceKind.VIRTUAL
    return DeviceKind.PHONE


# -- the farm file --------------------------------------------------------------------------------


FARM_FILE_FIX = "fix it, or write a new one with `phoneenv farm up --out {path}`"
"""What to do about a farm file that is not one (said after the problem)."""


class FarmFileError(PhoneEnvError, ValueError):
    """A farm file that cannot be read or is not a farm file (:meth:`FarmFile.load`); the message
    names the file and the first problem."""


class FarmAdb(BaseModel):
    """The adb server every device of the farm is reached through."""

    model_config = ConfigDict(extra="allow")

    host: str = "127.0.0.1"
    port: int = Field(5037, ge=1, le=65535)


class FarmDevice(BaseModel):
    """One device of a farm file: ``serial``, ``kind``, and optionally the ``restart`` argv the
    pool runs as its last recovery step; emulators name their ``avd`` and ``snapshot``. Unknown
    keys are kept (and ignored by the pool)."""

    model_config = ConfigDict(extra="allow")

    serial: str = Field(min_length=1)
    kind: DeviceKind = DeviceKind.PHONE
    restart: list[str] | None = Field(None, min_length=1)
    avd: str | None = None
    snapshot: str | None = None


class FarmFile(BaseModel):
    """A farm file (JSON), written by ``phoneenv farm up`` and read by :meth:`DevicePool.from_file`::

        {"version": 1, "adb": {"host": "127.0.0.1", "port": 5037},
         "devices": [{"serial": "127.0.0.1:40001", "kind": "virtual",
                      "restart": ["docker", "restart", "phoneenv-worker-1"]}, ...]}

    Unknown keys are kept and ignored. Serials must be distinct. An optional ``health`` object
    sets the pool's :class:`HealthPolicy` for this farm (its fields, e.g. ``{"deadlines":
    {"reconnect": 5, "reattach": 5, "reboot": 0, "restart": 120}}``: a step given 0 seconds, or
    left out of ``deadlines``, is skipped), for farms whose devices recover faster or slower than
    the defaults assume. A bad policy is a validation error of the file.
    """

    model_config = ConfigDict(extra="allow")

    version: Literal[1] = 1
    adb: FarmAdb = Field(default_factory=FarmAdb)
    devices: list[FarmDevice] = Field(default_factory=list)
    health: HealthPolicy | None = None

    @model_validator(mode="after")
    def _distinct_serials(self) -> FarmFile:
        serials = [d.serial for d in self.devices]
        twice = sorted({s for s in serials if serials.count(s) > 1})
        if twice:
            raise ValueError(f"the farm lists these serials more than once: {', '.join(twice)}")
        return self

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> FarmFile:
        """Read and validate the farm file at ``path``. Raises ``FileNotFoundError`` when it is
        missing and :class:`FarmFileError` (a ``ValueError``) naming the file and the first
        problem when it cannot be read or is not a farm file (a folder, not UTF-8, not JSON, a
        wrong version, a device without a serial, ...)."""
        from phoneenv.tracefiles import read_json_file

        path = Path(path)
        try:
            data = read_json_file(path)
        except FileNotFoundError:
            raise
        except ValueError as exc:
            raise FarmFileError(f"{exc}; not a farm file ({FARM_FILE_FIX.format(path=path)})") from None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(p) for p in problem.get("loc", ())) or "the file"
            raise FarmFileError(
                f"{path} is not a farm file: {where}: {problem['msg']} ({FARM_FILE_FIX.format(path=path)})"
            ) from None

    def dump(self, path: str | os.PathLike[str]) -> None:
        """Write the farm file to ``path`` (JSON, whole or not at all: a temporary file renamed over it)."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(self.model_dump_json(indent=2, exclude_none=True) + "\n", encoding="utf-8")
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise


# -- health ---------------------------------------------------------------------------------------


@dataclass
class HealthPolicy:
    """What a healthy device is and how long recovery may take.

    Args:
        shell_deadline_s: seconds each health-check command (and each adb call of a recovery
            action) may take; a shell slower than this is not responsive.
        min_free_mb: least free space on ``/data`` in MiB (``df``); a device whose ``df`` is
            missing or unreadable passes this check (noted in the result as ``free_mb=None``).
        clock_tolerance_s: largest difference in seconds between the device clock (``date +%s``)
            and the host's; None (the default) only requires a readable clock, because resets set
            the device clock to each task's fixture time.
        deadlines: seconds each recovery step (:data:`RECOVERY_STEPS`) may take, its action and
            the checks after it together.
        poll_s: seconds between health checks while waiting for a recovering device.
        quarantine: False: never heal, retire a failed device at once (tests, strict farms).
    """

    shell_deadline_s: float = 5.0
    min_free_mb: float = 256.0
    clock_tolerance_s: float | None = None
    deadlines: dict[str, float] = field(
        default_factory=lambda: {"reconnect": 20.0, "reattach": 30.0, "reboot": 180.0, "restart": 300.0}
    )
    poll_s: float = 0.5
    quarantine: bool = True

    def __post_init__(self) -> None:
        unknown = set(self.deadlines) - set(RECOVERY_STEPS)
        if unknown:
            raise ValueError(f"unknown recovery steps {sorted(unknown)}; the steps are {', '.join(RECOVERY_STEPS)}")
        if self.shell_deadline_s <= 0 or self.poll_s <= 0 or any(v < 0 for v in self.deadlines.values()):
            raise ValueError(f"HealthPolicy takes positive seconds, not {self}")

    def deadline(self, step: str) -> float:
        """Seconds recovery step ``step`` may take (0 when the policy leaves it out: skipped)."""
        return self.deadlines.get(step, 0.0)


@dataclass
class HealthResult:
    """One health check: ``ok``, the first failure in words (``reason``), what was read
    (``state``, ``boot_completed``, ``free_mb``, ``clock_skew_s``) and how long it took (s)."""

    ok: bool
    reason: str | None = None
    state: str | None = None
    boot_completed: bool | None = None
    free_mb: float | None = None
    clock_skew_s: float | None = None
    seconds: float = 0.0


def parse_df(text: str, mount: str = "/data") -> float | None:
    """Free MiB on ``mount`` from ``df`` output (toybox/busybox/coreutils: a header with
    ``1K-blocks`` or ``512B-blocks``/``512-blocks`` and an ``Available``/``Avail``/``Free`` column, rows
    possibly wrapped after a long filesystem name); None when the output holds no such row.

    >>> parse_df("Filesystem 1K-blocks Used Available Use% Mounted on\\n/dev/dm-5 5127992 2116044 2995564 42% /data\\n")
    2925.35546875
    """
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return None
    header = [h.lower() for h in lines[0]]
    if header[:1] != ["filesystem"]:
        return None
    unit = 1024
    if any(h.startswith("512") for h in header):
        unit = 512
    avail_col = next((i for i, h in enumerate(header) if h in ("available", "avail", "free")), None)
    if avail_col is None:
        return None
    tokens: list[str] = []
    rows: list[list[str]] = []
    for words in lines[1:]:
        tokens += words
        if len(tokens) >= avail_col + 1 and len(tokens) >= 5:  # a row is whole once it has its numbers
            rows.append(tokens)
            tokens = []
    for row in reversed(rows):
        if row[-1] == mount or len(rows) == 1:
            try:
                return int(row[avail_col]) * unit / (1024 * 1024)
            except (ValueError, IndexError):
                return None
    return None


class DeviceOps(Protocol):
    """The adb calls the pool makes (:class:`AdbOps` through a real adb server; tests pass fakes).
    Every method raises (any exception) when the call fails; ``timeout_s`` bounds one call."""

    def state(self, serial: str) -> str | None:
        """The adb server's state for ``serial`` (``device``, ``offline``, ``unauthorized``), None if unlisted."""

    def shell(self, serial: str, command: str, timeout_s: float) -> tuple[str, int]:
        """Run one command line; its stdout (text) and exit status."""

    def reconnect(self, serial: str, timeout_s: float) -> None:
        """``adb connect`` a network serial, ``adb reconnect`` another."""

    def reattach(self, serial: str, timeout_s: float) -> None:
        """``adb disconnect`` + ``adb connect`` a network serial."""

    def reboot(self, serial: str, timeout_s: float) -> None:
        """``adb reboot``."""

    def run(self, argv: Sequence[str], timeout_s: float) -> None:
        """Run a host command (a restart argv); raise when it fails or outlasts ``timeout_s``."""


class AdbOps:
    """:class:`DeviceOps` through the adb server at ``host:port`` (adbutils, via
    :class:`~phoneenv.backends.adb.DeviceShell`, which never starts a server of its own)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 5037) -> None:
        require("device", "adbutils", feature="Devices over adb")
        self.host = host
        self.port = port

    def _shell(self, serial: str, timeout_s: float) -> Any:
        from phoneenv.backends.adb import DeviceShell

        return DeviceShell(serial, self.host, self.port, timeout_s)

    def state(self, serial: str) -> str | None:
        return self._shell(serial, 10.0).state()

    def shell(self, serial: str, command: str, timeout_s: float) -> tuple[str, int]:
        stdout, _, status = self._shell(serial, timeout_s).raw(command, timeout=timeout_s)
        return stdout.decode("utf-8", "replace"), status

    def reconnect(self, serial: str, timeout_s: float) -> None:
        sh = self._shell(serial, timeout_s)
        if _NETWORK_SERIAL.fullmatch(serial) and not serial.startswith("emulator-"):
            answer = sh.client.connect(serial, timeout=timeout_s)
            if "connected to" not in answer:
                raise RuntimeError(f"adb connect {serial}: {answer.strip()}")
            return
        conn = sh.client.make_connection(timeout=timeout_s)  # `adb -s SERIAL reconnect`
        try:
            conn.send_command(f"host-serial:{serial}:reconnect")
            conn.check_okay()
        finally:
            conn.close()

    def reattach(self, serial: str, timeout_s: float) -> None:
        if not _NETWORK_SERIAL.fullmatch(serial) or serial.startswith("emulator-"):
            raise StepUnavailable("not a network serial: the adb server's connection to it cannot be rebuilt")
        self._shell(serial, timeout_s).reconnect(wait_s=timeout_s)

    def reboot(self, serial: str, timeout_s: float) -> None:
        sh = self._shell(serial, timeout_s)
        sh.device().reboot()

    def run(self, argv: Sequence[str], timeout_s: float) -> None:
        done = subprocess.run(list(argv), capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).decode("utf-8", "replace").strip()[-300:]
            raise RuntimeError(f"`{' '.join(argv)}` exited with {done.returncode}: {tail}")


class StepUnavailable(PhoneEnvError):
    """A recovery step that does not apply to this device (said why); it is skipped, not failed."""


def check_health(
    ops: DeviceOps, serial: str, policy: HealthPolicy, *, wall: Callable[[], float] = time.time
) -> HealthResult:
    """Check one device (module docstring); never raises: a failure is ``ok=False`` with the reason.

    Four short adb round trips, each bounded by ``policy.shell_deadline_s``: ``echo <nonce>``,
    ``getprop sys.boot_completed``, ``df /data``, ``date +%s``. ``wall`` is the host clock
    (seconds since the epoch) the device clock is compared with.
    """
    t0 = time.perf_counter()
    out = HealthResult(ok=False)

    def done(reason: str | None) -> HealthResult:
        out.ok, out.reason, out.seconds = reason is None, reason, time.perf_counter() - t0
        return out

    deadline = policy.shell_deadline_s
    try:
        out.state = ops.state(serial)
    except Exception as exc:
        return done(f"the adb server does not answer: {_text(exc)}")
    if out.state != "device":
        return done(f"adb state is {out.state or 'not listed'}")
    nonce = secrets.token_hex(6)
    try:
        text, _ = ops.shell(serial, f"echo {nonce}", deadline)
    except Exception as exc:
        return done(f"the shell did not answer within {deadline:g} s: {_text(exc)}")
    if text.strip() != nonce:
        return done(f"the shell is not responsive: `echo {nonce}` printed {text.strip()[:80]!r}")
    try:
        text, _ = ops.shell(serial, "getprop sys.boot_completed", deadline)
        out.boot_completed = text.strip() == "1"
        if not out.boot_completed:
            return done(f"not booted: sys.boot_completed is {text.strip()[:20] or 'unset'!r}")
        text, status = ops.shell(serial, "df /data", deadline)
        out.free_mb = parse_df(text) if status == 0 else None
        if out.free_mb is not None and out.free_mb < policy.min_free_mb:
            return done(f"storage full: {out.free_mb:.0f} MiB free on /data (at least {policy.min_free_mb:g} needed)")
        text, status = ops.shell(serial, "date +%s", deadline)
    except Exception as exc:
        return done(f"the shell did not answer within {deadline:g} s: {_text(exc)}")
    try:
        device_now = float(text.strip())
    except ValueError:
        return done(f"the clock is unreadable: `date +%s` printed {text.strip()[:40]!r} (exit {status})")
    out.clock_skew_s = device_now - wall()
    if policy.clock_tolerance_s is not None and abs(out.clock_skew_s) > policy.clock_tolerance_s:
        return done(f"the clock is {out.clock_skew_s:+.0f} s off the host's (tolerance {policy.clock_tolerance_s:g} s)")
    return done(None)


def _text(exc: BaseException) -> str:
    return (str(exc).strip() or type(exc).__name__)[:300]


# -- the pool -------------------------------------------------------------------------------------


@dataclass
class PoolDevice:
    """One device of a pool: ``serial``, ``kind``, the optional ``restart`` argv (the farm
    file's), an emulator's ``avd``/``snapshot``, and ``restart_hook(device, timeout_s)``, which
    replaces the last recovery step's default when given. ``options`` holds the farm entry's
    other keys."""

    serial: str
    kind: DeviceKind = DeviceKind.PHONE
    restart: tuple[str, ...] | None = None
    avd: str | None = None
    snapshot: str | None = None
    restart_hook: Callable[[PoolDevice, float], None] | None = field(default=None, repr=False)
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_farm(cls, entry: FarmDevice) -> PoolDevice:
        """The pool's view of a farm-file device."""
        return cls(
            serial=entry.serial,
            kind=entry.kind,
            restart=tuple(entry.restart) if entry.restart else None,
            avd=entry.avd,
            snapshot=entry.snapshot,
            options=dict(entry.model_extra or {}),
        )


class PoolExhausted(InfrastructureError):
    """No healthy device can be leased: every device is retired, the pool is closed, or none
    became free within the lease's timeout (the message says which)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="pool")


_IDLE, _CHECKING, _LEASED, _RECOVERING, _RETIRED = "idle", "checking", "leased", "recovering", "retired"
_QUARANTINED = "quarantined"  # failed, and the pool closed before its recovery ended


@dataclass
class _Slot:
    device: PoolDevice
    index: int
    status: str = _IDLE
    last_used: int = -1
    leases: int = 0
    failures: int = 0
    checks: int = 0
    failed_checks: int = 0
    last_reason: str | None = None
    retired_reason: str | None = None
    recovering_since: float | None = None
    recovery_s: float = 0.0
    thread: threading.Thread | None = None


@dataclass(eq=False)
class Lease:
    """A device lent to one episode: ``serial``, ``kind``, and the adb server (``adb_host``,
    ``adb_port``) to reach it through. As a context manager it releases itself on exit, as
    failed when an :class:`~phoneenv.llm.InfrastructureError` ends the block."""

    serial: str
    kind: DeviceKind
    adb_host: str
    adb_port: int
    device: PoolDevice = field(repr=False)
    started: float = 0.0
    pool: DevicePool | None = field(default=None, repr=False)
    released: bool = False

    def release(self, *, failed: str | None = None) -> None:
        """Hand the device back (see :meth:`DevicePool.release`)."""
        if self.pool is not None:
            self.pool.release(self, failed=failed)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if not self.released:
            self.release(failed=f"{type(exc).__name__}: {exc}" if isinstance(exc, InfrastructureError) else None)


class DevicePool:
    """Leases healthy devices to episodes, quarantines and heals failed ones (module docstring).

    Thread-safe: several threads may lease and release at once; recovery runs on a background
    thread per quarantined device.

    Args:
        devices: the devices (distinct serials; at least one).
        adb_host: the adb server's address.
        adb_port: the adb server's port.
        policy: health checks and recovery deadlines (default :class:`HealthPolicy()`).
        ops: the adb calls (default :class:`AdbOps` on ``adb_host:adb_port``; tests pass fakes).
        clock: monotonic seconds for deadlines and time lost (tests pass a fake that ``sleep``
            advances).
        sleep: waits the given seconds between recovery checks.
        wall: the host's clock in seconds since the epoch (for the clock check).

    Raises ``ValueError`` for no devices or a serial given twice.
    """

    def __init__(
        self,
        devices: Sequence[PoolDevice],
        *,
        adb_host: str = "127.0.0.1",
        adb_port: int = 5037,
        policy: HealthPolicy | None = None,
        ops: DeviceOps | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        wall: Callable[[], float] = time.time,
    ) -> None:
        if not devices:
            raise ValueError("a device pool needs at least one device")
        serials = [d.serial for d in devices]
        if len(set(serials)) != len(serials):
            raise ValueError(f"a serial is given twice: {serials}")
        self.adb_host = adb_host
        self.adb_port = adb_port
        self.policy = policy or HealthPolicy()
        self.ops: DeviceOps = ops if ops is not None else AdbOps(adb_host, adb_port)
        self._clock = clock
        self._sleep = sleep
        self._wall = wall
        self._slots = [_Slot(d, i) for i, d in enumerate(devices)]
        self._by_serial = {s.device.serial: s for s in self._slots}
        self._cond = threading.Condition()
        self._closed = threading.Event()
        self._uses = itertools.count()
        self._leases = 0
        self._failed_leases = 0
        self._time_lost = 0.0
        self._checks = {"passed": 0, "failed": 0}
        self._recoveries: dict[str, dict[str, int]] = {
            s: {"tried": 0, "healed": 0, "failed": 0, "skipped": 0} for s in RECOVERY_STEPS
        }
        self._events: list[dict[str, Any]] = []

    # -- construction -----------------------------------------------------------------------------
    @classmethod
    def from_file(cls, path: str | os.PathLike[str], **kwargs: Any) -> DevicePool:
        """A pool over the devices of a farm file (:class:`FarmFile`); ``kwargs`` go to the
        constructor (``policy``...; without one, the farm file's ``health`` policy, else the
        default). Raises as :meth:`FarmFile.load`, and ``ValueError`` for a
        farm with no devices."""
        farm = FarmFile.load(path)
        if not farm.devices:
            raise ValueError(f"{path} lists no devices")
        if kwargs.get("policy") is None and farm.health is not None:
            kwargs["policy"] = farm.health
        return cls(
            [PoolDevice.from_farm(d) for d in farm.devices], adb_host=farm.adb.host, adb_port=farm.adb.port, **kwargs
        )

    @classmethod
    def from_serials(
        cls, serials: Sequence[str], *, adb_host: str = "127.0.0.1", adb_port: int = 5037, **kwargs: Any
    ) -> DevicePool:
        """A pool over bare serials, each device's kind guessed from its serial (:func:`guess_kind`)."""
        return cls([PoolDevice(s, guess_kind(s)) for s in serials], adb_host=adb_host, adb_port=adb_port, **kwargs)

    # -- leasing ----------------------------------------------------------------------------------
    def lease(self, timeout_s: float = 300.0) -> Lease:
        """A healthy free device: blocks until one is (checking each candidate first; one that
        fails goes to quarantine and the next is tried). Devices are lent least recently used
        first, in the pool's order at the start.

        Raises :class:`PoolExhausted` (an :class:`~phoneenv.llm.InfrastructureError`) when every
        device is retired, the pool is closed, or none is free and healthy within ``timeout_s``.
        """
        deadline = self._clock() + timeout_s
        while True:
            with self._cond:
                slot = self._wait_idle(deadline, timeout_s)
                slot.status = _CHECKING
            result = self._check(slot)
            with self._cond:
                if result.ok and not self._closed.is_set():
                    slot.status = _LEASED
                    slot.leases += 1
                    self._leases += 1
                    return Lease(
                        slot.device.serial, slot.device.kind, self.adb_host, self.adb_port, slot.device,
                        self._clock(), self,
                    )  # fmt: skip
                if result.ok:  # closed meanwhile
                    slot.status = _IDLE
                    continue
                self._quarantine(slot, f"failed its health check: {result.reason}")

    def _wait_idle(self, deadline: float, timeout_s: float) -> _Slot:
        while True:
            if self._closed.is_set():
                raise PoolExhausted("the device pool is closed")
            live = [s for s in self._slots if s.status != _RETIRED]
            if not live:
                reasons = "; ".join(f"{s.device.serial}: {s.retired_reason}" for s in self._slots)
                raise PoolExhausted(f"every device of the pool is retired ({reasons})")
            idle = [s for s in live if s.status == _IDLE]
            if idle:
                return min(idle, key=lambda s: (s.last_used, s.index))
            left = deadline - self._clock()
            if left <= 0:
                busy = ", ".join(f"{s.device.serial} {s.status}" for s in live)
                raise PoolExhausted(f"no healthy device became free within {timeout_s:g} s ({busy})")
            self._cond.wait(min(left, 0.5))

    def release(self, lease: Lease, *, failed: str | None = None) -> None:
        """Hand a leased device back. ``failed``: why the episode's device failed (a device
        infrastructure error); the device is quarantined and healed in the background, and the
        lease's duration counts as time lost. A second release of the same lease is ignored."""
        with self._cond:
            if lease.released:
                return
            lease.released = True
            slot = self._by_serial[lease.serial]
            slot.last_used = next(self._uses)
            if failed is None:
                slot.status = _IDLE if slot.status == _LEASED else slot.status
                self._cond.notify_all()
                return
            slot.failures += 1
            self._failed_leases += 1
            self._time_lost += max(0.0, self._clock() - lease.started)
            self._quarantine(slot, failed)

    # -- health and recovery ----------------------------------------------------------------------
    def check(self, serial: str) -> HealthResult:
        """Check one device now (counted in the report); does not change its status."""
        return self._check(self._by_serial[serial])

    @property
    def serials(self) -> list[str]:
        """The serials of every device of the pool, retired ones included, in the pool's order."""
        return [slot.device.serial for slot in self._slots]

    def preflight(self, connect_s: float = 5.0) -> dict[str, str]:
        """Check every device once before a run, so that a pool with no usable device is refused
        at once rather than after each device's recovery deadlines. A network serial
        (``HOST:PORT``) that adb does not list is ``adb connect``ed first (once, within
        ``connect_s`` seconds). Returns ``{serial: reason}`` of the devices that failed; they stay
        in the pool (a lease quarantines and heals them as usual). Counted in the report's checks."""
        failed: dict[str, str] = {}
        for slot in self._slots:
            serial = slot.device.serial
            result = self._check(slot)
            network = _NETWORK_SERIAL.fullmatch(serial) and not serial.startswith("emulator-")
            if not result.ok and result.state is None and network:
                try:
                    self.ops.reconnect(serial, connect_s)
                except Exception as exc:  # refused, unreachable: the reason to report
                    failed[serial] = f"{result.reason}; adb connect: {_text(exc)}"
                    continue
                result = self._check(slot)
            if not result.ok:
                failed[serial] = result.reason or "unhealthy"
        return failed

    def _check(self, slot: _Slot) -> HealthResult:
        result = check_health(self.ops, slot.device.serial, self.policy, wall=self._wall)
        with self._cond:
            slot.checks += 1
            self._checks["passed" if result.ok else "failed"] += 1
            if not result.ok:
                slot.failed_checks += 1
                slot.last_reason = result.reason
        return result

    def _quarantine(self, slot: _Slot, reason: str) -> None:
        """Under the lock: take the device out of service and start healing it."""
        log.warning("device %s quarantined: %s", slot.device.serial, reason)
        slot.last_reason = reason
        self._event(slot, "quarantined", reason)
        if not self.policy.quarantine or self._closed.is_set():
            self._retire(slot, reason)
            return
        slot.status = _RECOVERING
        slot.recovering_since = self._clock()
        slot.thread = threading.Thread(
            target=self._recover, args=(slot, reason), name=f"pool-recover-{slot.device.serial}", daemon=True
        )
        slot.thread.start()

    def _retire(self, slot: _Slot, reason: str) -> None:
        log.error("device %s retired: %s", slot.device.serial, reason)
        slot.status = _RETIRED
        slot.retired_reason = reason
        self._event(slot, "retired", reason)
        self._cond.notify_all()

    def _event(self, slot: _Slot, what: str, detail: str) -> None:
        self._events.append({"serial": slot.device.serial, "event": what, "detail": detail, "at": self._wall()})

    def _recover(self, slot: _Slot, reason: str) -> None:
        """Escalate through the recovery steps until the device is healthy, or retire it."""
        tried: list[str] = []
        last = reason
        checked = False
        for step in RECOVERY_STEPS:
            if self._closed.is_set():
                break
            budget = self.policy.deadline(step)
            if budget <= 0:
                continue
            deadline = self._clock() + budget
            try:
                self._act(slot.device, step, budget, deadline)
            except StepUnavailable as exc:
                self._count(step, "skipped")
                tried.append(f"{step}: skipped ({exc})")
                continue
            except Exception as exc:
                self._count(step, "tried")
                self._count(step, "failed")
                tried.append(f"{step}: failed ({_text(exc)})")
                log.info("recovery of %s: %s failed: %s", slot.device.serial, step, exc)
                continue
            self._count(step, "tried")
            checked = True
            result = self._wait_healthy(slot, deadline)
            if result is not None and result.ok:
                self._count(step, "healed")
                with self._cond:
                    slot.recovery_s += self._clock() - (slot.recovering_since or self._clock())
                    slot.recovering_since = None
                    if slot.status == _RECOVERING:
                        slot.status = _IDLE
                    self._event(slot, "healed", step)
                    self._cond.notify_all()
                log.warning("device %s healed by %s", slot.device.serial, step)
                return
            self._count(step, "failed")
            now = result.reason if result is not None else last
            tried.append(f"{step}: still {now}" if now != last or not tried else f"{step}: no change")
            last = now
        if not checked and not self._closed.is_set():  # no step got as far as a check: look once more
            result = self._check(slot)
            last = result.reason or last
        with self._cond:
            slot.recovery_s += self._clock() - (slot.recovering_since or self._clock())
            slot.recovering_since = None
            if self._closed.is_set():  # not retired: its recovery was cut short
                slot.status = _QUARANTINED
                slot.last_reason = last
                self._event(slot, "recovery stopped", "the pool closed")
                self._cond.notify_all()
                return
            first = reason if len(reason) <= 200 else reason[:197] + "..."
            self._retire(slot, f"{last} (first: {first}; recovery: {'; '.join(tried) or 'no step applies'})")

    def _act(self, device: PoolDevice, step: str, budget: float, deadline: float) -> None:
        """Run a step's action; ``reconnect`` and ``reattach`` are tried again every ``poll_s``
        until they succeed or the step's deadline passes (a device coming back after a blip
        refuses connections until it is up), the others once."""
        if step not in ("reconnect", "reattach"):
            self._action(device, step, budget)
            return
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(lambda exc: not isinstance(exc, StepUnavailable)),
            stop=lambda state: self._closed.is_set() or self._clock() >= deadline,
            wait=tenacity.wait_fixed(self.policy.poll_s),
            sleep=self._sleep,
            reraise=True,
        )
        retrying(self._action, device, step, budget)

    def _action(self, device: PoolDevice, step: str, budget: float) -> None:
        timeout = min(budget, max(self.policy.shell_deadline_s, 1.0) * 2)
        if step == "reconnect":
            self.ops.reconnect(device.serial, timeout)
        elif step == "reattach":
            self.ops.reattach(device.serial, timeout)
        elif step == "reboot":
            self.ops.reboot(device.serial, timeout)
        elif step == "restart":
            if device.restart_hook is not None:
                device.restart_hook(device, budget)
            elif device.restart:
                self.ops.run(device.restart, budget)
            elif device.kind is DeviceKind.EMULATOR:
                _restart_emulator(device, budget, self.adb_host, self.adb_port)
            else:
                raise StepUnavailable("no restart command for this device in the farm file")
            if _NETWORK_SERIAL.fullmatch(device.serial) and not device.serial.startswith("emulator-"):
                with contextlib.suppress(Exception):  # the restarted worker needs `adb connect` again
                    self.ops.reattach(device.serial, timeout)

    def _wait_healthy(self, slot: _Slot, deadline: float) -> HealthResult | None:
        """Check the device every ``poll_s`` until it is healthy or ``deadline`` passes."""
        last: list[HealthResult] = []

        def attempt() -> HealthResult:
            result = self._check(slot)
            last.append(result)
            return result

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_result(lambda r: not r.ok),
            stop=lambda state: self._closed.is_set() or self._clock() >= deadline,
            wait=tenacity.wait_fixed(self.policy.poll_s),
            sleep=self._sleep,
            reraise=True,
        )
        with contextlib.suppress(tenacity.RetryError):
            return retrying(attempt)
        return last[-1] if last else None

    def _count(self, step: str, what: str) -> None:
        with self._cond:
            self._recoveries[step][what] += 1

    # -- reporting --------------------------------------------------------------------------------
    def status(self, serial: str) -> str:
        """A device's status now: ``idle``, ``checking``, ``leased``, ``recovering``, ``retired``,
        or ``quarantined`` (the pool closed while it was recovering)."""
        with self._cond:
            return self._by_serial[serial].status

    def wait_settled(self, timeout_s: float = 60.0) -> bool:
        """Wait until no device is recovering (each is in service or retired); whether that
        happened within ``timeout_s`` (real seconds)."""
        end = time.monotonic() + timeout_s
        with self._cond:
            while any(s.status == _RECOVERING for s in self._slots):
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.2))
        return True

    def report(self) -> dict[str, Any]:
        """The pool as JSON data: ``devices`` (per serial: kind, status, leases, failures, checks,
        failed checks, last failure, recovery seconds), ``leases`` and ``failed_leases``,
        ``checks`` (passed/failed), ``recoveries`` (per step: tried, healed, failed, skipped),
        ``retired`` ({serial: reason}), ``time_lost_s`` (the durations of leases released as
        failed), ``quarantined`` ({serial: last failure} of devices still recovering, or whose
        recovery the pool's closing cut short) and ``events`` (quarantined/healed/retired, in order)."""
        with self._cond:
            now = self._clock()
            return json.loads(
                json.dumps(
                    {
                        "devices": {
                            s.device.serial: {
                                "kind": s.device.kind.value,
                                "status": s.status,
                                "leases": s.leases,
                                "failures": s.failures,
                                "checks": s.checks,
                                "failed_checks": s.failed_checks,
                                "last_failure": s.last_reason,
                                "recovery_s": round(
                                    s.recovery_s + (now - s.recovering_since if s.recovering_since else 0.0), 3
                                ),
                            }
                            for s in self._slots
                        },
                        "leases": self._leases,
                        "failed_leases": self._failed_leases,
                        "checks": dict(self._checks),
                        "recoveries": {k: dict(v) for k, v in self._recoveries.items()},
                        "retired": {s.device.serial: s.retired_reason for s in self._slots if s.status == _RETIRED},
                        "quarantined": {
                            s.device.serial: s.last_reason
                            for s in self._slots
                            if s.status in (_RECOVERING, _QUARANTINED)
                        },
                        "time_lost_s": round(self._time_lost, 3),
                        "events": list(self._events),
                    }
                )
            )

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop lending and healing (recovery threads stop at their next check; waited for up to
        ``timeout_s`` seconds in all). Idempotent."""
        self._closed.set()
        with self._cond:
            self._cond.notify_all()
            threads = [s.thread for s in self._slots if s.thread is not None]
        end = time.monotonic() + timeout_s
        for t in threads:
            t.join(timeout=max(0.0, end - time.monotonic()))

    def __enter__(self) -> DevicePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _restart_emulator(device: PoolDevice, timeout_s: float, adb_host: str, adb_port: int) -> None:
    """The emulator's last recovery step: restart it from its snapshot on the same ports through
    ``phoneenv.farm.emulator.restart_from_snapshot(serial, snapshot, avd=, adb_server=,
    boot_timeout=)``. Raises :class:`StepUnavailable` when this installation's emulator module
    has no such function or the farm file names no ``avd`` (give the device a ``restart`` argv or
    a ``restart_hook`` instead)."""
    from phoneenv.farm import emulator

    restart = getattr(emulator, "restart_from_snapshot", None)
    if restart is None:
        raise StepUnavailable("phoneenv.farm.emulator has no restart_from_snapshot; give the device a restart argv")
    if not device.avd:
        raise StepUnavailable("the farm file names no avd for this emulator")
    restart(device.serial, device.snapshot, avd=device.avd, adb_server=(adb_host, adb_port), boot_timeout=timeout_s)


# -- the command line -----------------------------------------------------------------------------


def pool_for_eval(devices: Sequence[str] | None, farm: str | os.PathLike[str] | None) -> DevicePool | None:
    """The pool ``phoneenv eval --device SERIAL... | --farm FILE`` runs on, None for neither.

    ``--device`` serials are reached through the adb server of ``$ANDROID_ADB_SERVER_ADDRESS``
    (or ``$ANDROID_ADB_SERVER_HOST``, else 127.0.0.1) and ``$ANDROID_ADB_SERVER_PORT`` (else
    5037); a farm file names its own. Raises ``ValueError`` when both are given, and as
    :meth:`DevicePool.from_file` for a bad farm file."""
    if devices and farm is not None:
        raise ValueError("--device and --farm both name the devices: give one")
    if farm is not None:
        return DevicePool.from_file(farm)
    if devices:
        host = os.environ.get("ANDROID_ADB_SERVER_ADDRESS") or os.environ.get("ANDROID_ADB_SERVER_HOST") or "127.0.0.1"
        port = int(os.environ.get("ANDROID_ADB_SERVER_PORT") or 5037)
        return DevicePool.from_serials(list(dict.fromkeys(devices)), adb_host=host, adb_port=port)
    return None


def farm_summary(farm: dict[str, Any] | None) -> str | None:
    """The scoreboard's farm block (``Scoreboard.farm``) in a few lines of text (tries, episodes
    per device, the recovery steps tried and how many healed, retired and quarantined devices),
    None without one."""
    if not farm:
        return None
    lines = [
        f"farm: {farm['attempts']} tries, {farm['retries']} re-run on another device, "
        f"{farm['time_lost_s']:.1f} s lost to failed devices"
    ]
    used = ", ".join(f"{serial} ({n})" for serial, n in farm.get("devices", {}).items())
    if used:
        lines.append(f"episodes per device: {used}")
    steps = [(step, n) for step, n in (farm.get("recoveries") or {}).items() if n.get("tried")]
    if steps:
        done = ", ".join(f"{step} {n.get('healed', 0)}/{n['tried']}" for step, n in steps)
        lines.append(f"recovery steps (healed/tried): {done}")
    for serial, reason in farm.get("retired", {}).items():
        lines.append(f"retired {serial}: {reason}")
    for serial, reason in farm.get("quarantined", {}).items():
        lines.append(f"quarantined {serial} (its recovery had not ended when the run did): {reason}")
    return "\n".join(lines)
