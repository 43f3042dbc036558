-- wrk: every request is one `tools/call` of the trivial tool. Each wrk thread is one client
-- with one connection and its own session, taken from $SESSIONS (comma-separated): run with
-- as many threads as connections and sessions.
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"countdown","arguments":{"seconds":0}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-06-18"

local sessions = {}
for session in string.gmatch(os.getenv("SESSIONS"), "[^,]+") do
  table.insert(sessions, session)
end
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("session", sessions[threads])
end

function init(args)
  wrk.headers["Mcp-Session-Id"] = session
end
