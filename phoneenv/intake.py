"""The step's intake: what the agent sends becomes a tool call the env can run and a record it
can always write, with every fixture secret masked before anything is recorded.

:func:`read_action` is the one pass every action goes through (:meth:`PhonePlanEnv.step
<phoneenv.env.PhonePlanEnv.step>` calls it first); :func:`seal` is the one pass every feedback
goes through before it is recorded or shown. Both take the episode's :class:`Masker`.

What is rejected, and as what (the limits are the constants below):

- ``invalid_json``, the action is not a readable tool call: not JSON text (or UTF-8 bytes of
  it) or a dict; not an object; no non-empty string ``name``; longer than
  :data:`MAX_ACTION_CHARS` (text, or a dict's size as JSON); ``NaN``, ``Infinity``,
  ``-Infinity`` or a float that is not finite (``1e999``); a duplicate key in any object; a
  lone UTF-16 surrogate in the name, a key or a string; nesting deeper than
  :data:`MAX_NESTING`; in a dict action, a value of a non-JSON type or a non-string key (a
  tuple is read as a list); both a top-level ``name``/``arguments`` and ``function``
  (ambiguous: which call is meant?), or a ``function`` that is not an object; a key other than
  ``name``, ``arguments``, ``function``, ``id``, ``type``, ``index`` (``parameters`` would run
  the call with no arguments); a name longer
  than :data:`MAX_NAME_CHARS`. The feedback's ``path`` points at the value when it is known.
- ``invalid_arguments`` of the tool (reported once the tool is known, with ``path``): a string
  longer than :data:`MAX_STRING_CHARS`, a key longer than :data:`MAX_KEY_CHARS`, an integer
  outside ``[-2**63, 2**63 - 1]`` (no tool can take one; it is recorded as its decimal text,
  and the step marked escaped).

Most actions are plain JSON text (ASCII, no backslash) that break none of these rules: such text
is decoded by the C scanner and checked in a few scans of the text (brackets counted, colons
against keys, long keys and big numbers looked for), without the walk over every value; any
doubt sends it to the full reading, which says what is wrong. The masker looks for every form of
every secret with one compiled pattern.

The JSON Schema of each tool bounds its own arguments further (the ``finish`` answer, for
one, to :data:`phoneenv.env.MAX_ANSWER_CHARS`).

What is not rejected but cannot be stored faithfully is stored escaped and marked
(:attr:`~phoneenv.contract.Step.escaped`): the raw text of a rejected action that holds lone
surrogates (backslash-escaped), and a feedback the world produced that JSON cannot carry (lone
surrogates escaped, nesting past :data:`MAX_FEEDBACK_NESTING` cut, values of other types
written as text).

Secrets: a :class:`Masker` holds the episode's fixture secrets (every ``SecretStr`` of the
task's :class:`~phoneenv.contract.Fixtures`: the vault's passwords) and the names of the
episode's secret parameters (``password``). It replaces every occurrence of a secret — in the
raw text (also JSON-escaped), in the name, in keys, in values, a number equal to one — and
every value under a secret parameter's name by ``***``. The masked call is what runs and what
is recorded: only a parameter its tool declares secret
(:attr:`~phoneenv.contract.ToolSpec.secret_parameters`) gets the real value, and is recorded
as ``***``. So a secret never reaches a trace, a feedback, a log, the world's state or the
verdict through any argument but that one.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel, SecretStr, ValidationError

from phoneenv.contract import Feedback, Fixtures
from phoneenv.harness import feedback
from phoneenv.tools import ArgumentError

ModelT = TypeVar("ModelT", bound=BaseModel)

__all__ = [
    "MASK",
    "MAX_ACTION_CHARS",
    "MAX_FEEDBACK_NESTING",
    "MAX_KEY_CHARS",
    "MAX_NAME_CHARS",
    "MAX_NESTING",
    "MAX_STRING_CHARS",
    "RAW_KEEP",
    "Intake",
    "Masker",
    "feedback_json",
    "fixture_secrets",
    "masker_for",
    "read_action",
    "seal",
]

MAX_ACTION_CHARS = 65_536
"""Longest action: characters of its text, or of a dict action's JSON (estimated while it is
read). Longer ones are rejected as ``invalid_json`` unread, so no step records more than about
this much of what the agent sent."""
MAX_NESTING = 32
"""Deepest nesting of objects and arrays in an action's arguments (the arguments object is
level 1; tools need a handful). Deeper is ``invalid_json``, long before Python's recursion
limit or pydantic's serialiser (which refuses 255 levels) is reached."""
MAX_STRING_CHARS = 32_768
"""Longest string in an action's arguments (above every tool schema's own bound, such as a mail
body's 20,000); longer is ``invalid_arguments``."""
MAX_KEY_CHARS = 128
"""Longest key in an action's arguments; longer is ``invalid_arguments``, and no longer key ever
reaches the nearest-name suggestions (difflib)."""
MAX_NAME_CHARS = 128
"""Longest tool name; longer is ``invalid_json``."""
MAX_FEEDBACK_NESTING = 128
"""Deepest nesting kept when a feedback the world produced has to be escaped (see :func:`seal`);
deeper parts are replaced by a marker string."""
RAW_KEEP = 200
"""Characters of a rejected action's text kept in :attr:`~phoneenv.contract.Step.raw`."""
MASK = "***"
"""What a secret is replaced by."""

