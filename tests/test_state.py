"""Copy-on-write phone state: snapshots never change, diffs look at what was written and agree
with a record-by-record comparison, and no tool writes into a shared table."""

from __future__ import annotations

import copy
import json
import random

import pytest

from agents.random_agent import RandomAgent
from agents.reference import ReferenceAgent
from phoneenv.backends import sandbox
from phoneenv.env import PhonePlanEnv
from phoneenv.evaluation import play_episode
from phoneenv.state import PhoneState, Table, diff_tables
from phoneenv.tasks import load_suite


def _naive_diff(before, after):
    """Changes between two plain copies, computed record by record (the reference)."""
    out = []
    for table in sorted(set(before) | set(after)):
        old_t, new_t = before.get(table, {}), after.get(table, {})
        for rid in sorted(set(old_t) | set(new_t)):
            old, new = old_t.get(rid), new_t.get(rid)
            if old is None:
                out.append((table, rid, "created", None, new))
            elif new is None:
                out.append((table, rid, "deleted", old, None))
            elif old != new:
                out.append((table, rid, "updated", old, new))
    return out


def _plain(tables):
    return {k: {rid: dict(rec) for rid, rec in v.items()} for k, v in tables.items()}


def test_snapshot_and_restore_share_tables_and_never_change():
    s = PhoneState({"notes.notes": [{"id": "n1", "t": "a"}, {"id": "n2", "t": "b"}], "x.y": [{"id": "y1"}]})
    snap = s.snapshot()
    assert snap.tables["notes.notes"] is s.tables["notes.notes"]  # shared, not copied
    frozen = _plain(snap.tables)
    s.update("notes.notes", "n1", t="z")
    s.insert("notes.notes", {"id": "n3", "t": "c"})
    s.delete("notes.notes", "n2")
    s.replace("x.y", "y1", {"id": "y1", "k": 1})
    s.insert("new.table", {"id": "q1"})
    assert _plain(snap.tables) == frozen
    assert snap.tables["notes.notes"] is not s.tables["notes.notes"]
    assert s.tables["notes.notes"].touched == {"n1", "n2", "n3"}
    s.restore(snap)
    assert _plain(s.tables) == frozen and s.tables["x.y"] is snap.tables["x.y"]
    # a write after the restore copies again: the snapshot still holds
    s.update("x.y", "y1", k=2)
    assert snap.tables["x.y"]["y1"] == {"id": "y1"}
    with pytest.raises(KeyError):
        s.delete("notes.notes", "nope")
    with pytest.raises(KeyError):
        s.update("notes.notes", "nope", t="x")
    with pytest.raises(KeyError):
        s.insert("notes.notes", {"id": "n1"})


def test_diff_looks_only_at_touched_ids():
    # Two tables of one origin are compared on the ids they touched, nothing else: a record that
    # differs but was not touched is (by the contract) not there, which shows the rest is skipped.
    origin = {"a": {"id": "a", "v": 1}, "b": {"id": "b", "v": 1}}
    after = Table(origin)
    after.origin, after.touched = origin, {"a"}
    after["a"] = {"id": "a", "v": 2}
    after["b"] = {"id": "b", "v": 9}  # untouched by contract
    changes = diff_tables({"t": origin}, {"t": after})
    assert [(c.id, c.kind) for c in changes] == [("a", "updated")]
    # A table of another origin is compared record by record.
    assert [(c.id, c.kind) for c in diff_tables({"t": dict(origin)}, {"t": after})] == [
        ("a", "updated"),
        ("b", "updated"),
    ]


@pytest.mark.parametrize("seed", range(6))
def test_diffs_match_a_record_by_record_diff_on_random_histories(seed):
    rng = random.Random(seed)
    rows = {f"t{k}": [{"id": f"r{i}", "v": rng.randrange(3)} for i in range(rng.randrange(0, 12))] for k in range(4)}
    s = PhoneState(rows)
    snaps = [(s.snapshot(), None)]
    snaps[0] = (snaps[0][0], _plain(snaps[0][0].tables))
    for _ in range(120):
        table = f"t{rng.randrange(5)}"  # t4 starts absent
        live = s.tables.get(table, {})
        op = rng.random()
        if op < 0.3:
            s.insert(table, {"id": f"r{rng.randrange(40)}x{rng.randrange(10**6)}", "v": rng.randrange(3)})
        elif op < 0.55 and live:
            s.update(table, rng.choice(sorted(live)), v=rng.randrange(3))
        elif op < 0.65 and live:
            rid = rng.choice(sorted(live))
            s.replace(table, rid, dict(live[rid]))  # same value: touched, yet no change
        elif op < 0.8 and live:
            s.delete(table, rng.choice(sorted(live)))
        elif op < 0.9:
            snap = s.snapshot()
            snaps.append((snap, _plain(snap.tables)))
        else:
            snap, _ = rng.choice(snaps)
            s.restore(snap)
        # every snapshot is as it was taken, and every diff agrees with the naive one
        for snap, plain in snaps:
            assert _plain(snap.tables) == plain
        for snap, plain in rng.sample(snaps, min(3, len(snaps))):
            got = [(c.table, c.id, c.kind, c.old, c.new) for c in diff_tables(snap.tables, s.tables)]
            want = _naive_diff(plain, _plain(s.tables))
            assert sorted(got, key=lambda c: (c[0], c[1])) == want
            back = [(c.table, c.id, c.kind) for c in diff_tables(s.tables, snap.tables)]
            assert sorted(back) == sorted(
                (t, i, {"created": "deleted", "deleted": "created"}.get(k, k)) for t, i, k, _, _ in want
            )


