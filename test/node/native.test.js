// test-needs: sqlite
'use strict';
// The Node bindings feel like Node: unknown options refused, options
// reaching the library, AbortSignal on waits and tool calls, close with a
// timeout, Symbol.asyncDispose, error subclasses, the ESM entry, waits off
// libuv's pool (four following readers starve nothing), events without
// follow not waiting, host-driven mode (dispatch with a JavaScript reader,
// poll/dispatch/complete), MCP tool sources, the missing library's message,
// and index.d.ts declaring every export.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const fs = require('node:fs');
const { once } = require('node:events');
const { spawnSync } = require('node:child_process');

const SANITIZED = !!process.env.SAN_FLAGS; // an ASan library cannot load into node
const PKG = path.join(__dirname, '..', '..', 'bindings', 'node');
const dx = SANITIZED ? null : require(PKG);
const WAIT_MS = 20000;
const skip = SANITIZED && 'sanitizer build';

// A tool that blocks until released (or its signal aborts).
function blocker() {
  let release;
  const released = new Promise((r) => { release = r; });
  const state = { started: null, signal: null, release };
  state.startedP = new Promise((r) => { state.started = r; });
  state.tool = dx.tool(async (args, call) => {
    state.signal = call.signal;
    state.started();
    await Promise.race([released, once(call.signal, 'abort')]);
    return call.signal.aborted ? 'aborted' : 'released';
  }, { name: 'block' });
  return state;
}

test('unknown options and limits are refused', { skip, timeout: 120000 }, async () => {
  const agent = new dx.Agent();
  assert.throws(() => new dx.Runtime(agent, { stor: 'x.db' }),
    (e) => e instanceof dx.UnknownKeyError && e.code === 'DEXA_E_UNKNOWN_KEY' && /stor/.test(e.message));
  assert.throws(() => new dx.Agent({ limits: { toolMaxAttemps: 2 } }), dx.UnknownKeyError);
  assert.throws(() => new dx.Agent({ instructons: 'x' }), dx.UnknownKeyError);
  assert.throws(() => new dx.Agent({ compaction: { contextWindow: 1 } }), dx.UnknownKeyError);
  assert.throws(() => dx.tool(() => 'x', { name: 't', aproval: true }), dx.UnknownKeyError);
  assert.throws(() => new dx.Runtime(agent, { workers: 'two' }), TypeError);
  assert.throws(() => new dx.McpToolSource({ s: { command: 'true', evn: {} } }), dx.UnknownKeyError);
  const rt = new dx.Runtime(agent, { workers: 0 });
  try {
    const sid = await rt.startSession();
    await assert.rejects(async () => { for await (const e of rt.events(sid, { folow: true })) void e; },
      dx.UnknownKeyError);
    await assert.rejects(rt.waitIdle(sid, { timeout: 5 }), dx.UnknownKeyError);
    await assert.rejects(rt.startSession({ session: 'x' }), dx.UnknownKeyError);
  } finally {
    await rt.close();
  }
});

