"""``phoneenv mcp serve``: a live episode served with the official MCP SDK, driven by the SDK's
own client in process, over stdio (the client starts ``python -m phoneenv mcp serve``) and over
streamable HTTP (loopback, port 0)."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import anyio
from mcp import Client, StdioServerParameters
from PIL import Image

from phoneenv.contract import Trace
from phoneenv.mcp_server import RESOURCES, EpisodeServer
from phoneenv.tasks import get_task
from tests import waiting

TASK = "clock.what_time/0"
ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    """The environment a server subprocess needs to import this checkout."""
    return {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


async def _play_reference(client: Client, names: str = "underscore") -> list[Any]:
    """Play TASK's reference plan through ``client``; the results, in order."""
    results = []
    for call in get_task(TASK).reference_plan or []:
        name = call.name.replace(".", "__") if names == "underscore" else call.name
        results.append(await client.call_tool(name, call.arguments))
    return results


def _check_success(results: list[Any]) -> dict[str, Any]:
    assert all(not r.is_error for r in results), [r.structured_content for r in results]
    last = results[-1].structured_content
    assert last["episode"]["over"] is True and last["episode"]["terminated"] is True
    assert last["episode"]["success"] is True and last["episode"]["progress"] == 1.0
    assert last["episode"]["verdict"]["success"] is True
    return last


# -- in process ------------------------------------------------------------------------------


def test_names_are_reversible_and_schemas_are_the_tool_specs() -> None:
    srv = EpisodeServer.for_task(TASK)
    specs = {s.name: s for s in srv.env.tool_specs}
    tools = anyio.run(_list_tools, srv)
    served = {t.name: t for t in tools}
    assert len(served) == len(tools) == len(specs) + 1  # + episode__reset
    for name, spec in specs.items():
        mcp_name = name.replace(".", "__")
        assert mcp_name in served, name
        assert srv.to_canonical(mcp_name) == name and srv.to_mcp(name) == mcp_name
        tool = served[mcp_name]
        assert tool.input_schema == spec.parameters
        assert tool.annotations.read_only_hint is (spec.effect.value == "read")
        assert tool.annotations.destructive_hint is (spec.effect.value == "sensitive")
    assert all("." not in n for n in served), "underscore names hold no dot (model APIs refuse it)"
    assert "episode__reset" in served
    srv.env.close()


async def _list_tools(srv: EpisodeServer) -> list[Any]:
    async with Client(srv.build()) as client:
        return list((await client.list_tools()).tools)


def test_dotted_names() -> None:
    srv = EpisodeServer.for_task(TASK, names="dotted")

    async def main() -> list[Any]:
        async with Client(srv.build()) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "clock.world_time" in names and "episode.reset" in names
            return await _play_reference(client, "dotted")

    _check_success(anyio.run(main))
    with pytest.raises(ValueError, match="names must be"):
        EpisodeServer(srv.env, names="camel")  # type: ignore[arg-type]


def test_episode_resources_errors_and_reset_in_process() -> None:
    srv = EpisodeServer.for_task(TASK)
    task = get_task(TASK)

    async def main() -> None:
        async with Client(srv.build()) as client:
            assert task.goal in (client.instructions or "")
            uris = {str(r.uri) for r in (await client.list_resources()).resources}
            assert uris == {f"phoneenv://episode/{n}" for n in RESOURCES}
            verdict = json.loads((await client.read_resource("phoneenv://episode/verdict")).contents[0].text)
            assert verdict == {"over": False}
            info = json.loads((await client.read_resource("phoneenv://episode/task")).contents[0].text)
            assert info["id"] == TASK and info["goal"] == task.goal and info["step"] == 0

            # errors are feedbacks, as for any agent
            bad = await client.call_tool("clock__world_time", {"timezone": 5})
            assert bad.is_error and bad.structured_content["error"] == "invalid_arguments"
            unknown = await client.call_tool("clock__fly_to_the_moon", {})
            assert unknown.is_error and unknown.structured_content["error"] == "unknown_tool"
            assert "clock.world_time" in (
                unknown.structured_content.get("candidates") or []
            ) or unknown.structured_content.get("hint")

            # the screen: a PNG of exactly the env's screenshot, and its text form
            png = (await client.read_resource("phoneenv://episode/screen.png")).contents[0]
            assert png.mime_type == "image/png"
            pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(png.blob))).convert("RGB"))
            assert np.array_equal(pixels, srv.env.backend.screenshot())
            text = (await client.read_resource("phoneenv://episode/screen.txt")).contents[0].text
            lines = text.splitlines()  # nothing opened yet: the launcher lists the apps
            assert lines[1] == "== Home ==" and "Clock" in lines[2:]

            # a wrong answer ends the episode with a failing verdict
            end = await client.call_tool("finish", {"answer": "no idea"})
            episode = end.structured_content["episode"]
            assert episode["over"] and episode["success"] is False
            # the task's answer criteria fail; "no idea" tells nothing false (grounded passes)
            told = {c["id"]: c["passed"] for c in episode["verdict"]["criteria"]}
            answers = [
                c["passed"] for c in episode["verdict"]["criteria"] if c["kind"] == "answer" and c["id"] != "grounded"
            ]
            assert told["grounded"] is True
            assert answers and not any(answers)
            after = await client.call_tool("clock__now", {})
            assert after.is_error and after.structured_content["error"] == "precondition_failed"
            verdict = json.loads((await client.read_resource("phoneenv://episode/verdict")).contents[0].text)
            assert verdict["over"] is True and verdict["success"] is False and verdict["steps"] == 3

            # episode__reset starts over; the reference plan then succeeds
            started = await client.call_tool("episode__reset", {"seed": 3})
            assert not started.is_error and started.structured_content["result"]["task_id"] == TASK
            refused = await client.call_tool("episode__reset", {"seed": "x"})
            assert refused.is_error and refused.structured_content["error"] == "invalid_arguments"
            info = json.loads((await client.read_resource("phoneenv://episode/task")).contents[0].text)
            assert info["step"] == 0 and info["over"] is False
            _check_success(await _play_reference(client))
            trace = Trace.model_validate_json((await client.read_resource("phoneenv://episode/trace")).contents[0].text)
            assert trace.seed == 3 and trace.verdict is not None and trace.verdict.success
            assert [s.action.name for s in trace.steps if s.action] == [c.name for c in task.reference_plan or []]
            text = (await client.read_resource("phoneenv://episode/screen.txt")).contents[0].text
            assert text.splitlines()[1] == "== Clock =="

            missing = None
            try:
                await client.read_resource("phoneenv://episode/nothing")
            except Exception as exc:  # the SDK raises its MCPError for a JSON-RPC error
                missing = exc
            assert missing is not None and "no resource" in str(missing)

    anyio.run(main)


