"""``phoneenv mcp serve`` as real clients meet it: calls from many threads and clients, every tool
family (memory included), the offered tool list and its change notifications in both protocol
eras, a defect inside a step, and memory, sub-agent and screenshot tasks solved over stdio and
streamable HTTP."""

from __future__ import annotations

import base64
import io
import json
import os
import random
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import anyio
from mcp import Client, StdioServerParameters
from PIL import Image

from phoneenv.contract import Trace
from phoneenv.mcp_server import EpisodeServer
from phoneenv.tasks import get_task, load_suite
from tests import waiting

ROOT = Path(__file__).resolve().parents[1]
MEMORY_TASK = "delivery.usual_order/0"  # its plan starts with memory.search
SUBAGENT_TASK = "subagent.album_of_person/0"  # agent.delegate, the frame's finish, then the root's
SCREEN_TASK = "fields.dnd_schedule/0"  # settings.add_dnd_schedule: the screen after it once raised
OPENAI_MAX_TOOLS = 128  # the most tools OpenAI's chat API accepts in one request


def _family_tasks() -> list[str]:
    """One task per tool family (the app of a reference-plan call: every app, memory, skills,
    agent, user, finish), the first in suite order that the sandbox runs."""
    first: dict[str, str] = {}
    for task in load_suite():
        if "sandbox" not in task.backends:
            continue
        for call in task.reference_plan or []:
            first.setdefault(call.name.split(".")[0], task.id)
    return sorted(set(first.values()))


def _mcp(name: str) -> str:
    return name.replace(".", "__")


def _assert_solved(payloads: list[dict[str, Any]], task_id: str) -> None:
    errors = [p for p in payloads if p.get("error") == "internal_error"]
    assert not errors, (task_id, errors)
    episode = payloads[-1].get("episode")
    assert episode is not None and episode["success"] is True, (task_id, payloads[-1])


def test_every_tool_family_from_a_pool_of_threads() -> None:
    """Each call of each reference plan is served from whichever pool thread takes it (never the
    one that built the server): memory.* once answered internal_error here, and a finish on
    another thread than the store's raised out of env.step."""
    tasks = _family_tasks()
    assert {"delivery.usual_order/0", "subagent.album_of_person/0"} <= set(tasks) or len(tasks) >= 20
    with ThreadPoolExecutor(max_workers=4) as pool:
        for task_id in tasks:
            srv = EpisodeServer.for_task(task_id)
            try:
                payloads = []
                for call in get_task(task_id).reference_plan or []:
                    result = pool.submit(srv.call_tool, _mcp(call.name), call.arguments).result()
                    payloads.append(result.structured_content)
                _assert_solved(payloads, task_id)
            finally:
                srv.close()