_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[\"\\/bfnrt])")
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


_LEAVES = frozenset({int, float, bool, type(None)})


@functools.lru_cache(maxsize=256)
def _secret_fields(model: type[BaseModel]) -> tuple[tuple[str, bool], ...]:
    """``model``'s fields, each with whether its annotation holds ``SecretStr``."""
    return tuple((name, "SecretStr" in str(info.annotation)) for name, info in model.model_fields.items())


def fixture_secrets(fixtures: Fixtures) -> tuple[str, ...]:
    """Every secret of ``fixtures``: the value of every ``SecretStr`` in them, at any depth
    (today the vault's passwords), and every plain string held where a field is declared
    ``SecretStr`` (a model copied without validation keeps them so); non-empty, longest first."""
    found: set[str] = set()

    def walk(value: Any, secret: bool) -> None:
        kind = type(value)
        if kind in _LEAVES:  # most of a fixture: the records' numbers and flags
            return
        if kind is str:
            if secret:
                found.add(value)
        elif kind is dict:
            for v in value.values():
                walk(v, secret)
        elif kind is list:
            for v in value:
                walk(v, secret)
        elif isinstance(value, SecretStr):
            found.add(value.get_secret_value())
        elif isinstance(value, str):
            if secret:
                found.add(value)
        elif isinstance(value, Mapping):
            for v in value.values():
                walk(v, secret)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v, secret)
        elif hasattr(value, "__pydantic_fields__"):
            for name, declared in _secret_fields(type(value)):
                walk(getattr(value, name), secret or declared)

    walk(fixtures, False)
    return tuple(sorted((s for s in found if s), key=lambda s: (-len(s), s)))


_MASKERS_KEPT = 4096
"""Fixtures whose secrets :func:`masker_for` keeps (about one per task of the suite)."""
_secrets_of: dict[int, tuple[Fixtures, tuple[str, ...]]] = {}
_maskers: dict[tuple[tuple[str, ...], frozenset[str]], Masker] = {}


def masker_for(fixtures: Fixtures, keys: frozenset[str]) -> Masker:
    """``Masker(fixture_secrets(fixtures), keys)``, kept per process: every env of a process
    shares the secrets found in a task's fixtures (the object, kept alive) and one masker per
    (secrets, keys), so a reset to a task seen before neither walks its fixtures nor compiles a
    pattern. Fixtures changed in place after their first reset keep the secrets found then (a
    task's fixtures are read-only once loaded). Raises nothing."""
    hit = _secrets_of.get(id(fixtures))
    if hit is None or hit[0] is not fixtures:
        if len(_secrets_of) >= _MASKERS_KEPT:
            _secrets_of.clear()
        hit = _secrets_of[id(fixtures)] = (fixtures, fixture_secrets(fixtures))
    key = (hit[1], keys)
    masker = _maskers.get(key)
    if masker is None:
        if len(_maskers) >= _MASKERS_KEPT:
            _maskers.clear()
        masker = _maskers[key] = Masker(*key)
    return masker


