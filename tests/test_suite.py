"""The built-in task suite: size, spread, stability, and every task proven by execution."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from phoneenv.tasks import get_task, load_suite, select
from phoneenv.tasks.templates import all_templates
from phoneenv.tasks.validate import perturb, prove_suite

SANDBOX_APPS = {"contacts", "messages", "phone", "calendar", "clock", "notes", "settings"}


def test_suite_size_and_spread():
    suite = load_suite()
    templates = all_templates()
    assert len(templates) >= 40
    # The breadth floors: 1,700+ tasks, 1,500+ distinct goals, all 13 domains with 60+ each,
    # 250+ in each of the Memory, Skills and Sub-agent categories, 40%+ cross-app.
    assert len(suite) >= 1700 and len({t.goal for t in suite}) >= 1500
    domains = Counter(t.domain.value for t in suite)
    assert len(domains) == 13 and min(domains.values()) >= 60, domains
    categories = Counter(t.category.value for t in suite)
    assert min(categories[c] for c in ("memory", "skills", "subagent")) >= 250, categories
    assert sum(t.cross_app for t in suite) >= 0.4 * len(suite)
    assert len({t.id for t in suite}) == len(suite)
    assert len(select("category:tool")) >= 300
    cross = sum(t.cross_app for t in suite)
    assert cross * 4 >= len(suite), f"{cross} cross-app of {len(suite)}"
    per_app = Counter(a for t in suite for a in t.apps)
    assert set(per_app) >= SANDBOX_APPS, per_app
    assert all(per_app[a] >= 16 for a in SANDBOX_APPS), per_app


def test_one_template_yields_distinct_tasks():
    for tpl in all_templates().values():
        tasks = tpl.tasks()
        distinct = {(t.goal, str([c.model_dump() for c in t.criteria]), t.fixtures.model_dump_json()) for t in tasks}
        assert len(distinct) == len(tasks), f"{tpl.name}: {len(distinct)} distinct of {len(tasks)}"


def test_task_ids_and_contents_are_stable():
    a = get_task("contacts.add_contact/3").model_dump_json()
    b = all_templates()["contacts.add_contact"].task(3).model_dump_json()
    assert a == b
    assert hashlib.sha256(a.encode()).hexdigest() == hashlib.sha256(b.encode()).hexdigest()


def test_selectors():
    assert {t.category.value for t in select("category:tool")} == {"tool"}
    assert {t.category.value for t in select("category:memory")} == {"memory"}
    assert all(t.domain.value == "time" for t in select("domain:time"))
    assert [t.id for t in select("template:contacts.favorite")] == [f"contacts.favorite/{k}" for k in range(8)]
    assert all("calendar" in t.apps for t in select("app:calendar"))
    assert all(t.cross_app for t in select("cross-app"))
    with pytest.raises(KeyError, match="did you mean"):
        select("contacts.add_contat/3")
    with pytest.raises(ValueError):
        select("color:blue")
    # The scoreboard's "Sub-agent" label works as a category name; unknown names list the known ones.
    assert [t.id for t in select("category:sub-agent")] == [t.id for t in select("category:subagent")] != []
    with pytest.raises(ValueError, match="use one of tool, memory, skills, subagent"):
        select("category:tools")
    with pytest.raises(ValueError, match="unknown domain 'clock'"):
        select("domain:clock")


def test_vault_secret_never_serialised():
    task = get_task("contacts.add_contact/0")
    secret = task.fixtures.vault[task.fixtures.accounts["mail"]["account"]].get_secret_value()
    assert secret.startswith("pw-")
    assert secret not in task.model_dump_json()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, False),
        (5, 6),
        ("c_3", "c_4"),
        ("2026-11-30T16:00", "2026-11-30T17:00"),
        ("2026-11-30", "2026-12-01"),
        ("23:30", "00:30"),
        ("+4915111111111", "+4915111111110"),
        ("ana@example.com", "zzana@example.com"),
        ("late", "yngr"),
        ("Ana 3 min", "Nan 8 zva"),
        (["a@x.org", "b@y.org"], ["zza@x.org", "b@y.org"]),
        (None, None),
    ],
)
def test_perturb_values(value, expected):
    assert perturb(value) == expected


@pytest.mark.parametrize("shard", range(4))
def test_every_task_is_proven(shard):
    # four shards, so that pytest-xdist spreads the suite's proof over its workers
    proofs = prove_suite(load_suite()[shard::4])
    broken = {p.task_id: p.problems for p in proofs if not p.ok}
    assert not broken
    assert sum(p.perturbations for p in proofs) >= len(proofs)
    # generated claim probes ran on this shard: told values changed are rejected, paraphrases accepted
    played = {k: sum(p.claims.get(k, {}).get("as_expected", 0) for p in proofs) for k in ("time", "paraphrase")}
    assert played["time"] >= 40 and played["paraphrase"] >= 400, played


def test_splits_partition_the_suite_stably():
    from phoneenv.tasks import split_of

    parts = {name: {t.id for t in select(f"split:{name}")} for name in ("train", "dev", "test")}
    assert set().union(*parts.values()) == {t.id for t in load_suite()}
    assert sum(len(p) for p in parts.values()) == len(load_suite())
    n = len(load_suite())
    assert 0.7 * n < len(parts["train"]) < 0.9 * n and len(parts["dev"]) > 0.05 * n and len(parts["test"]) > 0.05 * n
    # Fixed by the id alone: a hand-computed value.
    bucket = int.from_bytes(hashlib.sha256(b"contacts.favorite/0").digest()[:8], "big") % 100
    assert split_of("contacts.favorite/0") == ("train" if bucket < 80 else "dev" if bucket < 90 else "test")
    with pytest.raises(ValueError):
        select("split:holdout")


# The SHA-256 of the whole suite's task JSON (phoneenv.tasks.golden.suite_hash). Any change to a
# template's draws or to the seeded worlds changes it. When the change is on purpose, update it:
#     python -m phoneenv.tasks.golden
# and paste the printed value here (say in the commit why the suite changed).
GOLDEN = "e96008107b75d0169cd4631c0be530c35438adce356dda193542454b5e9fa447"


def test_suite_golden_hash():
    from phoneenv.tasks.golden import suite_hash

    assert suite_hash() == GOLDEN, "the suite changed: if on purpose, run `python -m phoneenv.tasks.golden`"