def test_episodes_leave_the_shared_fixture_tables_alone():
    """The first task of every family, a reference and a random episode each: afterwards every
    cached fixture snapshot holds exactly what it held before (a tool writing into a table it
    did not copy would change it for every later episode)."""
    seen: set[str] = set()
    tasks = []
    for t in load_suite():
        family = t.id.split("/")[0]
        if list(t.backends) == ["sandbox"] and not t.fixtures.memory and family not in seen:
            seen.add(family)
            tasks.append(t)
    env = PhonePlanEnv(task=tasks[0], memory=False)  # no retrieval model: phone state only
    before = {}
    for t in tasks:
        env.reset(seed=0, options={"task": t})
        snap = sandbox._fixture_cache[id(t.fixtures)][1]
        before[t.id] = (snap, copy.deepcopy(snap.tables))
    for t in tasks:
        for agent in (ReferenceAgent(), RandomAgent(seed=1)):
            play_episode(agent, env, t, 0)
    changed = [tid for tid, (snap, tables) in before.items() if snap.tables != tables]
    assert not changed


def test_pad_fixtures_adds_filler_that_changes_no_task():
    from phoneenv.tasks import get_task
    from phoneenv.tasks.world import pad_fixtures

    counts = {"contacts.contacts": 1500, "messages.messages": 2000, "phone.calls": 700}
    for tid in ("messages.text_contact/0", "messages.last_texter/0", "contacts.favorite/0", "phone.call_contact/0"):
        task = get_task(tid)
        fx = pad_fixtures(task.fixtures, counts, seed=3)
        assert fx == pad_fixtures(task.fixtures, counts, seed=3)  # same seed, same records
        assert task.fixtures.records == get_task(tid).fixtures.records  # the original is left alone
        seeded = task.fixtures.records
        lines = {
            "".join(ch for ch in r.get(f) or "" if ch.isdigit())[-9:]
            for rows in seeded.values()
            for r in rows
            for f in ("phone", "number")
        }
        newest = max(r["time"] for t in ("messages.messages", "phone.calls") for r in seeded.get(t, ()))
        names = {c["name"] for c in seeded["contacts.contacts"]}
        for table, n in counts.items():
            filler = fx.records[table][len(seeded.get(table, ())) :]
            assert len(filler) == n
            assert len({r["id"] for r in fx.records[table]}) == len(fx.records[table])
            assert not any(r["id"][-1].isdigit() for r in filler)  # the ids a task expects stay free
            for r in filler:
                num = r.get("phone") or r["number"]
                assert "".join(ch for ch in num if ch.isdigit())[-9:] not in lines
                assert r.get("name") not in names
                assert r.get("time", "") < newest and r.get("read", True) is True
        # the reference plan still solves the task on the big phone, with the same ids
        env = PhonePlanEnv(task=task, memory=False)
        big = task.model_copy(update={"fixtures": fx})
        result, _ = play_episode(ReferenceAgent(lookup=lambda _id, big=big: big), env, big, 0)
        assert result.success, tid
        for table, prefix in (("contacts.contacts", "c_"), ("messages.messages", "m_")):
            small = PhoneState(seeded).new_id(table, prefix)
            assert PhoneState(fx.records).new_id(table, prefix) == small
    with pytest.raises(ValueError, match="cannot fill"):
        pad_fixtures(task.fixtures, {"notes.notes": 3})
    with pytest.raises(ValueError, match="≥ 0"):
        pad_fixtures(task.fixtures, {"phone.calls": -1})


def test_system_tables_are_shared_by_fixtures_alike_and_written_copy_on_write():
    """Two tasks with the same apps and grants start from one system.apps and one
    system.permissions table (built once); granting a permission in one episode changes that
    episode only: the other task, a second env and the next reset still see it denied."""
    from phoneenv.env import PhonePlanEnv
    from phoneenv.tasks import get_task

    a, b = get_task("camera.photo_to_contact/6"), get_task("camera.photo_to_contact/7")
    one = PhonePlanEnv(task=a, memory=False)
    two = PhonePlanEnv(task=b, memory=False)
    one.reset(seed=0)
    two.reset(seed=0)
    perms = lambda env: env.unwrapped.backend.phone.state.tables["system.permissions"]  # noqa: E731
    same_grants = a.fixtures.permissions == b.fixtures.permissions
    assert (perms(one) is perms(two)) is same_grants
    denied = [rid for rid, r in perms(one).items() if not r["granted"]]
    assert denied, "the task denies a permission to ask for"
    app, perm = denied[0].split("/", 1)
    step = {"name": "system.request_permission", "arguments": {"app": app, "permission": perm}}
    obs, *_ = one.step(step)
    assert json.loads(obs["feedback"])["result"]["granted"] is True
    assert perms(one)[denied[0]]["granted"] is True  # this episode: granted
    assert perms(two)[denied[0]]["granted"] is False  # the other env: untouched
    one.reset(seed=0)
    assert perms(one)[denied[0]]["granted"] is False  # the next episode: from the fixtures again
    one.close()
    two.close()
