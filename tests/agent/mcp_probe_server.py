"""An MCP server for the tests, written with the official SDK; run as a script, it speaks stdio.

``PROBE_HANG_AT_START=1`` makes it hang before it serves, as a broken server does; ``PROBE_STARTED=<path>``
makes it write its process id there once it starts.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer

if os.environ.get("PROBE_STARTED"):
    with open(os.environ["PROBE_STARTED"], "w") as marker:
        marker.write(str(os.getpid()))

if os.environ.get("PROBE_HANG_AT_START"):
    print("probe: waiting forever", file=sys.stderr, flush=True)
    time.sleep(3600)

server = MCPServer("probe")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool()
def big(megabytes: int) -> str:
    """Answer this many megabytes of text."""
    return "x" * (megabytes * 1_000_000)


@server.tool()
def crash() -> str:
    """Die in the middle of the call."""
    os._exit(3)


@server.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":  # streamable HTTP on 127.0.0.1:<port>
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
