"""An MCP server written with the official Python SDK whose tool list changes at run time
(tests/mcp_interop.rs): `add_second` registers the tool `second` and sends
`notifications/tools/list_changed`. Serves stdio."""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("changing")


def second(text: str) -> str:
    """The tool added at run time."""
    return f"second: {text}"


@server.tool()
async def add_second(ctx: Context) -> str:
    """Add the tool `second` and tell the client the list changed."""
    server.add_tool(second)
    await ctx.session.send_tool_list_changed()
    return "added"


server.run()