class Masker:
    """Replaces an episode's secrets by :data:`MASK` in text and in JSON values.

    Args:
        secrets: the secret strings (fixture secrets, see :func:`fixture_secrets`).
        keys: names whose values are secret wherever they appear as a key (the episode's secret
            parameters, e.g. ``password``).

    A masker with neither is falsy and returns what it is given unchanged.
    """

    def __init__(self, secrets: Iterable[str] = (), keys: Iterable[str] = ()) -> None:
        self.secrets: tuple[str, ...] = tuple(sorted({s for s in secrets if s}, key=lambda s: (-len(s), s)))
        self.keys: frozenset[str] = frozenset(keys)
        forms: dict[str, None] = {}
        for s in self.secrets:  # as it is, JSON-escaped both ways, Python-escaped (a dict's str())
            for form in (
                s,
                json.dumps(s)[1:-1],
                json.dumps(s, ensure_ascii=False)[1:-1],
                repr(s)[1:-1],
                ascii(s)[1:-1],
            ):
                forms[form] = None
        self._forms = tuple(sorted(forms, key=lambda f: (-len(f), f)))
        # A short all-digit secret (a 4- or 5-digit PIN) is masked only where it is a whole
        # number, not inside a longer run of digits (an id, a phone number, a year's digits are
        # too likely to hold it by chance); longer ones are masked everywhere, as other secrets.
        self._digits = {
            f: re.compile(rf"(?<!\d){re.escape(f)}(?!\d)") for f in self._forms if f.isdigit() and len(f) < 6
        }
        # A secret of printable ASCII without quote or backslash looks the same in any JSON text.
        self._plain = all(s.isascii() and s.isprintable() and '"' not in s and "\\" not in s for s in self.secrets)
        self._key_value = (
            re.compile(
                r'("(?:%s)"\s*:\s*")((?:[^"\\]|\\.)*)' % "|".join(re.escape(k) for k in sorted(self.keys))  # noqa: UP031
            )
            if self.keys
            else None
        )
        # One finder per question, over every form (and key) at once (see _Finder).
        forms = [(f, f in self._digits) for f in self._forms]
        keys = [(f'"{k}"', False) for k in sorted(self.keys)]
        self._hit = _Finder(forms)
        self._any_form = _Finder([(f, False) for f in self._forms])
        self._key_hit = _Finder(keys)
        self._raw_hit = _Finder(forms + keys)

    def __bool__(self) -> bool:
        return bool(self.secrets or self.keys)

    def hits(self, text: str) -> bool:
        """Whether ``text`` holds a secret, literally, JSON-escaped or Python-escaped (a short
        all-digit secret only as a whole number)."""
        return self._hit.found(text)

    def text(self, text: str) -> str:
        """``text`` with every secret (literal, JSON- or Python-escaped, also when the text
        spells its characters as ``\\uXXXX`` escapes) and every JSON string value under a
        secret key (``"password": "..."``) replaced by :data:`MASK`."""
        if not self:
            return text
        text = self._replace_forms(text)
        if self.secrets and "\\" in text:
            decoded = _JSON_ESCAPE.sub(_unescape, text)
            if decoded != text and any(s in decoded for s in self.secrets):
                text = self._replace_forms(decoded)  # a secret spelled in escapes: keep the decoded text
        if self._key_value is not None:
            text = self._key_value.sub(lambda m: m.group(1) + MASK, text)
        return text

    def _replace_forms(self, text: str) -> str:
        for form in self._forms:
            if form in text:
                digits = self._digits.get(form)
                text = text.replace(form, MASK) if digits is None else digits.sub(MASK, text)
        return text

    def value(self, value: Any) -> Any:
        """A copy of the JSON ``value`` with secrets masked in every string and key, a number
        equal to a secret replaced by :data:`MASK`, and every value under a secret key replaced
        by :data:`MASK` (None stays None). Returns ``value`` itself when nothing changes."""
        if not self:
            return value
        return self._value(value)

    def _value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._str(value)
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            changed = False
            for k, v in value.items():
                mk = self._str(k) if isinstance(k, str) else k
                mv = MASK if (k in self.keys and v is not None) else self._value(v)
                changed = changed or mk is not k or mv is not v
                out[mk] = mv
            return out if changed else value
        if isinstance(value, list):
            items = [self._value(v) for v in value]
            return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        if isinstance(value, (int, float)) and not isinstance(value, bool) and self.secrets:
            return MASK if _number_text(value) in self.secrets else value
        return value

    def _str(self, text: str) -> str:
        if self._any_form.found(text):
            return self._replace_forms(text)
        return text

    def model(self, model: ModelT) -> ModelT:
        """A copy of the pydantic ``model`` with its secrets masked as :meth:`value` masks its
        JSON, except where ``***`` cannot stand: a field the model types as a number (a count
        that happens to equal a PIN) keeps its value. ``model`` itself when nothing changes."""
        data = model.model_dump(mode="json")
        masked = self.value(data)
        if masked is data:
            return model
        cls = type(model)
        try:
            return cls.model_validate(masked)
        except ValidationError as exc:  # put back, from the valid original, what refused a string
            for err in exc.errors():
                masked = _put_back(masked, data, err["loc"])
            return cls.model_validate(masked)

    def feedback(self, fb: Feedback) -> Feedback:
        """``fb`` with its secrets masked (every field; the image is kept as it is)."""
        if not self:
            return fb
        update = {}
        for name in ("result", "message", "hint", "path", "expected", "candidates", "notifications"):
            old = getattr(fb, name)
            new = self._value(old)
            if new is not old:
                update[name] = new
        return fb.model_copy(update=update) if update else fb

    def tail(self, text: str) -> str:
        """``text`` (an excerpt cut off at its end) with a secret's beginning at its end masked:
        the last characters, when they are the first two or more of a secret (in any form)."""
        for form in self._forms:
            for n in range(min(len(form) - 1, len(text)), 1, -1):
                if text.endswith(form[:n]):
                    return text[:-n] + MASK
        return text

    def raw_hits(self, text: str) -> bool:
        """Whether ``text`` holds a secret (see :meth:`hits`) or a secret key as a JSON string
        (``"password"``): for JSON text without escapes, whether its values need masking."""
        return self._raw_hit.found(text)

    def json_text_hits(self, text: str) -> bool:
        """Whether the JSON ``text`` may hold a secret (exact for plain secrets; always True
        when a secret has characters JSON escapes, so the caller checks the values)."""
        if not self.secrets:
            return self._key_hit.found(text)
        if not self._plain:
            return True
        return self._raw_hit.found(text)


