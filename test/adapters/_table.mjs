// The test table of the framework adapters (bindings/node/adapters): the
// same scenarios for every adapter, each a real session with the real
// framework package against the mock LLM server @copilotkit/aimock
// (127.0.0.1, a free port, one server for all):
//   a turn with a read tool; two parallel tool calls that run as parallel
//   Steps (each tool waits for the other to start); a write that needs
//   approval and runs once; a reject with a note that reaches the model; a
//   queued message; Steer; Stop; kill -9 of the worker process after one of
//   two tools finished (the read is not run again, the write never twice);
//   a restart on a second process that continues the turn from the
//   framework's state kept by the session; and, for the adapters that offer
//   Dex's built-in tools to their framework, ask_user answered durably.
// Each tool appends to a file before it runs, so the counts are the tool's.
// Run by frameworks.sh with Node 22 from the build folder (ADAPTERS may
// name a subset: "langgraph,ai-sdk-openai").
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { ADAPTERS, BUILT_INS, makeAgent } from './_defs.mjs';

const require = createRequire(import.meta.url);
const dx = require('dexagents');
const here = path.dirname(fileURLToPath(import.meta.url));
const AIMOCK = path.join(here, 'node_modules', '@copilotkit', 'aimock', 'dist', 'cli.js');
const selected = (process.env.ADAPTERS || Object.keys(ADAPTERS).join(',')).split(',');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dexa-adapters-'));
const children = new Set();

function fixtures(tag) {
  const u = (s) => `${s}-${tag}`;
  const calls = (...c) => ({ toolCalls: c.map(([name, args]) => ({ name, arguments: args })) });
  return [
    { match: { userMessage: u('read'), hasToolResult: true }, response: { content: 'The weather is sunny.' } },
    { match: { userMessage: u('read') }, response: calls(['get_weather', { city: 'Paris' }]) },
    { match: { userMessage: u('parallel'), hasToolResult: true }, response: { content: 'Both done.' } },
    { match: { userMessage: u('parallel') }, response: calls(['get_weather', { city: 'Rome', sync: true }], ['get_time', { tz: 'CET', sync: true }]) },
    { match: { userMessage: u('cancel'), hasToolResult: true }, response: { content: 'Order 7 is cancelled.' } },
    { match: { userMessage: u('cancel') }, response: calls(['cancel_order', { id: 7 }]) },
    { match: { userMessage: u('reject'), toolResultContains: 'too late' }, response: { content: 'Understood: too late.' } },
    { match: { userMessage: u('reject'), hasToolResult: true }, response: { content: 'No note seen.' } },
    { match: { userMessage: u('reject') }, response: calls(['cancel_order', { id: 8 }]) },
    { match: { userMessage: u('queue'), hasToolResult: true }, response: { content: 'Order 9 is cancelled.' } },
    { match: { userMessage: u('queue') }, response: calls(['cancel_order', { id: 9 }]) },
    { match: { userMessage: u('queued') }, response: { content: 'Queued answer.' } },
    { match: { userMessage: u('steer') }, response: calls(['cancel_order', { id: 10 }]) },
    { match: { userMessage: u('steered') }, response: { content: 'Steered answer.' } },
    { match: { userMessage: u('stop') }, response: calls(['get_weather', { city: 'Oslo' }]), latency: 1500, chunkSize: 2 },
    { match: { userMessage: u('crash'), hasToolResult: true }, response: { content: 'After the crash.' } },
    { match: { userMessage: u('crash') }, response: calls(['get_weather', { city: 'Lima' }], ['slow_write', { what: 'x' }]) },
    { match: { userMessage: u('ask'), toolResultContains: 'blue' }, response: { content: 'Blue it is.' } },
    { match: { userMessage: u('ask') }, response: calls(['ask_user', { prompt: 'Which color?' }]) },
    { match: { userMessage: u('restart'), hasToolResult: true }, response: { content: 'Order 11 is cancelled.' } },
    { match: { userMessage: u('restart') }, response: calls(['cancel_order', { id: 11 }]) },
  ];
}

