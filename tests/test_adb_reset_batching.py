"""How many adb round trips one ``AdbBackend.reset`` takes, counted where they reach the device.

A virtual device is served over the real adb server; its :class:`AdbDeviceServer` counts every
stream opened (each ``adb shell`` round trip, each sync session). Before resets were batched, one
reset of these tasks took 20-22 round trips (one per table read, one per settings/permissions/clock
read, the writes, the snapshot probe and save); the ceilings below are counted by hand from what
a batched reset sends:

- 1 for what reset needs to know (``pm list packages``, the app-data archives' ``stat``, uids);
- the writes, packed into scripts of at most ``MAX_SCRIPT_BYTES`` (counted from the commands
  recorded), the verification's reads riding in the last one;
- 1 more when a text column of a provider first lists ``NULL`` on this backend (its ``IS NULL``
  query; later reads send it with the listing);
- 1 to save the app-data archives after a first seeding (``kind="device"``, no console), and
  once per backend 1 for ``id -u`` (is ``adb shell`` root, or must archives go through ``su``).
"""

from __future__ import annotations

import math
import shlex

import pytest

pytest.importorskip("adbutils", reason="the adb backend needs adbutils (pip install -e '.[device]')")
pytest.importorskip("bashlex", reason="the virtual device needs bashlex (pip install -e '.[device]')")

from phoneenv.backends.adb import MAX_SCRIPT_BYTES, AdbBackend
from phoneenv.farm.virtual import VirtualDevice
from phoneenv.tasks import load_suite
from tests import waiting

BEFORE = 20
"""Round trips of one reset of any of these tasks before batching (the fewest measured)."""
READS = {"content query", "settings get", "pm list", "dumpsys package", "dumpsys telephony.registry", "id -u"}
READS |= {"date +%s", "getprop persist.sys.timezone", "stat -c", "cat"}


def sample() -> list:
    """Every fourth Tool-category template's first task, in suite order (10 tasks, 8 apps)."""
    probe = AdbBackend(serial="none")
    seen: list[str | None] = []
    out = []
    for t in load_suite():
        if t.category.value == "tool" and t.template not in seen and probe.can_run(t):
            seen.append(t.template)
            if len(seen) % 4 == 1:
                out.append(t)
    return out


def _norm(value):
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_norm(v) for v in value)
    return value


def _write_scripts(sent: list[list[str]]) -> int:
    """How many scripts the writes among ``sent`` need at most: their command lines joined with
    `` && `` packed into :data:`MAX_SCRIPT_BYTES`, with a command's worth of slack per script."""
    writes = [c for c in sent if " ".join(c[:2]) not in READS and c[0] not in READS]
    size = sum(len(shlex.join(c)) + 4 for c in writes)
    return math.ceil(size / (MAX_SCRIPT_BYTES - 1_000))


@pytest.mark.parametrize("kind", ["emulator", "device"])
def test_a_reset_takes_a_handful_of_round_trips(adb_server, kind):
    from tests.adb import served_device

    tasks = sample()
    assert len(tasks) >= 8 and len({a for t in tasks for a in t.apps} - {"system", "user"}) >= 5
    dev = VirtualDevice()
    with served_device(adb_server, dev) as (server, _):
        backend = AdbBackend(serial=server.serial, adb_port=adb_server.port, timeout_s=waiting.scaled(10), kind=kind)
        backend.shell.record = True
        counts = []
        for rep in range(2):  # the second pass restores the app data archives (kind="device")
            for task in tasks:
                sent, streams = len(backend.shell.sent), server.stats.streams
                nulls = dict(backend._null_columns)
                backend.reset(task)
                took = server.stats.streams - streams
                how = backend.last_reset["how"]
                assert how == ("seeded" if kind == "emulator" or rep == 0 else "app_snapshots"), task.id
                scripts = _write_scripts(backend.shell.sent[sent:])
                assert 1 <= scripts <= 2, (task.id, scripts)
                saved = kind == "device" and rep == 0
                first_null = backend._null_columns != nulls  # a text column read NULL for the first time
                root_probe = ["id", "-u"] in backend.shell.sent[sent:]  # once per backend, before the first su
                ceiling = 1 + scripts + first_null + saved + root_probe
                assert took <= ceiling, (task.id, how, took, ceiling)
                counts.append(took)
                # what was verified holds: every mapped table reads back as the fixtures
                expected, _, _ = backend.expected_tables(task)
                assert {k: _norm(v) for k, v in backend.read_all().items() if k in expected} == expected
        assert sum(counts) * 5 <= BEFORE * len(counts), counts
