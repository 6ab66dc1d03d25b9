"""The intake's fast reading of plain JSON text (``phoneenv.intake._read_plain``) and the masker's
compiled patterns give the same answers as the full reading and the per-form checks they stand
in for: on crafted edge cases (duplicate keys hidden by colons in strings, bounds at their
limit, trailing text) and on thousands of random plain actions."""

# ruff: noqa: UP031 (JSON text is written with %-formatting: no braces to double)
from __future__ import annotations

import json
import random

import pytest

from phoneenv import intake
from phoneenv.intake import MAX_KEY_CHARS, MAX_NAME_CHARS, MAX_NESTING, MAX_STRING_CHARS, Masker

SECRET = "pw-31415926"
MASKERS = [Masker(), Masker([SECRET], ["password"]), Masker(["4829"], ["pin"]), Masker(keys=["password"])]


def _fields(got: intake.Intake) -> tuple:
    """``got`` as comparable values (an exception compares by identity)."""
    err = got.argument_error
    return (*got._replace(argument_error=None), err and (err.message, err.path, err.expected))


def same(text: str, masker: Masker) -> intake.Intake:
    """``read_action(text)`` equals the full reading's answer; returns it."""
    got = intake.read_action(text, masker)
    assert _fields(got) == _fields(intake._read_full(text, masker)), text[:200]
    return got


def call(args: str, name: str = "contacts.search", extra: str = "") -> str:
    return '{"name": "%s", "arguments": %s%s}' % (name, args, extra)


EDGES = [
    call('{"query": "a"}'),
    call('{"query": "a", "query": "b"}'),  # a duplicate
    call('{"query": "10:30", "query": "b"}'),  # a duplicate hidden by a colon in a string
    call('{"query": ":", "limit": 1}'),
    call('{"q": {"a": 1, "a": 2}}'),  # a duplicate in a nested object
    call('{"q": {"a": 1}, "q2": {"a": 2}}'),
    '{"name": "contacts.search", "name": "contacts.list", "arguments": {}}',
    '{"name": "contacts.list", "arguments": {}, "arguments": {}}',
    '{"name": "contacts.list", "arguments": {}, "id": {"a": 1, "a": 2}}',
    '{"name": "contacts.list"}',
    '{"name": "contacts.list", "arguments": null}',
    '{"name": "contacts.list", "arguments": "{}"}',
    '{"name": "contacts.list", "arguments": []}',
    '{"name": "contacts.list", "arguments": {}, "type": "function", "id": "c1", "index": 0}',
    '{"name": "contacts.list", "arguments": {}, "parameters": {}}',
    '{"function": {"name": "contacts.list", "arguments": {}}}',
    '{"name": "", "arguments": {}}',
    '{"name": 5, "arguments": {}}',
    '{"name": "%s", "arguments": {}}' % ("s" * MAX_NAME_CHARS),
    '{"name": "%s", "arguments": {}}' % ("s" * (MAX_NAME_CHARS + 1)),
    call('{"%s": 1}' % ("k" * MAX_KEY_CHARS)),
    call('{"%s": 1}' % ("k" * (MAX_KEY_CHARS + 1))),
    call('{"%s" : 1}' % ("k" * (MAX_KEY_CHARS + 1))),
    call('{"a": {"%s": 1}}' % ("k" * (MAX_KEY_CHARS + 1))),
    call('{"query": "%s"}' % ("q" * (MAX_STRING_CHARS - 60))),
    call('{"query": "%s"}' % ("q" * (MAX_STRING_CHARS + 1))),
    call('{"query": %s}' % ("[" * (MAX_NESTING - 2) + "1" + "]" * (MAX_NESTING - 2))),
    call('{"query": %s}' % ("[" * (MAX_NESTING - 1) + "1" + "]" * (MAX_NESTING - 1))),
    call('{"query": %s}' % ("[" * MAX_NESTING + "1" + "]" * MAX_NESTING)),
    call('{"limit": %d}' % (2**63 - 1)),
    call('{"limit": %d}' % 2**63),
    call('{"limit": %d}' % -(2**63)),
    call('{"limit": %d}' % (-(2**63) - 1)),
    call('{"limit": 1%s}' % ("0" * 3999)),
    call('{"limit": 1e999}'),
    call('{"limit": -1E400}'),
    call('{"limit": 1e308}'),
    call('{"limit": %s.5}' % ("9" * 400)),
    call('{"limit": 1.5, "offset": -0, "x": true, "y": false, "z": null}'),
    call('{"limit": NaN}'),
    call('{"limit": Infinity}'),
    call('{"limit": -Infinity}'),
    call('{"query": "a"}') + "  \n\t\r",
    call('{"query": "a"}') + "\x0b",
    call('{"query": "a"}') + "\x1c",
    call('{"query": "a"}') + " x",
    call('{"query": "a"}') + "{}",
    "  " + call('{"query": "a"}'),
    call('{"query": "a\x01b"}'),  # a control character: not JSON
    call('{"query": "a"'),
    "",
    "[]",
    '"contacts.list"',
    "null",
    call('{"password": "%s"}' % SECRET, name="system.sign_in"),
    call('{"query": "my %s"}' % SECRET),
    call('{"%s": 1}' % SECRET),
    call("{}", name=SECRET),
    call('{"query": "4829"}'),
    call('{"query": "14829"}'),
    call('{"limit": 4829}'),
    call('{"pin": 1234, "password": null}'),
]


