#!/usr/bin/env node
// A tool-using agent on the official TypeScript MCP SDK (Node 20+), run by passhat once per trial:
//
//   npm install --prefix examples/agents/node_mcp        # once: the SDK, pinned in package.json
//   passhat run refunds --agent cmd:"node examples/agents/node_mcp/agent.mjs"
//
// Its tools are the trial's MCP server (StreamableHTTPClientTransport with the trial's URL and bearer
// token), listed once; it asks the user through the MCP tool send_message_to_user. The model is any
// OpenAI-compatible chat-completions endpoint (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL). The final
// reply goes to stdout as {"reply": ..., "usage": ...}; everything else to stderr.
//
// One choice differs from the SDK's defaults, and a fault case needs it (docs/agents.md, "Recipes"): the
// per-request `timeout` of callTool is the start message's tool_timeout_s, not the SDK's 60 s, so a
// withheld answer (a planned timeout, a response lost after a write) becomes a timeout error the model
// can act on instead of a minute's wait that passhat's time limit ends first. The error reaches the model
// as "ERROR: <message>", as it does for a tool's own error (isError), so that it can tell a write that may
// have happened from one that was refused.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const STOP_TOKEN = "###DONE###";
const MAX_MODEL_CALLS = 50;

const start = JSON.parse(process.env.PASSHAT_START ?? "null");
if (!start) {
  console.error("PASSHAT_START is not set: this program is started by passhat (--agent cmd:...)");
  process.exit(2);
}
const model = process.env.OPENAI_MODEL ?? "gpt-4o-mini";
const baseUrl = (process.env.OPENAI_BASE_URL ?? "https://api.openai.com/v1").replace(/\/$/, "");
const toolTimeoutMs = Math.ceil(Number(start.tool_timeout_s) * 1000);
const secondsLeft = () => Math.max(0.1, start.deadline - Date.now() / 1000);
const usage = { model, input_tokens: 0, output_tokens: 0 };

async function complete(messages, tools) {
  const response = await fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${process.env.OPENAI_API_KEY ?? "none"}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages, tools, seed: start.seed }),
    signal: AbortSignal.timeout(Math.ceil(secondsLeft() * 1000)),
  });
  const data = await response.json();
  if (!response.ok) throw new Error(`model answered ${response.status}: ${data.error?.message ?? JSON.stringify(data)}`);
  usage.input_tokens += data.usage?.prompt_tokens ?? 0;
  usage.output_tokens += data.usage?.completion_tokens ?? 0;
  return data.choices[0].message;
}

// A tool result as text for the model: the text of a success, "ERROR: ..." for a tool's error or a call
// that failed (timed out, refused).
async function callTool(client, name, rawArguments) {
  let args;
  try {
    args = rawArguments?.trim() ? JSON.parse(rawArguments) : {};
  } catch {
    return `ERROR: invalid arguments: not JSON: ${rawArguments}`;
  }
  try {
    const result = await client.callTool({ name, arguments: args }, undefined, { timeout: toolTimeoutMs });
    const text = result.content.filter((block) => block.type === "text").map((block) => block.text).join("\n");
    return result.isError ? `ERROR: ${text}` : text;
  } catch (error) {
    return `ERROR: ${error.message}`;
  }
}

async function run(client) {
  // The policy is left out of the environment when it is very long; the trial URL always has it.
  const policy = start.policy ?? (await (await fetch(start.trial_url, { headers: { authorization: `Bearer ${start.token}` } })).json()).policy;
  const { tools } = await client.listTools();
  const specs = tools.map(({ name, description, inputSchema }) => ({ type: "function", function: { name, description, parameters: inputSchema } }));
  const messages = [
    { role: "system", content: `Follow this policy exactly. Use the tools; never invent ids or amounts. Ask the user with send_message_to_user when you need something. End your final answer with ${STOP_TOKEN}.\n\n${policy}` },
    { role: "user", content: start.instruction },
  ];
  for (let i = 0; i < MAX_MODEL_CALLS; i++) {
    const message = await complete(messages, specs);
    messages.push(message);
    if (!message.tool_calls?.length) return (message.content ?? "").replace(STOP_TOKEN, "").trim() || null;
    for (const call of message.tool_calls) {
      const content = await callTool(client, call.function.name, call.function.arguments);
      console.error("[node-mcp-agent]", call.function.name, call.function.arguments, "->", content.slice(0, 120));
      messages.push({ role: "tool", tool_call_id: call.id, content });
    }
  }
  throw new Error(`no final answer after ${MAX_MODEL_CALLS} model calls`);
}

const client = new Client({ name: "passhat-example-node-mcp", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(start.mcp_url), {
  requestInit: { headers: { authorization: `Bearer ${start.token}` } },
});
await client.connect(transport);
let reply;
try {
  reply = await run(client);
} finally {
  await client.close();
}
console.log(JSON.stringify({ reply, usage }));