test('every runtime option reaches the library', { skip, timeout: 120000 }, async () => {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'dexa-node-'));
  const store = path.join(dir, 'x.db');
  const rt = new dx.Runtime(new dx.Agent(), { store, workers: 0, sessionCacheBytes: 12345,
    eventsRetained: 77, leaseMs: 4321, workerId: 'w-1', sqliteSynchronous: 'normal',
    sessionIdleTimeoutMs: 600000, sessionRetentionMs: 0, sweepIntervalMs: 5000 });
  try {
    assert.deepEqual(rt.libraryOptions, { store, sqliteSynchronous: 'normal', workerId: 'w-1',
      leaseMs: 4321, eventsRetained: 77, sessionCacheBytes: 12345,
      sessionIdleTimeoutMs: 600000, sessionRetentionMs: 0, sweepIntervalMs: 5000 });
    await rt.startSession({ sessionId: 'kept' });
  } finally {
    await rt.close();
  }
  assert.ok(fs.existsSync(store)); // store reached dexa_runtime_new
  assert.equal(dx.runtimeOptions({ sessionCacheBytes: 0 }).sessionCacheBytes, 0);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('error subclasses', { skip, timeout: 120000 }, async () => {
  assert.ok(new dx.NotFoundError(-106) instanceof dx.UsageError);
  assert.ok(dx.errorFor(-202) instanceof dx.TimedOutError);
  assert.ok(dx.errorFor(-202) instanceof dx.TransientError);
  assert.ok(dx.errorFor(-302) instanceof dx.PermanentError);
  assert.ok(dx.errorFor(-901) instanceof dx.FatalError);
  for (const [name, errno] of Object.entries(dx.CODES)) {
    const e = dx.errorFor(errno, 'm');
    assert.ok(e instanceof dx.DexaError && e instanceof Error);
    assert.deepEqual([e.code, e.errno, e.message, e.errorClass], [name, errno, 'm', dx.errorClass(errno)]);
  }
  const rt = new dx.Runtime(new dx.Agent(), { workers: 1 });
  try {
    await assert.rejects(rt.snapshot('nope'), (e) => e instanceof dx.NotFoundError && e.name === 'NotFoundError');
    const sid = await rt.startSession();
    await assert.rejects(rt.send(sid, ' '), dx.EmptyMessageError);
    await assert.rejects(rt.readEvents(sid, 'bad'), dx.InvalidResumeTokenError);
    // the new session's first Step may still be running on a loaded machine: wait for it
    await rt.waitIdle(sid, { timeoutMs: 60000 });
    await assert.rejects(rt.send(sid, 'p', { planMode: true }), dx.UnsupportedError);
  } finally {
    await rt.close();
  }
  await assert.rejects(rt.snapshot('x'), dx.RuntimeClosedError);
});

test('AbortSignal: waits stop at once', { skip, timeout: 120000 }, async () => {
  const b = blocker(); // blocks until released: the session stays busy
  const rt = new dx.Runtime(new dx.Agent({ tools: [b.tool] }), { workers: 1 });
  try {
    const sid = await rt.startSession();
    await rt.send(sid, '/tool block {}');
    await b.startedP;
    const ac = new AbortController();
    const waiting = rt.waitIdle(sid, { signal: ac.signal }); // no timeout: only the abort ends it
    ac.abort();
    await assert.rejects(waiting, { name: 'AbortError' });
    const ac2 = new AbortController();
    const snap = await rt.snapshot(sid);
    const reading = (async () => {
      for await (const ev of rt.events(sid, { token: snap.resumeToken, follow: true, signal: ac2.signal })) {
        if (ev.type === 'never') break;
      }
    })();
    ac2.abort(new Error('enough'));
    await assert.rejects(reading, /enough/);
    const ac3 = new AbortController();
    const polling = new dx.Runtime(new dx.Agent(), { workers: 0 });
    const p = polling.poll({ timeoutMs: Infinity, signal: ac3.signal });
    ac3.abort();
    await assert.rejects(p, { name: 'AbortError' });
    await polling.close();
    assert.equal(b.signal.aborted, false);
  } finally {
    b.release();
    await rt.close();
  }
});

test('AbortSignal of a tool call aborts when the tool times out', { skip, timeout: 120000 }, async () => {
  const b = blocker();
  const agent = new dx.Agent({ tools: [b.tool], limits: { toolTimeoutMs: 300, toolMaxAttempts: 1 } });
  const rt = new dx.Runtime(agent, { workers: 1 });
  try {
    const sid = await rt.startSession();
    await rt.send(sid, '/tool block {}');
    await b.startedP;
    if (!b.signal.aborted) await once(b.signal, 'abort'); // after 300 ms the worker stops waiting
    assert.match(String(b.signal.reason.message), /timed out after 300 ms/);
    await rt.waitIdle(sid, WAIT_MS); // the attempt failed; the session goes on
    const tool = (await rt.snapshot(sid)).messages.filter((m) => m.role === 'tool').pop();
    assert.equal(tool.status, 'error');
  } finally {
    b.release();
    await rt.close();
  }
});