_NEVER = re.compile(r"(?!)")
"""A pattern that matches nothing (the union of no alternatives)."""


def _alt(form: str, whole_number: bool) -> str:
    """``form`` as a regular expression: literally, or (a short all-digit secret) only where it
    is not inside a longer run of digits."""
    return rf"(?<!\d){re.escape(form)}(?!\d)" if whole_number else re.escape(form)


class _Finder:
    """Whether a text holds any of some strings, each literally or (``whole_number``) only where
    it is not inside a longer run of digits (:func:`_alt`).

    A few strings (the forms of an episode's one or two secrets) are looked for one by one with
    ``str.__contains__`` (CPython's two-way/Boyer-Moore search: a step's text is scanned in well
    under a microsecond per string, a third of what one regular expression over the
    alternation costs); many, with one compiled pattern over all of them (one scan of the
    text). A whole-number string found literally is confirmed by the pattern."""

    _FEW = 16

    def __init__(self, strings: list[tuple[str, bool]]) -> None:
        self._literals = tuple(s for s, _ in strings)
        self._pattern = re.compile("|".join(_alt(s, whole) for s, whole in strings)) if strings else _NEVER
        self._exact = not any(whole for _, whole in strings)  # a literal hit is a hit
        self._few = len(strings) <= self._FEW

    def found(self, text: str) -> bool:
        """Whether ``text`` holds one of the strings (as described above)."""
        if not self._few:
            return self._pattern.search(text) is not None
        for s in self._literals:
            if s in text:
                return self._exact or self._pattern.search(text) is not None
        return False


def _put_back(masked: Any, original: Any, loc: tuple[Any, ...]) -> Any:
    """``masked`` with the value at ``loc`` (a pydantic error location, which may end in type
    tags that are not keys) taken from ``original``: the deepest location both hold."""
    if not loc or not isinstance(masked, (dict, list)):
        return original
    key = loc[0]
    if isinstance(masked, dict) and key in masked and isinstance(original, dict) and key in original:
        return {**masked, key: _put_back(masked[key], original[key], loc[1:])}
    if isinstance(masked, list) and isinstance(key, int) and 0 <= key < len(masked) and isinstance(original, list):
        out = list(masked)
        out[key] = _put_back(masked[key], original[key], loc[1:])
        return out
    return original


def _number_text(value: int | float) -> str:
    if isinstance(value, int):
        return str(value) if -(10**30) < value < 10**30 else ""
    return repr(value)


def _unescape(m: re.Match[str]) -> str:
    esc = m.group(1)
    if esc[0] == "u":
        return chr(int(esc[1:], 16))
    return _SIMPLE_ESCAPES[esc]


# ---------------------------------------------------------------------------------------------
# Reading an action
# ---------------------------------------------------------------------------------------------


