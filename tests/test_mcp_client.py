"""The ``mcp`` backend: a real MCP server's tools (the SDK's ``MCPServer``, started by the test
over stdio and over streamable HTTP) join an episode as an app, are judged by ``answer`` and
``behavior`` criteria, and replay from a recorded cache without the server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from phoneenv.backends.mcp_client import McpClientBackend, McpServer, ReplayCache, ReplayMiss, tool_verb
from phoneenv.contract import AnswerCriterion, BehaviorCriterion, TaskSpec
from phoneenv.env import PhonePlanEnv
from tests import waiting
from tests.test_mcp_server import _wait_for_url

SERVER = Path(__file__).with_name("mcp_fixtures") / "checklist_server.py"
GONE = [sys.executable, "-c", "raise SystemExit('this server must never be started')"]

TASK = TaskSpec(
    id="mcp.checklist_add",
    domain="notes",
    goal="Add 'buy milk' to my checklist, then tell me how many items it has.",
    criteria=[
        AnswerCriterion(id="count", type="number", value=3),
        BehaviorCriterion(
            id="added", rule="required_call", tool="checklist.add_item", arguments={"text": {"icontains": "milk"}}
        ),
        BehaviorCriterion(id="kept", rule="forbidden_call", tool="checklist.complete_item"),
    ],
    backends=["mcp"],
    apps=["checklist"],
    max_steps=10,
)
PLAN: list[dict[str, Any]] = [
    {"name": "checklist.list_items", "arguments": {}},
    {"name": "checklist.add_item", "arguments": {"text": "buy milk"}},
    {"name": "checklist__list_items", "arguments": {}},
    {"name": "finish", "arguments": {"answer": "It has 3 items now."}},
]


def stdio_server(**kw: Any) -> McpServer:
    return McpServer(app="checklist", command=[sys.executable, str(SERVER)], domain="notes", **kw)


def play(
    backend: McpClientBackend, plan: list[dict[str, Any]], task: TaskSpec = TASK
) -> tuple[PhonePlanEnv, list[dict[str, Any]]]:
    """Play ``plan`` in a new env over ``backend``; the env (episode over) and each step's feedback."""
    env = PhonePlanEnv(task=task, backend=backend)
    env.reset(seed=0)
    fbs = []
    for action in plan:
        obs, _, terminated, truncated, _ = env.step(action)
        fbs.append(json.loads(obs["feedback"]))
        if terminated or truncated:
            break
    return env, fbs


def test_tool_names_map_to_verbs() -> None:
    assert tool_verb("complete-item") == "complete_item"
    assert tool_verb("Get.Weather") == "get_weather"
    assert tool_verb("9lives") == "t9lives"
    assert tool_verb("list_items") == "list_items"
    assert tool_verb("a__b") == "a_b" and tool_verb("_x") == "x" and tool_verb("--") == "tool"


def test_server_config_is_checked() -> None:
    with pytest.raises(ValueError, match="exactly one of command"):
        McpServer(app="x")
    with pytest.raises(ValueError, match="exactly one of command"):
        McpServer(app="x", command=["a"], url="http://127.0.0.1:1/mcp")
    with pytest.raises(ValueError, match="url must be"):
        McpServer(app="x", url="ftp://h/mcp")
    with pytest.raises(ValueError):
        McpServer(app="Bad-App", command=["a"])
    with pytest.raises(ValueError, match="needs a cache"):
        McpClientBackend([stdio_server()], mode="replay")