test('close({timeoutMs}) gives up a blocked tool; Symbol.asyncDispose closes', { skip, timeout: 120000 }, async () => {
  const b = blocker();
  const rt = new dx.Runtime(new dx.Agent({ tools: [b.tool] }), { workers: 1 });
  const sid = await rt.startSession();
  await rt.send(sid, '/tool block {}');
  await b.startedP;
  await rt.close({ timeoutMs: 100 }); // resolves although the tool never settles by itself
  assert.ok(b.signal.aborted);
  assert.equal(rt.closed, true);
  await assert.rejects(rt.snapshot(sid), dx.RuntimeClosedError);
  b.release();

  const rt2 = new dx.Runtime(new dx.Agent(), { workers: 1 });
  await rt2.startSession({ sessionId: 'd' });
  await rt2[Symbol.asyncDispose]();
  assert.equal(rt2.closed, true);
  await assert.rejects(rt2.startSession(), dx.RuntimeClosedError);
});

test('a follower ends when the runtime closes', { skip, timeout: 120000 }, async () => {
  const rt = new dx.Runtime(new dx.Agent(), { workers: 1 });
  const sid = await rt.startSession();
  const seen = [];
  const following = (async () => {
    for await (const ev of rt.events(sid, { follow: true })) seen.push(ev.type);
  })();
  await rt.send(sid, 'hi');
  await rt.waitIdle(sid, WAIT_MS);
  await rt.close();
  await following; // ends quietly
  assert.ok(seen.includes('session_started'));
});

test('four following readers leave libuv\'s pool free; events without follow do not wait',
  { skip, timeout: 30000 }, async () => {
    const crypto = require('node:crypto');
    const rt = new dx.Runtime(new dx.Agent(), { workers: 1 });
    try {
      const sid = await rt.startSession();
      const { resumeToken } = await rt.snapshot(sid);
      // four reads that wait a minute each: on libuv's pool (4 threads) they would hold it
      const reads = [1, 2, 3, 4].map(() => rt.readEvents(sid, resumeToken, { timeoutMs: 60000 }));
      // the pool (fs, crypto) and the runtime still answer at once
      await fs.promises.readFile(__filename);
      await new Promise((res, rej) => crypto.pbkdf2('x', 'y', 1, 8, 'sha256', (e) => (e ? rej(e) : res())));
      assert.equal((await rt.snapshot(sid)).sessionId, sid);
      // reading without follow stops when there is nothing more, whatever timeoutMs says
      const evs = [];
      for await (const ev of rt.events(sid, { timeoutMs: 60000 })) evs.push(ev.type);
      assert.deepEqual(evs, ['session_started']);
      await rt.send(sid, 'wake the readers');
      for (const r of await Promise.all(reads)) assert.ok(r.events.length > 0);
    } finally {
      await rt.close();
    }
  });

test('ESM entry exports the same objects', { skip, timeout: 120000 }, async () => {
  const esm = await import(path.join(PKG, 'index.mjs'));
  for (const k of Object.keys(dx)) assert.equal(esm[k], dx[k], k);
  assert.equal(esm.default, dx);
  const pkg = JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf8'));
  assert.deepEqual(pkg.exports['.'], { types: './index.d.ts', import: './index.mjs', require: './index.js' });
});

test('index.d.ts declares and documents every export', { skip, timeout: 120000 }, () => {
  const dts = fs.readFileSync(path.join(PKG, 'index.d.ts'), 'utf8');
  const declared = new Map();
  const re = /(\/\*\*[\s\S]*?\*\/\s*)?export declare (?:function|class|const) (\w+)/g;
  for (let m; (m = re.exec(dts));) declared.set(m[2], !!m[1]);
  const missing = Object.keys(dx).filter((k) => !declared.has(k));
  assert.deepEqual(missing, []);
  const undocumented = [...declared].filter(([, doc]) => !doc).map(([k]) => k);
  assert.deepEqual(undocumented, []);
  const extra = [...declared.keys()].filter((k) => !(k in dx));
  assert.deepEqual(extra, []);
});

