// test-needs: sqlite
'use strict';
// The Node bindings (bindings/node, N-API addon) end to end: an agent with
// JavaScript tools (sync and async) on the demo model in the embedded runtime
// with worker threads, every client operation as a Promise, errors as
// DexaError with code and errno, events as an async iterator with resume
// tokens. `make check` builds the addon (make bindings) before test/run.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const SANITIZED = !!process.env.SAN_FLAGS; // an ASan library cannot load into node
const dx = SANITIZED ? null : require(path.join(__dirname, '..', '..', 'bindings', 'node'));
const WAIT_MS = 20000;

function makeTools(log) {
  const saveFile = dx.tool(async (args, call) => {
    log.push({ name: 'save_file', args, call });
    await new Promise((r) => setTimeout(r, 5)); // a Promise-returning tool
    return `saved ${args.path}`;
  }, {
    name: 'save_file', description: 'Saves a file (needs approval).', effect: 'write',
    approval: true,
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  });
  const explode = dx.tool(function explode(args, call) {
    log.push({ name: 'explode', args, call });
    throw new RangeError(`kaboom ${JSON.stringify(args)}`);
  }, { description: 'Always fails.' });
  const rejects = dx.tool(async (args, call) => {
    log.push({ name: 'rejects', args, call });
    throw new TypeError('async failure');
  }, { name: 'rejects' });
  const lookup = dx.tool((args, call) => {
    log.push({ name: 'lookup', args, call });
    return { key: args.key, value: 42 };
  }, { name: 'lookup', effect: dx.READ });
  return [saveFile, explode, rejects, lookup];
}

async function setup(t, workers = 3) {
  const log = [];
  const agent = new dx.Agent({
    instructions: 'You are a test agent.', models: ['mock/dex', 'mock/dex-mini'],
    tools: makeTools(log), builtinTools: dx.BUILTIN_ALL, planMode: true,
    limits: { toolMaxAttempts: 2 },
  });
  const rt = new dx.Runtime(agent, { store: ':memory:', workers });
  t.after(() => rt.close());
  const idle = async (sid) => { await rt.waitIdle(sid, WAIT_MS); return rt.snapshot(sid); };
  return { log, agent, rt, idle };
}

const lastModelText = (snap) =>
  snap.messages.filter((m) => m.role === 'model' && m.text !== undefined).pop()?.text;

async function durableTypes(rt, sid, token = '') {
  const out = [];
  for await (const ev of rt.events(sid, { token, timeoutMs: 0 })) if (!ev.live) out.push(ev.type);
  return out;
}

async function rejectsWith(p, code) {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof dx.DexaError, `not a DexaError: ${e}`);
    assert.equal(e.code, code);
    assert.equal(e.errno, dx[code]);
    return true;
  });
}

test('library information and errors', { skip: SANITIZED && 'sanitizer build' }, async (t) => {
  const { rt } = await setup(t);
  assert.equal(dx.version(), '1.1.0');
  assert.equal(dx.errorName(-106), 'DEXA_E_NOT_FOUND');
  assert.equal(dx.DEXA_E_NOT_FOUND, -106);
  await assert.rejects(rt.snapshot('no-such-session'), (e) => {
    assert.ok(e instanceof Error);
    assert.equal(e.code, 'DEXA_E_NOT_FOUND');
    assert.equal(e.errno, -106);
    assert.match(e.message, /no such session/);
    assert.equal(e.document.error.code, -106);
    return true;
  });
  const sid = await rt.startSession({ sessionId: 's-err' });
  await rejectsWith(rt.call(sid, 'no_such_rpc'), 'DEXA_E_UNKNOWN_RPC');
  await rejectsWith(rt.send(sid, '   '), 'DEXA_E_EMPTY_MESSAGE');
  await rejectsWith(rt.startSession({ sessionId: 's-err' }), 'DEXA_E_ALREADY_EXISTS');
  await rejectsWith(rt.approve(sid, 'no-call'), 'DEXA_E_NOT_PENDING');
  const ended = await rt.endSession(sid, 'test over');
  assert.equal(ended.ended, true);
  assert.equal(ended.reason, 'test over');
  await assert.rejects(rt.send(sid, 'late'), (e) => e instanceof dx.SessionEndedError &&
    e.code === 'DEXA_E_SESSION_ENDED' && e.errno === -117);
  assert.equal((await rt.snapshot(sid)).ended.reason, 'test over');
  assert.throws(() => new dx.Agent({ models: [] }), (e) => e.code === 'DEXA_E_INVALID_ARG' && e.errno === -101);
});

