"""A small third-party-style MCP server (the SDK's ``MCPServer``) the MCP client tests start:
a checklist seeded with two items, kept in memory (fresh per process).

    python checklist_server.py            # stdio
    python checklist_server.py --http     # streamable HTTP on 127.0.0.1, a free port; prints the URL on stderr
"""

from __future__ import annotations

import os
import socket
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("checklist")
ITEMS: dict[int, dict[str, object]] = {
    1: {"id": 1, "text": "call the plumber", "done": False},
    2: {"id": 2, "text": "pay rent", "done": True},
}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def list_items() -> dict[str, object]:
    """List every item of the checklist, with its id, text and whether it is done."""
    return {"items": [ITEMS[k] for k in sorted(ITEMS)], "count": len(ITEMS)}


@server.tool()
def add_item(text: str) -> dict[str, object]:
    """Add an item to the checklist.

    Args:
        text: What to do.
    """
    new = max(ITEMS, default=0) + 1
    ITEMS[new] = {"id": new, "text": text, "done": False}
    return ITEMS[new]


@server.tool(name="complete-item", annotations=ToolAnnotations(destructive_hint=True))
def complete_item(item_id: int) -> str:
    """Mark an item done (answers in plain text).

    Args:
        item_id: The item's id.
    """
    if item_id not in ITEMS:
        raise ToolError(f"no item {item_id}")
    ITEMS[item_id]["done"] = True
    return f"item {item_id} done"


if os.environ.get("CHECKLIST_FAULTS"):  # tools that fail the way servers do: a crash, a hang

    @server.tool()
    def crash() -> str:
        """Exit the server process at once."""
        os._exit(3)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def slow(seconds: float) -> str:
        """Answer after a while.

        Args:
            seconds: How long to wait.
        """
        time.sleep(seconds)
        return "done"


def main() -> None:
    if "--http" not in sys.argv:
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"checklist at http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