class Intake(NamedTuple):
    """An action after the intake.

    ``name`` and ``arguments`` (masked, JSON-clean) are set when the action parsed; ``error`` (an
    ``invalid_json`` feedback) and ``raw`` (the action's text, masked, escaped, at most
    :data:`RAW_KEEP` characters) when it did not. ``argument_error`` is a bound an argument
    broke (see the module table): the env reports it as ``invalid_arguments`` of the tool once
    it knows the tool. ``real`` holds the unmasked top-level arguments, for the parameters a
    tool declares secret; it must never be recorded. ``escaped``: ``raw`` was escaped to be
    storable, or an argument was (an integer outside 64 bits, which always breaks a bound, is
    kept as its decimal text).
    """

    name: str | None = None
    arguments: dict[str, Any] | None = None
    real: dict[str, Any] | None = None
    argument_error: ArgumentError | None = None
    raw: str | None = None
    escaped: bool = False
    error: Feedback | None = None


class _Reject(Exception):
    """The action is not a readable tool call: becomes ``invalid_json`` with ``path``."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


class _Duplicate(ValueError):
    """A key repeated in one JSON object (raised by the decoder's ``object_pairs_hook``)."""


def _pointer(path: str, key: str) -> str:
    """``path`` extended by ``key`` (JSON Pointer escaping; lone surrogates backslash-escaped,
    so the pointer itself is storable)."""
    if _SURROGATE.search(key):
        key = key.encode("utf-8", "backslashreplace").decode("utf-8")
    return f"{path}/{key.replace('~', '~0').replace('/', '~1')}"


def _show(key: str, n: int = 40) -> str:
    """A key or name for a message: as a JSON string (ASCII, so a secret in it takes a form
    the :class:`Masker` knows), at most ``n`` characters of it."""
    return json.dumps(key[:n]) + ("..." if len(key) > n else "")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # a key came twice: name the first one repeated
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _Duplicate(f"duplicate key {_show(k)} in an object; every key may appear once")
            seen.add(k)
    return out


def _constant(name: str) -> Any:
    raise _Reject(f"{name} is not JSON; numbers must be finite")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant)
"""One decoder for every action (``json.loads`` with hooks builds a new one per call)."""


def _loads(text: str) -> Any:
    """``json.loads`` that rejects duplicate keys and NaN/Infinity (raises ``_Reject``)."""
    try:
        return _DECODER.decode(text)
    except _Duplicate as exc:
        raise _Reject(str(exc)) from None
    except RecursionError:
        raise _Reject(f"the JSON is nested too deeply; at most {MAX_NESTING} levels") from None
    except ValueError as exc:
        raise _Reject(f"not valid JSON: {str(exc)[:120]}") from None


class _NotPlain(Exception):
    """Raised while decoding plain text: a value the fast reading leaves to the full one."""


def _plain_int(digits: str) -> int:
    if len(digits) > 18:  # perhaps past 64 bits: the walk bounds it
        raise _NotPlain
    return int(digits)


def _plain_float(digits: str) -> float:
    value = float(digits)
    if value - value != 0.0:  # infinite (1e999; NaN is spelled as a constant)
        raise _NotPlain
    return value


_PLAIN_SCAN = json.JSONDecoder(parse_constant=_constant, parse_int=_plain_int, parse_float=_plain_float).scan_once
"""The C scanner of :func:`_read_plain`: refuses NaN and Infinity and the numbers the walk would
have to bound; keeps the last of duplicate keys (:data:`_PAIRS_SCAN` tells when there may be
one)."""
_PAIRS_SCAN = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_constant=_constant, parse_int=_plain_int, parse_float=_plain_float
).scan_once
""":data:`_PLAIN_SCAN` that also refuses duplicate keys (a Python call per object)."""
_LONG_KEY = re.compile(r'"[^"]{%d,}"\s*:' % (MAX_KEY_CHARS + 1))  # noqa: UP031
"""In plain JSON text (ASCII, no backslash, so a string is what lies between two quotes), a
key longer than :data:`MAX_KEY_CHARS` (perhaps: a match only sends the text to the walk)."""
_PLAIN_KEYS = frozenset({"name", "arguments", "id", "type", "index"})
"""The keys of a plain call (no ``function`` wrapper): :data:`_CALL_KEYS` without it."""


