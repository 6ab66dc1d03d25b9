"""Skills: SKILL.md parsing and errors, matching by tool set, progressive disclosure, skills.read,
and the shipped skills against the sandbox's real tools and behaviour."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from apps import APP_CLASSES
from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import ErrorKind, Feedback, Fixtures, StateCriterion, TaskSpec
from phoneenv.harness.skills import (
    READ_TOOL,
    Skill,
    SkillError,
    SkillLibrary,
    load_skills,
    parse_skill,
    shipped_skills_dirs,
    skills_for,
    unknown_references,
)
from phoneenv.tools import ArgumentError

GOOD = """---
name: text-a-contact
description: Send an SMS to someone by name.
tools: [contacts.search, messages.send]
apps: [messages]
---
1. Call `contacts.search`.
2. Call `messages.send`.
"""

ENV_TOOLS = {"user.confirm", "skills.read"}


def write_skill(root: Path, folder: str, text: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def skill(name: str, tools=(), apps=(), body: str = "Do it.") -> Skill:
    return Skill(name=name, description=f"{name} skill", tools=tuple(tools), apps=tuple(apps), body=body)


@pytest.fixture(scope="module")
def sandbox_tools() -> set[str]:
    return set(SandboxBackend().tools())


@pytest.fixture(scope="module")
def shipped() -> dict[str, Skill]:
    return load_skills()


# -- parsing ------------------------------------------------------------------------------------


def test_parse_front_matter_and_body(tmp_path):
    path = write_skill(tmp_path, "text-a-contact", GOOD)
    s = parse_skill(path.read_text(), path)
    assert s.name == "text-a-contact" and s.description == "Send an SMS to someone by name."
    assert s.tools == ("contacts.search", "messages.send") and s.apps == ("messages",)
    assert s.body.startswith("1. Call `contacts.search`.") and s.body.endswith("`messages.send`.")
    assert s.path == path
    assert Skill.model_validate_json(s.model_dump_json()) == s


def test_parse_accepts_tools_or_apps_alone_and_crlf():
    only_apps = GOOD.replace("tools: [contacts.search, messages.send]\n", "")
    assert parse_skill(only_apps).tools == ()
    only_tools = GOOD.replace("apps: [messages]\n", "")
    assert parse_skill(only_tools).apps == ()
    assert parse_skill(GOOD.replace("\n", "\r\n")).name == "text-a-contact"
    folded = GOOD.replace("description: Send an SMS to someone by name.", "description: >\n  Send an SMS\n  by name.")
    assert parse_skill(folded).description == "Send an SMS by name."


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no front matter here", "no front matter"),
        ("---\nname: [unclosed\n---\nbody", "not valid YAML"),
        ("---\n- a\n- b\n---\nbody", "must be a YAML mapping"),
        (GOOD.replace("name: text-a-contact\n", ""), "missing key 'name'"),
        (GOOD.replace("description: Send an SMS to someone by name.\n", ""), "missing key 'description'"),
        (GOOD.replace("name: text-a-contact", "name: Text A Contact"), "name:"),
        (GOOD.replace("apps: [messages]", "apps: [messages]\ntool: [x.y]"), "unknown key 'tool'"),
        (GOOD.replace("tools: [contacts.search, messages.send]", "tools: contacts.search"), "tools:"),
        (GOOD.replace("contacts.search, messages.send", "contacts.search, send"), "tools.1:"),
        (
            GOOD.replace("tools: [contacts.search, messages.send]\n", "").replace("apps: [messages]\n", ""),
            "give 'tools' and/or 'apps'",
        ),
        (GOOD.split("1. Call")[0], "the body is empty"),
        (GOOD + "x" * 20_001, "characters; at most"),
    ],
)
def test_parse_errors_name_the_file_and_the_problem(tmp_path, text, problem):
    path = write_skill(tmp_path, "text-a-contact", text)
    with pytest.raises(SkillError) as info:
        parse_skill(text, path)
    assert str(info.value).startswith(f"{path}: ")
    assert problem in str(info.value)
    assert info.value.path == path


def test_name_must_match_its_folder(tmp_path):
    path = write_skill(tmp_path, "other-folder", GOOD)
    with pytest.raises(SkillError, match="differs from its folder 'other-folder'"):
        parse_skill(GOOD, path)


# -- loading ------------------------------------------------------------------------------------


def test_load_from_any_folder_recursively(tmp_path):
    write_skill(tmp_path, "messages/text-a-contact", GOOD)
    write_skill(tmp_path, "clock/wake-up", GOOD.replace("text-a-contact", "wake-up").replace("[messages]", "[clock]"))
    loaded = load_skills(tmp_path)
    assert list(loaded) == ["text-a-contact", "wake-up"]
    assert load_skills(tmp_path / "clock" / "wake-up").keys() == {"wake-up"}  # a folder that is one skill


def test_load_from_several_folders_and_duplicates(tmp_path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    first = write_skill(a, "text-a-contact", GOOD)
    assert load_skills(a, a).keys() == {"text-a-contact"}  # the same file twice is one skill
    second = write_skill(b, "text-a-contact", GOOD)
    with pytest.raises(SkillError) as info:
        load_skills(a, b)
    assert str(second) in str(info.value) and str(first) in str(info.value)


def test_load_errors(tmp_path):
    with pytest.raises(SkillError, match="no such skills folder"):
        load_skills(tmp_path / "missing")
    bad = write_skill(tmp_path, "broken", "---\nname: broken\n---\nbody")
    with pytest.raises(SkillError, match=re.escape(str(bad))):
        load_skills(tmp_path)


def test_library_rejects_duplicate_names():
    with pytest.raises(ValueError, match="two skills named"):
        SkillLibrary([skill("a", apps=["clock"]), skill("a", apps=["notes"])])


# -- matching by tool set -----------------------------------------------------------------------


def test_skills_for_matches_tools_or_apps():
    pool = {
        s.name: s
        for s in (
            skill("by-tool", tools=["messages.send"]),
            skill("by-app", apps=["clock"]),
            skill("other", tools=["mail.send"], apps=["mail"]),
        )
    }
    assert [s.name for s in skills_for(["messages.send", "clock.now"], pool)] == ["by-app", "by-tool"]
    assert [s.name for s in skills_for(["messages.read_thread"], pool)] == []  # tool listed, not app
    assert [s.name for s in skills_for(["messages__send"], pool.values())] == ["by-tool"]  # underscore names
    assert skills_for([], pool) == []
    assert pool["other"].covers(["mail.read"]) and not pool["other"].covers(["clock.now"])


def test_shipped_skills_follow_the_installed_apps(shipped):
    lib = SkillLibrary(shipped)
    clock_only = [n for n in SandboxBackend(apps=["clock", "system"]).tools()]
    names = {d["name"] for d in lib.descriptions(clock_only)}
    assert {"set-an-alarm", "start-a-timer"} <= names
    assert not names & {"text-a-contact", "sign-in-to-mail", "airplane-mode", "get-a-permission"}
    with_messages = {d["name"] for d in lib.descriptions(SandboxBackend(apps=["messages", "system"]).tools())}
    assert {"text-a-contact", "get-a-permission"} <= with_messages


# -- progressive disclosure and skills.read -------------------------------------------------------


def test_descriptions_disclose_names_and_descriptions_only(shipped):
    lib = SkillLibrary(shipped)
    descs = lib.descriptions()
    assert [d["name"] for d in descs] == sorted(shipped)
    for d in descs:
        assert set(d) == {"name", "description"}
        assert shipped[d["name"]].body not in json.dumps(d)
    json.dumps(descs)


def test_read_tool_spec():
    spec = READ_TOOL.spec
    assert spec.name == "skills.read" and spec.app == "skills" and spec.effect.value == "read"
    assert spec.parameters["required"] == ["name"]
    assert spec.parameters["properties"]["name"]["description"]
    assert set(spec.returns["properties"]) == {"name", "description", "tools", "apps", "body"}
    assert spec.to_openai()["function"]["name"] == "skills.read"


def test_read_returns_the_body(shipped):
    lib = SkillLibrary(shipped)
    out = lib.call({"name": "text-a-contact"})
    assert out.ok and out.result["body"] == shipped["text-a-contact"].body
    assert out.result["name"] == "text-a-contact" and out.result["apps"] == ["messages"]
    assert Feedback.model_validate_json(out.model_dump_json()) == out
    assert READ_TOOL.method(lib, name="set-an-alarm")["body"] == shipped["set-an-alarm"].body


def test_read_unknown_skill_is_not_found_with_candidates(shipped):
    lib = SkillLibrary(shipped)
    out = lib.call({"name": "text-a-contac"})
    assert not out.ok and out.error is ErrorKind.NOT_FOUND and out.recoverable is True
    assert out.candidates[0] == "text-a-contact" and "'text-a-contact'" in out.hint
    far = lib.call({"name": "zzzzzz"})
    assert far.error is ErrorKind.NOT_FOUND and far.candidates  # still names some skills
    empty = SkillLibrary().call({"name": "x"})
    assert empty.error is ErrorKind.NOT_FOUND and empty.candidates is None


def test_read_validates_arguments():
    lib = SkillLibrary([skill("a", apps=["clock"])])
    out = lib.call({"name": 3})
    assert out.error is ErrorKind.INVALID_ARGUMENTS and out.path == "/name" and out.expected == "string"
    missing = lib.call({})
    assert missing.error is ErrorKind.INVALID_ARGUMENTS and missing.path == "/name"
    extra = lib.call({"name": "a", "verbose": True})
    assert extra.error is ErrorKind.INVALID_ARGUMENTS and extra.candidates == ["name"]


def test_scoped_library_serves_only_the_episode_skills(shipped):
    lib = SkillLibrary(shipped).scoped(SandboxBackend(apps=["clock", "system"]).tools())
    assert "set-an-alarm" in lib and "text-a-contact" not in lib
    out = lib.call({"name": "text-a-contact"})
    assert out.error is ErrorKind.NOT_FOUND
    assert len(lib) == len(lib.descriptions())


# -- the shipped skills ---------------------------------------------------------------------------


def test_at_least_six_shipped_skills_under_their_apps(shipped):
    assert len(shipped) >= 6
    roots = shipped_skills_dirs()
    assert roots and all(r.name == "skills" and r.parent.name in APP_CLASSES for r in roots), roots
    for s in shipped.values():
        root = s.path.parents[1]  # apps/<app>/skills/<skill-name>/SKILL.md
        assert root in roots and s.path.parent.name == s.name, s.path
    covered = {a for s in shipped.values() for a in s.apps} | {
        t.split(".")[0] for s in shipped.values() for t in s.tools
    }
    assert {"messages", "calendar", "mail", "settings", "clock", "contacts"} <= covered


def test_shipped_skills_reference_only_real_tools_and_apps(shipped, sandbox_tools):
    for s in shipped.values():
        assert unknown_references(s, sandbox_tools) == [], s.name


def test_shipped_skill_bodies_name_only_real_tools_arguments_and_permissions(shipped):
    tools = dict(SandboxBackend().tools())
    tools[READ_TOOL.spec.name] = READ_TOOL
    known = set(tools) | ENV_TOOLS
    prefixes = {n.split(".")[0] for n in known}
    permissions = {p for cls in APP_CLASSES.values() for p in cls.permissions}
    for s in shipped.values():
        for span in re.findall(r"`([^`\n]+)`", s.body):
            m = re.match(r"([a-z_]+)\.([a-z_]+)(?![.\w])", span)
            if not (m and m.group(1) in prefixes):
                continue
            name = m.group(0)
            assert name in known, f"{s.name}: `{span}` names no tool"
            rest = span[m.end() :].strip()
            if not rest.startswith("{") or name not in tools:
                continue
            params = tools[name].spec.parameters["properties"]
            try:  # a complete call: its top-level keys (nested objects have keys of their own)
                keys = list(json.loads(rest))
            except ValueError:
                keys = re.findall(r'"(\w+)":', rest)
            for key in keys:
                assert key in params, f"{s.name}: `{span}`: {name} has no argument {key!r}"
            if "..." not in rest and "<" not in rest:  # a complete example call must validate
                tools[name].validator.validate(json.loads(rest))
        for perm in re.findall(r"android\.permission\.[A-Z_]+", s.body):
            assert perm in permissions, f"{s.name}: {perm} is declared by no app"


def test_unknown_references_reports_missing_tools_and_apps():
    s = skill("x", tools=["messages.send", "fax.send"], apps=["fax", "clock"])
    assert unknown_references(s, ["messages.send", "clock.now"]) == ["fax.send", "fax"]


# -- what the shipped skills claim, checked against the sandbox ----------------------------------


def _backend(**records) -> SandboxBackend:
    backend = SandboxBackend()
    task = TaskSpec(
        id="skills.claims",
        domain="device",
        goal="check",
        fixtures=Fixtures(
            records={k.replace("__", "."): v for k, v in records.items()},
            accounts={"mail": {"account": "ana@example.com", "signed_in": True}},
        ),
        criteria=[StateCriterion(table="contacts.contacts")],
    )
    backend.reset(task)
    return backend


def _call(backend: SandboxBackend, tool: str, /, **arguments) -> Feedback:
    entry = backend.tools()[tool]
    return backend.call(tool, entry.validator.validate(arguments))


def test_claim_update_event_keeps_the_length():
    ev = {
        "id": "ev_1",
        "title": "Dentist",
        "start": "2026-11-30T10:00",
        "end": "2026-11-30T10:45",
        "location": None,
        "attendees": (),
        "notes": None,
        "all_day": False,
    }
    b = _backend(calendar__events=[ev])
    out = _call(b, "calendar.update_event", event_id="ev_1", start="2026-11-30T12:00")
    assert out.result["end"] == "2026-11-30T12:45"


def test_claim_airplane_mode_side_effects():
    b = _backend()
    on = _call(b, "settings.set_airplane_mode", enabled=True)
    assert {c["key"] for c in on.result["changes"]} >= {"airplane_mode", "wifi"}
    _call(b, "settings.set_airplane_mode", enabled=False)
    assert _call(b, "settings.get", key="wifi").result["value"] is False
    assert _call(b, "settings.set_airplane_mode", enabled=False).result["changed"] is False


def test_claim_alarm_formats_and_same_time():
    b = _backend()
    validator = b.tools()["clock.create_alarm"].validator
    for wrong in ("7:00", "7pm", "24:00"):
        with pytest.raises(ArgumentError):
            validator.validate({"time": wrong})
    first = _call(b, "clock.create_alarm", time="06:45", days=["mon", "tue", "wed", "thu", "fri"])
    again = _call(b, "clock.create_alarm", time="06:45")
    assert again.result["same_time"] == [first.result["id"]]


def test_claim_contacts_duplicate_number_is_a_conflict_with_the_id():
    ana = {
        "id": "c_1",
        "name": "Ana Lima",
        "phone": "+4915111111111",
        "email": None,
        "relation": "sister",
        "favorite": False,
        "birthday": None,
    }
    b = _backend(contacts__contacts=[ana])
    out = _call(b, "contacts.create", name="Ana L", phone="0151-11111111")
    assert out.error is ErrorKind.CONFLICT and out.candidates == ["c_1"]
    assert _call(b, "contacts.search", query="sister").result["contacts"][0]["id"] == "c_1"


def test_claim_mail_read_does_not_mark_read():
    msg = {
        "id": "em_1",
        "folder": "inbox",
        "from": "ben@example.com",
        "to": ("ana@example.com",),
        "subject": "Slides",
        "body": "Send them?",
        "time": "2026-11-29T08:00:00",
        "read": False,
    }
    b = _backend(mail__messages=[msg])
    assert _call(b, "mail.read", message_id="em_1").result["read"] is False
    assert _call(b, "mail.archive", message_id="em_1").ok
    assert _call(b, "mail.archive", message_id="em_1").error is ErrorKind.PRECONDITION_FAILED


def test_claim_timer_takes_seconds():
    b = _backend()
    out = _call(b, "clock.start_timer", duration_seconds=720, label="Eggs")
    assert out.result["remaining_s"] == 720 and out.result["status"] == "running"
