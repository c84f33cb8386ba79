// An agent's MCP client, the official TypeScript SDK, against a robot's
// MCP server (docs/mcp.md). Driven by the Go tests (tests/system).
//
//   node mcp-client.mjs URL TOKEN list
//   node mcp-client.mjs URL TOKEN call NAME '{"arg": 1}'
//
// TOKEN "-" sends none. Prints one JSON line per result: the tools'
// names, or a call's content (an image's data shortened to its length);
// a refused connection prints {"error": ...} and exits 2, a request the
// server answers with an error (a tool it does not have) {"error": ...}
// and exits 3.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, what, name, args] = process.argv.slice(2);
const headers = token && token !== "-" ? { Authorization: `Bearer ${token}` } : {};
const client = new Client({ name: "chorus-node-agent", version: "1.0.0" });
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
} catch (err) {
  console.log(JSON.stringify({ error: String(err && err.message || err) }));
  process.exit(2);
}
try {
  if (what === "list") {
    const { tools } = await client.listTools();
    console.log(JSON.stringify({ tools: tools.map((t) => ({ name: t.name, title: t.annotations?.title ?? "", readOnly: t.annotations?.readOnlyHint ?? null })) }));
  } else if (what === "call") {
    const res = await client.callTool({ name, arguments: args ? JSON.parse(args) : {} });
    const content = res.content.map((c) => (c.type === "image" ? { type: "image", mimeType: c.mimeType, bytes: c.data.length } : c));
    console.log(JSON.stringify({ isError: !!res.isError, content }));
  } else {
    throw new Error(`want list or call, got ${what}`);
  }
} catch (err) {
  console.log(JSON.stringify({ error: String(err && err.message || err) }));
  process.exitCode = 3;
} finally {
  await client.close();
}
