// Drives `toolhost serve` with the official TypeScript MCP client
// (@modelcontextprotocol/client, pinned in tests/common/ts_client.rs) on a 2025-11-25
// session (`legacy`) or pinned to 2026-07-28 (`versionNegotiation: { pin }`), over stdio or
// streamable HTTP; prints one JSON object per step for tests/mcp_typescript.rs.
//
// usage: node ts_client.mjs TRANSPORT(stdio|http) MODE(legacy|2026-07-28) TOOLHOST WORKDIR SPEC_JSON
//
// SPEC_JSON: {
//   "serve_args": [...],                  extra `serve` arguments (e.g. "--watch")
//   "elicitation": [answer, ...] | null   scripted form answers in order ({"action", "content"?});
//                                          null: the client does not declare elicitation
//   "roots": [uri, ...] | null            null: the client does not declare roots
//   "tasks": true                         the client declares io.modelcontextprotocol/tasks
//   "steps": [
//     {"name", "call": TOOL, "args"?}            -> {"step", "ok", "text", "asked"}
//     {"name", "list_changed": FILE, "content"}  writes FILE (relative to WORKDIR) once a
//          subscription is open (2026: subscriptions/listen; 2025: the session's
//          notification), waits for tools/list_changed -> {"step", "honored"?, "tools"}
//     {"name", "cancel": TOOL, "args"?}          calls TOOL, aborts the call at its first
//          progress notification, then calls "ping" -> {"step", "aborted", "after"}
//     {"name", "request": METHOD, "params"?}     one of resources/list, resources/templates/list,
//          resources/read, prompts/list, prompts/get, completion/complete through the
//          client's own method (it checks the answer's shape) -> {"step", "result"}
//     {"name", "updated": FILE, "content", "uri"}  subscribes to URI (2026:
//          subscriptions/listen with resourceSubscriptions; 2025: resources/subscribe),
//          writes FILE, waits for resources/updated -> {"step", "honored"?, "uri"}
//     {"name", "task": TOOL, "args"?, "then": "poll" | "cancel"}
//          a task-augmented tools/call, then tasks/get until the task ends ("poll") or
//          tasks/cancel and tasks/get ("cancel") -> {"step", "created", "final"}
//   ]}
// Every line also carries the client's reported errors so far ("errors"), e.g. the SDK's
// "Received a response for an unknown message ID".
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { spawn } from "node:child_process";

const [transportKind, mode, binary, workdir, specText] = process.argv.slice(2);
const spec = JSON.parse(specText);
const TASKS = "io.modelcontextprotocol/tasks";
const errors = [];
let asked = [];

// A StandardSchemaV1 that accepts any object: the Tasks extension's results are not in the
// SDK's method table, so `client.request` needs a schema of its own for them.
const anyResult = {
  "~standard": { version: 1, vendor: "toolhost-tests", validate: (value) => ({ value }) },
};

function serveArgs(extra) {
  // --no-library: only the test's own tools (the shipped library would add its own).
  return ["--no-library", "--cache-dir", join(workdir, "cache"), "serve", ...extra];
}

/** Starts `serve --http` on a free port; resolves with [url, child]. */
function startHttp(extra) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, serveArgs(["--http", "127.0.0.1:0", ...extra]), {
      cwd: workdir,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let seen = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      seen += chunk;
      const found = seen.match(/serving MCP at (\S+)\r?\n/);
      if (found) resolve([found[1], child]);
    });
    child.on("exit", (code) => reject(new Error(`the server exited (${code}):\n${seen}`)));
  });
}

function capabilities() {
  const caps = {};
  if (spec.elicitation != null) caps.elicitation = { form: {} };
  if (spec.roots != null) caps.roots = { listChanged: true };
  if (spec.tasks) caps.extensions = { [TASKS]: {} };
  return caps;
}

function makeClient() {
  const options = { capabilities: capabilities() };
  if (mode !== "legacy") options.versionNegotiation = { mode: { pin: mode } };
  const client = new Client({ name: "toolhost-ts-tests", version: "1.0.0" }, options);
  client.onerror = (error) => errors.push(String(error?.message ?? error));
  const answers = [...(spec.elicitation ?? [])];
  if (spec.elicitation != null) {
    client.setRequestHandler("elicitation/create", async (request) => {
      asked.push(request.params.message);
      const answer = answers.shift() ?? { action: "cancel" };
      return answer.content === undefined ? { action: answer.action } : answer;
    });
  }
  if (spec.roots != null) {
    client.setRequestHandler("roots/list", async () => ({
      roots: spec.roots.map((uri, i) => ({ uri, name: `root${i}` })),
    }));
  }
  return client;
}

function text(result) {
  return (result.content ?? []).map((block) => block.text ?? "").join("");
}

function emit(out) {
  console.log(JSON.stringify({ ...out, errors: [...errors] }));
}

/** Resolves at the next `notifications/tools/list_changed`. */
function nextListChanged(client) {
  return new Promise((resolve) => {
    client.setNotificationHandler("notifications/tools/list_changed", () => resolve());
  });
}