def test_screen_image_block_for_a_tool_that_returns_the_screen() -> None:
    srv = EpisodeServer.for_task(TASK)
    shot = [s for s in srv.env.tool_specs if s.returns_image]
    if not shot:
        pytest.skip("no tool returns the screen in this suite")
    result = srv.call_tool(srv.to_mcp(shot[0].name), {})
    kinds = [c.type for c in result.content]
    assert kinds[0] == "text" and "image" in kinds
    srv.env.close()


# -- over stdio and streamable HTTP ------------------------------------------------------------


@pytest.mark.slow
def test_stdio_transport_with_trace_file(tmp_path: Path) -> None:
    trace_file = tmp_path / "out" / "trace.json"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "phoneenv", "mcp", "serve", "--task", TASK, "--seed", "7", "--trace", str(trace_file)],
        env=_env(),
        cwd=str(tmp_path),
    )

    async def main() -> list[Any]:
        async with Client(params, read_timeout_seconds=waiting.scaled(120)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"clock__world_time", "finish", "episode__reset"} <= names
            shot = (await client.read_resource("phoneenv://episode/screen.png")).contents[0]
            assert Image.open(io.BytesIO(base64.b64decode(shot.blob))).size == (360, 640)
            return await _play_reference(client)

    _check_success(anyio.run(main))
    trace = Trace.model_validate_json(trace_file.read_text(encoding="utf-8"))
    assert trace.task_id == TASK and trace.seed == 7 and trace.verdict is not None and trace.verdict.success


@pytest.mark.slow
def test_streamable_http_transport(tmp_path: Path) -> None:
    with serving_http(["--task", TASK], tmp_path) as (url, _):
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")

        async def main() -> list[Any]:
            async with Client(url, read_timeout_seconds=waiting.scaled(60)) as client:
                assert get_task(TASK).goal in (client.instructions or "")
                first = await _play_reference(client)
                again = await client.call_tool("episode__reset", {})
                assert not again.is_error
                return [first, await _play_reference(client)]

        first, second = anyio.run(main)
    _check_success(first)
    _check_success(second)


@contextlib.contextmanager
def serving_http(args: list[str], cwd: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``phoneenv mcp serve ARGS --transport http --port 0`` in a subprocess of this checkout:
    yields its URL (once it listens) and the process; stops it on exit."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "phoneenv", "mcp", "serve", *args, "--transport", "http", "--port", "0"],
        env={**os.environ, **_env()},
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield _wait_for_url(proc), proc
    finally:
        proc.terminate()
        proc.wait(timeout=waiting.scaled(30))
        if proc.stderr is not None:
            proc.stderr.close()


def _wait_for_url(proc: subprocess.Popen[str], timeout: float = 120.0) -> str:
    """The URL the server prints on stderr once it listens."""
    found: list[str] = []
    lines: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if " at http" in line:
                found.append(line.rsplit(" at ", 1)[1].strip())
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(waiting.scaled(timeout))
    assert found, f"no URL on stderr within {timeout} s (exit {proc.poll()}): {''.join(lines)[-2000:]}"
    return found[0]


@pytest.mark.slow
def test_cli_errors_are_one_line() -> None:
    out = waiting.run(
        [sys.executable, "-m", "phoneenv", "mcp", "serve", "--task", "no.such/0"],
        env={**os.environ, **_env()},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1
    assert "Traceback" not in out.stderr and "no.such/0" in out.stderr
    out = waiting.run(
        [sys.executable, "-m", "phoneenv", "mcp", "serve", "--task", TASK, "--transport", "carrier-pigeon"],
        env={**os.environ, **_env()},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1 and "--transport must be stdio or http" in out.stderr


def test_missing_sdk_is_one_line_naming_the_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['mcp'] = None  # the extra not installed\n"
        "from phoneenv.cli import app\n"
        f"app(['mcp', 'serve', '--task', {TASK!r}])\n"
    )
    out = waiting.run(
        [sys.executable, "-c", code], env={**os.environ, **_env()}, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 1
    lines = [x for x in out.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "phoneenv mcp serve needs the 'mcp' extra" in lines[0] and "pip install" in lines[0]
