// Runs one JavaScript program inside the sandbox, under Deno with no permissions
// but these: write /dev/fd/3 (requests to gg), read /dev/fd/4 (answers from gg),
// read the run's sdk.mjs and program.mjs, read and write the workspace and tmp.
//
// Usage: deno run ... runner.js RUN_DIR
//
// It may start before its program exists (a warm spare, issue 11): it starts in
// "/", loads (and, when gg wrote RUN_DIR/sdk-warm.mjs, the SDK it expects), and
// blocks until gg writes {"kind": "go", "cwd": WORKSPACE, "warm_sdk": BOOL} on fd 4;
// by then the program and its SDK (sdk.mjs; warm_sdk: the preloaded one is the same
// text, and is used) are in RUN_DIR, and it enters the workspace and loads them.
// One process runs one program, then exits.
//
// The membrane: every SDK call is one JSON line on fd 3, answered by one JSON
// line on fd 4 (matched by id); the program's console output never carries
// messages. When the program is over, one line says how it ended:
//   {"kind": "result", "returned": <string|null>, "error": <string|null>, "limit": null}
// or, when it does not parse (or an import it names is not there), nothing of it ran:
//   {"kind": "compile_error", "message": "SyntaxError: ...", "line": 2, "column": 9}
//
// The program is an ES module (top-level await allowed) with the SDK bound to
// the global `gg`. It ends when its top-level code has finished and every gg
// call it started has been answered; pending timers are then dropped. An
// `export default` value is reported as `returned`. An error thrown by the
// module, or a promise rejected with nobody to catch it, is the program's error.

const MAX_ERROR = 6000;
const MAX_RETURNED = 10000;
const runDir = Deno.args[0];
const exit = Deno.exit; // the program may replace Deno.exit: the runner still ends
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const requests = Deno.openSync("/dev/fd/3", { write: true });
const answers = Deno.openSync("/dev/fd/4", { read: true });
const pending = new Map();
let nextId = 0;
let unhandled = null;
let idle = null;

// Wait for gg's go (the first line on fd 4); what follows it is the answers' start.
function awaitGo() {
  const chunk = new Uint8Array(4096);
  let text = "";
  while (!text.includes("\n")) {
    const n = answers.readSync(chunk);
    if (n === null) Deno.exit(120); // gg gave this spare up
    if (n > 0) text += decoder.decode(chunk.subarray(0, n), { stream: true });
  }
  const newline = text.indexOf("\n");
  const go = JSON.parse(text.slice(0, newline));
  if (go.kind !== "go") Deno.exit(120);
  try {
    Deno.chdir(go.cwd);
  } catch {
    // a parent the sandbox uid cannot search (unshare, rlimit): it was entered as root
  }
  let here = null;
  try {
    here = Deno.cwd();
  } catch {
    // not readable where it is
  }
  if (here !== go.cwd) { // a parent closed to the sandbox uid since this process started
    send({ kind: "result", returned: null, limit: null, error: "gg: the program could not " +
           "enter its workspace (a directory above it is closed to the sandbox's user); " +
           "nothing of it ran" });
    Deno.exit(1);
  }
  return { early: text.slice(newline + 1), warmSdk: go.warm_sdk === true };
}

// One turn of the event loop (a message through a port: after every microtask).
function turn() {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => { channel.port1.close(); resolve(); };
    channel.port2.postMessage(null);
  });
}

// What the first program would pay first, paid before it came (issue 11): Deno's
// first message port, JSON and text encoding, the module loader, and the SDK gg
// expects (sdk-warm.mjs, when there is one; a missing one is no error). Not its first
// timer: that costs about 10 ms of CPU (measured here, Deno 2.9), which every process
// would pay and few programs use (a program's first setTimeout pays it instead).
async function prepare() {
  await turn();
  decoder.decode(encoder.encode(JSON.stringify({ kind: "result", returned: null })));
  try {
    return await import(`${runDir}/sdk-warm.mjs`);
  } catch {
    return null;
  }
}

function send(message) {
  const data = encoder.encode(JSON.stringify(message) + "\n");
  let offset = 0;
  while (offset < data.length) offset += requests.writeSync(data.subarray(offset));
}

function invoke(kind, name, args) {
  const id = ++nextId;
  const promise = new Promise((resolve) => pending.set(id, resolve));
  try {
    send({ id, kind, name, arguments: args });
  } catch (e) {
    const error = e instanceof TypeError ? `the arguments are not JSON: ${e.message}`
      : `gg's channel failed: ${e.message}`;
    settle(id, { ok: false, error_type: "bad_call", error });
  }
  return promise;
}