test('buildInfo and buildHas describe the loaded library', { skip: SANITIZED && 'sanitizer build' }, () => {
  const info = dx.buildInfo();
  assert.equal(info.version, dx.version());
  for (const f of ['core', 'runtime', 'demo-models', 'mcp-stdio']) {
    assert.ok(info.features.includes(f), f);
    assert.equal(dx.buildHas(f), true);
  }
  assert.equal(dx.buildHas('no-such-feature'), false);
  assert.equal(info.options.WITH_SQLITE, dx.buildHas('sqlite'));
  assert.ok(info.libraries.includes('libcjson'));
});

test('models: demo and provider clients', { skip: SANITIZED && 'sanitizer build' }, async (t) => {
  const { rt, idle, agent } = await setup(t);
  const m = dx.Model.client('anthropic/claude-sonnet-4', { apiKey: 'test', timeoutMs: 1000,
    headers: { 'X-Gateway_Key': 'kept as it is' }, price: { input: 3, output: 15, cachedInput: 0.3 } });
  assert.equal(m.name, 'anthropic/claude-sonnet-4');
  assert.throws(() => dx.Model.client('openai/x', { noSuchOption: 1 }),
    (e) => e.code === 'DEXA_E_UNKNOWN_KEY' && /noSuchOption/.test(e.message) && /baseUrl/.test(e.message));
  // snake_case is the library's spelling, not the package's: refused, not passed on silently
  assert.throws(() => dx.Model.client('openai/x', { api_key: 'k' }),
    (e) => e instanceof dx.UnknownKeyError && /api_key/.test(e.message));
  assert.throws(() => dx.Model.client('openai/x', { price: { input: 1, output: 2, cached_input: 1 } }),
    (e) => e instanceof dx.UnknownKeyError && /cached_input/.test(e.message));
  // the library's own JSON text passes unchanged, and the library checks it
  assert.equal(dx.Model.client('openai/x', '{"api_key":"k","timeout_ms":5}').name, 'openai/x');
  assert.throws(() => dx.Model.client('openai/x', '{"apiKey":"k"}'), (e) => e.code === 'DEXA_E_UNKNOWN_KEY');
  // a camelCase value reaches the library as its snake_case key (a bad value is refused there)
  assert.throws(() => dx.Model.client('openai/x', { timeoutMs: 'soon' }), (e) => e.code === 'DEXA_E_INVALID_ARG');
  assert.throws(() => dx.Model.client('nosuchprovider/x'), (e) => e.code === 'DEXA_E_INVALID_ARG');
  const cc = dx.Model.claudeCode('claude-code/x', { model: 'sonnet', allowedTools: ['Read'], cliPath: 'claude' });
  assert.equal(cc.name, 'claude-code/x');
  assert.throws(() => dx.Model.claudeCode('claude-code/x', { allowed_tools: ['Read'] }),
    (e) => e instanceof dx.UnknownKeyError && /allowedTools/.test(e.message));
  assert.throws(() => dx.Model.claudeCode('claude-code/x', { env: { ANTHROPIC_API_KEY: 'sk' } }),
    (e) => e.code === 'DEXA_E_INVALID_ARG');
  const sid = await rt.startSession({ model: 'mock/dex-mini' });
  assert.match(sid, /^s-/);
  await rt.send(sid, '/model');
  assert.match(lastModelText(await idle(sid)), /mock\/dex-mini/);
  const flow = agent.describe();
  assert.equal(flow.flowType, 'AgentSession');
  assert.equal(flow.startStep, 'StartAgentSession');
  assert.equal(flow.rpcs.find((r) => r.name === 'snapshot').readOnly, true);
  assert.equal(flow.steps.find((s) => s.name === 'RunModel').options.maxAttempts, 3);
  assert.deepEqual(flow.transitions.rpcs.send_message, { publishes: ['UserMessageSignals'] }, 'RPC names are kept');
  // no snake_case key anywhere but the names of the transitions' Steps and RPCs
  const keys = [];
  const walk = (v, names) => {
    if (Array.isArray(v)) v.forEach((x) => walk(x, false));
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) { if (!names) keys.push(k); walk(x, k === 'steps' || k === 'rpcs'); }
    }
  };
  walk({ ...flow, transitions: undefined }, false);
  walk(flow.transitions, true);
  assert.deepEqual(keys.filter((k) => k.includes('_')), []);
  const list = await rt.listSessions();
  assert.ok(list.sessions.some((s) => s.sessionId === sid));
});

