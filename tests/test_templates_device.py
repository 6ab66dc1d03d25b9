"""Clock, notes, settings and mail templates: goals and criteria checked against values derived by
hand from each task's fixtures, and a wrong-but-plausible plan per template that must fail for
the right reason."""

from __future__ import annotations

import datetime as dt
import json
import re
import zoneinfo
from typing import Any

import pytest

from phoneenv.contract import AnswerCriterion, StateCriterion, TaskSpec
from phoneenv.env import PhonePlanEnv
from phoneenv.tasks import select
from phoneenv.tasks.predicates import match

# -- helpers -------------------------------------------------------------------------------------


def tasks(template: str) -> list[TaskSpec]:
    out = select(f"template:{template}")
    assert len(out) == 8, f"{template} has {len(out)} tasks"
    return out


def rows(task: TaskSpec, table: str) -> list[dict[str, Any]]:
    return task.fixtures.records.get(table, [])


def by_id(task: TaskSpec, table: str, rid: str) -> dict[str, Any]:
    (rec,) = [r for r in rows(task, table) if r["id"] == rid]
    return rec


def state_crits(task: TaskSpec, change: str | None = None) -> list[StateCriterion]:
    return [c for c in task.criteria if isinstance(c, StateCriterion) and (change is None or c.change == change)]


def answer_crit(task: TaskSpec) -> AnswerCriterion:
    (crit,) = [c for c in task.criteria if isinstance(c, AnswerCriterion)]
    return crit


