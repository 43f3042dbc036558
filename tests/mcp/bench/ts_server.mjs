// The official TypeScript SDK's McpServer (@modelcontextprotocol/sdk, pinned in
// ../package.json) serving one trivial tool over streamable HTTP with sessions, for
// run.sh's side-by-side load test.
//
// usage: node ts_server.mjs NODE_MODULES PORT

import http from "node:http";
import { randomUUID } from "node:crypto";

const [modules, port] = process.argv.slice(2);
const sdk = `${modules}/@modelcontextprotocol/sdk/dist/esm`;
const { McpServer } = await import(`${sdk}/server/mcp.js`);
const { StreamableHTTPServerTransport } = await import(`${sdk}/server/streamableHttp.js`);
const { isInitializeRequest } = await import(`${sdk}/types.js`);
const { z } = await import(`${modules}/zod/index.js`);

const transports = new Map();

function newServer() {
  const server = new McpServer({ name: "bench", version: "1.0.0" });
  server.registerTool(
    "countdown",
    { description: "Count down from seconds.", inputSchema: { seconds: z.number() } },
    async ({ seconds }) => ({ content: [{ type: "text", text: `counted down from ${seconds} s` }] }),
  );
  return server;
}

http
  .createServer(async (req, res) => {
    let body;
    if (req.method === "POST") {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    }
    const session = req.headers["mcp-session-id"];
    let transport = session && transports.get(session);
    if (!transport && req.method === "POST" && isInitializeRequest(body)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      await newServer().connect(transport);
    }
    if (!transport) {
      res.writeHead(404).end("Session not found");
      return;
    }
    await transport.handleRequest(req, res, body);
  })
  .listen(Number(port), "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${port}/mcp`));
