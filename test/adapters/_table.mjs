// The test table of the framework adapters (bindings/node/adapters): the
// same scenarios for every adapter, each a real session with the real
// framework package against the mock LLM server @copilotkit/aimock
// (127.0.0.1, a free port, one server for all):
//   a turn with a read tool; nine turns in one session (past the ADK
//   adapter's folding of its state entries); two parallel tool calls that run as parallel
//   Steps (each tool waits for the other to start); a write that needs
//   approval and runs once; a reject with a note that reaches the model; a
//   read that the framework's own approval flag gates (for LangGraph, which
//   has none, the adapter's option); a queued message; Steer; Stop; kill -9 of the worker process after one of
//   two tools finished (the read is not run again, the write never twice);
//   a restart on a second process that continues the turn from the
//   framework's state kept by the session; for the adapters that offer
//   Dex's built-in tools to their framework, ask_user answered durably; and,
//   where the transcript is Dex's, Dex compaction through the framework (the
//   summary call, then a model call that gets the summary); for the OpenAI
//   Agents SDK, a handoff (the next agent's tool runs in its own Step).
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
import { ADAPTERS, BUILT_INS, COMPACTS, INSIDE, makeAgent, openAIAgentsHandoff } from './_defs.mjs';

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
    { match: { userMessage: u('long'), hasToolResult: true }, response: { content: 'Noted.' } },
    { match: { userMessage: u('long') }, response: calls(['get_weather', { city: 'Nice' }]) },
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
    { match: { userMessage: u('vault'), hasToolResult: true }, response: { content: 'Vault opened.' } },
    { match: { userMessage: u('vault') }, response: calls(['open_vault', { id: 1 }]) },
    // Dex compaction's summary call comes first: its system message is the compaction prompt
    { match: { userMessage: u('compact1'), systemMessage: 'Summarize the conversation below' }, response: { content: `Summary ${tag}: the first answer.` } },
    { match: { userMessage: u('compact1') }, response: { content: 'First answer.' } },
    { match: { userMessage: u('compact2') }, response: { content: 'Second answer.' } },
    // the OpenAI Agents SDK's handoff: triage hands over, the expert calls its tool
    { match: { userMessage: u('handoff'), systemMessage: 'weather expert', toolResultContains: 'sunny' }, response: { content: 'The expert answered.' } },
    { match: { userMessage: u('handoff'), systemMessage: 'weather expert' }, response: calls(['get_weather', { city: 'Bergen' }]) },
    { match: { userMessage: u('handoff') }, response: calls(['transfer_to_expert', {}]) },
    // a tool the framework runs inside the segment (Mastra: its sub-agent, whose own model call comes first)
    { match: { userMessage: u('helper-job'), systemMessage: 'You are the helper agent' }, response: { content: 'The helper says 42.' } },
    { match: { userMessage: u('inside'), hasToolResult: true }, response: { content: 'Inside done.' } },
    { match: { userMessage: u('inside') }, response: tag === 'mastra'
      ? calls(['agent-helper', { prompt: u('helper-job') }]) : calls(['get_rate', { pair: 'EURUSD' }]) },
    // Dex's built-in tools: durable_wait, and a plan (write_todos in a planning turn, then execute_plan)
    { match: { userMessage: u('wait'), hasToolResult: true }, response: { content: 'Waited.' } },
    { match: { userMessage: u('wait') }, response: calls(['durable_wait', { seconds: 1 }]) },
    { match: { userMessage: u('plan'), hasToolResult: true }, response: { content: 'Plan ready.' } },
    { match: { userMessage: u('plan') }, response: calls(['write_todos', { todos: [
      { content: 'look it up', status: 'pending' }, { content: 'answer', status: 'pending' }] }]) },
    { match: { userMessage: 'Execute the plan (revision 1)' }, response: { content: 'Executing the plan.' } },
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