/** Starts argv; resolves to the port of its "listening on http://127.0.0.1:PORT" line. */
function startServer(argv) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(p);
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no port in: ${out}`)), 30000);
    p.stdout.on('data', (d) => {
      out += d;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    p.stderr.on('data', (d) => { out += d; });
    p.on('exit', (c) => { clearTimeout(timer); reject(new Error(`exited ${c}: ${out}`)); });
  });
}

function killAll() {
  for (const p of children) { try { p.kill('SIGKILL'); } catch { /* gone */ } }
}
process.on('exit', () => { killAll(); fs.rmSync(tmp, { recursive: true, force: true }); });

const fx = path.join(tmp, 'fixtures.json');
fs.writeFileSync(fx, JSON.stringify({ fixtures: selected.flatMap(fixtures) }));
const port = await startServer([AIMOCK, '-h', '127.0.0.1', '-p', '0', '-f', fx]);
const base = `http://127.0.0.1:${port}`;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls fn until it returns a truthy value (or fails after ms). */
async function until(fn, what, ms = 60000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

function runs(dir) {
  const f = path.join(dir, 'runs');
  const lines = fs.existsSync(f) ? fs.readFileSync(f, 'utf8').split('\n').filter(Boolean) : [];
  const n = (name) => lines.filter((l) => l === name).length;
  return { lines, n };
}

const texts = (snap) => snap.messages.filter((m) => m.role === 'model' && m.text).map((m) => m.text);
const toolMsgs = (snap) => snap.messages.filter((m) => m.role === 'tool');

/** A worker process of the adapter on store; resolves once it runs. */
function startWorker(adapter, dir, store, block) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--preserve-symlinks', '--preserve-symlinks-main',
      path.join(here, '_worker.mjs'), adapter, base, dir, store],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DEXA_BLOCK_WRITES: block ? '1' : '0' } });
    children.add(p);
    p.stdout.once('data', () => resolve(p));
    p.on('exit', (c, s) => { children.delete(p); if (c !== null && c !== 0) reject(new Error(`worker exited ${c}`)); void s; });
  });
}

function kill9(p) {
  return new Promise((resolve) => { p.once('exit', resolve); p.kill('SIGKILL'); });
}