def test_concurrent_clients_on_one_episode() -> None:
    """Eight threads at once: two play the memory task's plan in turn while the others read every
    resource and list the tools. Every call is answered, none raises, the trace serialises and
    holds exactly the steps played, and a second episode after reset still solves."""
    srv = EpisodeServer.for_task(MEMORY_TASK)
    plan = get_task(MEMORY_TASK).reference_plan or []
    answered: list[dict[str, Any]] = []
    failures: list[BaseException] = []
    turn = threading.Lock()
    stop = threading.Event()

    def player() -> None:
        for call in plan[:-1]:  # the last call (finish) is played after the readers stop
            with turn:
                answered.append(srv.call_tool(_mcp(call.name), call.arguments).structured_content)

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        uris = ["screen.png", "screen.txt", "task", "verdict", "trace"]
        while not stop.is_set():
            if rng.random() < 0.2:
                assert any(t.name == "finish" for t in srv.list_tools())
            else:
                content, _ = srv.read_resource("phoneenv://episode/" + rng.choice(uris))
                assert content

    def guard(fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except BaseException as exc:  # reported below
            failures.append(exc)

    readers = [threading.Thread(target=guard, args=(reader, i)) for i in range(6)]
    for t in readers:
        t.start()
    players = [threading.Thread(target=guard, args=(player,)) for _ in range(2)]
    for t in players:
        t.start()
    for t in players:
        t.join(120)
    stop.set()
    for t in readers:
        t.join(120)
    assert not failures, failures
    assert len(answered) == 2 * (len(plan) - 1)
    assert not any(p.get("error") == "internal_error" for p in answered), answered
    trace = Trace.model_validate_json(srv.read_resource("phoneenv://episode/trace")[0])
    assert len(trace.steps) == 2 * (len(plan) - 1)
    srv.call_tool("episode__reset", {})
    _assert_solved([srv.call_tool(_mcp(c.name), c.arguments).structured_content for c in plan], MEMORY_TASK)
    srv.close()
    srv.close()  # idempotent


def test_a_defect_inside_a_step_does_not_wedge_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step that raises (the env's contract says it never does; a defect) answers internal_error
    naming episode__reset, and episode__reset starts a clean episode the plan then solves."""
    import sqlite3

    srv = EpisodeServer.for_task(MEMORY_TASK)
    plan = get_task(MEMORY_TASK).reference_plan or []
    real_step = srv.env.step

    def broken(action: Any) -> Any:
        raise sqlite3.ProgrammingError("SQLite objects created in a thread can only be used in that same thread")

    monkeypatch.setattr(srv.env, "step", broken)
    bad = srv.call_tool("finish", {"answer": "done"})
    assert bad.is_error and bad.structured_content["error"] == "internal_error"
    assert "episode__reset" in bad.structured_content["hint"]
    monkeypatch.setattr(srv.env, "step", real_step)
    assert not srv.call_tool("episode__reset", {}).is_error
    _assert_solved([srv.call_tool(_mcp(c.name), c.arguments).structured_content for c in plan], MEMORY_TASK)
    # once over, a call is refused with the reset tool named, not a Python call
    after = srv.call_tool("delivery__list_orders", {}).structured_content
    assert after["error"] == "precondition_failed" and "episode__reset" in after["hint"]
    assert "reset()" not in after["hint"]
    srv.close()


def test_offered_tools_follow_the_selection() -> None:
    """Default ``tools="task"``: the task's apps and the phone's own, within OpenAI's 128, every
    tool of the reference plan among them; ``all`` offers every tool; ``retrieve`` fewer."""
    for task_id in (SCREEN_TASK, MEMORY_TASK, "clock.what_time/0"):
        srv = EpisodeServer.for_task(task_id)
        names = {t.name for t in srv.list_tools()}
        assert len(names) <= OPENAI_MAX_TOOLS, (task_id, len(names))
        assert {_mcp(c.name) for c in get_task(task_id).reference_plan or []} <= names
        assert "episode__reset" in names and "screen__capture" in names
        assert not any(n.startswith("music__") for n in names)  # no app the task does not use
        srv.close()
    every = EpisodeServer.for_task(SCREEN_TASK, tools="all")
    assert len(every.list_tools()) > OPENAI_MAX_TOOLS
    every.close()
    retrieved = EpisodeServer.for_task(SCREEN_TASK, tools="retrieve")
    assert len(retrieved.list_tools()) < 40
    retrieved.close()
    with pytest.raises(ValueError, match="tools must be one of"):
        EpisodeServer.for_task(SCREEN_TASK, tools="most")


def _play_and_watch(legacy: bool) -> list[tuple[str, bool]]:
    """Play the sub-agent task in process, recording per call whether a tools-list change
    reached the client (legacy: the handshake era's notification; else a listen stream)."""
    srv = EpisodeServer.for_task(SUBAGENT_TASK)
    plan = get_task(SUBAGENT_TASK).reference_plan or []
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", "") == "notifications/tools/list_changed":
            seen.append("changed")

    async def main() -> list[tuple[str, bool]]:
        out: list[tuple[str, bool]] = []
        mode = "legacy" if legacy else "auto"
        async with Client(srv.build(), mode=mode, message_handler=on_message) as client:
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.list_changed is True
            before = {t.name for t in (await client.list_tools()).tools}
            if legacy:
                for call in plan:
                    await client.call_tool(_mcp(call.name), call.arguments)
                    await anyio.sleep(0.05)
                    out.append((call.name, bool(seen)))
                    seen.clear()
            else:
                async with client.listen(tools_list_changed=True) as sub:
                    events: list[Any] = []

                    async def drain() -> None:
                        async for event in sub:
                            events.append(event)

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(drain)
                        for call in plan:
                            await client.call_tool(_mcp(call.name), call.arguments)
                            await anyio.sleep(0.05)
                            out.append((call.name, any(type(e).__name__ == "ToolsListChanged" for e in events)))
                            events.clear()
                        tg.cancel_scope.cancel()
            inside = {t.name for t in (await client.list_tools()).tools}
            assert inside == before  # back in the root frame after the sub-agent's finish
        return out

    try:
        return anyio.run(main)
    finally:
        srv.close()


@pytest.mark.parametrize("legacy", [False, True], ids=["listen-2026", "handshake-era"])
def test_tool_list_changes_are_announced(legacy: bool) -> None:
    """agent__delegate narrows the tools to the sub-agent frame's, its finish restores the root's:
    each is announced; a call that changes nothing is not."""
    got = _play_and_watch(legacy)
    names = [n for n, _ in got]
    assert names[0] == "agent.delegate" and names.count("finish") == 2
    assert got[0][1] is True  # the frame opened
    first_finish = names.index("finish")
    assert got[first_finish][1] is True  # the frame closed
    assert all(not changed for n, changed in got[1:first_finish]), got  # calls inside the frame
    assert got[first_finish + 1][1] is False, got  # a root-frame call that changes nothing


# -- over stdio and streamable HTTP ------------------------------------------------------------


def _env() -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


async def _solve(client: Client, task_id: str, screenshots: bool) -> list[dict[str, Any]]:
    """Play ``task_id``'s reference plan through ``client``; with ``screenshots`` check that each
    result carries the screen (a 360×640 PNG) and read the screen resource after each call."""
    names = {t.name for t in (await client.list_tools()).tools}
    assert len(names) <= OPENAI_MAX_TOOLS
    payloads = []
    for call in get_task(task_id).reference_plan or []:
        result = await client.call_tool(_mcp(call.name), call.arguments)
        payloads.append(result.structured_content)
        if screenshots:
            images = [c for c in result.content if c.type == "image"]
            assert len(images) == 1, result.content
            shot = Image.open(io.BytesIO(base64.b64decode(images[0].data)))
            assert shot.size == (360, 640)
            png = (await client.read_resource("phoneenv://episode/screen.png")).contents[0]
            pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(png.blob))).convert("RGB"))
            assert pixels.shape == (640, 360, 3)
    verdict = json.loads((await client.read_resource("phoneenv://episode/verdict")).contents[0].text)
    assert verdict["over"] is True and verdict["success"] is True
    return payloads


