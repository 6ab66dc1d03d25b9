"""Headless Android emulators: AVD definitions, port pairs, launch, boot wait, fixture snapshot, shutdown.

The pieces, in the order a farm worker uses them:

* :class:`AvdSpec` — one AVD declared in ``emulator_images/*.yaml`` (API level, ABI, system
  image package, device profile, RAM, data partition, root, GPU mode); :func:`load_avd_spec`
  validates a file and says which field is wrong.
* :class:`PortAllocator` — console/adb port pairs ``(N, N+1)``, ``N`` even in 5554..5682 (the
  range the emulator's ``-ports`` accepts), collision-free across processes on one machine: a
  pair is taken by holding an exclusive ``fcntl.flock`` on ``<runtime dir>/<N>.lock`` *and*
  finding both ports bindable on loopback. The kernel drops the lock when the holder exits,
  so a crashed worker never leaks a pair.
* :class:`EmulatorLauncher` — builds the ``emulator`` argument list, starts it headless in its own
  process group with output to a log file, and returns a :class:`RunningEmulator`, which waits
  for the console and for ``sys.boot_completed == 1`` (adbutils), turns animations off, saves and
  loads snapshots through the console (:mod:`phoneenv.farm.console`) and stops the emulator:
  console ``kill``, then SIGTERM, then SIGKILL to the group, each with a timeout.
* :func:`sweep_stale_locks` — removes ``*.lock`` files an emulator left in its AVD directory when
  it died without cleaning up (its PID is gone, or was reused by a later process).
* :func:`prepare_fixture` — the boot recipe: cold boot, animations off, save the ``fixture``
  snapshot, verify it is listed, shut down.
* Booting from a snapshot is checked: the snapshot must be on disk before launch
  (:func:`avd_snapshots`), and the emulator's own report of a fallback to a clean boot (which it
  does silently otherwise) fails the start: :class:`SnapshotNotFoundError`/:class:`SnapshotBootError`.
* Several emulators of one AVD: ``start(read_only=True)`` instances share it on distinct ports;
  a second writable one is refused (:class:`AvdInUseError`), so clone the AVD
  (:func:`clone_avd`, :meth:`EmulatorLauncher.clone`).
* :func:`restart_from_snapshot` (and :meth:`EmulatorLauncher.restart`) — the device pool's last
  recovery step: stop an emulator, start it again from a snapshot on the same ports (same
  serial), wait for boot with a deadline.

Example (needs the Android emulator and an AVD; see ``emulator_images/README.md``)::

    spec = load_avd_spec("emulator_images/pixel6-api34.yaml")
    launcher = EmulatorLauncher(spec)
    with launcher.start(snapshot=spec.fixture_snapshot) as emu:   # boots from the fixture
        print(emu.serial)                                         # "emulator-5554"
        emu.load_snapshot(spec.fixture_snapshot)                  # reset between episodes

Units: every timeout and interval is in seconds; sizes are MiB.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import tenacity
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from phoneenv.errors import PhoneEnvError
from phoneenv.extras import needs
from phoneenv.farm.console import ConsoleAuthError, ConsoleClient, ConsoleError, validate_snapshot_name

with needs("farm", feature="Emulator management (phoneenv.farm.emulator)"):
    import psutil

log = logging.getLogger(__name__)

__all__ = [
    "ANIMATION_SETTINGS",
    "AvdInUseError",
    "AvdSpec",
    "AvdSpecError",
    "BootTimeoutError",
    "DeviceShell",
    "EmulatorError",
    "EmulatorExitedError",
    "EmulatorLauncher",
    "EmulatorNotFoundError",
    "PortAllocator",
    "PortBusyError",
    "PortLease",
    "PortPair",
    "PortsExhaustedError",
    "RunningEmulator",
    "SnapshotBootError",
    "SnapshotNotFoundError",
    "avd_dir",
    "avd_home",
    "avd_snapshots",
    "clone_avd",
    "default_images_dir",
    "find_emulator",
    "live_group_members",
    "load_avd_spec",
    "load_avd_specs",
    "prepare_fixture",
    "resolve_avd_spec",
    "restart_from_snapshot",
    "sweep_stale_locks",
]

FIRST_CONSOLE_PORT = 5554
"""Lowest console port the emulator accepts (``-ports``/``-port``)."""
LAST_CONSOLE_PORT = 5682
"""Highest console port the emulator accepts; its adb port is 5683."""

ANIMATION_SETTINGS = ("window_animation_scale", "transition_animation_scale", "animator_duration_scale")
"""The ``settings global`` keys set to 0 so UI steps never wait on animations."""


# --------------------------------------------------------------------------------------- errors


class EmulatorError(PhoneEnvError, RuntimeError):
    """Base class of emulator-management failures."""


class AvdSpecError(EmulatorError, ValueError):
    """An AVD definition file is missing, not YAML, or fails validation (the message names the field)."""


class EmulatorNotFoundError(EmulatorError, FileNotFoundError):
    """No ``emulator`` executable on ``PATH`` or under ``$ANDROID_HOME``/``$ANDROID_SDK_ROOT``."""


class PortsExhaustedError(EmulatorError):
    """Every console/adb pair in the allocator's range is locked by another worker or in use."""


class EmulatorExitedError(EmulatorError):
    """The emulator process exited while it was expected to run (the message has its log tail)."""


class BootTimeoutError(EmulatorError, TimeoutError):
    """The console or ``sys.boot_completed`` did not come up before the deadline; the emulator was stopped."""


class AvdInUseError(EmulatorExitedError):
    """A writable emulator refused to start because another instance holds the AVD's lock.

    Start further instances with ``read_only=True`` (``-read-only``), or from a clone of the AVD
    (:func:`clone_avd`, :meth:`EmulatorLauncher.clone`).
    """


class SnapshotBootError(EmulatorError):
    """The emulator was told to boot from a snapshot and did not: it reported a fallback to a clean boot.

    The real emulator does not fail in that case: it prints ``Performing clean boot: <reason>``
    (or ``Resetting for clean boot: <reason>``) and cold boots, so an unchecked start silently
    yields a device without the fixture's state. The launcher reads that report and raises this.

    Attributes:
        snapshot: the snapshot asked for.
        available: the snapshots the AVD has (``<avd dir>/snapshots/*/snapshot.pb``, or the
            console's ``avd snapshot list``), sorted.
        reason: what the emulator reported (``"Missing snapshot files"``, ``"Bad snapshot data"``,
            ...), or what the launcher found.
    """

    def __init__(self, message: str, *, snapshot: str, available: Sequence[str], reason: str) -> None:
        super().__init__(message)
        self.snapshot = snapshot
        self.available = sorted(available)
        self.reason = reason


class SnapshotNotFoundError(SnapshotBootError, LookupError):
    """The snapshot to boot from does not exist (found before launch, or reported by the emulator)."""


class PortBusyError(PortsExhaustedError):
    """A specific console/adb pair could not be taken (in use, or its lock held past the wait)."""


# ------------------------------------------------------------------------------------ AVD spec

_AVD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_MANAGED_CONFIG_KEYS = ("hw.ramSize", "disk.dataPartition.size", "hw.gpu.enabled", "hw.gpu.mode")


