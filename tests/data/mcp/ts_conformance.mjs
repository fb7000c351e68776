// The official TypeScript MCP SDK (examples/agents/node_mcp's pinned copy) against one trial's MCP URL:
// initialize (with its protocol-version negotiation), tools/list, tools/call (a result, a tool's error, invalid
// arguments, an unknown tool), ping. Prints what it saw as one JSON line; tests/serve/test_mcp_stateless.py
// runs it with MCP_URL and MCP_TOKEN set.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
  requestInit: { headers: { authorization: `Bearer ${process.env.MCP_TOKEN}` } },
});
const client = new Client({ name: "passhat-conformance", version: "1.0.0" });
const errors = [];
transport.onerror = (error) => errors.push(String(error));
await client.connect(transport);
const text = (result) => result.content.filter((b) => b.type === "text").map((b) => b.text).join("\n");
const { tools } = await client.listTools();
const order = await client.callTool({ name: "get_order", arguments: { order_id: 4812 } });
const unknown = await client.callTool({ name: "no_such_tool", arguments: {} });
const invalid = await client.callTool({ name: "get_order", arguments: { order_id: "not a number" } });
await client.ping();
console.log(JSON.stringify({
  protocolVersion: transport.protocolVersion,
  server: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
  tools: tools.map((t) => t.name),
  order: { isError: order.isError ?? false, structured: order.structuredContent, text: text(order) },
  unknown: { isError: unknown.isError, text: text(unknown) },
  invalid: { isError: invalid.isError, text: text(invalid) },
  transportErrors: errors,
}));
await client.close();