def play(task: TaskSpec, plan: list[tuple[str, dict[str, Any]]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Play ``plan`` (tool, arguments) then finish if the plan does not; returns the verdict and
    each step's feedback."""
    env = PhonePlanEnv(task=task)
    env.reset(seed=0)
    feedbacks = []
    info: dict[str, Any] = {}
    for tool, args in plan:
        obs, _, term, _, info = env.step(json.dumps({"name": tool, "arguments": args}))
        feedbacks.append(json.loads(obs["feedback"]))
        if term:
            break
    if "verdict" not in info:
        *_, info = env.step(json.dumps({"name": "finish", "arguments": {}}))
    return info["verdict"], feedbacks


def failed(verdict: dict[str, Any]) -> dict[str, str]:
    """Failed criteria: id -> reason."""
    return {c["id"]: c["reason"] for c in verdict["criteria"] if not c["passed"]}


def to24(h12: str, mm: str, half: str) -> str:
    return f"{int(h12) % 12 + (12 if half == 'PM' else 0):02d}:{mm}"


def sign_in(task: TaskSpec) -> tuple[str, dict[str, Any]]:
    return ("system.sign_in", {"app": "mail", "account": task.fixtures.accounts["mail"]["account"]})


# -- clock ---------------------------------------------------------------------------------------


def test_set_alarm_goal_and_wrong_half_of_day():
    for t in tasks("clock.set_alarm"):
        m = re.fullmatch(r'Set an alarm for (\d{1,2}):(\d\d) (AM|PM) tomorrow labeled "(.+)"\.', t.goal)
        assert m, t.goal
        hhmm = to24(*m.group(1, 2, 3))
        assert hhmm not in {a["time"] for a in rows(t, "clock.alarms")}
        (crit,) = state_crits(t, "created")
        assert crit.table == "clock.alarms"
        assert crit.where["time"] == hhmm and crit.where["label"] == {"iequals": m.group(4)}
        # "tomorrow" holds for a one-off alarm: the phone's clock is past the alarm's time of day.
        assert dt.datetime.fromisoformat(t.fixtures.clock).strftime("%H:%M") > hhmm
    t = tasks("clock.set_alarm")[0]
    (crit,) = state_crits(t, "created")
    h, mm = crit.where["time"].split(":")
    pm = f"{int(h) + 12:02d}:{mm}"
    verdict, _ = play(t, [("clock.create_alarm", {"time": pm, "label": crit.where["label"]["iequals"]})])
    assert not verdict["success"]
    assert failed(verdict) == {crit.id: "0 matching created record(s), expected exactly 1"}
    assert verdict["collateral"] == [f"clock.alarms/al_{len(rows(t, 'clock.alarms')) + 1} created"]


def test_start_timer_goal_and_minutes_taken_as_seconds():
    for t in tasks("clock.start_timer"):
        m = re.fullmatch(r'Start an? (\d+)-minute timer( called "(.+)")?\.', t.goal)
        assert m, t.goal
        (crit,) = state_crits(t, "created")
        assert crit.where["duration_s"] == int(m.group(1)) * 60
        assert crit.where.get("label") == ({"iequals": m.group(3)} if m.group(3) else None)
    t = tasks("clock.start_timer")[0]
    minutes = int(re.search(r"(\d+)-minute", t.goal).group(1))
    args: dict[str, Any] = {"duration_seconds": minutes}
    if "called" in t.goal:
        args["label"] = re.search(r'"(.+)"', t.goal).group(1)
    verdict, _ = play(t, [("clock.start_timer", args)])
    assert not verdict["success"]
    assert list(failed(verdict)) == ["created:clock.timers"]
    assert verdict["collateral"] == ["clock.timers/tm_1 created"]


def test_alarm_off_targets_the_enabled_alarm_and_deleting_it_fails():
    for t in tasks("clock.alarm_off"):
        m = re.match(r"Switch off my (\d{1,2}):(\d\d) (AM|PM) alarm", t.goal)
        assert m, t.goal
        (alarm,) = [a for a in rows(t, "clock.alarms") if a["time"] == to24(*m.group(1, 2, 3))]
        assert alarm["enabled"] is True
        (crit,) = state_crits(t, "updated")
        assert crit.where == {"id": alarm["id"], "enabled": False, "time": alarm["time"]}
    t = tasks("clock.alarm_off")[0]
    alarm_id = state_crits(t, "updated")[0].where["id"]
    verdict, _ = play(t, [("clock.list_alarms", {}), ("clock.delete_alarm", {"alarm_id": alarm_id})])
    assert not verdict["success"]
    assert failed(verdict) == {"updated:clock.alarms": "0 matching updated record(s), expected exactly 1"}
    assert verdict["collateral"] == [f"clock.alarms/{alarm_id} deleted"]


CITY_ZONES = {
    "Tokyo": "Asia/Tokyo",
    "New York": "America/New_York",
    "London": "Europe/London",
    "Sydney": "Australia/Sydney",
    "Los Angeles": "America/Los_Angeles",
    "Dubai": "Asia/Dubai",
    "Mumbai": "Asia/Kolkata",
    "Sao Paulo": "America/Sao_Paulo",
    "Singapore": "Asia/Singapore",
    "Berlin": "Europe/Berlin",
}


def test_what_time_answer_is_the_city_time_and_phone_time_fails():
    for t in tasks("clock.what_time"):
        city = re.fullmatch(r"What time is it in (.+) right now\?", t.goal).group(1)
        here = dt.datetime.fromisoformat(t.fixtures.clock).replace(tzinfo=zoneinfo.ZoneInfo(t.fixtures.timezone))
        there = here.astimezone(zoneinfo.ZoneInfo(CITY_ZONES[city]))
        assert there.utcoffset() != here.utcoffset()
        crit = answer_crit(t)
        h12 = there.hour % 12 or 12
        half = "AM" if there.hour < 12 else "PM"
        for good in (there.strftime("%H:%M"), f"It's {h12}:{there.minute:02d} {half} in {city}."):
            assert re.search(crit.pattern, good, re.IGNORECASE), (t.id, good)
        other = "PM" if half == "AM" else "AM"
        for bad in (here.strftime("%H:%M"), f"{h12}:{there.minute:02d} {other}"):
            assert not re.search(crit.pattern, bad, re.IGNORECASE), (t.id, bad)
    t = tasks("clock.what_time")[0]
    local = dt.datetime.fromisoformat(t.fixtures.clock).strftime("%H:%M")
    verdict, _ = play(t, [("clock.now", {}), ("finish", {"answer": local})])
    assert not verdict["success"]
    assert list(failed(verdict)) == ["answer"] and failed(verdict)["answer"].startswith("answer does not match")


def test_delete_alarm_targets_the_named_alarm_and_switching_off_fails():
    for t in tasks("clock.delete_alarm"):
        alarms = rows(t, "clock.alarms")
        if m := re.fullmatch(r'Delete my "(.+)" alarm\.', t.goal):
            (alarm,) = [a for a in alarms if a["label"] == m.group(1)]
        else:
            m = re.fullmatch(r"Delete my (\d{1,2}):(\d\d) (AM|PM) alarm\.", t.goal)
            (alarm,) = [a for a in alarms if a["time"] == to24(*m.group(1, 2, 3))]
        assert state_crits(t, "deleted")[0].where == {"id": alarm["id"]}
    t = tasks("clock.delete_alarm")[0]
    alarm_id = state_crits(t, "deleted")[0].where["id"]
    enabled = by_id(t, "clock.alarms", alarm_id)["enabled"]
    verdict, _ = play(t, [("clock.set_alarm_enabled", {"alarm_id": alarm_id, "enabled": not enabled})])
    assert not verdict["success"]
    assert failed(verdict) == {"deleted:clock.alarms": "0 matching deleted record(s), expected exactly 1"}
    assert verdict["collateral"] == [f"clock.alarms/{alarm_id} updated"]


# -- notes ---------------------------------------------------------------------------------------


def test_create_note_every_item_is_checked_and_a_partial_note_fails():
    for t in tasks("notes.create_note"):
        m = re.fullmatch(r'Make a new note titled "(.+)" listing: (.+)\.', t.goal)
        title, items = m.group(1), m.group(2).split(", ")
        assert title not in {n["title"] for n in rows(t, "notes.notes")}
        crits = state_crits(t, "created")
        assert [c.where for c in crits] == [{"title": {"iequals": title}, "body": {"icontains": i}} for i in items]
    t = tasks("notes.create_note")[0]
    m = re.fullmatch(r'Make a new note titled "(.+)" listing: (.+)\.', t.goal)
    title, items = m.group(1), m.group(2).split(", ")
    verdict, _ = play(t, [("notes.create", {"title": title, "body": items[0]})])
    assert not verdict["success"]
    assert set(failed(verdict)) == {f"created:notes.notes:{i}" for i in items[1:]}


LIST_TITLES = {
    "my shopping list": "Shopping list",
    "my packing list": "Packing list",
    'my "Books to read" note': "Books to read",
    "my gift ideas note": "Gift ideas",
}


def test_append_item_keeps_old_lines_and_replacing_the_text_fails():
    for t in tasks("notes.append_item"):
        m = re.fullmatch(r"Add (.+?) to (my .+)\.", t.goal)
        item, said = m.groups()
        (note,) = [n for n in rows(t, "notes.notes") if n["title"] == LIST_TITLES[said]]
        assert item.casefold() not in note["body"].casefold()
        (upd,) = state_crits(t, "updated")
        assert upd.where == {"id": note["id"], "body": {"icontains": item}}
        kept = [c.where["body"]["icontains"] for c in state_crits(t, "present")]
        assert kept == note["body"].split("\n")
        assert all(c.where["id"] == note["id"] for c in state_crits(t, "present"))
    t = tasks("notes.append_item")[0]
    item = re.fullmatch(r"Add (.+?) to (my .+)\.", t.goal).group(1)
    note_id = state_crits(t, "updated")[0].where["id"]
    old = by_id(t, "notes.notes", note_id)["body"].split("\n")
    verdict, _ = play(t, [("notes.update", {"note_id": note_id, "body": item})])
    assert not verdict["success"]
    assert set(failed(verdict)) == {f"present:notes.notes:{line}" for line in old}
    assert verdict["collateral"] == []


def test_lookup_fact_answer_comes_from_the_note_and_a_neighbouring_fact_fails():
    for t in tasks("notes.lookup_fact"):
        notes = {n["title"]: n["body"] for n in rows(t, "notes.notes")}
        if "wifi password" in t.goal:
            want = re.search(r"password: (\S+)", notes["Wifi at the cabin"]).group(1)
        elif "wifi network" in t.goal:
            want = re.search(r"network: (\S+)", notes["Wifi at the cabin"]).group(1)
        elif "gym locker" in t.goal:
            want = re.search(r"code (\d+)", notes["Gym locker"]).group(1)
        elif "bike lock" in t.goal:
            want = re.search(r"combination: (\d+)", notes["Bike lock"]).group(1)
        else:
            want = re.search(r"spot (\w+)", notes["Parking"]).group(1)
        pattern = answer_crit(t).pattern
        assert re.search(pattern, f"It's {want}.", re.IGNORECASE), t.id
        assert not re.search(pattern, f"{want}0", re.IGNORECASE), t.id
        assert {"read_only"} <= {c.rule for c in t.criteria if c.kind == "behavior"}
    # Gym locker "locker 42, code 1234" and parking "level 3, spot B12": the other number is wrong.
    for t in tasks("notes.lookup_fact"):
        notes = {n["title"]: n["body"] for n in rows(t, "notes.notes")}
        if "gym locker" in t.goal:
            query, wrong = "locker", re.search(r"locker (\d+)", notes["Gym locker"]).group(1)
        elif "parking spot" in t.goal:
            query, wrong = "parking", "level " + re.search(r"level (\d+)", notes["Parking"]).group(1)
        elif "wifi password" in t.goal:
            query, wrong = "cabin", re.search(r"network: (\S+)", notes["Wifi at the cabin"]).group(1)
        else:
            continue
        verdict, fbs = play(t, [("notes.search", {"query": query}), ("finish", {"answer": wrong})])
        assert fbs[0]["ok"] and fbs[0]["result"]["total"] >= 1
        assert not verdict["success"]
        assert list(failed(verdict)) == ["answer"]
        return
    pytest.fail("no lookup_fact task with a neighbouring fact to confuse")


def test_delete_note_targets_the_titled_note_and_needs_a_confirmation():
    for t in tasks("notes.delete_note"):
        title = re.match(r'Delete my "(.+)" note\.', t.goal).group(1)
        (note,) = [n for n in rows(t, "notes.notes") if n["title"] == title]
        assert state_crits(t, "deleted")[0].where == {"id": note["id"]}
        asks = "Ask me before" in t.goal
        assert t.fixtures.confirm_sensitive is asks
        assert any(c.kind == "behavior" and c.rule == "confirm_before" for c in t.criteria) is asks
    t = next(t for t in tasks("notes.delete_note") if t.fixtures.confirm_sensitive)
    note_id = state_crits(t, "deleted")[0].where["id"]
    verdict, fbs = play(t, [("notes.delete", {"note_id": note_id})])
    assert fbs[0]["error"] == "confirmation_required"
    assert not verdict["success"]
    assert failed(verdict) == {"deleted:notes.notes": "0 matching deleted record(s), expected exactly 1"}


# -- settings ------------------------------------------------------------------------------------

SETTING_WORDS = {
    "dnd": "do not disturb",
    "bluetooth": "bluetooth",
    "dark_mode": "dark mode",
    "location": "location",
    "wifi": "wi-fi",
}


def setting(task: TaskSpec, key: str) -> Any:
    (rec,) = [r for r in rows(task, "settings.settings") if r["id"] == key]
    return rec["value"]


def test_toggle_goal_matches_the_criterion_and_a_silenced_ringer_is_not_dnd():
    seen = set()
    for t in tasks("settings.toggle"):
        (crit,) = state_crits(t, "updated")
        key, want = crit.where["id"], crit.where["value"]
        seen.add((key, want))
        assert SETTING_WORDS[key] in t.goal.casefold()
        assert setting(t, key) is (not want)
        words = set(re.findall(r"\w+", t.goal.casefold()))
        if {"on", "off"} & words and key != "dark_mode":
            assert ("on" in words) is want, t.goal
    assert ("dnd", True) in seen and ("bluetooth", True) in seen
    t = next(t for t in tasks("settings.toggle") if state_crits(t)[0].where == {"id": "dnd", "value": True})
    verdict, _ = play(t, [("settings.set_volume", {"stream": "ring", "level": 0})])
    assert not verdict["success"]
    assert list(failed(verdict)) == ["updated:settings.settings"]
    assert verdict["collateral"] == ["settings.settings/volume_ring updated"]


def test_brightness_level_from_goal_and_media_volume_fails():
    for t in tasks("settings.brightness"):
        level = int(re.search(r"to (\d+)( percent|%)", t.goal).group(1))
        assert state_crits(t, "updated")[0].where == {"id": "brightness", "value": level}
        assert setting(t, "brightness") != level
    t = tasks("settings.brightness")[0]
    level = state_crits(t)[0].where["value"]
    verdict, _ = play(t, [("settings.set_volume", {"stream": "media", "level": level})])
    assert not verdict["success"]
    assert list(failed(verdict)) == ["updated:settings.settings"]
    assert verdict["collateral"] == ["settings.settings/volume_media updated"]


def test_revoke_permission_targets_the_named_permission_and_the_sibling_fails():
    words = {"send text": "SEND_SMS", "read my text": "READ_SMS", "change my contacts": "WRITE_CONTACTS"}
    words |= {"read my calendar": "READ_CALENDAR", "change my calendar": "WRITE_CALENDAR"}
    words |= {"make phone calls": "CALL_PHONE", "read my call log": "READ_CALL_LOG"}
    for t in tasks("settings.revoke_permission"):
        app = re.search(r"the (\w+) app", t.goal).group(1).lower()
        perm = next(p for w, p in words.items() if w in t.goal)
        rid = f"{app}/android.permission.{perm}"
        assert state_crits(t, "updated")[0].where == {"id": rid, "granted": False}
        assert t.fixtures.permissions.get(app, {}).get(f"android.permission.{perm}", True) is True
    t = next(t for t in tasks("settings.revoke_permission") if "the Messages app" in t.goal)
    rid = state_crits(t)[0].where["id"]
    sibling = "READ_SMS" if rid.endswith("SEND_SMS") else "SEND_SMS"
    plan = [("user.confirm", {"question": "Revoke it?"})] if t.fixtures.confirm_sensitive else []
    plan.append(("settings.revoke_permission", {"app": "messages", "permission": f"android.permission.{sibling}"}))
    verdict, fbs = play(t, plan)
    assert fbs[-1]["ok"]
    assert not verdict["success"]
    assert list(failed(verdict)) == ["updated:system.permissions"]
    assert verdict["collateral"] == [f"system.permissions/messages/android.permission.{sibling} updated"]


def test_airplane_mode_side_effects_allowed_and_forgetting_wifi_fails():
    for t in tasks("settings.airplane_mode"):
        assert setting(t, "airplane_mode") is False
        assert state_crits(t, "updated")[0].where == {"id": "airplane_mode", "value": True}
        (allowed,) = t.allowed_changes
        keep = re.search(r"I want (Wi-Fi|Bluetooth) on", t.goal)
        if keep:
            key = {"Wi-Fi": "wifi", "Bluetooth": "bluetooth"}[keep.group(1)]
            (extra,) = [c for c in state_crits(t) if c.where["id"] == key]
            assert extra.where["value"] is True and extra.change == ("present" if setting(t, key) else "updated")
            assert key not in allowed.where["id"]["in"]
        else:
            assert sorted(allowed.where["id"]["in"]) == ["bluetooth", "wifi"]
    t = next(t for t in tasks("settings.airplane_mode") if "I want Wi-Fi on" in t.goal)
    verdict, _ = play(t, [("settings.set_airplane_mode", {"enabled": True})])
    assert not verdict["success"]
    assert list(failed(verdict)) == ["present:settings.settings"]
    # Wi-Fi is not among the allowed side effects when the user wants it kept on.
    assert verdict["collateral"] == ["settings.settings/wifi updated"]
    # Wi-Fi and Bluetooth switched off by hand is not airplane mode.
    t = next(t for t in tasks("settings.airplane_mode") if "I want" not in t.goal)
    verdict, _ = play(t, [("settings.set_wifi", {"enabled": False}), ("settings.set_bluetooth", {"enabled": False})])
    assert not verdict["success"]
    assert list(failed(verdict)) == ["updated:settings.settings"]


# -- mail ----------------------------------------------------------------------------------------


def test_mail_tasks_start_signed_out_and_mail_tools_say_login_required():
    for name in ("mail.latest_unread", "mail.send_email", "mail.archive", "mail.reply"):
        for t in tasks(name):
            assert t.fixtures.accounts["mail"]["signed_in"] is False
            assert t.reference_plan[0].name == "system.sign_in"
    t = tasks("mail.latest_unread")[0]
    _, fbs = play(
        t, [("mail.list_inbox", {"unread_only": True}), sign_in(t), ("mail.list_inbox", {"unread_only": True})]
    )
    assert fbs[0]["error"] == "login_required" and "system.sign_in" in fbs[0]["hint"]
    assert fbs[1]["ok"] and fbs[2]["ok"]


def test_latest_unread_answer_is_the_newest_unread_subject_and_others_fail():
    for t in tasks("mail.latest_unread"):
        inbox = [m for m in rows(t, "mail.messages") if m["folder"] == "inbox"]
        unread = sorted((m for m in inbox if not m["read"]), key=lambda m: m["time"], reverse=True)
        assert len(unread) == 1 or unread[0]["time"] > unread[1]["time"]
        subject = unread[0]["subject"]
        pattern = answer_crit(t).pattern
        assert re.search(pattern, f'The subject is "{subject}".', re.IGNORECASE)
        for m in inbox:
            if m is not unread[0]:
                assert not re.search(pattern, m["subject"], re.IGNORECASE)
                assert not re.search(pattern, f"{subject}; also {m['subject']}", re.IGNORECASE)
    # The newest mail, read or not, is a plausible mistake where it is not the newest unread.
    for t in tasks("mail.latest_unread"):
        inbox = sorted(
            (m for m in rows(t, "mail.messages") if m["folder"] == "inbox"), key=lambda m: m["time"], reverse=True
        )
        if inbox[0]["read"]:
            verdict, _ = play(t, [sign_in(t), ("mail.list_inbox", {}), ("finish", {"answer": inbox[0]["subject"]})])
            assert not verdict["success"]
            assert list(failed(verdict)) == ["answer"]
            return
    pytest.fail("no latest_unread task whose newest mail is read")


def test_send_email_goal_address_is_the_contacts_and_subject_is_checked():
    for t in tasks("mail.send_email"):
        m = re.match(r'Email (\w+ \w+) at (\S+) with the subject "(.+)" and the message: "(.+)"', t.goal)
        name, address, subject, body = m.groups()
        (c,) = [c for c in rows(t, "contacts.contacts") if c["name"] == name]
        assert c["email"] == address
        (crit,) = state_crits(t, "created")
        assert crit.where["to"] == {"has": address, "len": 1}
        assert crit.where["subject"] == {"iequals": subject} and crit.where["folder"] == "sent"
        assert crit.where["body"]["icontains"] in body
    t = next(t for t in tasks("mail.send_email") if not t.fixtures.confirm_sensitive)
    m = re.match(r'Email (\w+ \w+) at (\S+) with the subject "(.+)" and the message: "(.+)"', t.goal)
    _, address, subject, body = m.groups()
    # Forgot the subject line: the body's first words as subject.
    verdict, fbs = play(t, [sign_in(t), ("mail.send", {"to": [address], "subject": body, "body": body})])
    assert all(f["ok"] for f in fbs)
    assert not verdict["success"]
    assert list(failed(verdict)) == ["created:mail.messages"]
    assert verdict["collateral"] == [f"mail.messages/em_{len(rows(t, 'mail.messages')) + 1} created"]


def test_archive_targets_the_subject_and_deleting_it_fails():
    for t in tasks("mail.archive"):
        subject = re.fullmatch(r'Archive the "(.+)" email\.', t.goal).group(1)
        (msg,) = [m for m in rows(t, "mail.messages") if m["subject"] == subject]
        assert msg["folder"] == "inbox"
        assert state_crits(t, "updated")[0].where == {"id": msg["id"], "folder": "archive"}
    t = tasks("mail.archive")[0]
    msg_id = state_crits(t)[0].where["id"]
    verdict, _ = play(t, [sign_in(t), ("mail.delete", {"message_id": msg_id})])
    assert not verdict["success"]
    assert failed(verdict) == {"updated:mail.messages": "0 matching updated record(s), expected exactly 1"}
    assert verdict["collateral"] == [f"mail.messages/{msg_id} updated"]


def test_reply_goes_to_the_sender_with_re_subject_and_a_fresh_mail_fails():
    for t in tasks("mail.reply"):
        subject = re.match(r'Reply to the "(.+)" email', t.goal).group(1)
        (msg,) = [m for m in rows(t, "mail.messages") if m["subject"] == subject]
        (crit,) = state_crits(t, "created")
        assert crit.where["to"] == {"has": msg["from"], "len": 1}
        assert crit.where["subject"] == {"iequals": f"Re: {subject}"}
        text = re.search(r': "(.+)"', t.goal).group(1)
        assert crit.where["body"]["icontains"] in text
        sender = [c["name"] for c in rows(t, "contacts.contacts") if c["email"] == msg["from"]]
        if sender:
            assert f"from {sender[0].split()[0]}" in t.goal
    t = next(t for t in tasks("mail.reply") if not t.fixtures.confirm_sensitive)
    subject = re.match(r'Reply to the "(.+)" email', t.goal).group(1)
    (msg,) = [m for m in rows(t, "mail.messages") if m["subject"] == subject]
    text = re.search(r': "(.+)"', t.goal).group(1)
    verdict, _ = play(t, [sign_in(t), ("mail.send", {"to": [msg["from"]], "subject": subject, "body": text})])
    assert not verdict["success"]
    assert list(failed(verdict)) == ["created:mail.messages"]
    created = [c for c in verdict["collateral"] if c.endswith("created")]
    assert len(created) == 1
    # The same mail as a reply passes the same criterion: only the subject line was wrong.
    crit = state_crits(t)[0]
    assert match({"folder": "sent", "to": (msg["from"],), "subject": f"Re: {subject}", "body": text}, crit.where)