class AvdSpec(BaseModel):
    """One AVD, as declared in ``emulator_images/<name>.yaml``.

    Attributes:
        name: the AVD name (``emulator -avd NAME``), ``[A-Za-z0-9._-]``, at most 100 characters.
        api_level: Android API level of the system image (21–36).
        abi: ``x86_64`` (fast on x86 hosts with KVM), ``x86`` or ``arm64-v8a`` (ARM hosts).
        tag: system-image tag: ``default`` (AOSP), ``google_apis``, ``google_apis_playstore``,
            ``aosp_atd`` or ``google_atd`` (automated-test images).
        system_image: the sdkmanager package; must equal
            ``system-images;android-<api_level>;<tag>;<abi>``.
        device: avdmanager device profile id (``avdmanager list device -c``), e.g. ``pixel_6``.
        ram_mib: guest RAM, MiB (``-memory``, ``hw.ramSize``).
        data_partition_mib: size of ``/data``, MiB (``-partition-size``, ``disk.dataPartition.size``).
        rooted: whether ``adb root`` works. True for every tag except ``google_apis_playstore``
            (production builds refuse it); checked against ``tag``. Restoring an app's data
            snapshot for a login fixture needs it.
        gpu: ``-gpu`` mode; ``swiftshader_indirect`` renders on the CPU and needs no display.
        accel: ``-accel``: ``auto`` (KVM when ``/dev/kvm`` is usable), ``on`` or ``off``.
        fixture_snapshot: name of the snapshot the boot recipe saves and resets load.
        boot_timeout_s: seconds to wait for ``sys.boot_completed`` (cold boots without KVM are slow).
        config: extra ``config.ini`` entries (``hw.keyboard: "yes"``); the managed keys
            ``hw.ramSize``, ``disk.dataPartition.size``, ``hw.gpu.*`` come from the fields above.
        description: free text.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    api_level: int = Field(ge=21, le=36)
    abi: Literal["x86_64", "x86", "arm64-v8a"]
    tag: Literal["default", "google_apis", "google_apis_playstore", "aosp_atd", "google_atd"]
    system_image: str
    device: str = "pixel_6"
    ram_mib: int = Field(default=2048, ge=1024, le=16384)
    data_partition_mib: int = Field(default=6144, ge=2048, le=65536)
    rooted: bool
    gpu: Literal["swiftshader_indirect", "angle_indirect", "host", "guest", "auto", "off"] = "swiftshader_indirect"
    accel: Literal["auto", "on", "off"] = "auto"
    fixture_snapshot: str = "fixture"
    boot_timeout_s: float = Field(default=600.0, gt=0, le=7200)
    config: dict[str, str] = Field(default_factory=dict)
    description: str = ""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _AVD_NAME.match(value):
            raise ValueError("must be 1-100 characters from [A-Za-z0-9._-], starting with a letter or digit")
        return value

    @field_validator("device")
    @classmethod
    def _check_device(cls, value: str) -> str:
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._ -]*$", value):
            raise ValueError("must be an avdmanager device id such as 'pixel_6'")
        return value

    @field_validator("fixture_snapshot")
    @classmethod
    def _check_snapshot(cls, value: str) -> str:
        return validate_snapshot_name(value)

    @field_validator("config")
    @classmethod
    def _check_config(cls, value: dict[str, str]) -> dict[str, str]:
        for key, item in value.items():
            if key in _MANAGED_CONFIG_KEYS:
                raise ValueError(f"{key} is set from the spec's fields; remove it from config")
            if not re.match(r"^[A-Za-z0-9_.]+$", key) or "\n" in item:
                raise ValueError(f"invalid config.ini entry {key!r}={item!r}")
        return value

    @model_validator(mode="after")
    def _check_consistency(self) -> AvdSpec:
        expected = f"system-images;android-{self.api_level};{self.tag};{self.abi}"
        if self.system_image != expected:
            raise ValueError(
                f"system_image {self.system_image!r} does not match api_level/tag/abi; expected {expected!r}"
            )
        rootable = self.tag != "google_apis_playstore"
        if self.rooted != rootable:
            raise ValueError(
                f"rooted: {self.rooted} contradicts tag {self.tag!r}: Play Store images refuse adb root, "
                "every other tag allows it"
            )
        return self

    @property
    def google_apis(self) -> bool:
        """Whether the image ships Google APIs (Play services): tags ``google_*``."""
        return self.tag.startswith("google")

    @property
    def supports_login_restore(self) -> bool:
        """Whether login fixtures can be restored from an app-data snapshot (needs root)."""
        return self.rooted

    def sdkmanager_command(self, sdkmanager: str = "sdkmanager") -> list[str]:
        """``sdkmanager --install`` arguments for the emulator, platform-tools and this system image."""
        return [sdkmanager, "--install", "emulator", "platform-tools", self.system_image]

    def avdmanager_command(self, avdmanager: str = "avdmanager", path: Path | None = None) -> list[str]:
        """``avdmanager create avd`` arguments that (re)create this AVD (``--force`` replaces one).

        avdmanager asks whether to create a custom hardware profile; answer ``no`` on stdin.
        ``path`` places the AVD directory explicitly (default ``<avd home>/<name>.avd``).
        """
        cmd = [
            avdmanager,
            "--silent",
            "create",
            "avd",
            "--force",
            "--name",
            self.name,
            "--package",
            self.system_image,
            "--tag",
            self.tag,
            "--abi",
            self.abi,
            "--device",
            self.device,
        ]
        if path is not None:
            cmd += ["--path", str(path)]
        return cmd

    def config_ini(self) -> dict[str, str]:
        """The ``config.ini`` entries this spec manages, plus :attr:`config`."""
        entries = {
            "hw.ramSize": str(self.ram_mib),
            "disk.dataPartition.size": f"{self.data_partition_mib}M",
            "hw.gpu.enabled": "no" if self.gpu == "off" else "yes",
            "hw.gpu.mode": self.gpu,
        }
        entries.update(self.config)
        return entries

    def apply_config(self, directory: Path | None = None) -> Path:
        """Write :meth:`config_ini` into ``<directory>/config.ini`` (default: this AVD's directory).

        Keys already present are replaced in place; other lines are kept. Returns the file's path.
        Raises :class:`AvdSpecError` when the file does not exist (create the AVD first).
        """
        target = (directory if directory is not None else avd_dir(self.name)) / "config.ini"
        if not target.is_file():
            raise AvdSpecError(f"{target} does not exist; create the AVD first ({' '.join(self.avdmanager_command())})")
        wanted = self.config_ini()
        out: list[str] = []
        seen: set[str] = set()
        for line in target.read_text(encoding="utf-8").splitlines():
            key = line.split("=", 1)[0].strip()
            if "=" in line and key in wanted:
                out.append(f"{key}={wanted[key]}")
                seen.add(key)
            else:
                out.append(line)
        out.extend(f"{key}={value}" for key, value in wanted.items() if key not in seen)
        target.write_text("\n".join(out) + "\n", encoding="utf-8")
        return target


def default_images_dir() -> Path:
    """Where AVD definitions live: ``$PHONEENV_EMULATOR_IMAGES``, else ``emulator_images/`` of this checkout."""
    env = os.environ.get("PHONEENV_EMULATOR_IMAGES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "emulator_images"


def load_avd_spec(path: str | os.PathLike[str]) -> AvdSpec:
    """Load and validate one AVD definition (YAML).

    Raises :class:`AvdSpecError` naming the file and each invalid field.
    """
    source = Path(path)
    try:
        data = yaml.safe_load(source.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise AvdSpecError(f"AVD definition {source} does not exist") from exc
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise AvdSpecError(f"cannot read AVD definition {source}: {' '.join(str(reason).split())}") from None
    except RecursionError:  # YAML nested deeper than the parser goes
        raise AvdSpecError(f"cannot read AVD definition {source}: nested too deeply") from None
    if not isinstance(data, dict):
        raise AvdSpecError(f"AVD definition {source} must be a YAML mapping, got {type(data).__name__}")
    try:
        return AvdSpec.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<spec>'}: {err['msg']}" for err in exc.errors()
        )
        raise AvdSpecError(f"invalid AVD definition {source}: {problems}") from exc


def load_avd_specs(directory: str | os.PathLike[str] | None = None) -> dict[str, AvdSpec]:
    """Every ``*.yaml``/``*.yml`` AVD definition in ``directory`` (default :func:`default_images_dir`), by AVD name.

    Raises :class:`AvdSpecError` for an invalid file or two files declaring the same name.
    """
    root = Path(directory) if directory is not None else default_images_dir()
    specs: dict[str, AvdSpec] = {}
    origin: dict[str, Path] = {}
    for path in sorted([*root.glob("*.yaml"), *root.glob("*.yml")]):
        spec = load_avd_spec(path)
        if spec.name in specs:
            raise AvdSpecError(f"AVD name {spec.name!r} is declared twice: {origin[spec.name]} and {path}")
        specs[spec.name] = spec
        origin[spec.name] = path
    return specs


def avd_home(env: Mapping[str, str] | None = None) -> Path:
    """The directory holding ``<name>.ini`` and ``<name>.avd/``, resolved as the emulator does.

    Order: ``$ANDROID_AVD_HOME``, ``$ANDROID_USER_HOME/avd``, ``$ANDROID_EMULATOR_HOME/avd``,
    ``$ANDROID_SDK_HOME/.android/avd`` (deprecated), ``$HOME/.android/avd``.
    """
    env = os.environ if env is None else env
    if env.get("ANDROID_AVD_HOME"):
        return Path(env["ANDROID_AVD_HOME"])
    for var in ("ANDROID_USER_HOME", "ANDROID_EMULATOR_HOME"):
        if env.get(var):
            return Path(env[var]) / "avd"
    if env.get("ANDROID_SDK_HOME"):
        return Path(env["ANDROID_SDK_HOME"]) / ".android" / "avd"
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".android" / "avd"


def _read_ini(path: Path) -> list[tuple[str, str]]:
    """``key=value`` lines of an AVD ``.ini`` file, in order (other lines dropped)."""
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            entries.append((key.strip(), value.strip()))
    return entries


def avd_dir(name: str, env: Mapping[str, str] | None = None) -> Path:
    """The content directory of AVD ``name``, found as the emulator finds it.

    ``path=`` of ``<avd home>/<name>.ini`` when that file exists and names one (AVDs created with
    ``avdmanager create avd --path``, and clones, live elsewhere), else ``<avd home>/<name>.avd``.
    """
    home = avd_home(env)
    ini = home / f"{name}.ini"
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for key, value in _read_ini(ini):
            if key == "path" and value:
                return Path(value)
    return home / f"{name}.avd"


def avd_snapshots(directory: str | os.PathLike[str]) -> list[str]:
    """Names of the snapshots an AVD has: ``<directory>/snapshots/<name>/snapshot.pb`` exists; sorted.

    ``directory`` is the AVD's content directory (:func:`avd_dir`). This is where the emulator
    keeps snapshots (Quick Boot's ``default_boot`` and named ones) and what it checks first when
    loading one. A missing directory gives ``[]``.
    """
    root = Path(directory) / "snapshots"
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    return sorted(entry.name for entry in entries if (entry / "snapshot.pb").is_file())


_CLONE_SKIP = ("*.lock", "hardware-qemu.ini", "*.tmp")


def clone_avd(
    source: str,
    name: str,
    *,
    env: Mapping[str, str] | None = None,
    snapshots: bool = True,
    overwrite: bool = False,
) -> Path:
    """Copy AVD ``source`` to a new AVD ``name`` (its ``.ini`` and content directory); returns the new directory.

    Two writable emulators cannot share one AVD (the second is refused: :class:`AvdInUseError`);
    a clone is a second AVD with the same system image, configuration, data and (with
    ``snapshots``) snapshots, so both boot writable, each with its own lock, data and snapshot
    saves. Alternatively start several ``read_only=True`` instances of one AVD.

    The new ``<avd home>/<name>.ini`` is the source's with ``path=`` (and ``path.rel=``) pointing
    at ``<avd home>/<name>.avd``; ``config.ini`` gets ``AvdId=<name>`` and
    ``avd.ini.displayname=<name>``. Lock files (``*.lock``) and ``hardware-qemu.ini`` (the emulator
    rewrites it at every start) are not copied. Copy the AVD while no writable emulator runs it
    (its images change under a copy); disk images are copied in full (GiBs for a used AVD).
    Disk overlays (``*.qcow2``) keep their backing-file paths, which point into the SDK's system
    image and the source AVD's base images, so keep the source AVD in place.

    Raises :class:`AvdSpecError` for an invalid ``name``, :class:`EmulatorError` when ``source``
    has no ``.ini`` or content directory, or ``name`` exists and ``overwrite`` is false.
    """
    if not _AVD_NAME.match(name):
        raise AvdSpecError(f"invalid AVD name {name!r}: use 1-100 characters from [A-Za-z0-9._-]")
    home = avd_home(env)
    src_ini = home / f"{source}.ini"
    src_dir = avd_dir(source, env)
    if not src_ini.is_file() or not src_dir.is_dir():
        raise EmulatorError(
            f"cannot clone AVD {source!r}: {src_ini if not src_ini.is_file() else src_dir} does not exist"
        )
    dst_ini = home / f"{name}.ini"
    dst_dir = home / f"{name}.avd"
    if name == source:
        raise EmulatorError(f"cannot clone AVD {source!r} onto itself")
    if dst_ini.exists() or dst_dir.exists():
        if not overwrite:
            raise EmulatorError(f"AVD {name!r} already exists ({dst_ini}); pass overwrite=True to replace it")
        shutil.rmtree(dst_dir, ignore_errors=True)
        dst_ini.unlink(missing_ok=True)
    ignore = shutil.ignore_patterns(*_CLONE_SKIP, *(() if snapshots else ("snapshots",)))
    staging = home / f".{name}.avd.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        shutil.copytree(src_dir, staging, ignore=ignore, symlinks=True)
        config = staging / "config.ini"
        if config.is_file():
            wanted = {"AvdId": name, "avd.ini.displayname": name}
            lines = []
            for line in config.read_text(encoding="utf-8").splitlines():
                key = line.partition("=")[0].strip()
                lines.append(f"{key}={wanted.pop(key)}" if "=" in line and key in wanted else line)
            lines.extend(f"{key}={value}" for key, value in wanted.items())
            config.write_text("\n".join(lines) + "\n", encoding="utf-8")
        staging.rename(dst_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    entries = {key: value for key, value in _read_ini(src_ini)}
    entries["path"] = str(dst_dir)
    if "path.rel" in entries:
        entries["path.rel"] = f"avd/{name}.avd"
    dst_ini.write_text("".join(f"{key}={value}\n" for key, value in entries.items()), encoding="utf-8")
    log.info("cloned AVD %s to %s (%s)", source, name, dst_dir)
    return dst_dir


def resolve_avd_spec(ref: str | os.PathLike[str], images_dir: str | os.PathLike[str] | None = None) -> AvdSpec:
    """The :class:`AvdSpec` a farm file's ``avd`` names.

    ``ref`` is a path to a YAML definition, an AVD name declared in ``images_dir`` (default
    :func:`default_images_dir`), or the stem of a file there (``"pixel6-api34"`` for
    ``emulator_images/pixel6-api34.yaml``). Raises :class:`AvdSpecError` when none matches.
    """
    path = Path(ref)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return load_avd_spec(path)
    root = Path(images_dir) if images_dir is not None else default_images_dir()
    for suffix in (".yaml", ".yml"):
        candidate = root / f"{ref}{suffix}"
        if candidate.is_file():
            return load_avd_spec(candidate)
    specs = load_avd_specs(root)
    if str(ref) in specs:
        return specs[str(ref)]
    raise AvdSpecError(f"no AVD definition {str(ref)!r} in {root} (names: {', '.join(sorted(specs)) or 'none'})")


def find_emulator(env: Mapping[str, str] | None = None) -> Path:
    """The ``emulator`` executable: on ``PATH``, else ``$ANDROID_HOME``/``$ANDROID_SDK_ROOT``'s ``emulator/emulator``.

    Raises :class:`EmulatorNotFoundError` with what was searched.
    """
    env = os.environ if env is None else env
    found = shutil.which("emulator", path=env.get("PATH"))
    if found:
        return Path(found)
    searched = ["PATH"]
    for var in ("ANDROID_HOME", "ANDROID_SDK_ROOT"):
        if env.get(var):
            candidate = Path(env[var]) / "emulator" / "emulator"
            searched.append(str(candidate))
            if os.access(candidate, os.X_OK):
                return candidate
    raise EmulatorNotFoundError(
        "no Android emulator found (searched "
        + ", ".join(searched)
        + "); install it with `sdkmanager --install emulator` and put $ANDROID_HOME/emulator on PATH"
    )


# ---------------------------------------------------------------------------------- port pairs


@dataclass(frozen=True)
class PortPair:
    """A console port (even) and its adb port (console + 1).

    Attributes:
        console: the console port ``N``.
        adb: the adb port ``N + 1``.
    """

    console: int
    adb: int

    @property
    def serial(self) -> str:
        """The adb serial of an emulator on this pair: ``emulator-<console>``."""
        return f"emulator-{self.console}"

    def ports_arg(self) -> str:
        """The ``-ports`` value: ``"<console>,<adb>"``."""
        return f"{self.console},{self.adb}"


def _close_fd(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)  # closing the descriptor drops its flock


class PortLease:
    """A port pair held by this process until :meth:`release` (or garbage collection, or exit).

    Attributes:
        pair: the ports.
        lock_path: the lock file whose exclusive ``flock`` holds the pair.
    """

    def __init__(self, pair: PortPair, lock_path: Path, fd: int) -> None:
        self.pair = pair
        self.lock_path = lock_path
        self._finalizer = weakref.finalize(self, _close_fd, fd)

    def __repr__(self) -> str:
        state = "released" if self.released else "held"
        return f"PortLease({self.pair.console},{self.pair.adb} {state})"

    @property
    def released(self) -> bool:
        """Whether the pair has been given back."""
        return not self._finalizer.alive

    def release(self) -> None:
        """Give the pair back (drop the lock). Idempotent."""
        self._finalizer()

    def __enter__(self) -> PortLease:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def _bindable(host: str, port: int, family: socket.AddressFamily = socket.AF_INET) -> bool:
    """Whether ``port`` can be bound on ``host`` now (SO_REUSEADDR, as the emulator binds)."""
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
    except OSError as exc:
        # No IPv6 loopback here (EADDRNOTAVAIL/EAFNOSUPPORT): nothing can hold the port there.
        return family == socket.AF_INET6 and exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT)
    return True


def default_runtime_dir() -> Path:
    """Lock directory shared by every allocator of this user on this machine.

    ``$PHONEENV_RUNTIME_DIR/emulator-ports``, else ``$XDG_RUNTIME_DIR/phoneenv/emulator-ports``,
    else ``<tmp>/phoneenv-<uid>/emulator-ports``.
    """
    if os.environ.get("PHONEENV_RUNTIME_DIR"):
        return Path(os.environ["PHONEENV_RUNTIME_DIR"]) / "emulator-ports"
    if os.environ.get("XDG_RUNTIME_DIR"):
        return Path(os.environ["XDG_RUNTIME_DIR"]) / "phoneenv" / "emulator-ports"
    return Path(tempfile.gettempdir()) / f"phoneenv-{os.getuid()}" / "emulator-ports"


class PortAllocator:
    """Hands out console/adb port pairs that no other allocator on this machine holds.

    Args:
        runtime_dir: directory of the per-pair lock files; every cooperating process must use the
            same one (default :func:`default_runtime_dir`).
        first: lowest console port (even, >= 5554).
        last: highest console port (even, <= 5682).
        host: loopback address probed with ``bind``.

    A pair ``(N, N+1)`` is taken when (1) an exclusive non-blocking ``fcntl.flock`` on
    ``<runtime_dir>/<N>.lock`` succeeds — this arbitrates between allocators, across processes
    and within one — and (2) both ports bind on ``host`` (IPv4, and IPv6 loopback where present)
    — this skips ports used by anything else, such as an emulator started by hand. Ports are
    tried in ascending order. The lock file keeps the holder's PID for diagnostics and is never
    deleted (deleting a lock file others may have opened would break the mutual exclusion).
    A process outside the scheme may still take a port between the probe and the emulator's own
    bind; the emulator then fails to start and the launcher reports it.

    Linux and macOS only (``fcntl``).
    """

    def __init__(
        self,
        runtime_dir: str | os.PathLike[str] | None = None,
        *,
        first: int = FIRST_CONSOLE_PORT,
        last: int = LAST_CONSOLE_PORT,
        host: str = "127.0.0.1",
    ) -> None:
        if first % 2 or last % 2:
            raise ValueError(f"console ports must be even, got first={first}, last={last}")
        if not FIRST_CONSOLE_PORT <= first <= last <= LAST_CONSOLE_PORT:
            raise ValueError(
                f"console ports must satisfy {FIRST_CONSOLE_PORT} <= first <= last <= {LAST_CONSOLE_PORT}, "
                f"got {first}..{last}"
            )
        self.runtime_dir = Path(runtime_dir) if runtime_dir is not None else default_runtime_dir()
        self.first = first
        self.last = last
        self.host = host

    def __repr__(self) -> str:
        return f"PortAllocator({str(self.runtime_dir)!r}, first={self.first}, last={self.last})"

    def candidates(self) -> range:
        """The console ports tried, in order."""
        return range(self.first, self.last + 1, 2)

    def _try_pair(self, console: int) -> PortLease | Literal["locked", "busy"]:
        """Take pair ``console`` now: its lease, ``"locked"`` (another allocator holds it) or ``"busy"``."""
        path = self.runtime_dir / f"{console}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return "locked"
        except BaseException:
            os.close(fd)
            raise
        if not all(
            _bindable(host, port, family)
            for port in (console, console + 1)
            for host, family in ((self.host, socket.AF_INET), ("::1", socket.AF_INET6))
        ):
            os.close(fd)
            return "busy"
        record = f"{os.getpid():>10}\n".encode()  # fixed width: rewriting never needs a truncate
        if os.fstat(fd).st_size != len(record):
            os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)
        return PortLease(PortPair(console, console + 1), path, fd)

    def allocate(self) -> PortLease:
        """Take the lowest free pair. Raises :class:`PortsExhaustedError` when none is free.

        Keep the returned lease for as long as the ports are used: the lease owns the lock's file
        descriptor, so dropping the last reference to it releases the pair.
        """
        self.runtime_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        locked: list[int] = []
        busy: list[int] = []
        for console in self.candidates():
            got = self._try_pair(console)
            if got == "locked":
                locked.append(console)
            elif got == "busy":
                busy.append(console)
            else:
                return got
        raise PortsExhaustedError(
            f"no free emulator port pair in {self.first}..{self.last + 1}: "
            f"{len(locked)} pair(s) held by other workers (locks in {self.runtime_dir}), "
            f"{len(busy)} in use by other programs ({', '.join(map(str, busy[:8])) or 'none'}); "
            "stop idle emulators or widen the range"
        )

    def acquire(self, console: int, *, wait_s: float = 0.0, interval: float = 0.1) -> PortLease:
        """Take the specific pair ``(console, console + 1)``, retrying for up to ``wait_s`` seconds.

        Used to restart an emulator on the ports (and so the serial) it had. The pair may lie
        outside ``first..last`` but must be a valid emulator pair (even, 5554..5682). Raises
        :class:`ValueError` for an invalid port and :class:`PortBusyError` when the pair is still
        locked by another allocator or in use after ``wait_s``.
        """
        if console % 2 or not FIRST_CONSOLE_PORT <= console <= LAST_CONSOLE_PORT:
            raise ValueError(f"console port must be even in {FIRST_CONSOLE_PORT}..{LAST_CONSOLE_PORT}, got {console}")
        self.runtime_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        deadline = time.monotonic() + wait_s
        while True:
            got = self._try_pair(console)
            if not isinstance(got, str):
                return got
            if time.monotonic() >= deadline:
                holder = ""
                if got == "locked":
                    with contextlib.suppress(OSError, ValueError):
                        holder = f" by pid {int((self.runtime_dir / f'{console}.lock').read_text().strip())}"
                what = f"locked{holder} (lock {self.runtime_dir / f'{console}.lock'})" if got == "locked" else "in use"
                raise PortBusyError(f"emulator port pair {console},{console + 1} is {what} after {wait_s:g} s")
            time.sleep(interval)


# ------------------------------------------------------------------------------ stale locks


def _lock_pid(lock: Path) -> int | None:
    """The PID recorded in an emulator lock: file content, or ``pid`` inside a lock directory."""
    source = lock / "pid" if lock.is_dir() else lock
    try:
        text = source.read_bytes().replace(b"\x00", b" ").decode("ascii", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None


def live_group_members(pgid: int) -> list[psutil.Process]:
    """The processes of process group ``pgid`` that still run: zombies (dead, waiting for a parent
    or an init that may never reap them, as in a container) and processes that vanish while
    looked at are left out; so are processes this user may not inspect."""
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc)
        except (ProcessLookupError, psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            continue
    return members


def _owner_alive(pid: int, lock_mtime: float) -> bool:
    """Whether ``pid`` is alive and is the process that wrote the lock (not a reused PID)."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        # A process created after the lock was written cannot have written it: the PID was reused.
        return proc.create_time() <= lock_mtime + 1.0
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        return True  # someone else's live process: leave its lock alone


def sweep_stale_locks(directory: str | os.PathLike[str], *, no_pid_age_s: float = 60.0) -> list[Path]:
    """Remove the ``*.lock`` files and directories under ``directory`` whose owner is gone.

    The emulator locks files of its AVD (``hardware-qemu.ini.lock``, ``multiinstance.lock``,
    ``userdata-qemu.img.lock``, ``snapshot.lock``, ...) with a hard link holding its PID (a
    directory with a ``pid`` file when it came from a Windows emulator); see
    ``android/utils/filelock.cpp`` in AOSP ``external/qemu``. A killed emulator leaves them
    behind and the next start of that AVD refuses to run. A lock is stale when its PID no longer
    exists, is a zombie, or belongs to a process created after the lock was written (a reused
    PID); a lock without a PID is stale once older than ``no_pid_age_s`` seconds (the emulator's
    own rule uses 60 s). Locks of live emulators are kept.

    Returns the removed paths, sorted. A missing ``directory`` returns ``[]``.
    """
    root = Path(directory)
    if not root.is_dir():
        return []
    removed: list[Path] = []
    now = time.time()
    for lock in sorted(root.rglob("*.lock")):
        try:
            mtime = lock.lstat().st_mtime
        except FileNotFoundError:
            continue
        pid = _lock_pid(lock)
        if pid is not None and _owner_alive(pid, mtime):
            continue
        if pid is None and now - mtime < no_pid_age_s:
            continue
        try:
            if lock.is_dir() and not lock.is_symlink():
                shutil.rmtree(lock)
            else:
                lock.unlink()
        except FileNotFoundError:
            continue
        log.info("removed stale emulator lock %s (pid %s)", lock, pid)
        removed.append(lock)
    return removed


# ----------------------------------------------------------------------------------- device


@runtime_checkable
class DeviceShell(Protocol):
    """The two device calls the launcher needs; ``adbutils.AdbDevice`` satisfies it."""

    def getprop(self, prop: str) -> str:
        """The value of system property ``prop`` (``""`` when unset)."""

    def shell(self, cmdargs: str | list | tuple) -> str:
        """Run a shell command (argument list, quoted by the implementation); its output."""


def adb_device_factory(host: str = "127.0.0.1", port: int = 5037) -> Callable[[str], DeviceShell]:
    """``serial -> adbutils.AdbDevice`` through the adb server at ``host:port``."""
    import adbutils

    client = adbutils.AdbClient(host=host, port=port, socket_timeout=10)
    return lambda serial: client.device(serial)


def announce_emulator(adb_server: tuple[str, int], adb_port: int, timeout: float = 5.0) -> bool:
    """Tell the adb server at ``adb_server`` (host, port) that an emulator serves adb on ``adb_port``.

    Sends the host request ``host:emulator:<adb port>`` (4 hex digits of length, then the request;
    adb's host protocol, ``SERVICES.TXT``), which the emulator itself sends once at start-up and
    which makes the server connect to ``adb_port`` and list ``emulator-<adb port - 1>``. The
    server sends no reply. Announcing again is harmless: a serial already listed is kept. Returns
    False (never raises) when the server cannot be reached within ``timeout`` seconds.
    """
    request = f"host:emulator:{adb_port}".encode()
    try:
        with socket.create_connection(adb_server, timeout=timeout) as sock:
            sock.sendall(b"%04x" % len(request) + request)
    except OSError as exc:
        log.debug("announcing adb port %d to %s:%d failed: %s", adb_port, *adb_server, exc)
        return False
    return True


def _device_errors() -> tuple[type[BaseException], ...]:
    errors: tuple[type[BaseException], ...] = (OSError, TimeoutError)
    try:
        import adbutils

        errors += (adbutils.AdbError, adbutils.AdbTimeout)
    except ImportError:  # pragma: no cover - adbutils is in the farm extra
        pass
    return errors


# --------------------------------------------------------------------------------- launcher


REANNOUNCE_S = 2.0
"""Seconds :meth:`RunningEmulator.wait_for_boot` waits for adb to list a started emulator before announcing it again."""

_SNAPSHOT_FALLBACK = re.compile(r"(?:Performing (?:clean|cold) boot|Resetting for clean boot): ([^\r\n]+)")
"""What the emulator logs when it does not boot from the snapshot it was given (Quickboot.cpp)."""
_MISSING_REASONS = ("missing snapshot files", "snapshot doesn't exist")
_MULTI_INSTANCE = re.compile(r"Running multiple emulators with the same AVD")


def _log_tail(path: Path, limit: int = 2000) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", errors="replace").strip()
    except OSError:
        return "<no log>"


class EmulatorLauncher:
    """Starts headless emulators of one :class:`AvdSpec` on allocated port pairs.

    Args:
        spec: the AVD.
        emulator: the ``emulator`` executable (default :func:`find_emulator` over ``env``).
        allocator: port-pair allocator (default: the machine-wide one).
        log_dir: where each run's log goes (default ``<tmp>/phoneenv-emulator-logs``).
        env: environment for the emulator (default ``os.environ``); ``HOME`` here decides which
            console token file the emulator uses, and ``ANDROID_AVD_HOME`` etc. where AVDs are.
        token_path: console token file (default ``$HOME/.emulator_console_auth_token`` of ``env``).
        adb_server: ``(host, port)`` of the adb server used for device calls. When given, the
            emulator's environment gets ``ANDROID_ADB_SERVER_PORT=<port>``, the variable the
            emulator reads to announce itself (``host:emulator:<adb port>``) to that server;
            default ``127.0.0.1`` and ``$ANDROID_ADB_SERVER_PORT`` of ``env``, else 5037.
        device_factory: ``serial -> DeviceShell`` (default: adbutils through ``adb_server``).
    """

    def __init__(
        self,
        spec: AvdSpec,
        *,
        emulator: str | os.PathLike[str] | None = None,
        allocator: PortAllocator | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        token_path: str | os.PathLike[str] | None = None,
        adb_server: tuple[str, int] | None = None,
        device_factory: Callable[[str], DeviceShell] | None = None,
    ) -> None:
        self.spec = spec
        self.env = dict(os.environ if env is None else env)
        self._emulator = Path(emulator) if emulator is not None else None
        self.allocator = allocator or PortAllocator()
        self.log_dir = Path(log_dir) if log_dir is not None else Path(tempfile.gettempdir()) / "phoneenv-emulator-logs"
        home = Path(self.env.get("HOME") or Path.home())
        self.token_path = Path(token_path) if token_path is not None else home / ".emulator_console_auth_token"
        if adb_server is None:
            adb_server = ("127.0.0.1", int(self.env.get("ANDROID_ADB_SERVER_PORT") or 5037))
        else:
            self.env["ANDROID_ADB_SERVER_PORT"] = str(adb_server[1])
        self.adb_server = adb_server
        self._device_factory = device_factory

    @property
    def emulator(self) -> Path:
        """The emulator executable (resolved on first use; :class:`EmulatorNotFoundError` if absent)."""
        if self._emulator is None:
            self._emulator = find_emulator(self.env)
        return self._emulator

    @property
    def avd_dir(self) -> Path:
        """This AVD's content directory under the launcher's environment."""
        return avd_dir(self.spec.name, self.env)

    def device_factory(self) -> Callable[[str], DeviceShell]:
        """The ``serial -> DeviceShell`` factory in use."""
        if self._device_factory is None:
            self._device_factory = adb_device_factory(*self.adb_server)
        return self._device_factory

    def command(
        self,
        ports: PortPair,
        *,
        snapshot: str | None = None,
        save_on_exit: bool = False,
        cold_boot: bool = False,
        read_only: bool = False,
        extra_args: Sequence[str] = (),
    ) -> list[str]:
        """The emulator argument list for one run.

        Always ``-avd NAME -no-window -no-audio -no-boot-anim -gpu MODE -ports C,A``, then
        ``-no-snapshot-save`` unless ``save_on_exit`` (episodes must not persist),
        ``-no-snapshot-load`` for ``cold_boot``, ``-snapshot NAME`` to boot from a snapshot,
        ``-read-only`` (lets several emulators share one AVD, but disables console snapshot
        save), ``-memory MiB -partition-size MiB``, ``-accel MODE`` unless ``auto``, and
        ``extra_args``. Raises :class:`ValueError` for ``cold_boot`` (or ``-no-snapshot-load`` in
        ``extra_args``) together with ``snapshot``.
        """
        if snapshot and (cold_boot or "-no-snapshot-load" in extra_args):
            raise ValueError("cold_boot (-no-snapshot-load) and snapshot are exclusive: a cold boot loads no snapshot")
        cmd = [
            str(self.emulator),
            "-avd",
            self.spec.name,
            "-no-window",
            "-no-audio",
            "-no-boot-anim",
            "-gpu",
            self.spec.gpu,
            "-ports",
            ports.ports_arg(),
        ]
        if not save_on_exit:
            cmd.append("-no-snapshot-save")
        if cold_boot:
            cmd.append("-no-snapshot-load")
        if snapshot:
            cmd += ["-snapshot", validate_snapshot_name(snapshot)]
        if read_only:
            cmd.append("-read-only")
        cmd += ["-memory", str(self.spec.ram_mib), "-partition-size", str(self.spec.data_partition_mib)]
        if self.spec.accel != "auto":
            cmd += ["-accel", self.spec.accel]
        cmd += list(extra_args)
        return cmd

    def snapshots(self) -> list[str]:
        """The snapshots this AVD has on disk (:func:`avd_snapshots` of :attr:`avd_dir`), sorted."""
        return avd_snapshots(self.avd_dir)

    def check_snapshot(self, name: str) -> None:
        """Raise :class:`SnapshotNotFoundError` when this AVD exists but has no snapshot ``name``.

        The error names the snapshot, the AVD and the snapshots that do exist. Nothing is checked
        when the AVD's directory does not exist (the emulator then refuses the unknown AVD itself).
        """
        validate_snapshot_name(name)
        if not self.avd_dir.is_dir():
            return
        names = self.snapshots()
        if name not in names:
            raise SnapshotNotFoundError(
                f"AVD {self.spec.name} has no snapshot {name!r} ({self.avd_dir / 'snapshots' / name / 'snapshot.pb'} "
                f"does not exist); its snapshots: {', '.join(names) or 'none'}. Save it first "
                "(prepare_fixture, or `emulator_images/recipe.py fixture`)",
                snapshot=name,
                available=names,
                reason="not on disk",
            )

    def clone(self, name: str, *, snapshots: bool = True, overwrite: bool = False) -> EmulatorLauncher:
        """Clone this AVD as ``name`` (:func:`clone_avd`) and return a launcher for the clone.

        The new launcher shares this one's executable, port allocator, log directory, environment,
        token path, adb server and device factory; its spec is this spec renamed. Raises what
        :func:`clone_avd` raises.
        """
        clone_avd(self.spec.name, name, env=self.env, snapshots=snapshots, overwrite=overwrite)
        launcher = EmulatorLauncher(
            self.spec.model_copy(update={"name": name}),
            emulator=self._emulator,
            allocator=self.allocator,
            log_dir=self.log_dir,
            env=self.env,
            token_path=self.token_path,
            device_factory=self._device_factory,
        )
        launcher.adb_server = self.adb_server
        return launcher

    def start(
        self,
        *,
        snapshot: str | None = None,
        save_on_exit: bool = False,
        cold_boot: bool = False,
        read_only: bool = False,
        extra_args: Sequence[str] = (),
        wait: bool = True,
        boot_timeout: float | None = None,
        poll_interval: float = 1.0,
    ) -> RunningEmulator:
        """Allocate a port pair, start the emulator and (with ``wait``) wait until it has booted.

        With ``snapshot``, the AVD must have it (:meth:`check_snapshot`, before any port is
        taken), and the boot is watched: when the emulator reports it fell back to a clean boot
        (the snapshot is missing or would not load), the start fails with
        :class:`SnapshotBootError` (:class:`SnapshotNotFoundError` when missing) as soon as the
        report appears in its log, instead of returning a cold-booted device.

        ``read_only`` (``-read-only``) lets any number of instances share this AVD on distinct
        ports; they cannot save snapshots. A second *writable* instance of an AVD is refused by
        the emulator (:class:`AvdInUseError`); clone the AVD for that (:meth:`clone`).

        Stale locks in the AVD directory are swept first. The emulator runs in its own session
        and process group, stdin closed, stdout and stderr appended to
        ``<log_dir>/<avd>-<console port>-<timestamp>.log``.

        Raises :class:`PortsExhaustedError`, :class:`EmulatorNotFoundError`,
        :class:`SnapshotBootError`, :class:`AvdInUseError` or :class:`EmulatorExitedError` (the
        process died while booting) or :class:`BootTimeoutError` (``boot_timeout`` seconds,
        default the spec's, passed); on every failure the emulator is stopped and the ports released.
        """
        # Argument errors (and a missing executable) surface before anything is taken or started.
        self.command(PortPair(FIRST_CONSOLE_PORT, FIRST_CONSOLE_PORT + 1), snapshot=snapshot, extra_args=extra_args)
        if snapshot and cold_boot:
            raise ValueError("cold_boot and snapshot are exclusive: a cold boot loads no snapshot")
        if snapshot:
            self.check_snapshot(snapshot)
        lease = self.allocator.allocate()
        return self._spawn(
            lease,
            dict(
                snapshot=snapshot,
                save_on_exit=save_on_exit,
                cold_boot=cold_boot,
                read_only=read_only,
                extra_args=tuple(extra_args),
            ),
            wait=wait,
            boot_timeout=boot_timeout,
            poll_interval=poll_interval,
        )

    def _spawn(
        self,
        lease: PortLease,
        options: dict,
        *,
        wait: bool,
        boot_timeout: float | None,
        poll_interval: float,
    ) -> RunningEmulator:
        """Start the emulator on ``lease`` with ``options`` (:meth:`command`'s keywords); see :meth:`start`."""
        try:
            cmd = self.command(lease.pair, **options)
            swept = sweep_stale_locks(self.avd_dir)
            if swept:
                log.warning("removed %d stale lock(s) of AVD %s before start", len(swept), self.spec.name)
            self.log_dir.mkdir(parents=True, exist_ok=True)
            stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
            log_path = self.log_dir / f"{self.spec.name}-{lease.pair.console}-{stamp}.log"
            with log_path.open("ab") as log_file:
                process = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=self.env,
                )
        except BaseException:
            lease.release()
            raise
        log.info(
            "started %s as pid %d on ports %s (log %s)", self.spec.name, process.pid, lease.pair.ports_arg(), log_path
        )
        running = RunningEmulator(self, lease, process, cmd, log_path, options=options)
        if wait:
            try:
                running.wait_until_ready(
                    boot_timeout if boot_timeout is not None else self.spec.boot_timeout_s, poll_interval
                )
            except BaseException:
                running.stop(console_timeout=5.0, term_timeout=5.0, kill_timeout=5.0)
                raise
        return running

    def restart(
        self,
        emulator: RunningEmulator,
        *,
        snapshot: str | None = None,
        boot_timeout: float | None = None,
        poll_interval: float = 1.0,
        stop_timeout: float = 10.0,
    ) -> RunningEmulator:
        """Stop ``emulator`` and start this AVD again from ``snapshot`` on the same ports (same serial).

        The device pool's last recovery step for an emulator; see :func:`restart_from_snapshot`
        for the full contract. ``snapshot`` defaults to the spec's fixture. The port pair's lease
        is kept across the restart, so no other worker can take the ports in between, and the
        new emulator keeps ``emulator.serial``. ``read_only`` and ``extra_args`` of the old run
        are kept; snapshots are never saved on exit. Returns the new, booted
        :class:`RunningEmulator` (``emulator`` is stopped and must not be used again).

        Raises :class:`SnapshotNotFoundError` (before stopping anything) when the AVD has no such
        snapshot, and what :meth:`start` raises; after a failed start the ports are released.
        """
        if emulator.launcher is not self:
            raise ValueError(f"{emulator!r} was not started by this launcher ({self.spec.name})")
        name = snapshot or self.spec.fixture_snapshot
        self.check_snapshot(name)
        lease = emulator._lease
        third = max(0.5, stop_timeout / 3)
        emulator.stop(console_timeout=third, term_timeout=third, kill_timeout=third, release=False)
        options = dict(emulator.options)
        options.update(snapshot=name, cold_boot=False, save_on_exit=False)
        return self._spawn(
            lease,
            options,
            wait=True,
            boot_timeout=boot_timeout if boot_timeout is not None else self.spec.boot_timeout_s,
            poll_interval=poll_interval,
        )


class RunningEmulator:
    """One emulator process started by :class:`EmulatorLauncher`; stop it with :meth:`stop` or ``with``.

    Attributes:
        spec: its AVD.
        ports: its console/adb port pair.
        serial: its adb serial, ``emulator-<console port>``.
        process: the ``subprocess.Popen`` of the emulator (process-group leader).
        command: the argument list it was started with.
        log_path: its log file.
        options: the :meth:`EmulatorLauncher.command` keywords it was started with.
        boot_snapshot: the snapshot it was told to boot from (``-snapshot``), or ``None``.
        read_only: whether it runs ``-read-only``.
        stopped_by: how :meth:`stop` ended it (``None`` until stopped).
    """

    def __init__(
        self,
        launcher: EmulatorLauncher,
        lease: PortLease,
        process: subprocess.Popen[bytes],
        command: list[str],
        log_path: Path,
        *,
        options: Mapping[str, object] | None = None,
    ) -> None:
        self.launcher = launcher
        self.spec = launcher.spec
        self.ports = lease.pair
        self.serial = lease.pair.serial
        self.process = process
        self.pgid = process.pid  # start_new_session: the emulator leads its own group
        self.command = command
        self.log_path = log_path
        self.stopped_by: Literal["exited", "console", "sigterm", "sigkill"] | None = None
        self.options = dict(options or {})
        self.boot_snapshot: str | None = self.options.get("snapshot") or None  # type: ignore[assignment]
        self.read_only = bool(self.options.get("read_only"))
        self._lease = lease
        self._console: ConsoleClient | None = None
        self._log_offset = 0

    def __repr__(self) -> str:
        return f"RunningEmulator({self.spec.name!r}, {self.serial}, pid={self.process.pid})"

    def __enter__(self) -> RunningEmulator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        """PID of the emulator process."""
        return self.process.pid

    def alive(self) -> bool:
        """Whether the emulator process is still running."""
        return self.process.poll() is None

    def _check_alive(self, during: str) -> None:
        if self.process.poll() is not None:
            tail = _log_tail(self.log_path)
            message = (
                f"emulator {self.spec.name} ({self.serial}) exited with code {self.process.returncode} "
                f"while {during}; log {self.log_path}:\n{tail}"
            )
            if _MULTI_INSTANCE.search(tail):
                raise AvdInUseError(
                    f"AVD {self.spec.name} is already run by a writable emulator: start more instances with "
                    f"read_only=True or from a clone (EmulatorLauncher.clone). {message}"
                )
            raise EmulatorExitedError(message)

    def snapshot_fallback(self) -> str | None:
        """The reason the emulator gave for not booting from its snapshot, read from its log; else ``None``.

        Matches the emulator's ``Performing clean boot: <reason>``, ``Performing cold boot:
        <reason>`` and ``Resetting for clean boot: <reason>`` (``android/snapshot/Quickboot.cpp``
        in AOSP ``external/qemu``). Reads only what was appended since the last call.
        """
        try:
            with self.log_path.open("rb") as handle:
                handle.seek(self._log_offset)
                chunk = handle.read()
        except OSError:
            return None
        complete = chunk.rfind(b"\n") + 1  # a line still being written is read next time
        self._log_offset += complete
        found = _SNAPSHOT_FALLBACK.search(chunk[:complete].decode("utf-8", errors="replace"))
        return found.group(1).strip() if found else None

    def _snapshot_error(self, reason: str) -> SnapshotBootError:
        name = self.boot_snapshot or ""
        available = avd_snapshots(self.launcher.avd_dir)
        missing = reason.lower() in _MISSING_REASONS or name not in available
        kind = SnapshotNotFoundError if missing else SnapshotBootError
        return kind(
            f"emulator {self.spec.name} ({self.serial}) did not boot from snapshot {name!r}: it reported "
            f"{reason!r} and fell back to a clean boot; the AVD's snapshots: {', '.join(available) or 'none'}; "
            f"log {self.log_path}",
            snapshot=name,
            available=available,
            reason=reason,
        )

    def verify_boot_snapshot(self) -> None:
        """Check the emulator booted from :attr:`boot_snapshot` (no-op when it was not given one).

        Raises :class:`SnapshotBootError` (:class:`SnapshotNotFoundError` when it is missing) if
        the log reports a fallback to a clean boot, or the console's ``avd snapshot list`` does not
        list the snapshot. :meth:`EmulatorLauncher.start` calls it (through :meth:`wait_for_boot`).
        """
        if not self.boot_snapshot:
            return
        reason = self.snapshot_fallback()
        if reason is not None:
            raise self._snapshot_error(reason)
        listed = self.console().snapshot_list()
        if self.boot_snapshot not in listed:
            raise self._snapshot_error(f"not listed by the console (avd snapshot list: {', '.join(listed) or 'none'})")

    def console(self, timeout: float = 10.0) -> ConsoleClient:
        """A (cached) authenticated console client on this emulator's console port."""
        if self._console is None:
            self._console = ConsoleClient(
                "127.0.0.1", self.ports.console, token_path=self.launcher.token_path, timeout=timeout
            )
        return self._console

    def _poll(
        self,
        check: Callable[[], bool],
        *,
        timeout: float,
        interval: float,
        what: str,
        budget: float | None = None,
        last: Callable[[], str] = lambda: "",
    ) -> None:
        """Call ``check`` every ``interval`` s until it returns True; :class:`BootTimeoutError` after ``timeout`` s.

        ``budget`` is the deadline the caller was given, reported in the error (default
        ``timeout``); ``last()`` adds what the final poll saw.
        """
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_delay(timeout),
            wait=tenacity.wait_fixed(interval),
            retry=tenacity.retry_if_result(lambda done: not done),
            reraise=False,
        )
        try:
            retrying(check)
        except tenacity.RetryError as exc:
            seen = last()
            raise BootTimeoutError(
                f"emulator {self.spec.name} ({self.serial}) did not finish {what} within "
                f"{budget if budget is not None else timeout:g} s{f' (last poll: {seen})' if seen else ''}; "
                f"log {self.log_path}:\n{_log_tail(self.log_path)}"
            ) from exc

    def wait_for_console(
        self, timeout: float = 120.0, poll_interval: float = 0.25, *, _budget: float | None = None
    ) -> None:
        """Wait until the console accepts a connection and authentication (``timeout`` seconds).

        Raises :class:`EmulatorExitedError` if the process dies, :class:`BootTimeoutError` on
        timeout, :class:`phoneenv.farm.console.ConsoleAuthError` if the token is refused.
        """

        def ready() -> bool:
            self._check_alive("opening its console")
            try:
                self.console().connect()
            except ConsoleAuthError:
                raise
            except ConsoleError:
                return False
            return True

        self._poll(ready, timeout=timeout, interval=poll_interval, what="opening its console", budget=_budget)

    def wait_for_boot(
        self, timeout: float = 600.0, poll_interval: float = 1.0, *, _budget: float | None = None
    ) -> None:
        """Wait until ``getprop sys.boot_completed`` is ``1`` through adb (``timeout`` seconds).

        Until then the device may be absent from adb, ``offline``, or answer ``""``; all count as
        not booted. While adb does not list the serial, the launcher announces the emulator to its
        adb server again every :data:`REANNOUNCE_S` s (:func:`announce_emulator`): the emulator
        announces itself once, and an adb server refuses that announcement while it still holds
        the transport of an emulator that ran on the same ports a moment before.

        Raises :class:`EmulatorExitedError` if the process dies, :class:`BootTimeoutError` on
        timeout, and, for a start from a snapshot,
        :class:`SnapshotBootError` as soon as the log reports a clean-boot fallback (and after boot
        through :meth:`verify_boot_snapshot`); the caller stops the emulator
        (:meth:`EmulatorLauncher.start` does).
        """
        factory = self.launcher.device_factory()
        errors = _device_errors()
        seen = [""]
        announced = [time.monotonic()]

        def booted() -> bool:
            self._check_alive("booting")
            if self.boot_snapshot:
                reason = self.snapshot_fallback()
                if reason is not None:
                    raise self._snapshot_error(reason)
            try:
                value = factory(self.serial).getprop("sys.boot_completed").strip()
            except errors as exc:
                log.debug("%s not ready: %s", self.serial, exc)
                seen[0] = f"adb: {type(exc).__name__}: {exc}"
                if "not found" in str(exc) and time.monotonic() - announced[0] >= REANNOUNCE_S:
                    # The server dropped or refused the emulator's one announcement (a stale
                    # transport of the same serial, or a server restarted since): announce again.
                    announced[0] = time.monotonic()
                    announce_emulator(self.launcher.adb_server, self.ports.adb)
                return False
            seen[0] = f"sys.boot_completed={value!r}"
            return value == "1"

        self._poll(
            booted,
            timeout=timeout,
            interval=poll_interval,
            what="booting (sys.boot_completed=1)",
            budget=_budget,
            last=lambda: seen[0],
        )
        self.verify_boot_snapshot()

    def wait_until_ready(self, timeout: float, poll_interval: float = 1.0) -> None:
        """:meth:`wait_for_console` then :meth:`wait_for_boot`, sharing one ``timeout`` (seconds)."""
        deadline = time.monotonic() + timeout
        self.wait_for_console(timeout, min(poll_interval, 0.25), _budget=timeout)
        self.wait_for_boot(max(0.001, deadline - time.monotonic()), poll_interval, _budget=timeout)

    def device(self) -> DeviceShell:
        """The device through the launcher's device factory (adbutils by default)."""
        return self.launcher.device_factory()(self.serial)

    def disable_animations(self) -> dict[str, str]:
        """Set the three animation scales to 0 and read them back.

        Returns ``{key: value read back}``. Raises :class:`EmulatorError` if a value did not stick.
        """
        device = self.device()
        values: dict[str, str] = {}
        for key in ANIMATION_SETTINGS:
            device.shell(["settings", "put", "global", key, "0"])
            values[key] = str(device.shell(["settings", "get", "global", key])).strip()
        wrong = {key: value for key, value in values.items() if value not in ("0", "0.0")}
        if wrong:
            raise EmulatorError(f"animation settings on {self.serial} did not take: {wrong}")
        return values

    def save_snapshot(self, name: str | None = None) -> list[str]:
        """Save snapshot ``name`` (default the spec's fixture) via the console; verify it is listed.

        Returns the snapshot list. Raises :class:`phoneenv.farm.console.ConsoleCommandError` on
        ``KO`` and :class:`EmulatorError` if the snapshot is not listed afterwards.
        """
        name = name or self.spec.fixture_snapshot
        console = self.console()
        console.snapshot_save(name)
        names = console.snapshot_list()
        if name not in names:
            raise EmulatorError(f"snapshot {name!r} saved on {self.serial} but not listed: {names}")
        return names

    def load_snapshot(self, name: str | None = None) -> None:
        """Load snapshot ``name`` (default the spec's fixture); :class:`~phoneenv.farm.console.SnapshotLoadError` if it cannot."""
        self.console().snapshot_load(name or self.spec.fixture_snapshot)

    def _group_members(self) -> list[psutil.Process]:
        return live_group_members(self.pgid)

    def _wait_group(self, timeout: float) -> bool:
        """Reap the leader and wait up to ``timeout`` s for the whole group to exit; True if it did."""
        deadline = time.monotonic() + timeout
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        if self.process.poll() is None:
            return False
        stragglers = self._group_members()
        if stragglers:
            _, alive = psutil.wait_procs(stragglers, timeout=max(0.0, deadline - time.monotonic()))
            return not alive
        return True

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)

    def stop(
        self,
        *,
        console_timeout: float = 20.0,
        term_timeout: float = 10.0,
        kill_timeout: float = 5.0,
        release: bool = True,
    ) -> str:
        """Shut the emulator down and release its ports; returns how (:attr:`stopped_by`).

        1. console ``kill`` and wait up to ``console_timeout`` s (``"console"``);
        2. SIGTERM to the process group, wait up to ``term_timeout`` s (``"sigterm"``);
        3. SIGKILL to the group, wait up to ``kill_timeout`` s (``"sigkill"``), then sweep the
           AVD's stale locks, which a killed emulator cannot remove itself.

        ``"exited"`` means it had already exited. Idempotent. ``release=False`` keeps the port
        pair's lease (:meth:`EmulatorLauncher.restart` starts the next run on it). Raises
        :class:`EmulatorError` only if processes of the group survive SIGKILL.
        """
        if self.stopped_by is not None:
            return self.stopped_by
        method: Literal["exited", "console", "sigterm", "sigkill"]
        if self.process.poll() is not None and not self._group_members():
            method = "exited"
        else:
            method = "console"
            done = False
            if self.process.poll() is None:
                try:
                    ConsoleClient(
                        "127.0.0.1",
                        self.ports.console,
                        token_path=self.launcher.token_path,
                        timeout=max(0.5, min(console_timeout, 5.0)),
                    ).kill()
                except ConsoleError as exc:
                    log.info("console kill of %s failed (%s); signalling", self.serial, exc)
                else:
                    done = self._wait_group(console_timeout)
            if not done:
                method = "sigterm"
                self._signal_group(signal.SIGTERM)
                done = self._wait_group(term_timeout)
            if not done:
                method = "sigkill"
                self._signal_group(signal.SIGKILL)
                done = self._wait_group(kill_timeout)
            if not done:
                survivors = [p.pid for p in self._group_members()]
                raise EmulatorError(f"emulator {self.serial} group {self.pgid} survived SIGKILL: pids {survivors}")
        if self._console is not None:
            self._console._drop()
        if method == "sigkill":
            removed = sweep_stale_locks(self.launcher.avd_dir)
            if removed:
                log.info("removed %d lock(s) left by killed emulator %s", len(removed), self.serial)
        if release:
            self._lease.release()
        self.stopped_by = method
        log.info("stopped %s (%s) by %s", self.spec.name, self.serial, method)
        return method