CASES = [(MEMORY_TASK, False), (SUBAGENT_TASK, False), (SCREEN_TASK, True)]


@pytest.mark.slow
@pytest.mark.parametrize(("task_id", "screenshots"), CASES, ids=["memory", "subagent", "screenshots"])
def test_solved_over_stdio(task_id: str, screenshots: bool, tmp_path: Path) -> None:
    args = ["-m", "phoneenv", "mcp", "serve", "--task", task_id] + (["--screenshots"] if screenshots else [])
    params = StdioServerParameters(command=sys.executable, args=args, env=_env(), cwd=str(tmp_path))

    async def main() -> list[dict[str, Any]]:
        async with Client(params, read_timeout_seconds=waiting.scaled(120)) as client:
            return await _solve(client, task_id, screenshots)

    _assert_solved(anyio.run(main), task_id)


@pytest.mark.slow
@pytest.mark.parametrize(("task_id", "screenshots"), CASES, ids=["memory", "subagent", "screenshots"])
def test_solved_over_http(task_id: str, screenshots: bool, tmp_path: Path) -> None:
    from tests.test_mcp_server import serving_http

    args = ["--task", task_id] + (["--screenshots"] if screenshots else [])
    with serving_http(args, tmp_path) as (url, _):

        async def main() -> list[dict[str, Any]]:
            async with Client(url, read_timeout_seconds=waiting.scaled(120)) as client:
                return await _solve(client, task_id, screenshots)

        payloads = anyio.run(main)
    _assert_solved(payloads, task_id)