def _read_plain(text: str, masker: Masker) -> Intake | None:
    """The :class:`Intake` of plain JSON text (ASCII, no backslash) whose call passes every
    check without the walk of :class:`_Cleaner`, or None: then :func:`read_action` reads it
    in full, and reports whatever is wrong.

    Such text spells no lone surrogate, holds no string longer than itself, nests at most as
    deep as it has brackets, and its keys are found by :data:`_LONG_KEY`; the decoder rejects
    duplicate keys and non-finite numbers and leaves integers of 19 digits or more to the walk.
    What it decodes are fresh dicts, lists, strings, numbers, booleans and None: what the walk
    would have copied. A secret or secret key is in the call only if it is in the text."""
    if (
        len(text) > MAX_STRING_CHARS
        or text.count("{") + text.count("[") > MAX_NESTING
        or (len(text) > MAX_KEY_CHARS and _LONG_KEY.search(text) is not None)
    ):
        return None
    try:
        obj, end = _PLAIN_SCAN(text, 0)
        if type(obj) is not dict or not obj.keys() <= _PLAIN_KEYS:
            return None
        name = obj.get("name")
        if type(name) is not str or not name or len(name) > MAX_NAME_CHARS:
            return None
        args = obj.get("arguments")
        if args is None:
            args = {}
        elif type(args) is not dict:
            return None
        # Every key of every object in the text is followed by one colon, so when the text has
        # no more colons than these two objects have keys, no key was repeated (the scanner
        # keeps the last); else (colons in strings, nested objects) the hooked scan decides.
        if text.count(":") != len(obj) + len(args):
            _PAIRS_SCAN(text, 0)
    except Exception:  # _NotPlain, not JSON, a duplicate key: the full reading says what
        return None
    if end != len(text) and text[end:].strip(" \t\n\r"):  # JSON's whitespace only after the call
        return None
    if masker and masker.raw_hits(text):
        return Intake(masker.text(name), masker.value(args), args)
    return Intake(name, args, args)  # (name, arguments, real): positional, the cheaper call


class _Cleaner:
    """One walk over an action's value: checks it is JSON (the module table) and copies it into
    plain dicts, lists, strings, finite numbers, booleans and None."""

    def __init__(self, budget: int | None, plain: bool = False) -> None:
        self.budget = budget  # characters left for a dict action (None: text, already bounded)
        self.plain = plain  # read from ASCII JSON text without escapes: no surrogate can be in it
        self.argument_error: ArgumentError | None = None
        self.escaped = False

    def spend(self, n: int) -> None:
        if self.budget is not None:
            self.budget -= n
            if self.budget < 0:
                raise _Reject(f"the action is larger than {MAX_ACTION_CHARS} characters as JSON")

    def bound(self, message: str, path: str, expected: str | None) -> None:
        if self.argument_error is None:
            self.argument_error = ArgumentError(message, path, expected)

    def string(self, text: str, path: str, *, key: bool = False) -> str:
        self.spend(len(text) + 3)
        m = None if self.plain else _SURROGATE.search(text)
        if m is not None:
            where = "a key" if key else "a string"
            raise _Reject(
                f"{where} holds a lone UTF-16 surrogate ({m.group()!a} at character {m.start()}); "
                "send valid Unicode text",
                path or None,
            )
        if key and len(text) > MAX_KEY_CHARS:
            self.bound(f"an argument name of {len(text)} characters; at most {MAX_KEY_CHARS}", path, "string")
        elif not key and len(text) > MAX_STRING_CHARS:
            self.bound(f"a string of {len(text)} characters; at most {MAX_STRING_CHARS}", path, "string")
        return text

    def clean(self, value: Any, path: str, depth: int) -> Any:
        if value is None or value is True or value is False:
            self.spend(5)
            return value
        t = type(value)
        if t is str or isinstance(value, str):
            return self.string(str.__str__(value), path)
        if t is int or (isinstance(value, int) and not isinstance(value, bool)):
            value = int(value)
            if not _INT_MIN <= value <= _INT_MAX:
                self.bound("an integer outside the 64-bit range [-2**63, 2**63-1]", path, "integer")
                self.spend(25)
                self.escaped = True  # recorded as text: JSON readers (pydantic's too) refuse huge numbers
                if value.bit_length() < 4000:
                    return str(value)
                return f"<integer of about {int(value.bit_length() * math.log10(2)) + 1} digits>"
            self.spend(len(str(value)))
            return value
        if t is float or isinstance(value, float):
            value = float(value)
            if not math.isfinite(value):
                raise _Reject(f"{value!r} is not a JSON number; numbers must be finite", path or None)
            self.spend(24)
            return value
        if depth >= MAX_NESTING:
            raise _Reject(f"the action is nested deeper than {MAX_NESTING} levels", path or None)
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            self.spend(2)
            for k, v in value.items():
                if not isinstance(k, str):
                    raise _Reject(f"a key of type {type(k).__name__}; JSON keys are strings", path or None)
                sub = _pointer(path, k[:MAX_KEY_CHARS])
                k = self.string(str.__str__(k), sub, key=True)
                out[k] = self.clean(v, sub, depth + 1)
            return out
        if isinstance(value, (list, tuple)):
            self.spend(2)
            return [self.clean(v, f"{path}/{i}", depth + 1) for i, v in enumerate(value)]
        raise _Reject(f"a value of type {type(value).__name__} is not JSON", path or None)


