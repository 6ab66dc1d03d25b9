"""Hostile model output through ``PhonePlanEnv.step``: a named corpus of what a model (or a
broken client) can send, the secret leak paths, and the env's behaviour after ``close()``.

For every case: no exception escapes ``step``, the feedback has the expected kind, the trace
serialises and round-trips through ``Trace.model_validate_json``, the observation is in the
observation space, and no fixture secret appears in the trace, the observation, ``info`` or
the logs.
"""

# ruff: noqa: UP031 (JSON text is written with %-formatting: no braces to double)
from __future__ import annotations

import difflib
import json
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from gymnasium.error import ClosedEnvironmentError

from phoneenv.contract import AnswerCriterion, Fixtures, TaskSpec, Trace
from phoneenv.env import MAX_ACTION_CHARS, MAX_ANSWER_CHARS, MAX_QUESTION_CHARS, PhonePlanEnv
from phoneenv.harness.episode_memory import EpisodeMemory
from phoneenv.intake import MAX_KEY_CHARS, MAX_NAME_CHARS, MAX_NESTING, MAX_STRING_CHARS, RAW_KEEP, Masker
from tests.conftest import ANA, BEN

ACCOUNT = "sam@example.com"
PLAIN = "pw-31415926"
"""A secret as the suite's worlds make them."""
ODD = 'pä"ss\\w0rd ✓'
"""A secret that JSON escapes (quote, backslash, non-ASCII): it looks different in JSON text."""
PIN = "482916"
"""A numeric secret: a number equal to it is a leak too."""


def secret_task(secret: str) -> TaskSpec:
    return TaskSpec(
        id="hostile.login",
        domain="email",
        goal="How many emails are in my inbox?",
        fixtures=Fixtures(
            accounts={"mail": {"account": ACCOUNT, "signed_in": False}},
            vault={ACCOUNT: secret},
            records={"contacts.contacts": [ANA, BEN]},
        ),
        criteria=[AnswerCriterion(id="answer", number=0)],
        apps=["mail", "contacts", "messages", "agent"],
    )


def nest(depth: int, leaf: Any = 1) -> Any:
    """``depth`` arrays around ``leaf``."""
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def cyclic() -> dict:
    d: dict = {"name": "contacts.search"}
    d["arguments"] = {"query": d}
    return d


def call(name: str, **arguments: Any) -> dict:
    return {"name": name, "arguments": arguments}


def text(name: str, args_json: str) -> str:
    return '{"name": "%s", "arguments": %s}' % (name, args_json)


@dataclass(frozen=True)
class Case:
    """One hostile action: ``action`` (or a function of the secret making it), the feedback
    error kind it must get (None: ok), steps to take before it, and what the step records."""

    name: str
    action: Any
    kind: str | None
    before: tuple[Any, ...] = ()
    escaped: bool | None = None
    path: str | None = None
    check: Callable[[PhonePlanEnv, dict], None] | None = field(default=None, compare=False)

    def build(self, secret: str) -> tuple[list[Any], Any]:
        def make(a: Any) -> Any:
            return a(secret) if callable(a) else a

        return [make(b) for b in self.before], make(self.action)


DEEP_OK = MAX_NESTING - 2  # the arguments object is level 1, the call level 0: this many arrays fit