@pytest.mark.parametrize("masker", MASKERS, ids=["none", "secret", "pin", "keys"])
def test_edges_read_as_in_full(masker):
    for text in EDGES:
        same(text, masker)


def test_the_fast_reading_takes_plain_calls_and_refuses_the_rest():
    """The fast reading answers for the plain calls (else it saves nothing) and leaves every
    case with something to report to the full reading."""
    masker = MASKERS[1]
    assert intake._read_plain(EDGES[0], masker) is not None
    assert intake._read_plain(call('{"query": ":", "limit": 1}'), masker) is not None
    for text in (EDGES[1], EDGES[2], EDGES[4], call('{"limit": 1e999}'), call('{"limit": %d}' % 2**63)):
        assert intake._read_plain(text, masker) is None, text
        assert intake._read_full(text, masker).error is not None or intake._read_full(text, masker).argument_error


def _value(rng: random.Random, depth: int) -> object:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice(["", "a", "10:30", ":", "{", "[", "]", "}", ",", SECRET, "4829", "x" * rng.randrange(200)])
    if kind == 1:
        return rng.choice([0, 1, -1, 4829, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**18, 10**19])
    if kind == 2:
        return rng.choice([0.5, -2.25, 1e308, 1e-300, 123456.0])
    if kind == 3:
        return rng.choice([True, False, None])
    if kind in (4, 5):
        return rng.choice(["ana", "password", "pin", "k" * rng.choice([1, MAX_KEY_CHARS, MAX_KEY_CHARS + 1])])
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {str(_value(rng, depth + 1))[:200]: _value(rng, depth + 1) for _ in range(rng.randrange(4))}


def _text(rng: random.Random) -> str:
    args = {str(_value(rng, 1))[:300]: _value(rng, 1) for _ in range(rng.randrange(5))}
    text = json.dumps({"name": rng.choice(["contacts.search", "finish", SECRET, "x" * 129]), "arguments": args})
    edit = rng.randrange(6)
    if edit == 0 and args:  # repeat a key of the arguments
        key = json.dumps(next(iter(args)))
        text = text[:-2] + ", %s: 1}}" % key
    elif edit == 1:
        text = text.replace(": ", " : ", rng.randrange(1, 4))
    elif edit == 2:
        text = text + rng.choice([" ", "\n", "\x0c", "x", "}"])
    elif edit == 3:
        text = text.replace("1e+308", "1e999").replace("Infinity", "NaN")
    return text


def test_random_plain_actions_read_as_in_full():
    rng = random.Random(36)
    fast = 0
    for i in range(6000):
        text = _text(rng)
        if not (text.isascii() and "\\" not in text):
            continue
        masker = MASKERS[i % len(MASKERS)]
        same(text, masker)
        fast += intake._read_plain(text, masker) is not None
    assert fast > 1000  # the fast reading answered for many of them


def _hits_by_form(masker: Masker, text: str) -> bool:
    """What :meth:`Masker.hits` answered before it was one compiled pattern."""
    return any(f in text and (f not in masker._digits or masker._digits[f].search(text)) for f in masker._forms)


def test_the_compiled_patterns_answer_as_the_form_by_form_checks():
    secrets = ["pw-31415926", 'pä"ss\\w0rd ✓', "482916", "4829", "a.b*c", "x|y"]
    masker = Masker(secrets, ["password", "pin"])
    rng = random.Random(7)
    pieces = [*secrets, *(json.dumps(s)[1:-1] for s in secrets), "1", "9", "a", '"password"', '"pin"', "password", " "]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(4)))
        assert masker.hits(text) == _hits_by_form(masker, text), text
        keys = any(f'"{k}"' in text for k in masker.keys)
        assert masker.raw_hits(text) == (_hits_by_form(masker, text) or keys), text
        assert masker._str(text) == masker._replace_forms(text), text
    assert not Masker().hits("anything") and not Masker().raw_hits('"password"')
    assert Masker(keys=["password"]).json_text_hits('{"password": 1}')
    assert not Masker(keys=["password"]).json_text_hits('{"pass": 1}')
