"""The official MCP Python SDK approving and denying the calls of a tool that needs approval,
served by our McpServer (tests/mcp_interop.rs).

usage: approval_client.py URL TOOL

Over 2025-11-25 the server asks with an elicitation request while the call waits: approved
once, declined once. Over 2026-07-28 it answers with an InputRequiredResult, and the retries
are driven by hand: an approval sent before the question, a tampered requestState, a denial,
an approval, the same approval replayed, and one state sent twice at once. Prints one JSON
report of what each step got.
"""

import json
import sys

import anyio
from mcp import Client, types

ARGS = {"n": 7}


def outcome(result):
    """A step's result as the report shows it."""
    if isinstance(result, types.InputRequiredResult):
        return {"inputRequired": sorted((result.input_requests or {}).keys()), "state": bool(result.request_state)}
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    return {"isError": bool(result.is_error), "texts": texts}


def answer(approve):
    return types.ElicitResult(action="accept", content={"approve": approve})


async def legacy(url, tool, report):
    """2025-11-25: the server asks over the connection while the call waits."""
    decisions = iter([answer(True), types.ElicitResult(action="decline")])
    asked = []

    async def on_elicit(context, params):
        asked.append(params.message)
        return next(decisions)

    async with Client(url, mode="legacy", elicitation_callback=on_elicit) as client:
        report["legacyProtocol"] = client.protocol_version
        report["legacyApproved"] = outcome(await client.call_tool(tool, ARGS))
        report["legacyDeclined"] = outcome(await client.call_tool(tool, ARGS))
    report["legacyAsked"] = asked


async def modern(url, tool, report):
    """2026-07-28: each question ends the call; the retries carry the answers and the state."""

    async def on_elicit(context, params):
        raise AssertionError("2026-07-28 asks in results, never in requests")

    async with Client(url, mode="2026-07-28", elicitation_callback=on_elicit) as client:
        session = client.session

        async def call(responses=None, state=None):
            try:
                result = await session.call_tool(
                    tool, ARGS, input_responses=responses, request_state=state, allow_input_required=True
                )
                return outcome(result), result
            except Exception as error:  # the JSON-RPC error, as the SDK raises it
                return {"error": str(error)}, None

        first, asked = await call()
        report["asked"] = first
        report["preAnswered"], _ = await call({"approval": answer(True)})

        state = asked.request_state
        flipped = "A" if state[-5] != "A" else "B"
        report["tampered"], _ = await call({"approval": answer(True)}, state[:-5] + flipped + state[-4:])

        _, denied = await call()
        report["denied"], _ = await call({"approval": types.ElicitResult(action="decline")}, denied.request_state)

        _, approved = await call()
        report["approved"], _ = await call({"approval": answer(True)}, approved.request_state)
        report["replayed"], _ = await call({"approval": answer(True)}, approved.request_state)

        _, raced = await call()
        both = []

        async def race():
            got, _ = await call({"approval": answer(True)}, raced.request_state)
            both.append(got)

        async with anyio.create_task_group() as group:
            group.start_soon(race)
            group.start_soon(race)
        report["raced"] = both


async def main():
    url, tool = sys.argv[1], sys.argv[2]
    report = {}
    await legacy(url, tool, report)
    await modern(url, tool, report)
    print(json.dumps(report))


anyio.run(main)