def _raw(text: str, masker: Masker) -> tuple[str, bool]:
    """``text`` as kept in a step: its first :data:`RAW_KEEP` characters, masked (a secret cut
    off at the end too), lone surrogates backslash-escaped (then True)."""
    kept = masker.tail(masker.text(text[:RAW_KEEP])) if masker else text[:RAW_KEEP]
    if _SURROGATE.search(kept):
        return kept.encode("utf-8", "backslashreplace").decode("utf-8"), True
    return kept, False


_CALL_KEYS = frozenset({"name", "arguments", "function", "id", "type", "index"})
"""Keys an action may have: the call's ``name`` and ``arguments``, or OpenAI's ``function``
wrapper with the ``id``, ``type`` (and, in streamed chunks, ``index``) of a tool call."""
_FUNCTION_KEYS = frozenset({"name", "arguments"})


def _known_keys(obj: dict[str, Any], known: frozenset[str], where: str) -> None:
    """Reject a key outside ``known``: a call whose arguments sit under another key
    (``parameters``, ``args``, ``input``) would otherwise run with none."""
    for key in obj:
        if key not in known:
            hint = " (the call's arguments go under 'arguments')" if key in ("parameters", "args", "input") else ""
            raise _Reject(
                f"unknown key {_show(str(key))} in the action{hint}; a tool call is "
                '{"name": "app.verb", "arguments": {...}}',
                _pointer(where, str(key)),
            )


def read_action(action: Any, masker: Masker) -> Intake:
    """Read one action: JSON text (``str`` or UTF-8 ``bytes``) or a dict, ``{"name": "app.verb",
    "arguments": {...}}``, or OpenAI's ``{"function": {"name", "arguments"}}`` wrapper with
    ``arguments`` as an object or as JSON text.

    Returns an :class:`Intake`; the checks and limits are in the module docstring. Raises
    whatever a hostile Python object raises while it is read (a ``__str__`` or ``.items`` that
    raises); the caller turns that into ``invalid_json``.
    """
    if type(action) is str and action.isascii() and "\\" not in action:
        fast = _read_plain(action, masker)  # most actions: plain JSON text that breaks no bound
        if fast is not None:
            return fast
    return _read_full(action, masker)


def _read_full(action: Any, masker: Masker) -> Intake:
    """:func:`read_action` in full: decoded with every check, walked and copied."""
    text: str | None = None
    if isinstance(action, (bytes, bytearray)):
        try:
            text = bytes(action).decode("utf-8")
        except UnicodeDecodeError:
            raw, escaped = _raw(repr(bytes(action[: 2 * RAW_KEEP])), masker)
            return Intake(raw=raw, escaped=escaped, error=feedback.invalid_json("the action is not UTF-8 text"))
    elif isinstance(action, str):
        text = str.__str__(action)
    # ASCII JSON text without a backslash spells every string as it is: no escaped surrogate, no
    # secret in escapes, so a secret or secret key is in the parsed call only if it is in the text
    plain = text is not None and text.isascii() and "\\" not in text
    must_mask = bool(masker) and (not plain or masker.raw_hits(text))  # type: ignore[arg-type]
    try:
        if text is not None:
            if len(text) > MAX_ACTION_CHARS:
                raise _Reject(f"the action is {len(text)} characters; at most {MAX_ACTION_CHARS}")
            obj = _loads(text.removeprefix("\ufeff"))  # a byte order mark some clients send
            cleaner = _Cleaner(None, plain=plain)
        else:
            obj = action
            cleaner = _Cleaner(MAX_ACTION_CHARS)
        if not isinstance(obj, dict):
            raise _Reject(f"the action must be a JSON object, not {_json_type(obj)}")
        _known_keys(obj, _CALL_KEYS, "")
        call = obj
        if "function" in obj:
            if "name" in obj or "arguments" in obj:
                raise _Reject(
                    "the action has both 'function' and a top-level 'name' or 'arguments'; it is ambiguous "
                    "which call is meant: send one of them"
                )
            call = obj["function"]
            if not isinstance(call, dict):
                raise _Reject(f"'function' must be an object with 'name' and 'arguments', not {_json_type(call)}")
            _known_keys(call, _FUNCTION_KEYS, "/function")
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise _Reject("the action needs a string 'name' (the tool to call)")
        name = cleaner.string(str.__str__(name), "/name")
        if len(name) > MAX_NAME_CHARS:
            raise _Reject(f"the tool name is {len(name)} characters; tool names are at most {MAX_NAME_CHARS}")
        args = call.get("arguments", {})
        if args is None:
            args = {}
        if isinstance(args, str):
            args = args.removeprefix("\ufeff")
            args = _loads(args) if args.strip() else {}
        if not isinstance(args, dict):
            raise _Reject(f"'arguments' must be a JSON object, not {_json_type(args)}")
        real = cleaner.clean(args, "", 1)
    except _Reject as exc:
        if text is None:
            try:
                text = str(action)
            except Exception:
                text = f"<unreadable {type(action).__name__}>"
        raw, escaped = _raw(text, masker)
        fb = feedback.invalid_json(f"the action is not a valid tool call: {exc.message}")
        if exc.path:
            fb = fb.model_copy(update={"path": exc.path})
        return Intake(raw=raw, escaped=escaped, error=fb)
    return Intake(
        name=masker.text(name) if must_mask else name,
        arguments=masker.value(real) if must_mask else real,
        real=real,
        argument_error=cleaner.argument_error,
        escaped=cleaner.escaped,
    )


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return type(value).__name__