test('host-driven: dispatch with a JavaScript reader (sync and async)', { skip, timeout: 120000 }, async () => {
  const agent = new dx.Agent();
  const state = new dx.MemoryAttributes();
  let r = await agent.dispatch({ kind: dx.CallKind.EXECUTE, sessionId: 'h1', name: 'StartAgentSession',
    stepExecutionId: 'StartAgentSession-1', input: { settings: {} }, nowMs: 1000 }, state);
  assert.ok(r.ok, r.error);
  state.apply(r);
  assert.ok(state.get('AgentSession'));
  assert.deepEqual(r.decision.next.map((n) => n.step), ['AwaitUserMessage']);
  assert.equal(JSON.parse(r.events[0]).type, 'session_started');
  const w = await agent.dispatch({ kind: 'wait_for', sessionId: 'h1', name: 'AwaitUserMessage',
    stepExecutionId: 'AwaitUserMessage-2' }, state);
  assert.equal(w.wait.conditions[0].channel, 'UserMessageSignals');
  assert.equal(typeof w.waitText, 'string');
  assert.equal(dx.evaluateWait(w.wait, { channelCounts: { UserMessageSignals: 1 } }).ready, true);
  // a decision's options are camelCase; its Step inputs stay the library's documents
  const next = r.decision.next[0];
  assert.ok(next.options === undefined || !Object.keys(next.options).some((k) => k.includes('_')), JSON.stringify(next));
  assert.deepEqual(Object.keys(r.toJSON()).filter((k) => k.includes('_')), []);
  // an engine whose reads are asynchronous
  const asyncReader = {
    get: async (k) => { await new Promise((res) => setImmediate(res)); return state.get(k); },
    scan: async function* (p) { for (const e of state.scan(p)) yield e; },
  };
  r = await agent.dispatch({ kind: 'rpc', sessionId: 'h1', name: 'send_message', input: { text: 'hello' } },
    asyncReader);
  assert.equal(r.response.messageId, 'm1');
  assert.deepEqual(r.publishes.map((p) => p.channel), ['UserMessageSignals']);
  state.apply(r);
  const snap = (await agent.dispatch({ kind: 'rpc', sessionId: 'h1', name: 'snapshot', input: {} }, state)).response;
  assert.equal(snap.queue[0].text, 'hello');
  const bad = await dx.dispatch(agent, { kind: 'rpc', sessionId: 'h1', name: 'nope', input: {} }, state);
  assert.equal(bad.ok, false);
  assert.throws(() => bad.throwIfFailed(), dx.UnknownRPCError);
  const boom = new RangeError('reader down');
  await assert.rejects(agent.dispatch({ kind: 'rpc', sessionId: 'h1', name: 'snapshot', input: {} },
    { get: () => { throw boom; }, scan: () => [] }),
  (e) => e instanceof dx.CallbackFailedError && e.cause === boom);
  await assert.rejects(agent.dispatch({ kind: 'rpc', sesionId: 'x' }, state), dx.UnknownKeyError);
});

test('host-driven: poll, dispatch and complete on the runtime', { skip, timeout: 120000 }, async () => {
  const log = [];
  const lookup = dx.tool((args) => { log.push(args.key); return { v: 1 }; }, { name: 'lookup' });
  const rt = new dx.Runtime(new dx.Agent({ tools: [lookup] }), { workers: 0 });
  try {
    const sid = await rt.startSession({ sessionId: 'p1' });
    await rt.send(sid, '/tool lookup {"key": "k"}');
    const names = [];
    const live = [];
    for (let task = await rt.poll(); task; task = await rt.poll()) {
      assert.equal(task.call.sessionId, sid);
      names.push(task.call.name);
      const res = await task.dispatch({ onEvent: (e) => {
        assert.ok(e instanceof dx.Event && e.live, 'a live event is an Event, as the runtime\'s are');
        assert.deepEqual(Object.keys(e).filter((k) => k.includes('_')), [], JSON.stringify(e));
        live.push(e.type);
      } });
      await rt.complete(task, res);
    }
    assert.ok(names.includes('RunModel') && names.includes('CallTool'), names.join());
    assert.ok(live.includes('text_delta'));
    assert.deepEqual(log, ['k']);
    assert.equal((await rt.snapshot(sid)).turn.status, 'idle');
    await rt.send(sid, 'again');
    const task = await rt.poll({ timeoutMs: WAIT_MS });
    rt.abandon(task);
    await assert.rejects(rt.complete(task, null), dx.BadStateError);
  } finally {
    await rt.close();
  }
});

