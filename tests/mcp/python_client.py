"""The official MCP Python SDK as the client of examples/mcp_server.rs (tests/mcp_interop.rs).

usage: python_client.py stdio SERVER_BINARY WORKDIR
       python_client.py http URL [BEARER_TOKEN]

Lists the tools, calls `read` and `countdown` with valid arguments, `countdown` with invalid
ones, cancels a long `countdown` after two progress notifications, calls a tool that does not
exist, and prints one JSON report on standard output: `{"refused": ...}` when the server
refuses the connection.
"""

import json
import sys

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def content_texts(result):
    return [block.text for block in result.content if getattr(block, "type", None) == "text"]


async def main() -> None:
    report = {}
    try:
        await run(report)
    except Exception as error:
        if report:
            raise
        # Refused before anything was done (a server that wants a token): say how.
        while isinstance(error, BaseExceptionGroup):
            error = error.exceptions[0]
        report = {"refused": {"type": type(error).__name__, "code": getattr(error, "code", None), "message": str(error)}}
    print(json.dumps(report))


async def run(report) -> None:
    transport, target = sys.argv[1], sys.argv[2]
    if transport == "stdio":
        server = StdioServerParameters(command=target, args=["--dir", sys.argv[3]])
    elif len(sys.argv) > 3:
        token = sys.argv[3]
        http_client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        server = streamable_http_client(target, http_client=http_client)
    else:
        server = target
    async with Client(server) as client:
        report["protocolVersion"] = client.protocol_version
        listed = await client.list_tools()
        report["tools"] = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]

        read = await client.call_tool("read", {"path": "hello.txt"})
        report["read"] = {"isError": bool(read.is_error), "texts": content_texts(read)}

        progress = []

        async def on_progress(value, total, message):
            progress.append({"progress": value, "total": total, "message": message})

        valid = await client.call_tool("countdown", {"seconds": 0.3}, progress_callback=on_progress)
        report["valid"] = {"isError": bool(valid.is_error), "texts": content_texts(valid), "progress": progress}

        invalid = await client.call_tool("countdown", {"seconds": "soon"})
        report["invalid"] = {"isError": bool(invalid.is_error), "texts": content_texts(invalid)}

        seen = []
        two = anyio.Event()

        async def on_long_progress(value, total, message):
            seen.append(message)
            if len(seen) >= 2:
                two.set()

        async with anyio.create_task_group() as group:

            async def long_call():
                await client.call_tool("countdown", {"seconds": 30}, progress_callback=on_long_progress)

            group.start_soon(long_call)
            with anyio.fail_after(20):
                await two.wait()
            group.cancel_scope.cancel()
        report["cancelled"] = {"progress": seen}
        # Give the server time to see the cancellation, then check it still answers.
        await anyio.sleep(0.5)
        after = await client.call_tool("countdown", {"seconds": 0.1})
        report["afterCancel"] = {"isError": bool(after.is_error), "texts": content_texts(after)}

        try:
            await client.call_tool("no_such_tool", {})
            report["unknown"] = {"raised": False}
        except Exception as error:  # the SDK raises the JSON-RPC error
            report["unknown"] = {"raised": True, "type": type(error).__name__, "message": str(error)}


anyio.run(main)