def test_stdio_record_then_replay_without_the_server(tmp_path: Path) -> None:
    cache_file = tmp_path / "checklist.replay.json"
    backend = McpClientBackend([stdio_server()], cache=cache_file)
    specs = {n: e.spec for n, e in backend.tools().items() if n.startswith("checklist.")}
    assert set(specs) == {"checklist.list_items", "checklist.add_item", "checklist.complete_item"}
    assert specs["checklist.list_items"].effect.value == "read"  # readOnlyHint
    assert specs["checklist.complete_item"].effect.value == "sensitive"  # destructiveHint
    assert specs["checklist.add_item"].effect.value == "write"
    assert specs["checklist.add_item"].parameters["required"] == ["text"]

    env, fbs = play(backend, PLAN)
    assert [f["ok"] for f in fbs] == [True] * 4
    assert fbs[0]["result"]["count"] == 2  # the server's seeded items
    assert fbs[1]["result"] == {"id": 3, "text": "buy milk", "done": False}
    assert fbs[2]["result"]["count"] == 3 and fbs[2]["result"]["items"][-1]["text"] == "buy milk"
    verdict = env.verdict
    assert verdict.success, verdict.criteria
    trace = env.trace
    assert [s.backend for s in trace.steps] == ["mcp", "mcp", "mcp", "sandbox"]
    assert [s.clock for s in trace.steps] == [f"2026-11-29T09:00:0{i}" for i in (1, 2, 3, 3)]
    env.close()

    doc = json.loads(cache_file.read_text(encoding="utf-8"))
    assert [t["name"] for t in doc["tools"]["checklist"]] == ["list_items", "add_item", "complete-item"]
    calls = sorted((c["tool"], json.dumps(c["arguments"])) for c in doc["calls"].values())
    # list_items before and after the add are two entries: the add is in the second one's key
    assert calls == [("add_item", '{"text": "buy milk"}'), ("list_items", "{}"), ("list_items", "{}")]

    # replay: the server command now fails if ever started; the episode is the same, byte for byte
    replay = McpClientBackend(
        [McpServer(app="checklist", command=GONE, domain="notes")], cache=cache_file, mode="replay"
    )
    env2, fbs2 = play(replay, PLAN)
    assert fbs2 == fbs
    assert env2.trace.model_dump_json() == trace.model_dump_json()
    assert not replay._conns  # no session was ever opened

    # a call outside the recording is an infrastructure error, not the agent's
    env3, fbs3 = play(replay, [{"name": "checklist.add_item", "arguments": {"text": "eggs"}}, PLAN[-1]])
    assert fbs3[0]["error"] == "device_error" and "not in the replay cache" in fbs3[0]["message"]
    assert env3.verdict.infrastructure_error and not env3.verdict.success

    # the read after a write is keyed by that write: without the add, the post-add list is not served
    env4, fbs4 = play(replay, [PLAN[0], PLAN[0], PLAN[-1]])
    assert fbs4[0]["result"]["count"] == 2 and fbs4[1]["result"]["count"] == 2

    with pytest.raises(ReplayMiss, match="no tool list"):
        McpClientBackend([McpServer(app="other", command=GONE)], cache=cache_file, mode="replay")


def test_contract_on_mcp_tools_and_criteria_that_fail() -> None:
    backend = McpClientBackend([stdio_server()], mode="live")
    env, fbs = play(
        backend,
        [
            {"name": "checklist.add_item", "arguments": {"text": 5}},  # refused before the server
            {"name": "checklist.add_item", "arguments": {}},
            {"name": "checklist.remove_everything", "arguments": {}},
            {"name": "checklist__complete_item", "arguments": {"item_id": 99}},  # the server's own error
            {"name": "checklist.complete_item", "arguments": {"item_id": 1}},
            {"name": "checklist.list_items", "arguments": {}},
            {"name": "finish", "arguments": {"answer": "two items"}},
        ],
    )
    assert fbs[0]["error"] == "invalid_arguments" and fbs[0]["path"] == "/text" and fbs[0]["expected"] == "string"
    assert fbs[1]["error"] == "invalid_arguments"
    assert fbs[2]["error"] == "unknown_tool"
    assert fbs[3]["error"] == "precondition_failed" and "no item 99" in fbs[3]["message"]
    assert fbs[4]["ok"] and fbs[4]["result"] == {"result": "item 1 done"}
    items = {i["id"]: i for i in fbs[5]["result"]["items"]}
    assert len(items) == 2 and items[1]["done"] is True  # the invalid calls never reached the server
    verdict = {c.id: c.passed for c in env.verdict.criteria}
    assert verdict == {"count": False, "added": False, "kept": False, "grounded": True}
    assert not env.verdict.success
    env.close()


