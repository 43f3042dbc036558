"""The official Python SDK's MCPServer (FastMCP before mcp 2; pinned in
../requirements.txt) serving one trivial tool over streamable HTTP, for run.sh's
side-by-side load test.

usage: python py_server.py PORT
"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench")


@server.tool()
def countdown(seconds: float) -> str:
    """Count down from seconds."""
    return f"counted down from {seconds:g} s"


server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]), max_sessions=None)
