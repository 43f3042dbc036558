// The official MCP TypeScript SDK (@modelcontextprotocol/sdk, pinned in package.json) as a
// client of examples/mcp_server.rs behind a load balancer (tests/mcp_interop.rs).
//
// usage: node ts_client.mjs SDK_DIR URL TOKEN calls CLIENTS CALLS_EACH
//        node ts_client.mjs SDK_DIR URL TOKEN kill CLIENTS
//
// `calls`: CLIENTS clients, each with its own session, make CALLS_EACH calls (`read` and a
// short `countdown` with progress), then one long `countdown` cancelled after two progress
// notifications, then one more call. `kill`: CLIENTS clients each start a 3-second
// `countdown`; "started" is printed once all report progress (the test then kills an
// instance), and each call's outcome is reported when it settles. One JSON report on the
// last line of standard output.

const [sdk, url, token, mode, clients, each] = process.argv.slice(2);
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${sdk}/dist/esm/client/streamableHttp.js`);

async function connect(name) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(transport);
  return client;
}

const texts = (result) => result.content.filter((b) => b.type === "text").map((b) => b.text);

async function calls(index) {
  const client = await connect(`ts-${index}`);
  const report = { sessionInstance: client.transport.sessionId?.split(".")[0], ok: 0, failed: [] };
  const tools = await client.listTools();
  report.tools = tools.tools.map((t) => t.name);
  for (let i = 0; i < Number(each); i++) {
    try {
      if (i % 2 === 0) {
        const read = await client.callTool({ name: "read", arguments: { path: "hello.txt" } });
        if (read.isError || texts(read).join("") !== "hello from a file\n") throw new Error(JSON.stringify(read));
      } else {
        const progress = [];
        const done = await client.callTool(
          { name: "countdown", arguments: { seconds: 0.2 } },
          undefined,
          { onprogress: (p) => progress.push(p.message) },
        );
        if (done.isError || progress.length < 1) throw new Error(JSON.stringify({ done, progress }));
      }
      report.ok += 1;
    } catch (error) {
      report.failed.push(String(error));
    }
  }
  // A long countdown, cancelled after two progress notifications.
  const controller = new AbortController();
  const seen = [];
  const long = client
    .callTool({ name: "countdown", arguments: { seconds: 30 } }, undefined, {
      signal: controller.signal,
      onprogress: (p) => {
        seen.push(p.message);
        if (seen.length === 2) controller.abort("enough");
      },
    })
    .then(() => "finished", (error) => `rejected: ${error}`);
  report.cancelled = { outcome: await long, progress: seen };
  await new Promise((resolve) => setTimeout(resolve, 500));
  const after = await client.callTool({ name: "countdown", arguments: { seconds: 0.1 } });
  report.afterCancel = { isError: Boolean(after.isError), texts: texts(after) };
  await client.close();
  return report;
}

async function kill(count) {
  const started = [];
  const outcomes = [];
  for (let i = 0; i < count; i++) {
    const client = await connect(`ts-kill-${i}`);
    const instance = client.transport.sessionId?.split(".")[0];
    let progressed;
    const first = new Promise((resolve) => (progressed = resolve));
    const began = Date.now();
    outcomes.push(
      client
        .callTool({ name: "countdown", arguments: { seconds: 3 } }, undefined, {
          onprogress: () => progressed(),
          timeout: 20000,
        })
        .then(
          (result) => ({ instance, outcome: result.isError ? `error result: ${texts(result)}` : "ok" }),
          (error) => ({ instance, outcome: `rejected: ${error}` }),
        )
        .then((outcome) => ({ ...outcome, seconds: (Date.now() - began) / 1000 })),
    );
    started.push(first);
  }
  await Promise.all(started);
  console.log("started");
  return { calls: await Promise.all(outcomes) };
}

let report;
if (mode === "calls") {
  report = { clients: await Promise.all(Array.from({ length: Number(clients) }, (_, i) => calls(i))) };
} else {
  report = await kill(Number(clients));
}
console.log(JSON.stringify(report));
process.exit(0);