test('approved WRITE tool (async JS function) runs once', { skip: SANITIZED && 'sanitizer build' }, async (t) => {
  const { rt, idle, log } = await setup(t);
  const sid = await rt.startSession({ sessionId: 's-approve' });
  await rt.send(sid, '/tool save_file {"path": "notes.txt"}');
  let snap = await idle(sid);
  assert.equal(snap.pending.length, 1);
  const p = snap.pending[0];
  assert.deepEqual([p.kind, p.name, p.effect], ['approval', 'save_file', 'write']);
  assert.deepEqual(p.arguments, { path: 'notes.txt' });
  assert.equal(log.length, 0);
  await rt.approve(sid, p.callId, 'fine');
  snap = await idle(sid);
  const runs = log.filter((e) => e.name === 'save_file');
  assert.equal(runs.length, 1);
  assert.deepEqual(runs[0].args, { path: 'notes.txt' });
  assert.equal(runs[0].call.idempotencyKey, `${sid}:${p.callId}`);
  assert.equal(runs[0].call.attempt, 1);
  assert.deepEqual(snap.pending, []);
  assert.equal(snap.turn.status, 'idle');
  const tool = snap.messages.filter((m) => m.role === 'tool').pop();
  assert.deepEqual([tool.status, tool.output], ['ok', 'saved notes.txt']);
  assert.equal(lastModelText(snap), 'Tool save_file (ok): saved notes.txt');
  await rejectsWith(rt.reject(sid, p.callId), 'DEXA_E_NOT_PENDING');
  assert.equal(log.filter((e) => e.name === 'save_file').length, 1);
});

test('rejected WRITE tool never runs', { skip: SANITIZED && 'sanitizer build' }, async (t) => {
  const { rt, idle, log } = await setup(t);
  const sid = await rt.startSession({ sessionId: 's-reject' });
  await rt.send(sid, '/tool save_file {"path": "x"}');
  const callId = (await idle(sid)).pending[0].callId;
  await rt.reject(sid, callId, 'not now');
  const snap = await idle(sid);
  assert.equal(log.length, 0);
  const tool = snap.messages.filter((m) => m.role === 'tool').pop();
  assert.equal(tool.status, 'rejected');
  assert.match(tool.output, /not now/);
});

test('throwing and rejecting tools are tool errors; parallel calls', { skip: SANITIZED && 'sanitizer build' }, async (t) => {
  const { rt, idle, log } = await setup(t);
  const sid = await rt.startSession({ sessionId: 's-raise' });
  const lines = ['/tool explode {"a": 1}', '/tool rejects {}'];
  for (let i = 0; i < 5; i++) lines.push(`/tool lookup {"key": "k${i}"}`);
  await rt.send(sid, lines.join('\n'));
  const snap = await idle(sid);
  const tools = snap.messages.filter((m) => m.role === 'tool');
  assert.equal(tools.length, 7);
  const byName = Object.fromEntries(tools.map((m) => [m.name, m]));
  assert.equal(byName.explode.status, 'error');
  assert.match(byName.explode.output, /RangeError: kaboom/);
  assert.equal(byName.rejects.status, 'error');
  assert.match(byName.rejects.output, /TypeError: async failure/);
  assert.deepEqual(tools.filter((m) => m.name === 'lookup').map((m) => JSON.parse(m.output).key).sort(),
    ['k0', 'k1', 'k2', 'k3', 'k4']);
  assert.equal(snap.turn.status, 'idle');
  assert.equal(log.filter((e) => e.name === 'explode').length, 1);
});

test('question and answer', { skip: SANITIZED && 'sanitizer build' }, async (t) => {
  const { rt, idle } = await setup(t);
  const sid = await rt.startSession({ sessionId: 's-ask' });
  await rt.send(sid, '/ask What colour?');
  const p = (await idle(sid)).pending[0];
  assert.deepEqual([p.kind, p.prompt], ['question', 'What colour?']);
  await rejectsWith(rt.answer(sid, p.callId, '  '), 'DEXA_E_EMPTY_MESSAGE');
  await rt.answer(sid, p.callId, 'blue');
  const snap = await idle(sid);
  assert.deepEqual(snap.pending, []);
  assert.match(lastModelText(snap), /blue/);
});

test('steer, stop and delete', { skip: SANITIZED && 'sanitizer build' }, async (t) => {
  const { rt, idle } = await setup(t);
  const sid = await rt.startSession({ sessionId: 's-steer' });
  await rt.send(sid, '/wait 600 coffee');
  let snap = await idle(sid);
  assert.equal(snap.turn.status, 'running');
  assert.equal(snap.pending[0].kind, 'timer');
  await rt.stopTurn(sid);
  snap = await idle(sid);
  assert.equal(snap.turn.status, 'cancelled');
  await rejectsWith(rt.stopTurn(sid), 'DEXA_E_BAD_STATE');
  await rt.send(sid, '/wait 600 tea');
  await idle(sid);
  const queued = await rt.send(sid, 'steered hello');
  const extra = await rt.send(sid, 'to be deleted');
  assert.equal(queued.queued, true);
  assert.deepEqual((await rt.snapshot(sid)).queue.map((q) => q.id), [queued.messageId, extra.messageId]);
  await rt.delete(sid, extra.messageId);
  await rejectsWith(rt.delete(sid, extra.messageId), 'DEXA_E_NOT_FOUND');
  await rt.steer(sid, queued.messageId);
  snap = await idle(sid);
  assert.equal(snap.turn.status, 'idle');
  assert.match(lastModelText(snap), /steered hello/);
  const types = await durableTypes(rt, sid);
  assert.ok(types.includes('turn_cancelled'));
  assert.equal(types.filter((x) => x === 'turn_control').length, 2);
});