test('MCP tool sources', { skip: skip || (!fs.existsSync('/usr/bin/python3') && 'no python3'), timeout: 120000 }, async () => {
  const server = path.join(__dirname, '..', 'mcp', '_fake_server.py');
  const src = new dx.McpToolSource({ fake: { command: '/usr/bin/python3', args: [server, 'stdio'],
    env: { SECRET: 's3cret' }, trustAnnotations: true } });
  assert.deepEqual(src.serverNames, ['fake']);
  assert.ok(!JSON.stringify(src.redacted()).includes('s3cret'));
  assert.ok((await src.listTools()).some((t) => t.name === 'fake__echo'));
  const rt = new dx.Runtime(new dx.Agent({ toolSources: [src] }), { workers: 1 });
  try {
    const sid = await rt.startSession();
    await rt.send(sid, '/tool fake__echo {"text": "hi there"}');
    await rt.waitIdle(sid, WAIT_MS);
    const tool = (await rt.snapshot(sid)).messages.filter((m) => m.role === 'tool').pop();
    assert.equal(tool.status, 'ok');
    assert.match(tool.output, /hi there/);
  } finally {
    await rt.close();
  }
});

test('the README starts with the install line and its example runs', { skip, timeout: 120000 }, () => {
  const text = fs.readFileSync(path.join(PKG, 'README.md'), 'utf8');
  assert.match(text, /^# dexagents for Node\n\n```sh\nnpm install /);
  const example = text.match(/```js\n([\s\S]*?)```/)[1].replace("require('dexagents')", `require(${JSON.stringify(PKG)})`);
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'dexa-readme-'));
  try {
    const r = spawnSync(process.execPath, ['-e', example], { cwd: dir, encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim().split('\n').at(-1), 'Tool save_file (ok): saved notes.txt');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a missing library says how to fix it', { skip, timeout: 120000 }, () => {
  const script = `const dx = require(${JSON.stringify(PKG)});
console.log('required');
try { dx.version(); } catch (e) { console.log(e.name, e.code); console.log(e.message); }`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30000,
    env: { ...process.env, DEXAGENTS_LIBRARY: '/nonexistent/libdexagents.so.1' } });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^required\nLibraryNotFoundError ERR_DEXAGENTS_LIBRARY_NOT_FOUND\n/);
  for (const text of ['/nonexistent/libdexagents.so.1', 'make install', 'LD_LIBRARY_PATH',
    'DEXAGENTS_LIBRARY', 'ldconfig']) assert.ok(r.stdout.includes(text), text);
});

test('exit with a blocked tool and open runtimes does not hang', { skip, timeout: 120000 }, () => {
  const script = `const dx = require(${JSON.stringify(PKG)});
(async () => {
  const block = dx.tool(() => new Promise(() => {}), { name: 'block' });
  const rt = new dx.Runtime(new dx.Agent({ tools: [block] }), { workers: 1 });
  const sid = await rt.startSession();
  await rt.send(sid, '/tool block {}');
  const snap = await rt.snapshot(sid);
  rt.readEvents(sid, snap.resumeToken, { timeoutMs: 600000 }).catch(() => {});
  console.log('exiting');
  process.exit(0);
})();`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60000 });
  assert.equal(r.signal, null, r.stderr);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'exiting');
});