# ---------------------------------------------------------------------------------------------
# Sealing a feedback
# ---------------------------------------------------------------------------------------------


def _storable(value: Any, depth: int) -> tuple[Any, bool]:
    """``value`` as JSON can carry it: lone surrogates escaped, nesting past
    :data:`MAX_FEEDBACK_NESTING` cut, keys as text, other types as text; True when changed."""
    if value is None or isinstance(value, (bool, int)):
        return value, False
    if isinstance(value, float):
        return (value, False) if math.isfinite(value) else (None, True)
    if isinstance(value, str):
        if _SURROGATE.search(value):
            return value.encode("utf-8", "backslashreplace").decode("utf-8"), True
        return value, False
    if depth >= MAX_FEEDBACK_NESTING:
        return f"<nested deeper than {MAX_FEEDBACK_NESTING} levels: not kept>", True
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        changed = False
        for k, v in value.items():
            key, c1 = _storable(k if isinstance(k, str) else str(k), depth)
            item, c2 = _storable(v, depth + 1)
            changed = changed or c1 or c2 or not isinstance(k, str)
            out[key] = item
        return out, changed
    if isinstance(value, (list, tuple)):
        items = [_storable(v, depth + 1) for v in value]
        return [v for v, _ in items], any(c for _, c in items) or isinstance(value, tuple)
    try:
        text = repr(value)
    except Exception:
        text = f"<unprintable {type(value).__name__}>"
    return _storable(text, depth)[0], True


_TO_JSON = Feedback.__pydantic_serializer__.to_json


def feedback_json(fb: Feedback) -> str:
    """``fb`` as the observation shows it: ASCII JSON without null fields (what
    ``fb.model_dump_json(exclude_none=True, ensure_ascii=True)`` writes, without that method's
    Python wrapper: a third less per step). Raises what pydantic raises when it cannot."""
    return _TO_JSON(fb, exclude_none=True, ensure_ascii=True).decode()


def seal(fb: Feedback, masker: Masker) -> tuple[Feedback, str, bool]:
    """``fb`` made safe to record and show: (feedback, its observation text, escaped).

    The observation text is ``fb`` as ASCII JSON without null fields. When pydantic cannot write
    ``fb`` (lone surrogates, nesting past its limit, an object it does not know), every field is
    made storable (see the module docstring) and ``escaped`` is True. Then every secret of
    ``masker`` is masked. Never raises.
    """
    escaped = False
    try:
        text = feedback_json(fb)
    except Exception:
        update = {}
        for name in ("result", "message", "hint", "path", "expected", "candidates", "notifications"):
            value, changed = _storable(getattr(fb, name), 0)
            if changed:
                update[name] = value
        fb = fb.model_copy(update=update)
        escaped = True
        try:
            text = feedback_json(fb)
        except Exception:  # not reached by any known input; the step still records something true
            fb = Feedback(ok=fb.ok, error=fb.error, message="the result could not be recorded", image=fb.image)
            text = feedback_json(fb)
    if masker and masker.json_text_hits(text):
        masked = masker.feedback(fb)
        if masked is not fb:
            fb = masked
            text = feedback_json(fb)
    return fb, text, escaped