def test_fresh_server_each_episode_and_catch_up_from_cache(tmp_path: Path) -> None:
    cache = ReplayCache(tmp_path / "c.json")
    backend = McpClientBackend([stdio_server()], cache=cache)
    env, fbs = play(backend, [*PLAN[:2], PLAN[-1]])  # list, add, finish: 2 calls recorded
    assert fbs[1]["result"]["id"] == 3
    # a second episode on the same backend: the add comes from the cache, then a new read goes live;
    # the restarted server is sent the episode's add first, so it lists 3 items, not 2 (nor 4)
    env.reset(seed=0)
    env.step(PLAN[1])
    obs, *_ = env.step({"name": "checklist.list_items", "arguments": {}})
    listed = json.loads(obs["feedback"])["result"]
    assert listed["count"] == 3 and [i["text"] for i in listed["items"]].count("buy milk") == 1
    env.close()


@pytest.mark.slow
def test_streamable_http_server(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--http"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        url = _wait_for_url(proc)
        backend = McpClientBackend(
            [McpServer(app="checklist", url=url, domain="notes", fresh_per_episode=False)],
            cache=tmp_path / "http.json",
        )
        env, fbs = play(backend, PLAN)
        assert [f["ok"] for f in fbs] == [True] * 4 and fbs[2]["result"]["count"] == 3
        assert env.verdict.success
        env.close()
        recorded = json.loads((tmp_path / "http.json").read_text(encoding="utf-8"))
        assert len(recorded["calls"]) == 3
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()
    # the server is gone: the recording still plays
    replay = McpClientBackend([McpServer(app="checklist", url=url)], cache=tmp_path / "http.json", mode="replay")
    env2, fbs2 = play(replay, PLAN)
    assert fbs2 == fbs and env2.verdict.success


def test_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(ConnectionError, match="could not list its tools"):
        McpClientBackend([McpServer(app="checklist", url="http://127.0.0.1:9/mcp", timeout_s=5)])


def test_a_backend_left_open_does_not_keep_the_process_alive(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from phoneenv.backends.mcp_client import McpClientBackend, McpServer\n"
        f"b = McpClientBackend([McpServer(app='checklist', command=[sys.executable, {str(SERVER)!r}])], mode='live')\n"
        "print(b.call('checklist.list_items', {}).result['count'])\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = waiting.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "2"


def test_cli_lists_and_records_a_servers_tools(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from phoneenv.cli import app

    record = tmp_path / "rec.json"
    runner = CliRunner()
    cmd = f"{sys.executable} {SERVER}"
    out = runner.invoke(
        app, ["mcp", "tools", "--app", "checklist", "--command", cmd, "--record", str(record)], env={"COLUMNS": "120"}
    )
    assert out.exit_code == 0, out.output
    rows = {line.split("│")[1].strip(): line for line in out.stdout.splitlines() if "checklist." in line}
    assert set(rows) == {"checklist.list_items", "checklist.add_item", "checklist.complete_item"}
    assert "complete-item" in rows["checklist.complete_item"] and "sensitive" in rows["checklist.complete_item"]
    assert "text*" in rows["checklist.add_item"]
    # the recorded list is what replay mode builds the app from
    replay = McpClientBackend([McpServer(app="checklist", command=GONE)], cache=record, mode="replay")
    assert set(replay.entries) == set(rows)
    bad = runner.invoke(app, ["mcp", "tools", "--app", "checklist"])
    assert bad.exit_code == 1 and "exactly one of command" in bad.output


def test_a_crash_and_a_hang_are_infrastructure_errors_and_the_server_restarts() -> None:
    server = stdio_server(env={"CHECKLIST_FAULTS": "1"}, timeout_s=2)
    backend = McpClientBackend([server], mode="live")
    assert {"checklist.crash", "checklist.slow"} <= set(backend.entries)
    env, fbs = play(
        backend,
        [
            {"name": "checklist.add_item", "arguments": {"text": "buy milk"}},
            {"name": "checklist.slow", "arguments": {"seconds": 30}},
            {"name": "checklist.crash", "arguments": {}},
            {"name": "checklist.list_items", "arguments": {}},  # a new server process: the seeded items
            PLAN[-1],
        ],
    )
    assert fbs[0]["ok"]
    assert fbs[1]["error"] == "timeout" and "within 2 s" in fbs[1]["message"]
    assert fbs[2]["error"] == "device_error" and "checklist MCP server failed" in fbs[2]["message"]
    assert fbs[3]["ok"] and fbs[3]["result"]["count"] == 2
    assert env.verdict.infrastructure_error  # the episode is marked lost to the world, not the agent
    env.close()
