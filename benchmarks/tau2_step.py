"""τ²-bench's step, timed in rounds that ``bench_sandbox.py`` asks for: the baseline its step rows
are compared with where τ²-bench is installed.

Run by ``bench_sandbox.py`` under the interpreter that has τ²-bench (``--tau2-python``, or the
``TAU2_PYTHON`` environment variable); not meant to be run by hand. It needs the ``tau2``
package and its retail domain's data (``data/tau2/domains/retail``, found by ``tau2`` itself).

One step is what τ²-bench's orchestrator does with an agent's tool call: the call's JSON text
decoded (``json.loads``), made a ``ToolCall``, and answered by the retail domain's
``Environment.get_response`` (the tool run, its result or error turned into the
``ToolMessage``'s text). The three calls are those ``bench_sandbox.py`` makes of phoneenv:

- read: ``get_user_details`` of a user the database holds;
- not found: ``get_user_details`` of a user id no user has (the tool raises; the message is
  ``"Error: User not found"``);
- unknown tool: the names the parent sends (one-edit typos of the domain's tool names, a fresh
  one each step).

Protocol (JSON lines): on start, ``{"ready": true, "tools": [names]}``; then for each request
``{"kind": "read" | "not_found" | "unknown", "n": N, "actions": [texts]}`` (``actions`` only for
``unknown``) one answer ``{"rate": steps per second}`` (the process's CPU time,
``time.process_time``, over the N steps of the request). EOF ends it.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time


def main() -> None:
    with contextlib.suppress(ImportError):  # τ²-bench logs every response at debug level
        from loguru import logger

        logger.remove()
    from tau2.data_model.message import ToolCall
    from tau2.domains.retail.environment import get_environment

    env = get_environment()
    tools = env.get_tools()
    names = sorted(tools) if isinstance(tools, dict) else sorted(t.name for t in tools)
    user = next(iter(env.tools.db.users))
    fixed = {
        "read": json.dumps({"name": "get_user_details", "arguments": {"user_id": user}}),
        "not_found": json.dumps({"name": "get_user_details", "arguments": {"user_id": "nobody_0000"}}),
    }

    def step(text: str) -> object:
        call = json.loads(text)
        return env.get_response(ToolCall(id="call_1", name=call["name"], arguments=call["arguments"]))

    print(json.dumps({"ready": True, "tools": names}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        n = int(req["n"])
        actions = req.get("actions") or [fixed[req["kind"]]]
        texts = [actions[i % len(actions)] for i in range(n)]
        t0 = time.process_time()
        for text in texts:
            step(text)
        print(json.dumps({"rate": n / (time.process_time() - t0)}), flush=True)


if __name__ == "__main__":
    main()