async function listChanged(client, step) {
  const changed = nextListChanged(client);
  const out = { step: step.name };
  let subscription = null;
  if (mode !== "legacy") {
    subscription = await client.listen({ toolsListChanged: true });
    out.honored = subscription.honoredFilter;
  }
  writeFileSync(join(workdir, step.list_changed), step.content);
  await changed;
  out.tools = (await client.listTools({}, { cacheMode: "bypass" })).tools.map((t) => t.name);
  // The subscription ends with the client. Not `subscription.close()`: over HTTP the client
  // (2.4.0) posts its `notifications/cancelled` without an `Mcp-Method` header, which rmcp
  // refuses with -32020 (docs/mcp-server.md, "Known upstream behaviour").
  void subscription;
  return out;
}

/** The client's own method for each resources/prompts/completion request. */
function request(client, step) {
  const params = step.params ?? {};
  const methods = {
    "resources/list": () => client.listResources(params),
    "resources/templates/list": () => client.listResourceTemplates(params),
    "resources/read": () => client.readResource(params),
    "prompts/list": () => client.listPrompts(params),
    "prompts/get": () => client.getPrompt(params),
    "completion/complete": () => client.complete(params),
  };
  const method = methods[step.request];
  if (!method) throw new Error(`unknown request ${step.request}`);
  return method();
}

async function updated(client, step) {
  const arrived = new Promise((resolve) => {
    client.setNotificationHandler("notifications/resources/updated", (n) =>
      resolve(n.params.uri),
    );
  });
  const out = { step: step.name };
  if (mode !== "legacy") {
    const subscription = await client.listen({ resourceSubscriptions: [step.uri] });
    out.honored = subscription.honoredFilter;
  } else {
    await client.subscribeResource({ uri: step.uri });
  }
  writeFileSync(join(workdir, step.updated), step.content);
  out.uri = await arrived;
  return out;
}

async function cancel(client, step) {
  const controller = new AbortController();
  let aborted = "";
  try {
    await client.callTool(
      { name: step.cancel, arguments: step.args ?? {} },
      { signal: controller.signal, onprogress: () => controller.abort("the test cancels") },
    );
    aborted = "completed";
  } catch (error) {
    aborted = controller.signal.aborted ? "aborted" : `failed: ${error?.message ?? error}`;
  }
  // A later call's answer arrives after any answer the server sent for the cancelled id.
  const after = text(await client.callTool({ name: "ping", arguments: {} }));
  return { step: step.name, aborted, after };
}

async function task(client, step) {
  const created = await client.request(
    { method: "tools/call", params: { name: step.task, arguments: step.args ?? {} } },
    anyResult,
  );
  const out = { step: step.name, created };
  if (!created.taskId) return out;
  const get = () =>
    client.request({ method: "tasks/get", params: { taskId: created.taskId } }, anyResult);
  if (step.then === "cancel") {
    out.cancel = await client.request(
      { method: "tasks/cancel", params: { taskId: created.taskId } },
      anyResult,
    );
    out.final = await get();
    return out;
  }
  // Polls as the task's own pollIntervalMs says, under a generous liveness bound.
  for (let i = 0; i < 600; i++) {
    const got = await get();
    if (!["working", "input_required"].includes(got.status)) {
      out.final = got;
      return out;
    }
    await new Promise((r) => setTimeout(r, created.pollIntervalMs ?? 100));
  }
  throw new Error(`task ${created.taskId} did not end`);
}

async function main() {
  const extra = spec.serve_args ?? [];
  let server = null;
  let transport;
  if (transportKind === "stdio") {
    transport = new StdioClientTransport({
      command: binary,
      args: serveArgs(extra),
      cwd: workdir,
      stderr: "ignore",
    });
  } else {
    const [url, child] = await startHttp(extra);
    server = child;
    transport = new StreamableHTTPClientTransport(new URL(url));
  }
  const client = makeClient();
  try {
    await client.connect(transport);
    for (const step of spec.steps) {
      asked = [];
      let out;
      try {
        if (step.call) {
          const result = await client.callTool({ name: step.call, arguments: step.args ?? {} });
          out = { step: step.name, ok: !result.isError, text: text(result) };
        } else if (step.list_changed) {
          out = await listChanged(client, step);
        } else if (step.request) {
          out = { step: step.name, result: await request(client, step) };
        } else if (step.updated) {
          out = await updated(client, step);
        } else if (step.cancel) {
          out = await cancel(client, step);
        } else if (step.task) {
          out = await task(client, step);
        } else {
          throw new Error(`unknown step ${JSON.stringify(step)}`);
        }
      } catch (error) {
        out = { step: step.name, error: { code: error?.code, message: String(error?.message) } };
      }
      emit({ ...out, asked });
    }
  } finally {
    await client.close().catch(() => {});
    if (server) server.kill();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error?.stack ?? String(error));
    process.exit(1);
  },
);
