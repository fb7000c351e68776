#!/usr/bin/env node
// A tool-using agent in plain JavaScript (Node 20+, no npm packages), run by passhat once per trial:
//
//   passhat run refunds --agent cmd:"node examples/agents/node/agent.mjs"
//
// It talks to an OpenAI-compatible chat-completions endpoint (OPENAI_BASE_URL, OPENAI_API_KEY,
// OPENAI_MODEL) and to the trial only through passhat's documented protocol: the PASSHAT_* environment,
// the plain JSON tool API, the user endpoint, a bearer token on every request. It prints its final reply
// as the last line of stdout, {"reply": ..., "usage": ...}; everything else goes to stderr.

const STOP_TOKEN = "###DONE###";
const MAX_MODEL_CALLS = 50;

const start = JSON.parse(process.env.PASSHAT_START ?? "null");
if (!start) {
  console.error("PASSHAT_START is not set: this program is started by passhat (--agent cmd:...)");
  process.exit(2);
}
const auth = { authorization: `Bearer ${start.token}` };
const model = process.env.OPENAI_MODEL ?? "gpt-4o-mini";
const baseUrl = (process.env.OPENAI_BASE_URL ?? "https://api.openai.com/v1").replace(/\/$/, "");
// How long a tool may go unanswered: a production client gives up at some point, and passhat's planned
// timeouts and lost responses really withhold the answer; the start message suggests how long to wait.
const toolTimeoutS = Number(start.tool_timeout_s);

class TrialOver extends Error {}

const log = (...args) => console.error("[node-agent]", ...args);
const secondsLeft = () => Math.max(0.1, start.deadline - Date.now() / 1000);
const after = (seconds) => AbortSignal.timeout(Math.ceil(seconds * 1000)); // whole milliseconds only

async function passhat(url, { method = "GET", body, timeoutS = secondsLeft() } = {}) {
  const response = await fetch(url, {
    method,
    headers: { ...auth, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: after(timeoutS),
  });
  if (response.status === 410) throw new TrialOver("the trial is over");
  const data = await response.json();
  if (response.status === 409) throw new TrialOver(data.error ?? "a trial budget ran out");
  if (!response.ok) throw new Error(`passhat answered ${response.status} to ${url}: ${JSON.stringify(data)}`);
  return data;
}

// A tool result as text for the model: the JSON of a success, "ERROR: ..." for a failure (the same text
// passhat's in-process agents give their models).
async function callTool(name, rawArguments) {
  let args;
  try {
    args = rawArguments?.trim() ? JSON.parse(rawArguments) : {};
  } catch {
    return `ERROR: invalid arguments: not JSON: ${rawArguments}`;
  }
  try {
    const answer = await passhat(`${start.tools_url}/${encodeURIComponent(name)}`, { method: "POST", body: args, timeoutS: toolTimeoutS });
    return answer.ok ? JSON.stringify(answer.result) : `ERROR: ${answer.error}`;
  } catch (error) {
    if (error.name === "TimeoutError") return `ERROR: timeout: no response from ${name} after ${toolTimeoutS}s`;
    throw error;
  }
}

async function askUser(text) {
  const { reply } = await passhat(start.user_url, { method: "POST", body: { text } });
  return reply; // null: the user has left
}

const usage = { model, input_tokens: 0, output_tokens: 0 };

async function complete(messages, tools) {
  const response = await fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${process.env.OPENAI_API_KEY ?? "none"}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages, tools, seed: start.seed }),
    signal: after(secondsLeft()),
  });
  const data = await response.json();
  if (!response.ok) throw new Error(`model answered ${response.status}: ${data.error?.message ?? JSON.stringify(data)}`);
  usage.input_tokens += data.usage?.prompt_tokens ?? 0;
  usage.output_tokens += data.usage?.completion_tokens ?? 0;
  return data.choices[0].message;
}

async function run() {
  // The policy is left out of the environment when it is very long; the trial URL always has it.
  const policy = start.policy ?? (await passhat(start.trial_url)).policy;
  const { tools } = await passhat(start.tools_url);
  const specs = tools.map(({ name, description, parameters }) => ({ type: "function", function: { name, description, parameters } }));
  const messages = [
    { role: "system", content: `Follow this policy exactly. Use the tools; never invent ids or amounts. End your final message to the user with ${STOP_TOKEN}.\n\n${policy}` },
    { role: "user", content: start.instruction },
  ];
  for (let i = 0; i < MAX_MODEL_CALLS; i++) {
    const message = await complete(messages, specs);
    messages.push(message);
    for (const call of message.tool_calls ?? []) {
      const content = await callTool(call.function.name, call.function.arguments);
      log(call.function.name, call.function.arguments, "->", content.slice(0, 120));
      messages.push({ role: "tool", tool_call_id: call.id, content });
    }
    const text = (message.content ?? "").replace(STOP_TOKEN, "").trim();
    if (message.content?.includes(STOP_TOKEN)) return text || null;
    if (message.tool_calls?.length) continue;
    if (!text) return null;
    const answer = await askUser(text);
    if (answer === null) return null;
    messages.push({ role: "user", content: answer });
  }
  throw new Error(`no final answer after ${MAX_MODEL_CALLS} model calls`);
}

let reply = null;
try {
  reply = await run();
} catch (error) {
  if (!(error instanceof TrialOver)) throw error; // a crash: non-zero exit, the stack trace on stderr
  log(error.message);
}
console.log(JSON.stringify({ reply, usage }));