def prepare_fixture(
    launcher: EmulatorLauncher,
    *,
    boot_timeout: float | None = None,
    poll_interval: float = 2.0,
    settle: Callable[[RunningEmulator], None] | None = None,
) -> list[str]:
    """The boot recipe: cold boot, animations off, save the fixture snapshot, shut down.

    ``settle`` runs after the animations are off and before the snapshot is taken (install
    apps, grant permissions, sign in). Returns the snapshot list read after saving. Raises what
    :meth:`EmulatorLauncher.start`, :meth:`RunningEmulator.disable_animations` and
    :meth:`RunningEmulator.save_snapshot` raise; the emulator is stopped in every case.
    """
    emulator = launcher.start(cold_boot=True, boot_timeout=boot_timeout, poll_interval=poll_interval)
    with emulator:
        emulator.disable_animations()
        if settle is not None:
            settle(emulator)
        return emulator.save_snapshot(launcher.spec.fixture_snapshot)


_EMULATOR_SERIAL = re.compile(r"^emulator-(\d+)$")


def _emulator_processes(console: int) -> list[psutil.Process]:
    """Processes started with ``-ports <console>,<console+1>`` or ``-port <console>`` (the emulator and its qemu)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        argv = proc.info.get("cmdline") or []
        for flag, value in itertools.pairwise(argv):
            if (flag == "-ports" and value == f"{console},{console + 1}") or (
                flag == "-port" and value == str(console)
            ):
                found.append(proc)
                break
    return found


def _stop_unowned(console: int, processes: list[psutil.Process], token_path: Path, timeout: float) -> str:
    """Stop emulator processes this process did not start: console ``kill``, SIGTERM, SIGKILL; returns how."""
    third = max(0.5, timeout / 3)
    with contextlib.suppress(ConsoleError, ValueError):
        ConsoleClient("127.0.0.1", console, token_path=token_path, timeout=min(third, 5.0)).kill()
        _, processes = psutil.wait_procs(processes, timeout=third)
        if not processes:
            return "console"
    for how, sig in (("sigterm", signal.SIGTERM), ("sigkill", signal.SIGKILL)):
        for proc in processes:
            with contextlib.suppress(psutil.Error, ProcessLookupError, PermissionError):
                if os.getpgid(proc.pid) == proc.pid:
                    os.killpg(proc.pid, sig)  # a launcher-started emulator leads its own group
                else:
                    proc.send_signal(sig)
        _, processes = psutil.wait_procs(processes, timeout=third)
        if not processes:
            return how
    raise EmulatorError(f"emulator processes on console port {console} survived SIGKILL: {[p.pid for p in processes]}")


def restart_from_snapshot(
    target: str | RunningEmulator,
    snapshot: str | None = None,
    *,
    launcher: EmulatorLauncher | None = None,
    avd: str | os.PathLike[str] | None = None,
    adb_server: tuple[str, int] | None = None,
    read_only: bool | None = None,
    boot_timeout: float | None = None,
    stop_timeout: float = 15.0,
    lock_wait_s: float = 10.0,
    poll_interval: float = 1.0,
) -> RunningEmulator:
    """Restart an emulator from a snapshot on the same ports: the device pool's last recovery step.

    Stops the emulator (console ``kill``, then SIGTERM, then SIGKILL, within ``stop_timeout``
    seconds in all), sweeps the locks a killed emulator leaves in its AVD, starts the AVD again
    with ``-snapshot <snapshot> -no-snapshot-save`` on the *same* console/adb ports, so the adb
    serial (``emulator-N``) the pool knows stays valid, and waits up to ``boot_timeout`` seconds
    (default the spec's ``boot_timeout_s``) for ``sys.boot_completed == 1``. The boot is checked to
    have come from the snapshot (:meth:`RunningEmulator.verify_boot_snapshot`).

    Args:
        target: a :class:`RunningEmulator` this process started (restarted through its
            launcher, keeping its port lease, ``read_only`` and extra arguments), or an adb
            serial ``emulator-N`` of an emulator started by anyone on this machine (found by its
            ``-ports N,N+1``/``-port N`` argument; one that is already gone is simply started).
        snapshot: the snapshot to boot from; default the spec's ``fixture_snapshot``. For a farm
            file's emulator entry, pass its ``snapshot``.
        launcher: the launcher of the AVD (serial targets): its executable, environment
            (``ANDROID_AVD_HOME``, ``HOME`` for the console token), adb server, log directory and
            port allocator (whose lock directory must be the one the original start used).
        avd: instead of ``launcher``, the farm file's ``avd``: a YAML path, an AVD name or a file
            stem in ``emulator_images/`` (:func:`resolve_avd_spec`); a default launcher is built.
        adb_server: ``(host, port)`` of the adb server the new emulator announces itself to and
            whose ``sys.boot_completed`` is polled, for the default launcher (the pool passes its
            ``adb_host, adb_port``); default ``$ANDROID_ADB_SERVER_PORT`` or 5037.
        read_only: start ``-read-only``; default: as the stopped emulator ran (``False`` when it
            was already gone).
        boot_timeout: seconds to wait for the new boot.
        stop_timeout: seconds allowed for stopping the old emulator.
        lock_wait_s: seconds to wait for the port pair's lock (serial targets). The process that
            started the emulator holds it while it runs; ``phoneenv device emulator start`` exits
            (dropping it) once its emulator dies. A process that keeps holding it must restart
            through its own handle (``EmulatorLauncher.restart``) instead.
        poll_interval: seconds between boot polls.

    Returns:
        The new, booted :class:`RunningEmulator`; the caller owns it (``stop()`` it when done).
        Its ``serial`` equals the old one.

    Raises:
        ValueError: ``target`` is not ``emulator-N``, or neither ``launcher`` nor ``avd`` is given
            for a serial.
        SnapshotNotFoundError: the AVD has no such snapshot (checked before anything is stopped),
            or the emulator reported it missing.
        SnapshotBootError: the emulator fell back to a clean boot (the snapshot would not load).
        PortBusyError: the ports are still locked or in use after ``lock_wait_s``.
        BootTimeoutError, EmulatorExitedError, AvdInUseError: as :meth:`EmulatorLauncher.start`.
        EmulatorError: the old emulator survived SIGKILL.
    On a failure after the old emulator was stopped, the new one is stopped and the ports released.

    Example::

        # a farm file's {"serial": "emulator-5554", "kind": "emulator", "avd": "pixel6-api34", "snapshot": "phoneenv-base"}
        fresh = restart_from_snapshot(
            "emulator-5554", "phoneenv-base", avd="pixel6-api34", adb_server=("127.0.0.1", 5037), boot_timeout=300
        )
        assert fresh.serial == "emulator-5554"
    """
    if isinstance(target, RunningEmulator):
        return target.launcher.restart(
            target, snapshot=snapshot, boot_timeout=boot_timeout, poll_interval=poll_interval, stop_timeout=stop_timeout
        )
    match = _EMULATOR_SERIAL.match(str(target))
    if match is None:
        raise ValueError(f"{target!r} is not an emulator serial (emulator-N); restart other devices another way")
    console = int(match.group(1))
    if launcher is None:
        if avd is None:
            raise ValueError(f"restarting {target} needs the launcher or the AVD (avd=) it runs")
        launcher = EmulatorLauncher(resolve_avd_spec(avd), adb_server=adb_server)
    name = snapshot or launcher.spec.fixture_snapshot
    launcher.check_snapshot(name)
    old = _emulator_processes(console)
    if read_only is None:
        read_only = any("-read-only" in (p.info.get("cmdline") or []) for p in old)
    if old:
        how = _stop_unowned(console, old, launcher.token_path, stop_timeout)
        log.info("stopped %s (pids %s) by %s for a restart from %r", target, [p.pid for p in old], how, name)
    removed = sweep_stale_locks(launcher.avd_dir)
    if removed:
        log.info("removed %d stale lock(s) of AVD %s before the restart", len(removed), launcher.spec.name)
    lease = launcher.allocator.acquire(console, wait_s=lock_wait_s)
    return launcher._spawn(
        lease,
        dict(snapshot=name, save_on_exit=False, cold_boot=False, read_only=read_only, extra_args=()),
        wait=True,
        boot_timeout=boot_timeout if boot_timeout is not None else launcher.spec.boot_timeout_s,
        poll_interval=poll_interval,
    )