function settle(id, answer) {
  const resolve = pending.get(id);
  if (!resolve) return;
  pending.delete(id);
  resolve(answer);
  if (pending.size === 0 && idle) idle();
}

async function readAnswers(first) {
  let buffered = first;
  const chunk = new Uint8Array(65536);
  for (;;) {
    const n = await answers.read(chunk);
    if (n === null) break;
    buffered += decoder.decode(chunk.subarray(0, n), { stream: true });
    let newline;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      const answer = JSON.parse(line);
      settle(answer.id, answer);
    }
  }
  for (const id of [...pending.keys()]) {
    settle(id, { ok: false, error_type: "bad_call", error: "gg's channel is closed" });
  }
}

function clean(text) {
  const lines = String(text).split("\n").filter((l) => !/runner\.js|sdk\.mjs|ext:/.test(l));
  let out = lines.join("\n").replaceAll(/file:\/\/\S*\/program\.mjs/g, "program.js");
  if (out.length > MAX_ERROR) {
    out = out.slice(0, MAX_ERROR / 2) + "\n[... error cut ...]\n" + out.slice(-MAX_ERROR / 2);
  }
  return out.trimEnd();
}

function describe(error) {
  if (error instanceof Error) return clean(error.stack || `${error.name}: ${error.message}`);
  return clean(`Uncaught ${Deno.inspect(error, { depth: 3 })}`);
}

globalThis.addEventListener("unhandledrejection", (event) => {
  event.preventDefault();
  unhandled ??= event.reason;
});
globalThis.addEventListener("error", (event) => {
  event.preventDefault();
  unhandled ??= event.error;
});

const preloaded = await prepare();
const { early, warmSdk } = awaitGo();
const { makeGG } = warmSdk && preloaded ? preloaded : await import(`${runDir}/sdk.mjs`);
Object.defineProperty(globalThis, "gg", { value: makeGG(invoke), writable: false, enumerable: false });
readAnswers(early).catch((e) => { unhandled ??= e; });

// entry.mjs imports start.mjs, then program.mjs: the whole graph is parsed and linked
// before start.mjs runs, so an import that fails before started() was called is a
// syntax (or link) error of the program, reported as such, in this process (issue 11).
let started = false;
Object.defineProperty(globalThis, Symbol.for("gg.started"), {
  value: () => { started = true; }, writable: false, configurable: false, enumerable: false,
});

function compileError(e) {
  const raw = String(e instanceof Error ? e.message : e).replaceAll(/\u001b\[[0-9;]*m/g, "");
  const where = /program\.mjs:(\d+):(\d+)/.exec(raw);
  let message = raw.replace(/^SyntaxError: /, "").replaceAll(/file:\/\/\S*\/program\.mjs/g, "program.js")
    .replace(/,? ?run again with the --allow-[a-z-]+ flag/, " (the sandbox does not allow this)");
  const name = e instanceof Error && e.name !== "TypeError" ? e.name : "SyntaxError";
  message = `${/Module not found|Requires read access/.test(message) ? "ImportError" : name}: ${message}`;
  if (message.length > MAX_ERROR) message = message.slice(0, MAX_ERROR) + " [cut]";
  return { kind: "compile_error", message, line: where ? Number(where[1]) : null,
           column: where ? Number(where[2]) : null };
}

let error = null;
let returned = null;
let limit = null;
const isMemory = (e) => e instanceof RangeError && /allocation failed|out of memory/i.test(e.message);
try {
  await import(`${runDir}/entry.mjs`);
} catch (e) {
  if (!started) {
    try {
      send(compileError(e));
    } catch {
      exit(120);
    }
    exit(1);
  }
}
try {
  const program = await import(`${runDir}/program.mjs`);
  if (program.default !== undefined) {
    returned = typeof program.default === "string" ? JSON.stringify(program.default)
      : Deno.inspect(program.default, { depth: 4, colors: false });
    if (returned.length > MAX_RETURNED) returned = returned.slice(0, MAX_RETURNED) + " [cut]";
  }
} catch (e) {
  error = describe(e);
  if (isMemory(e)) limit = "memory";
}
if (pending.size > 0) await new Promise((resolve) => { idle = resolve; });
await turn(); // a rejection nobody caught shows
if (error === null && unhandled !== null) {
  error = describe(unhandled);
  if (isMemory(unhandled)) limit = "memory";
}
try {
  send({ kind: "result", returned, error, limit });
} catch {
  exit(120); // the program closed its channel to gg: the result is lost
}
exit(error === null ? 0 : 1);