# fmt: off
CORPUS: list[Case] = [
    # -- lone surrogates: rejected; raw text holding real surrogate code points is stored escaped
    Case("surrogate_in_name_text", '{"name": "contacts.search\ud800", "arguments": {}}', "invalid_json", escaped=True, path="/name"),
    Case("surrogate_escape_in_name", text("contacts.search\\udfff", "{}"), "invalid_json", escaped=False, path="/name"),
    Case("surrogate_escape_in_value", text("contacts.search", '{"query": "\\ud800"}'), "invalid_json", path="/query"),
    Case("surrogate_char_in_value", text("contacts.search", '{"query": "a\ud800b"}'), "invalid_json", escaped=True),
    Case("low_surrogate_alone", text("contacts.search", '{"query": "\\udc00"}'), "invalid_json"),
    Case("surrogates_reversed", text("contacts.search", '{"query": "\\udc00\\ud800"}'), "invalid_json"),
    Case("surrogate_in_key", text("contacts.search", '{"\\ud83d": "a"}'), "invalid_json"),
    Case("surrogate_in_nested_value", text("messages.send", '{"to": "+1", "body": ["\\ud800"]}'), "invalid_json", path="/body/0"),
    Case("surrogate_in_dict_action_value", call("contacts.search", query="\udc80"), "invalid_json", escaped=False),
    Case("surrogate_in_dict_action_key", {"name": "contacts.search", "arguments": {"\ud800": 1}}, "invalid_json", escaped=False),
    Case("surrogate_in_dict_action_name", call("contacts.\udfffsearch"), "invalid_json", escaped=False),
    Case("surrogate_in_arguments_string", {"name": "contacts.search", "arguments": '{"query": "\\ud800"}'}, "invalid_json"),
    Case("surrogate_bytes", b'{"name": "contacts.search", "arguments": {"query": "\xed\xa0\x80"}}', "invalid_json"),
    Case("valid_surrogate_pair_is_fine", text("contacts.search", '{"query": "\\ud83d\\ude00"}'), None, escaped=False),
    Case("astral_character_is_fine", call("contacts.search", query="\U0001f600 Ana"), None),
    # -- deep nesting: bounded at MAX_NESTING, far below pydantic's 255 and the recursion limit
    Case("nesting_just_fits", call("contacts.search", query=nest(DEEP_OK)), "invalid_arguments", path="/query"),
    Case("nesting_one_too_deep", call("contacts.search", query=nest(DEEP_OK + 1)), "invalid_json"),
    Case("nesting_256_text", text("contacts.search", '{"query": %s}' % json.dumps(nest(256))), "invalid_json"),
    Case("nesting_300_objects_text", text("contacts.search", '{"q": ' + '{"a": ' * 300 + "1" + "}" * 300 + "}"), "invalid_json"),
    Case("nesting_100000_text", "[" * 100_000 + "]" * 100_000, "invalid_json"),
    Case("nesting_5000_dict_action", call("contacts.search", query=nest(5000)), "invalid_json"),
    Case("nesting_in_arguments_string", {"name": "contacts.search", "arguments": json.dumps({"q": nest(300)})}, "invalid_json"),
    Case("nesting_in_finish_value", call("finish", answer="x", value=nest(300)), "invalid_json"),
    Case("cyclic_dict_action", cyclic(), "invalid_json"),
    # -- non-finite numbers: json.loads takes them, JSON does not
    Case("nan_text", text("contacts.search", '{"query": NaN}'), "invalid_json"),
    Case("infinity_text", text("contacts.search", '{"limit": Infinity}'), "invalid_json"),
    Case("minus_infinity_text", text("contacts.search", '{"limit": -Infinity}'), "invalid_json"),
    Case("overflowing_float_text", text("contacts.search", '{"limit": 1e999}'), "invalid_json", path="/limit"),
    Case("negative_overflowing_float_text", text("finish", '{"value": -1e999}'), "invalid_json"),
    Case("nan_dict_action", call("finish", answer="x", value=float("nan")), "invalid_json", path="/value"),
    Case("inf_in_list_dict_action", call("finish", answer="x", value=[1.0, float("inf")]), "invalid_json", path="/value/1"),
    Case("nan_in_arguments_string", {"name": "finish", "arguments": '{"value": NaN}'}, "invalid_json"),
    Case("largest_float_is_fine", call("finish", answer="x", value=1.7976931348623157e308), None),
    # -- huge integers: no tool takes one; recorded as text, marked escaped
    Case("int_2_pow_63", text("finish", '{"answer": "x", "value": %d}' % 2**63), "invalid_arguments", escaped=True, path="/value"),
    Case("int_below_min", call("finish", answer="x", value=-(2**63) - 1), "invalid_arguments", escaped=True),
    Case("int_max_is_fine", call("finish", answer="x", value=2**63 - 1), None, escaped=False),
    Case("int_4000_digits_text", text("finish", '{"value": 1%s}' % ("0" * 3999)), "invalid_arguments", escaped=True),
    Case("int_5000_digits_text", text("finish", '{"value": 1%s}' % ("0" * 4999)), "invalid_json"),
    Case("int_10_pow_5000_dict_action", call("finish", answer="x", value=10**5000), "invalid_arguments", escaped=True),
    Case("huge_int_in_list", call("finish", answer="x", value=[1, 2**64]), "invalid_arguments", path="/value/1"),
    # -- duplicate keys: rejected, never "last wins"
    Case("duplicate_argument", text("contacts.search", '{"query": "a", "query": "b"}'), "invalid_json"),
    Case("duplicate_same_value", text("contacts.search", '{"query": "a", "query": "a"}'), "invalid_json"),
    Case("duplicate_name", '{"name": "contacts.search", "name": "contacts.list", "arguments": {}}', "invalid_json"),
    Case("duplicate_arguments_key", '{"name": "contacts.list", "arguments": {}, "arguments": {}}', "invalid_json"),
    Case("duplicate_nested", text("finish", '{"answer": "x", "value": [{"a": 1, "a": 2}]}'), "invalid_json"),
    Case("duplicate_in_arguments_string", {"name": "contacts.search", "arguments": '{"query": "a", "query": "b"}'}, "invalid_json"),
    Case("duplicate_in_function_wrapper", '{"function": {"name": "contacts.list", "name": "contacts.search"}}', "invalid_json"),
    # -- ambiguity between name and function.name
    Case("name_and_function", {"name": "contacts.list", "function": {"name": "contacts.search", "arguments": {}}}, "invalid_json"),
    Case("same_name_and_function", {"name": "contacts.list", "function": {"name": "contacts.list"}}, "invalid_json"),
    Case("arguments_and_function", {"arguments": {}, "function": {"name": "contacts.list"}}, "invalid_json"),
    Case("function_not_an_object", {"function": "contacts.list"}, "invalid_json"),
    Case("function_null", {"function": None, "name": "contacts.list"}, "invalid_json"),
    Case("openai_wrapper_is_fine", {"id": "c1", "type": "function", "function": {"name": "contacts.list", "arguments": "{}"}}, None),
    Case("streamed_tool_call_is_fine", {"index": 0, "id": "c1", "type": "function", "function": {"name": "contacts.list", "arguments": "{}"}}, None),
    # -- arguments under another key would run the call with none: rejected, naming the key
    Case("parameters_key", {"name": "contacts.search", "parameters": {"query": "Ana"}}, "invalid_json", path="/parameters"),
    Case("args_key_text", '{"name": "calendar.list_events", "args": {"date": "2026-12-01"}}', "invalid_json", path="/args"),
    Case("parameters_in_function", {"function": {"name": "contacts.search", "parameters": {"query": "Ana"}}}, "invalid_json", path="/function/parameters"),
    Case("stray_key", {"name": "contacts.list", "arguments": {}, "thought": "list them"}, "invalid_json", path="/thought"),
    # -- a byte order mark some clients put first is read past
    Case("bom_text_is_fine", "\ufeff" + text("contacts.search", '{"query": "Ana"}'), None),
    Case("bom_bytes_is_fine", b"\xef\xbb\xbf" + text("contacts.search", '{"query": "Ana"}').encode(), None),
    Case("bom_arguments_string_is_fine", {"name": "contacts.search", "arguments": '\ufeff{"query": "Ana"}'}, None),
    # -- lengths: bounded; a 10 MB answer never reaches the trace
    Case("answer_10_mb_dict_action", call("finish", answer="x" * 10_000_000), "invalid_json"),
    Case("answer_10_mb_text", text("finish", json.dumps({"answer": "x" * 10_000_000})), "invalid_json"),
    Case("action_one_char_too_long", "x" * (MAX_ACTION_CHARS + 1), "invalid_json"),
    Case("answer_over_schema_limit", call("finish", answer="a" * (MAX_ANSWER_CHARS + 1)), "invalid_arguments", path="/answer"),
    Case("answer_at_schema_limit", call("finish", answer="a" * MAX_ANSWER_CHARS), None),
    Case("question_over_limit", call("user.confirm", question="q" * (MAX_QUESTION_CHARS + 1)), "invalid_arguments", path="/question"),
    Case("string_over_intake_limit", call("contacts.search", query="a" * (MAX_STRING_CHARS + 1)), "invalid_arguments", path="/query"),
    Case("key_over_limit", call("contacts.search", **{"k" * (MAX_KEY_CHARS + 1): 1}), "invalid_arguments"),
    Case("key_60k_text", text("contacts.search", '{"%s": 1}' % ("k" * 60_000)), "invalid_arguments"),
    Case("key_10_mb_dict_action", call("contacts.search", **{"k" * 10_000_000: 1}), "invalid_json"),
    Case("name_over_limit", call("contacts." + "s" * MAX_NAME_CHARS), "invalid_json"),
    Case("name_10_mb_dict_action", call("x" * 10_000_000), "invalid_json"),
    Case("many_items_dict_action", call("finish", answer="x", value=list(range(100_000))), "invalid_json"),
    # -- types a Python caller can send
    Case("tuple_is_a_list", call("finish", answer="x", value=("a", "b")), None),
    Case("set_value", call("finish", answer="x", value={"a"}), "invalid_json", path="/value"),
    Case("bytes_value", call("contacts.search", query=b"ana"), "invalid_json", path="/query"),
    Case("object_value", call("contacts.search", query=object()), "invalid_json"),
    Case("int_key", {"name": "contacts.search", "arguments": {1: "a"}}, "invalid_json"),
    Case("bool_name", {"name": True, "arguments": {}}, "invalid_json"),
    Case("empty_name", call(""), "invalid_json"),
    Case("arguments_list", {"name": "contacts.search", "arguments": ["a"]}, "invalid_json"),
    Case("arguments_number_string", {"name": "contacts.search", "arguments": "5"}, "invalid_json"),
    Case("top_level_array", "[1, 2]", "invalid_json"),
    Case("top_level_string", '"contacts.list"', "invalid_json"),
    Case("invalid_utf8", b"\xff\xfe\x00", "invalid_json"),
    Case("nul_and_controls_are_fine", call("contacts.search", query="a\x00\x1b[31mb\u202e"), None),
    # -- secrets: every leak path the issue lists, and more (the secret comes from the fixtures)
    Case("secret_sign_in_extra_argument", lambda s: call("system.sign_in", app="mail", account=ACCOUNT, password=s, extra=1), "invalid_arguments"),
    Case("secret_under_another_key", lambda s: call("system.sign_in", app="mail", account=ACCOUNT, pwd=s), "invalid_arguments"),
    Case("secret_misspelled_tool", lambda s: call("system.sign_inn", app="mail", account=ACCOUNT, password=s), "unknown_tool"),
    Case("wrong_guess_misspelled_tool", call("system.signin", app="mail", password="wr0ng-guess"), "unknown_tool",
         check=lambda env, tr: _absent("wr0ng-guess", tr)),
    Case("secret_unparsable_json", lambda s: text("system.sign_in", '{"password": %s' % json.dumps(s)), "invalid_json"),
    Case("secret_arguments_broken_string", lambda s: {"name": "system.sign_in", "arguments": '{"password": %s' % json.dumps(s)}, "invalid_json"),
    Case("secret_arguments_broken_string_text", lambda s: json.dumps({"name": "system.sign_in", "arguments": '{"password": %s' % json.dumps(s)}), "invalid_json"),
    Case("secret_in_frame_lacking_the_tool", lambda s: call("system.sign_in", app="mail", account=ACCOUNT, password=s), "precondition_failed",
         before=(call("agent.delegate", goal="Find Ana's number", tools=["contacts"]),)),
    Case("secret_unknown_in_frame", lambda s: call("system.sign_inn", password=s), "unknown_tool",
         before=(call("agent.delegate", goal="Find Ana's number", tools=["contacts"]),)),
    Case("secret_ui_type_password_field", lambda s: call("ui.type", text=s, into="password"), "unknown_tool"),
    Case("secret_in_finish_answer", lambda s: call("finish", answer=f"your password is {s}"), None),
    Case("secret_as_finish_value", lambda s: call("finish", answer="x", value=s), None),
    Case("secret_in_confirm_question", lambda s: call("user.confirm", question=f"Sign in with {s}?"), None),
    Case("secret_as_key", lambda s: {"name": "contacts.search", "arguments": {s: 1}}, "invalid_arguments"),
    Case("secret_as_tool_name", lambda s: call(s), "unknown_tool"),
    Case("secret_spelled_in_escapes", lambda s: text("system.sign_in", '{"password": "%s"' % "".join(f"\\u{ord(c):04x}" for c in s)), "invalid_json"),
    Case("secret_in_invalid_utf8", lambda s: b'{"password": "' + s.encode() + b'"\xff', "invalid_json"),
    Case("secret_cut_at_the_raw_limit", lambda s: "x" * (RAW_KEEP - 3) + s + "}", "invalid_json"),
    Case("secret_in_overlong_action", lambda s: s + "x" * MAX_ACTION_CHARS, "invalid_json"),
    Case("secret_with_non_json_value", lambda s: call("contacts.search", query=s, o=object()), "invalid_json"),
    Case("secret_duplicate_key", lambda s: text("system.sign_in", '{"password": %s, "password": %s}' % (json.dumps(s), json.dumps(s))), "invalid_json"),
    Case("secret_duplicated_as_key", lambda s: text("contacts.search", '{%s: 1, %s: 2}' % (json.dumps(s), json.dumps(s))), "invalid_json"),
    Case("secret_with_surrogate", lambda s: text("x\ud800", '{"p": %s}' % json.dumps(s)), "invalid_json", escaped=True),
    Case("secret_nested_in_arguments", lambda s: call("contacts.search", query={"deep": [s]}), "invalid_arguments"),
    Case("secret_in_message_body", lambda s: call("messages.send", to=ANA["phone"], body=f"code {s}"), None,
         check=lambda env, tr: _world_clean(env)),
    Case("secret_in_memory", lambda s: call("memory.save", kind="fact", content=f"the password is {s}"), None,
         check=lambda env, tr: _world_clean(env)),
    Case("secret_in_delegated_goal", lambda s: call("agent.delegate", goal=f"Sign in with {s}", tools=["contacts"]), None),
    Case("secret_in_sub_agent_answer", lambda s: call("finish", answer=s), None,
         before=(call("agent.delegate", goal="Find Ana's number", tools=["contacts"]),)),
    Case("secret_over_long_string", lambda s: call("contacts.search", query=s * (MAX_STRING_CHARS // len(s) + 1)), "invalid_arguments"),
    Case("secret_sign_in_works", lambda s: call("system.sign_in", app="mail", account=ACCOUNT, password=s), None,
         check=lambda env, tr: _signed_in(env)),
]
# fmt: on


def _absent(needle: str, trace_json: dict) -> None:
    assert needle not in json.dumps(trace_json, ensure_ascii=False)


def _world_clean(env: PhonePlanEnv) -> None:
    """The masked call is what ran: the world holds no secret either."""
    world = json.dumps({**env.backend.tables(), "memory": env._memory.table()}, default=str, ensure_ascii=False)
    for secret in _secrets(env):
        assert secret not in world
    assert "***" in world


def _signed_in(env: PhonePlanEnv) -> None:
    """The parameter sign_in declares secret gets the real value: the real sign-in works."""
    accounts = env.backend.tables()["system.accounts"]
    assert any(a.get("app") == "mail" and a.get("signed_in") for a in accounts.values())
    step = env.trace.steps[-1]
    assert step.action.arguments["password"] == "***"


def _secrets(env: PhonePlanEnv) -> list[str]:
    return [s.get_secret_value() for s in env.task.fixtures.vault.values()]


def _texts(secret: str) -> list[str]:
    """How a secret can look in text: as it is, JSON-escaped both ways, Python-escaped
    (``ascii()``), and each of those inside JSON text."""
    forms = [secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]]
    forms += [repr(secret)[1:-1], ascii(secret)[1:-1]]
    forms += [json.dumps(f)[1:-1] for f in forms]
    return list(dict.fromkeys(forms))


def assert_no_secret(secret: str, *artifacts: Any) -> None:
    """No form of ``secret`` in any artifact (dumped as JSON, unknown objects as text)."""
    for art in artifacts:
        blob = art if isinstance(art, str) else json.dumps(art, default=repr, ensure_ascii=False)
        for form in _texts(secret):
            assert form not in blob, f"secret found: ...{blob[max(0, blob.find(form) - 60) : blob.find(form) + 60]}..."
        if secret.isdigit():
            assert not any(str(n) == secret for n in _numbers(json.loads(blob) if art is not blob else None))


def _numbers(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def round_trip(env: PhonePlanEnv) -> str:
    """The trace as JSON; it must load back and write the same bytes."""
    dumped = env.trace.model_dump_json()
    again = Trace.model_validate_json(dumped)
    assert again.model_dump_json() == dumped
    return dumped


@pytest.fixture(scope="module")
def envs() -> dict[str, PhonePlanEnv]:
    made = {s: PhonePlanEnv(task=secret_task(s), delegation=True, max_steps=50) for s in (PLAIN, ODD, PIN)}
    yield made
    for env in made.values():
        env.close()


def play(env: PhonePlanEnv, case: Case, secret: str, caplog: pytest.LogCaptureFixture) -> dict[str, Any]:
    caplog.set_level(logging.DEBUG)
    obs, info = env.reset(seed=0)
    before, action = case.build(secret)
    seen: list[Any] = [obs, info]
    for b in before:
        obs, *_, info = env.step(b)
        assert json.loads(obs["feedback"])["ok"], obs["feedback"]
        seen += [obs, info]
    obs, reward, terminated, truncated, info = env.step(action)
    got = json.loads(obs["feedback"])
    assert got.get("error") == case.kind, got
    assert env.observation_space.contains(obs)
    step = env.trace.steps[-1]
    if case.kind is not None:
        assert got["message"] and got["hint"]
    if case.escaped is not None:
        assert step.escaped is case.escaped
    if case.path is not None:
        assert got["path"] == case.path, got
    if step.raw is not None:
        assert len(step.raw) <= RAW_KEEP
    dumped = round_trip(env)
    assert len(dumped) < 4 * MAX_ACTION_CHARS  # bounded whatever was sent
    assert_no_secret(secret, dumped, obs, info, *seen, caplog.text)
    if env.verdict is not None:
        assert_no_secret(secret, env.verdict.model_dump(mode="json"))
    if case.check is not None:
        case.check(env, json.loads(dumped))
    return got


@pytest.mark.parametrize("case", CORPUS, ids=[c.name for c in CORPUS])
def test_hostile_corpus(envs, case, caplog):
    play(envs[PLAIN], case, PLAIN, caplog)


def test_corpus_is_large_and_named():
    names = [c.name for c in CORPUS]
    assert len(names) == len(set(names)) and len(CORPUS) >= 100
    kinds = {c.kind for c in CORPUS}
    assert {"invalid_json", "invalid_arguments", "unknown_tool", "precondition_failed", None} <= kinds


SECRET_CASES = [c for c in CORPUS if c.name.startswith("secret_")]


@pytest.mark.parametrize("secret", [ODD, PIN], ids=["escaped_secret", "numeric_secret"])
@pytest.mark.parametrize("case", SECRET_CASES, ids=[c.name for c in SECRET_CASES])
def test_secret_paths_with_secrets_json_escapes(envs, case, secret, caplog):
    """The leak paths again with a secret that JSON escapes (quote, backslash, non-ASCII) and a
    numeric one (a PIN), which a number can equal."""
    play(envs[secret], case, secret, caplog)


def test_numbers_equal_to_a_pin_are_masked(envs, caplog):
    env = envs[PIN]
    env.reset(seed=0)
    *_, info = env.step(call("finish", answer="done", value=int(PIN)))
    assert env.verdict.answer_value == "***" and info["verdict"]["answer_value"] == "***"
    assert env.trace.steps[-1].action.arguments["value"] == "***"


def test_counts_equal_to_a_pin_keep_their_value_and_never_raise(caplog):
    """A PIN that equals a count of the verdict (tokens, steps): the count stays a number (it is
    not the secret), the step does not raise, and the PIN is still masked where it is text."""
    env = PhonePlanEnv(task=secret_task(PIN), max_steps=5)
    try:
        env.reset(seed=0)
        env.add_agent_tokens({"output": int(PIN)})
        obs, _, terminated, _, info = env.step(call("finish", answer=f"PIN {PIN}", value=0))
        assert terminated and env.verdict.output_tokens == int(PIN)
        assert env.verdict.answer == "PIN ***" and info["verdict"]["output_tokens"] == int(PIN)
        Trace.model_validate_json(env.trace.model_dump_json())
    finally:
        env.close()


def test_a_short_all_digit_secret_is_masked_only_as_a_whole_number():
    m = Masker(["2026"])
    assert m.text("PIN 2026, ok") == "PIN ***, ok"
    assert m.text("call +49 30 120261 or id 20261") == "call +49 30 120261 or id 20261"
    assert m.value({"n": 2026, "m": 20260, "s": "x2026y"}) == {"n": "***", "m": 20260, "s": "x***y"}
    assert Masker(["pw12"]).text("apw123") == "a***3"  # a secret with letters: everywhere
    assert Masker([PIN]).text(f"1{PIN}{PIN}9") == "1******9"  # six digits and more: everywhere


def test_a_vault_password_too_short_to_mask_safely_is_refused():
    from phoneenv.contract import MIN_SECRET_CHARS

    with pytest.raises(ValueError, match="fewer than 4 characters"):
        Fixtures(vault={ACCOUNT: "1" * (MIN_SECRET_CHARS - 1)})
    Fixtures(vault={ACCOUNT: "1" * MIN_SECRET_CHARS})


def test_a_secret_in_the_goal_is_masked_in_the_trace_and_frames():
    task = secret_task(PLAIN).model_copy(update={"goal": f"My mail password is {PLAIN}; how many emails?"})
    env = PhonePlanEnv(task=task, max_steps=5)
    try:
        obs, _ = env.reset(seed=0)
        env.step(call("finish", answer="0", value=0))
        dumped = env.trace.model_dump_json()
        assert PLAIN not in dumped and PLAIN not in obs["goal"]
        assert env.trace.goal == "My mail password is ***; how many emails?"
    finally:
        env.close()


def test_a_secret_cut_at_the_raw_limit_leaves_no_prefix(envs):
    env = envs[PLAIN]
    env.reset(seed=0)
    for cut in range(1, len(PLAIN)):
        env.step("x" * (RAW_KEEP - cut) + PLAIN + "}")
        raw = env.trace.steps[-1].raw
        assert not any(raw.endswith(PLAIN[:n]) for n in range(2, len(PLAIN))), raw


def test_world_feedback_that_json_cannot_carry_is_escaped_and_marked(envs, monkeypatch):
    """A backend (an LLM simulator, a device) answering with lone surrogates, 300-deep nesting,
    NaN, objects, or the secret: the step is stored escaped and masked, never unwritable."""
    from phoneenv.contract import Feedback

    env = envs[PLAIN]
    env.reset(seed=0)
    results = [
        {"name": "Ana\ud800", "deep": nest(300), "nan": float("nan"), "obj": object(), 3: "int key"},
        {"note": f"the wifi password is {PLAIN}"},
        ["\udc00"] * 3,
    ]
    for result in results:
        monkeypatch.setattr(env.backend, "call", lambda name, args, r=result: Feedback(ok=True, result=r))
        obs, *_ = env.step(call("contacts.list"))
        assert env.observation_space.contains(obs)
        assert_no_secret(PLAIN, obs)
    steps = env.trace.steps
    assert [s.escaped for s in steps] == [True, False, True]
    assert steps[0].feedback.result["name"] == "Ana\\ud800"
    assert "not kept" in json.dumps(steps[0].feedback.result["deep"])
    assert steps[1].feedback.result == {"note": "the wifi password is ***"}
    assert_no_secret(PLAIN, round_trip(env))


def test_verdict_quoting_a_secret_is_masked(caplog):
    """A criterion whose reason would quote the secret: the verdict is masked too."""
    task = secret_task(PLAIN).model_copy(
        update={"criteria": [AnswerCriterion(id="a", equals=f"the password is {PLAIN}")]}
    )
    env = PhonePlanEnv(task=task)
    env.reset(seed=0)
    *_, info = env.step(call("finish", answer="no idea"))
    assert_no_secret(PLAIN, info, env.verdict.model_dump(mode="json"), round_trip(env))


def test_no_huge_name_reaches_difflib(envs, monkeypatch):
    """Suggestions compare at most 128 characters of a name, whatever the agent sent."""
    seen: list[int] = []
    real = difflib.get_close_matches

    def spy(word, possibilities, *args, **kwargs):
        seen.append(len(word))
        return real(word, possibilities, *args, **kwargs)

    monkeypatch.setattr(difflib, "get_close_matches", spy)
    env = envs[PLAIN]
    env.reset(seed=0)
    for action in (
        text("contacts.search", '{"query": "a", "%s": 1}' % ("k" * 60_000)),
        call("contacts.search", query="a", **{"q" * 60_000: 1}),
        call("contacts.search", query="a", **{"k" * MAX_KEY_CHARS: 1}),
        call("contacts.serch" + "h" * (MAX_NAME_CHARS - 14)),
    ):
        obs, *_ = env.step(action)
        assert json.loads(obs["feedback"])["error"] in ("invalid_arguments", "unknown_tool")
    assert seen and max(seen) <= MAX_KEY_CHARS
    env.reset(seed=0)
    obs, *_ = env.step(call("contacts.search", query="a", **{"k" * MAX_KEY_CHARS: 1}))
    assert json.loads(obs["feedback"])["candidates"][0] == "query"


def test_masker_forms():
    m = Masker([ODD, PLAIN], keys=["password"])
    assert m.text(f"a {PLAIN} b") == "a *** b"
    assert m.text(json.dumps({"x": ODD})) == '{"x": "***"}'
    assert m.text(json.dumps({"x": ODD}, ensure_ascii=False)) == '{"x": "***"}'
    assert m.text('{"password": "guess", "y": 1}') == '{"password": "***", "y": 1}'
    assert m.value({"password": "guess", "k": [PLAIN, 1], ODD: None}) == {
        "password": "***",
        "k": ["***", 1],
        "***": None,
    }
    assert not Masker() and Masker().text(PLAIN) == PLAIN


# -- the secrets of every task of the suite ------------------------------------------------------


def leak_paths(secret: str, account: str) -> list[Any]:
    """Every leak path, as one episode's actions (the frame is opened and closed in the middle)."""
    return [
        call("system.sign_in", app="mail", account=account, password=secret, extra=1),
        call("system.sign_in", app="mail", account=account, pwd=secret),
        call("system.sign_inn", app="mail", account=account, password=secret),
        text("system.sign_in", '{"password": %s' % json.dumps(secret)),
        {"name": "system.sign_in", "arguments": '{"password": %s' % json.dumps(secret)},
        call("agent.delegate", goal="Look something up", tools=["finish"]),
        call("system.sign_in", app="mail", account=account, password=secret),
        call("finish", answer=f"sub-agent says {secret}"),
        call("ui.type", text=secret, into="password"),
        call("user.confirm", question=f"Use {secret}?"),
        {"name": "contacts.search", "arguments": {secret: 1}},
        call(secret),
        text("system.sign_in", '{"password": "%s"' % "".join(f"\\u{ord(c):04x}" for c in secret)),
        b'{"password": "' + secret.encode() + b'"\xff',
        "x" * (RAW_KEEP - 4) + secret,
        call("memory.save", kind="fact", content=f"password {secret}"),
        call("system.sign_in", app="mail", account=account, password=secret),
        call("finish", answer=f"the password is {secret}", value=secret),
    ]


@pytest.mark.slow
def test_no_fixture_secret_of_any_suite_task_leaks(caplog):
    """For every task of the suite with fixture secrets, every leak path: no secret in the trace
    JSON, any observation, any info dict, the verdict, or the captured logs."""
    from phoneenv.tasks import select

    caplog.set_level(logging.DEBUG)
    tasks = [t for t in select("all") if t.fixtures.vault]
    assert len(tasks) > 500
    envs = {}
    checked = 0
    for task in tasks:
        backend = task.backends[0]
        if backend not in envs:
            envs[backend] = PhonePlanEnv(tasks=[task], backend=backend, delegation=True, max_steps=100)
        env = envs[backend]
        account, vault_secret = next(iter(task.fixtures.vault.items()))
        secret = vault_secret.get_secret_value()
        obs, info = env.reset(seed=0, options={"task": task})
        seen: list[Any] = [obs, info]
        for action in leak_paths(secret, account):
            obs, _, terminated, truncated, info = env.step(action)
            seen += [obs, info]
        assert terminated, task.id
        assert_no_secret(secret, round_trip(env), env.verdict.model_dump(mode="json"), *seen)
        checked += 1
    assert_no_secret("pw-", caplog.text)  # the suite's vault passwords all start so
    assert checked == len(tasks)
    for env in envs.values():
        env.close()


# -- close() ---------------------------------------------------------------------------------------


def test_reset_and_step_after_close_always_raise_the_same_error():
    """close() is final: reset and step raise ClosedEnvironmentError, every time, whatever task
    the pool would draw (memory tasks, whose SQLite connection is closed, included)."""
    env = PhonePlanEnv(tasks="domain:time")
    rng = random.Random(3)
    for i in range(60):
        env.reset(seed=i)
        env.step(call("clock.now"))
        if rng.random() < 0.5:
            env.step(call("memory.save", kind="fact", content=f"fact {i}"))
        env.close()
        env.close()  # idempotent
        for _ in range(3):
            with pytest.raises(ClosedEnvironmentError, match="closed"):
                env.reset(seed=i)
            with pytest.raises(ClosedEnvironmentError, match="closed"):
                env.step(call("clock.now"))
            with pytest.raises(ClosedEnvironmentError):
                env.step("garbage")
        round_trip(env)  # what was recorded stays readable
        env = PhonePlanEnv(tasks="domain:time")


def test_memory_tasks_after_close_raise_never_sqlite_errors():
    """The flake of the issue: a reset after close() that reached the closed SQLite store."""
    from phoneenv.tasks import select

    memory_tasks = [t for t in select("category:memory") if t.fixtures.memory][:22]
    assert memory_tasks
    for task in memory_tasks:
        env = PhonePlanEnv(task=task)
        env.reset(seed=0)
        env.close()
        with pytest.raises(ClosedEnvironmentError):
            env.reset(seed=0)


def test_a_closed_episode_memory_reopens_in_a_new_env(tmp_path):
    """An EpisodeMemory handed to a second env after the first closed it opens a new connection
    (a file keeps its rows; an in-memory store is seeded again)."""
    from phoneenv.tasks import select

    task = next(t for t in select("category:memory") if t.fixtures.memory)
    mem = EpisodeMemory()
    for _ in range(5):
        env = PhonePlanEnv(task=task, memory=mem)
        env.reset(seed=0)
        assert len(env._memory.table()) == len(task.fixtures.memory)
        env.close()
    path = tmp_path / "m.sqlite"
    persistent = EpisodeMemory(path, user="sam")
    env = PhonePlanEnv(task=task, memory=persistent)
    env.reset(seed=0)
    env.step(call("memory.save", kind="fact", content="the boat is blue"))
    env.close()
    env = PhonePlanEnv(task=task, memory=persistent)
    env.reset(seed=0)
    assert any(r["content"] == "the boat is blue" for r in env._memory.table().values())
    env.close()


class CorpusAgent:
    """Plays every corpus action (its ``before`` steps first), built with each task's own vault
    password, across as many episodes as it takes (a case that ends an episode, such as a
    ``finish``, leaves the rest for the next), then the reference plan."""

    name = "corpus"
    played = 0

    def __init__(self, seed: int = 0) -> None:
        from agents import ReferenceAgent

        self.ref = ReferenceAgent()
        self.left = [(c, i) for c in CORPUS for i in range(len(c.before) + 1)]

    def reset(self, observation, info):
        from phoneenv.tasks import get_task

        self.ref.reset(observation, info)
        (self.secret,) = [s.get_secret_value() for s in get_task(info["task_id"]).fixtures.vault.values()]

    def act(self, observation, info):
        from agents.base import AgentAction

        if not self.left:
            return self.ref.act(observation, info)
        case, i = self.left.pop(0)
        CorpusAgent.played += 1
        before, action = case.build(self.secret)
        return AgentAction([*before, action][i])


def test_the_corpus_through_eval_keeps_every_episode_and_no_secret(tmp_path, monkeypatch, caplog):
    """The corpus through ``phoneenv eval``: the run ends normally, ``results.jsonl`` holds every
    episode (none an infrastructure error: hostile input is the agent's), every trace loads back
    as a :class:`Trace`, and no form of any task's password is in any file or the output."""
    from typer.testing import CliRunner

    import agents as agents_pkg
    from phoneenv import cli
    from phoneenv.tasks import select

    monkeypatch.setattr(agents_pkg, "AGENTS", {**agents_pkg.AGENTS, "corpus": CorpusAgent})
    caplog.set_level(logging.DEBUG)
    tasks = select("mail.*")[:8]
    CorpusAgent.played = 0
    out = tmp_path / "run"
    args = ["eval", "--agent", "corpus", "--tasks", ",".join(t.id for t in tasks), "--max-steps", "120"]
    res = CliRunner().invoke(cli.app, [*args, "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert CorpusAgent.played == sum(len(c.before) + 1 for c in CORPUS)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["task_id"] for r in rows] == [t.id for t in tasks]
    assert not any(r["infrastructure_error"] for r in rows)
    assert sum(r["steps"] for r in rows) >= CorpusAgent.played
    blobs = [res.output, caplog.text]
    for path in sorted(out.rglob("*")):
        if path.is_file():
            blobs.append(path.read_text(encoding="utf-8"))
    for row in rows:
        Trace.model_validate_json(Path(row["trace_path"]).read_text(encoding="utf-8"))
    for task in tasks:
        for secret in task.fixtures.vault.values():
            for blob in blobs:
                for form in _texts(secret.get_secret_value()):
                    assert form not in blob