for (const adapter of selected) {
  const tag = adapter;
  const u = (s) => `${s}-${tag}`;

  test(`${adapter}: in one process`, { timeout: 240000 }, async (t) => {
    const dir = fs.mkdtempSync(path.join(tmp, `${adapter}-`));
    const rt = new dx.Runtime(await makeAgent(dx, adapter, base, dir), { workers: 4 });
    const session = async () => rt.startSession();
    const turn = async (sid, text) => {
      await rt.send(sid, text);
      await rt.waitIdle(sid, { timeoutMs: 60000 });
      return rt.snapshot(sid);
    };
    const pendingOf = (sid) => until(async () => (await rt.snapshot(sid)).pending[0], 'a pending approval');
    try {
      await t.test('a turn with a read tool', async () => {
        const sid = await session();
        const snap = await turn(sid, u('read'));
        assert.deepEqual(texts(snap), ['The weather is sunny.']);
        assert.deepEqual(toolMsgs(snap).map((m) => [m.name, m.status, m.output]), [['get_weather', 'ok', 'sunny in Paris']]);
        assert.equal(runs(dir).n('get_weather'), 1);
        const steps = (await rt.call(sid, 'snapshot', {})).turn;
        assert.equal(steps.status, 'idle');
      });

      await t.test('two parallel tool calls run as parallel Steps', async () => {
        const sid = await session();
        const snap = await turn(sid, u('parallel'));
        assert.deepEqual(toolMsgs(snap).map((m) => m.output).sort(), ['12:00 CET', 'sunny in Rome'],
          'each tool finished only once the other had started');
        assert.deepEqual(texts(snap), ['Both done.']);
      });

      await t.test('a write that needs approval runs once', async () => {
        const sid = await session();
        await rt.send(sid, u('cancel'));
        const p = await pendingOf(sid);
        assert.equal(p.name, 'cancel_order');
        assert.equal(p.kind, 'approval');
        assert.equal(runs(dir).n('cancel_order'), 0, 'not before the approval');
        await rt.approve(sid, p.callId, 'fine');
        await rt.waitIdle(sid, { timeoutMs: 60000 });
        const snap = await rt.snapshot(sid);
        assert.deepEqual(texts(snap), ['Order 7 is cancelled.']);
        assert.equal(runs(dir).n('cancel_order'), 1);
      });

      await t.test('reject with a note: the model gets the note, the write never runs', async () => {
        const before = runs(dir).n('cancel_order');
        const sid = await session();
        await rt.send(sid, u('reject'));
        const p = await pendingOf(sid);
        await rt.reject(sid, p.callId, 'too late');
        await rt.waitIdle(sid, { timeoutMs: 60000 });
        const snap = await rt.snapshot(sid);
        assert.equal(toolMsgs(snap)[0].status, 'rejected');
        assert.deepEqual(texts(snap), ['Understood: too late.']);
        assert.equal(runs(dir).n('cancel_order'), before);
      });

      await t.test('a message sent during a turn waits in the queue', async () => {
        const sid = await session();
        await rt.send(sid, u('queue'));
        const p = await pendingOf(sid);
        const sent = await rt.send(sid, u('queued'));
        assert.equal(sent.queued, true);
        await rt.approve(sid, p.callId);
        await until(async () => texts(await rt.snapshot(sid)).includes('Queued answer.'), 'the queued turn');
        await rt.waitIdle(sid, { timeoutMs: 60000 });
        assert.deepEqual(texts(await rt.snapshot(sid)), ['Order 9 is cancelled.', 'Queued answer.']);
      });

      await t.test('Steer ends the turn at the boundary and runs the steered message', async () => {
        const before = runs(dir).n('cancel_order');
        const sid = await session();
        await rt.send(sid, u('steer'));
        const p = await pendingOf(sid);
        const sent = await rt.send(sid, u('steered'));
        await rt.steer(sid, sent.messageId);
        await until(async () => texts(await rt.snapshot(sid)).includes('Steered answer.'), 'the steered turn');
        await rt.waitIdle(sid, { timeoutMs: 60000 });
        const snap = await rt.snapshot(sid);
        assert.equal(toolMsgs(snap).find((m) => m.callId === p.callId).status, 'cancelled');
        assert.deepEqual(snap.pending, []);
        assert.equal(runs(dir).n('cancel_order'), before, 'the write that waited never ran');
      });

      await t.test('Stop during the model call: its tool call never runs', async () => {
        const before = runs(dir).lines.length;
        const sid = await session();
        await rt.send(sid, u('stop'));
        await until(async () => (await rt.snapshot(sid)).turn.status === 'running', 'the turn');
        await rt.stopTurn(sid);
        await rt.waitIdle(sid, { timeoutMs: 60000 });
        const snap = await rt.snapshot(sid);
        assert.equal(snap.turn.status, 'cancelled');
        assert.ok(toolMsgs(snap).every((m) => m.status === 'cancelled'));
        assert.equal(runs(dir).lines.length, before, 'no tool ran');
      });

      // only where the adapter offers Dex's built-in tools to its framework
      if (BUILT_INS.has(adapter)) await t.test('ask_user waits durably for the answer', async () => {
        const sid = await session();
        await rt.send(sid, u('ask'));
        const p = await until(async () => (await rt.snapshot(sid)).pending[0], 'a question');
        assert.equal(p.kind, 'question');
        await rt.answer(sid, p.callId, 'blue');
        await rt.waitIdle(sid, { timeoutMs: 60000 });
        assert.deepEqual(texts(await rt.snapshot(sid)), ['Blue it is.']);
      });
    } finally {
      await rt.close({ timeoutMs: 5000 });
    }
  });

  test(`${adapter}: across processes`, { timeout: 240000 }, async (t) => {
    const dir = fs.mkdtempSync(path.join(tmp, `${adapter}-procs-`));
    const store = path.join(dir, 'sessions.db');
    // the client side: RPCs and snapshots on the shared store, no workers
    const rt = new dx.Runtime(await makeAgent(dx, adapter, base, dir), { store, workers: 0 });
    const snapOf = (sid) => rt.snapshot(sid);
    try {
      await t.test('kill -9 after one of two tools finished: the read does not run again, the write never twice', async () => {
        const w1 = await startWorker(adapter, dir, store, true);
        const sid = await rt.startSession();
        await rt.send(sid, u('crash'));
        await until(async () => toolMsgs(await snapOf(sid)).some((m) => m.name === 'get_weather' && m.status === 'ok')
          && runs(dir).n('slow_write') === 1, 'the read recorded and the write running');
        await kill9(w1);
        const w2 = await startWorker(adapter, dir, store, false);
        try {
          const snap = await until(async () => {
            const s = await snapOf(sid);
            return texts(s).includes('After the crash.') && s;
          }, 'the turn to finish on the second process');
          assert.equal(runs(dir).n('get_weather'), 1, 'the finished read is not run again');
          assert.equal(runs(dir).n('slow_write'), 1, 'the write never runs twice');
          assert.deepEqual(toolMsgs(snap).map((m) => [m.name, m.status]).sort(),
            [['get_weather', 'ok'], ['slow_write', 'unknown_outcome']]);
        } finally {
          await kill9(w2);
        }
      });

      await t.test('a restart on a second process continues the turn', async () => {
        const w1 = await startWorker(adapter, dir, store, false);
        const sid = await rt.startSession();
        await rt.send(sid, u('restart'));
        const p = await until(async () => (await snapOf(sid)).pending[0], 'a pending approval');
        await kill9(w1);
        const w2 = await startWorker(adapter, dir, store, false);
        try {
          await rt.approve(sid, p.callId, 'go');
          const snap = await until(async () => {
            const s = await snapOf(sid);
            return texts(s).includes('Order 11 is cancelled.') && s;
          }, 'the turn to finish on the second process');
          assert.equal(runs(dir).n('cancel_order'), 1);
          assert.equal(toolMsgs(snap)[0].status, 'ok');
        } finally {
          await kill9(w2);
        }
      });
    } finally {
      await rt.close({ timeoutMs: 2000 });
    }
  });
}

test.after(() => killAll());