test('plan and execute plan', { skip: SANITIZED && 'sanitizer build' }, async (t) => {
  const { rt, idle } = await setup(t);
  const sid = await rt.startSession({ sessionId: 's-plan' });
  await rt.send(sid, 'Plan a picnic', { planMode: true });
  const plan = (await idle(sid)).plan;
  assert.equal(plan.status, 'draft');
  assert.equal(plan.todos.length, 2);
  await rejectsWith(rt.executePlan(sid, plan.revision + 5), 'DEXA_E_STALE_REVISION');
  const r = await rt.executePlan(sid, plan.revision);
  assert.equal(r.revision, plan.revision);
  const snap = await idle(sid);
  assert.equal(snap.turn.mode, 'executing');
  assert.ok((await durableTypes(rt, sid)).includes('plan_updated'));
});

test('events with resume tokens, a follower, older messages', { skip: SANITIZED && 'sanitizer build' }, async (t) => {
  const { rt, idle } = await setup(t);
  const sid = await rt.startSession({ sessionId: 's-events' });
  for (let i = 0; i < 3; i++) { await rt.send(sid, `message ${i}`); await idle(sid); }
  const evs = [];
  for await (const ev of rt.events(sid, { timeoutMs: 0 })) evs.push(ev);
  assert.equal(evs[0].type, 'session_started');
  assert.equal(evs.filter((e) => !e.live && e.type === 'turn_finished').length, 3);
  assert.ok(evs.every((e) => typeof e.token === 'string' && e.token));
  const rest = [];
  for await (const ev of rt.events(sid, { token: evs[4].token, timeoutMs: 0 })) rest.push(ev.token);
  assert.deepEqual(rest, evs.slice(5).map((e) => e.token));
  const snap = await rt.snapshot(sid);
  assert.deepEqual(await durableTypes(rt, sid, snap.resumeToken), []);
  // a follower (async iterator, follow) sees a later turn
  const got = [];
  const follower = (async () => {
    for await (const ev of rt.events(sid, { token: snap.resumeToken, follow: true, timeoutMs: 200 })) {
      got.push(ev.type);
      if (ev.type === 'turn_finished') return;
    }
  })();
  await rt.send(sid, 'later');
  await follower;
  assert.ok(got.includes('turn_started'));
  await rejectsWith(rt.readEvents(sid, 'not-a-token'), 'DEXA_E_INVALID_RESUME_TOKEN');
  const page = await rt.messages(sid, { limit: 2 });
  assert.equal(page.messages.length, 2);
  assert.equal(page.hasMore, true);
  const older = await rt.messages(sid, { beforeSeq: page.messages[0].seq, limit: 200 });
  assert.equal(older.hasMore, false);
  const seqs = older.messages.concat(page.messages).map((m) => m.seq);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
  assert.equal(older.messages[0].text, 'message 0');
});

test('host-driven: runReady on a thread of its own, then close', { skip: SANITIZED && 'sanitizer build' }, async (t) => {
  const { rt, log } = await setup(t, 0);
  const sid = await rt.startSession({ sessionId: 's-host' });
  await rt.send(sid, '/tool lookup {"key": "main"}');
  let ran = 0;
  for (let n = await rt.runReady(); n; n = await rt.runReady()) ran += n;
  assert.ok(ran > 2);
  assert.equal(log.length, 1);
  assert.equal((await rt.snapshot(sid)).turn.status, 'idle');
  await rt.close();
  await rejectsWith(rt.snapshot(sid), 'DEXA_E_INVALID_ARG');
});

test('exit while a JS tool runs and the runtime is open: no crash', { skip: SANITIZED && 'sanitizer build' }, () => {
  const { spawnSync } = require('node:child_process');
  const mod = JSON.stringify(path.join(__dirname, '..', '..', 'bindings', 'node'));
  const script = `const dx = require(${mod});
(async () => {
  const slow = dx.tool(async () => { await new Promise((r) => setTimeout(r, 300)); return 'done'; },
    { name: 'slow' });
  const rt = new dx.Runtime(new dx.Agent({ tools: [slow] }), { workers: 2 }).unref();
  const sid = await rt.startSession();
  await rt.send(sid, '/tool slow {}');
  await new Promise((r) => setTimeout(r, 100));
  console.log('exiting');
})();`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30000 });
  assert.equal(r.signal, null, r.stderr);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'exiting');
});
