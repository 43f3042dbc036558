-- wrk: every request is one `tools/call` of the trivial tool, in the sessions $SESSIONS
-- (comma-separated) taken in turn: one per client, as many clients as connections.
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"countdown","arguments":{"seconds":0}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-06-18"

local sessions = {}
for session in string.gmatch(os.getenv("SESSIONS"), "[^,]+") do
  table.insert(sessions, session)
end
local next_session = 0

function request()
  next_session = next_session % #sessions + 1
  wrk.headers["Mcp-Session-Id"] = sessions[next_session]
  return wrk.format()
end