/** The request bodies aimock received, oldest first, as JSON text. */
async function requests() {
  const journal = await (await fetch(`${base}/__aimock/journal`)).json();
  return (Array.isArray(journal) ? journal : journal.entries || []).map((e) => JSON.stringify(e.body || e));
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
    const eventsOf = async (sid) => {
      const out = [];
      for await (const e of rt.events(sid)) out.push(e);
      return out;
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

      await t.test('nine turns (eighteen segments) in one session: the model sees every earlier result', async () => {
        const sid = await session();
        for (let i = 0; i < 9; i++) await turn(sid, u('long'));
        const snap = await rt.snapshot(sid);
        assert.equal(texts(snap).length, 9);
        assert.equal(toolMsgs(snap).filter((m) => m.status === 'ok' && m.output === 'sunny in Nice').length, 9);
        const last = (await requests()).filter((b) => b.includes(u('long'))).at(-1);
        assert.equal(last.split('sunny in Nice').length - 1, 9, 'each result once in the last model call');
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

      await t.test("a read that the framework's approval flag gates waits for approval", async () => {
        const sid = await session();
        await rt.send(sid, u('vault'));
        const p = await pendingOf(sid);
        assert.equal(p.name, 'open_vault');
        assert.equal(runs(dir).n('open_vault'), 0, 'not before the approval');
        await rt.approve(sid, p.callId);
        await rt.waitIdle(sid, { timeoutMs: 60000 });
        const snap = await rt.snapshot(sid);
        assert.deepEqual(toolMsgs(snap).map((m) => [m.name, m.status, m.output]), [['open_vault', 'ok', 'vault 1 open']]);
        assert.deepEqual(texts(snap), ['Vault opened.']);
        assert.equal(runs(dir).n('open_vault'), 1);
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

      if (BUILT_INS.has(adapter)) await t.test('durable_wait waits in AwaitTimer and the turn goes on', async () => {
        const sid = await session();
        await rt.send(sid, u('wait'));
        // the session waits in AwaitTimer (idle for waitIdle), then the turn goes on
        const snap = await until(async () => {
          const s = await rt.snapshot(sid);
          return texts(s).includes('Waited.') && s;
        }, 'the turn after the timer');
        assert.deepEqual(texts(snap), ['Waited.']);
        assert.deepEqual(toolMsgs(snap).map((m) => [m.name, m.status]), [['durable_wait', 'ok']]);
        assert.ok((await eventsOf(sid)).some((e) => e.type === 'timer_fired'), 'the timer fired');
      });

      if (BUILT_INS.has(adapter)) await t.test('a plan: write_todos in a planning turn, then execute_plan', async () => {
        const sid = await session();
        await rt.send(sid, u('plan'), { planMode: true });
        await rt.waitIdle(sid, { timeoutMs: 60000 });
        let snap = await rt.snapshot(sid);
        assert.deepEqual(texts(snap), ['Plan ready.']);
        assert.equal(snap.plan.revision, 1);
        assert.equal(snap.plan.status, 'draft');
        assert.deepEqual(snap.plan.todos.map((x) => x.content), ['look it up', 'answer']);
        await rt.executePlan(sid, 1);
        await until(async () => texts(await rt.snapshot(sid)).includes('Executing the plan.'), 'the executing turn');
        await rt.waitIdle(sid, { timeoutMs: 60000 });
        snap = await rt.snapshot(sid);
        assert.equal(snap.turn.mode, 'executing');
        assert.deepEqual(texts(snap), ['Plan ready.', 'Executing the plan.']);
      });

      // where the framework runs a tool itself, inside the model Step
      if (INSIDE[adapter]) await t.test('a tool the framework runs inside the segment is a durable event, not a Step', async () => {
        const [name, output] = INSIDE[adapter];
        const sid = await session();
        const snap = await turn(sid, u('inside'));
        assert.deepEqual(texts(snap), ['Inside done.']);
        assert.deepEqual(toolMsgs(snap), [], 'no tool Step of Dex');
        const events = await eventsOf(sid);
        const ran = events.filter((e) => e.type === 'segment_tool_call');
        assert.equal(ran.length, 1, JSON.stringify(ran));
        assert.equal(ran[0].ranBy, 'framework');
        assert.equal(ran[0].name, name);
        if (!String(ran[0].output).includes(output)) {
          console.error((await requests()).filter((b) => b.includes('helper')).join('\n'));
        }
        assert.ok(String(ran[0].output).includes(output), ran[0].output);
        assert.ok(!events.some((e) => e.type === 'tool_call_finished'));
        if (name === 'get_rate') assert.equal(runs(dir).n('get_rate'), 1);
      });
    } finally {
      await rt.close({ timeoutMs: 5000 });
    }
  });

  // only where the transcript is Dex's (the adapter has a summarize)
  if (COMPACTS.has(adapter)) test(`${adapter}: Dex compaction summarizes through the framework`, { timeout: 120000 }, async () => {
    const dir = fs.mkdtempSync(path.join(tmp, `${adapter}-compact-`));
    // a window of 2000 tokens (8000 bytes of request): the second message alone passes it
    const rt = new dx.Runtime(await makeAgent(dx, adapter, base, dir,
      { compaction: { contextWindowTokens: 2000, keepPct: 10 } }), { workers: 2 });
    try {
      const sid = await rt.startSession();
      await rt.send(sid, u('compact1'));
      await rt.waitIdle(sid, { timeoutMs: 60000 });
      assert.deepEqual(texts(await rt.snapshot(sid)), ['First answer.']);
      await rt.send(sid, `${u('compact2')} ${'padding '.repeat(1000)}`);
      await rt.waitIdle(sid, { timeoutMs: 60000 });
      const snap = await rt.snapshot(sid);
      assert.equal(snap.turn.status, 'idle');
      assert.equal(snap.summary && snap.summary.text, `Summary ${tag}: the first answer.`);
      assert.ok(texts(snap).includes('Second answer.'));
      // the model call after the compaction got the summary instead of the first turn
      const after = (await requests()).filter((b) => b.includes(u('compact2'))
        && !b.includes('Summarize the conversation below'));
      assert.ok(after.length >= 1, 'the second turn reached the model');
      assert.ok(after.every((b) => b.includes(`Summary ${tag}`) && !b.includes('First answer.')),
        'the second turn sees the summary, not the summarized messages');
    } finally {
      await rt.close({ timeoutMs: 5000 });
    }
  });

  if (adapter === 'openai-agents') test(`${adapter}: a handoff inside the segment, the next agent's tool in its Step`, { timeout: 120000 }, async () => {
    const dir = fs.mkdtempSync(path.join(tmp, `${adapter}-handoff-`));
    const rt = new dx.Runtime(await openAIAgentsHandoff(dx, base, dir), { workers: 2 });
    try {
      const sid = await rt.startSession();
      await rt.send(sid, u('handoff'));
      await rt.waitIdle(sid, { timeoutMs: 60000 });
      const snap = await rt.snapshot(sid);
      assert.deepEqual(toolMsgs(snap).map((m) => [m.name, m.status, m.output]), [['get_weather', 'ok', 'sunny in Bergen']]);
      assert.deepEqual(texts(snap), ['The expert answered.']);
      assert.equal(runs(dir).n('get_weather'), 1);
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
