"""The MCP server the tests start (``tests/agent/mcp_probe_server.py``), and whether a process still runs."""

from __future__ import annotations

import os
from pathlib import Path

PROBE_SERVER = str(Path(__file__).resolve().parent / "agent" / "mcp_probe_server.py")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
