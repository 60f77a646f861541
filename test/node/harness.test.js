// test-needs: sqlite
'use strict';
// Models and harnesses written in JavaScript (Model.fromFunction, Harness):
// the contract of dexagents-harness(7) seen from Node. A plain model with
// live deltas, usage and a finish reason; errors that retry (transient) or
// fail the turn at once (permanent); a harness keeping its state (set and
// appended), seeing only its new messages, running a read inside the
// segment, setting a call's approval from its own metadata, and having a
// write it tried to run inside refused; a Stop reaching a running segment
// as an aborted request.signal (host-driven, with the host's stop, and
// through the embedded runtime's own workers); tools the framework ran
// itself (frameworkToolCalls) kept as segment_tool_call events of the
// committed attempt only; a runtime closed with a timeout giving up a
// segment that never answers.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
process.env.DEXAGENTS_LIBRARY = process.env.DEXAGENTS_LIBRARY ||
  path.join(root, process.env.LIBOUT || 'lib', 'libdexagents.so.1');
const dx = require(path.join(root, 'bindings', 'node'));

async function turn(rt, sid, text) {
  await rt.send(sid, text);
  await rt.waitIdle(sid, { timeoutMs: 30000 });
  return rt.snapshot(sid);
}

async function eventsOf(rt, sid) {
  const out = [];
  for await (const e of rt.events(sid)) out.push(e);
  return out;
}

test('a JavaScript model: deltas, usage, finish reason, tool calls', { timeout: 60000 }, async () => {
  const requests = [];
  const model = dx.Model.fromFunction('js/echo', async (req) => {
    requests.push(req);
    const last = req.messages.at(-1);
    if (last.role === 'user' && last.text === 'weather') {
      return { toolCalls: [{ callId: 'w1', name: 'get_weather', arguments: { city: 'Paris' } }] };
    }
    if (last.role === 'tool') return { text: `It is ${last.output}.`, finishReason: 'stop' };
    req.emitDelta('thinking...', 'reasoning');
    req.emitDelta('Hel');
    req.emitDelta('lo');
    return { items: [{ item: { kind: 'answer', raw: [1, 2] }, text: 'Hello', reasoning: 'thinking...' }],
      usage: { inputTokens: 12, outputTokens: 5, cachedInputTokens: 2, reasoningTokens: 1, costUsd: 0.5 },
      finishReason: 'length', providerFinishReason: 'max_tokens' };
  });
  const agent = new dx.Agent({ models: [model], tools: [
    dx.tool(async (a) => `sunny in ${a.city}`, { name: 'get_weather', effect: 'read' })] });
  const rt = new dx.Runtime(agent);
  try {
    const sid = await rt.startSession();
    let snap = await turn(rt, sid, 'hi');
    const m = snap.messages.at(-1);
    assert.equal(m.text, 'Hello');
    assert.equal(m.reasoning, 'thinking...');
    assert.deepEqual(m.item, { kind: 'answer', raw: [1, 2] });
    assert.equal(m.finishReason, 'length');
    assert.equal(m.providerFinishReason, 'max_tokens');
    assert.equal(m.usage.inputTokens, 12);
    assert.equal(m.usage.cachedInputTokens, 2);
    const evs = await eventsOf(rt, sid);
    assert.deepEqual(evs.filter((e) => e.type === 'text_delta').map((e) => e.text), ['Hel', 'lo']);
    assert.deepEqual(evs.filter((e) => e.type === 'reasoning_delta').map((e) => e.text), ['thinking...']);
    assert.equal(evs.find((e) => e.type === 'turn_finished').truncated, true);
    snap = await turn(rt, sid, 'weather');
    assert.equal(snap.messages.at(-1).text, 'It is sunny in Paris.');
    const req = requests.at(-1);
    assert.equal(req.sessionId, sid);
    assert.equal(req.turn, 2);
    assert.equal(req.round, 2);
    assert.equal(req.firstNewMessage, 0);
    assert.deepEqual(req.tools.map((t) => t.name), ['get_weather']);
    assert.equal(req.messages.at(-2).toolCalls[0].callId, 'w1');
    assert.deepEqual(req.messages.at(-2).toolCalls[0].arguments, { city: 'Paris' });
  } finally {
    await rt.close();
  }
});

test('errors: transient ones retry the call, permanent ones fail the turn at once', { timeout: 60000 }, async () => {
  const attempts = { flaky: [], broken: [], limited: [] };
  const model = dx.Model.fromFunction('js/errors', async (req) => {
    const text = req.messages.at(-1).text;
    attempts[text].push(req.attempt);
    if (text === 'flaky' && req.attempt === 1) {
      throw Object.assign(new Error('upstream 503'), { statusCode: 503 });
    }
    if (text === 'limited' && req.attempt === 1) {
      throw new dx.RateLimitedError(dx.DEXA_E_RATE_LIMITED, 'slow down');
    }
    if (text === 'broken') throw new TypeError('a bug in the model');
    return { text: `ok after ${req.attempt}` };
  });
  const rt = new dx.Runtime(new dx.Agent({ models: [model] }));
  try {
    const sid = await rt.startSession();
    let snap = await turn(rt, sid, 'flaky');
    assert.equal(snap.messages.at(-1).text, 'ok after 2');
    assert.deepEqual(attempts.flaky, [1, 2]);
    snap = await turn(rt, sid, 'limited');
    assert.equal(snap.messages.at(-1).text, 'ok after 2');
    snap = await turn(rt, sid, 'broken');
    assert.deepEqual(attempts.broken, [1], 'a permanent error is not retried');
    const failed = (await eventsOf(rt, sid)).find((e) => e.type === 'turn_failed');
    assert.ok(failed, 'the turn failed');
    assert.match(JSON.stringify(failed), /a bug in the model/);
  } finally {
    await rt.close();
  }
  assert.equal(dx.errorCode(Object.assign(new Error('x'), { isRetryable: false })), dx.DEXA_E_MODEL);
  assert.equal(dx.errorCode(Object.assign(new Error('x'), { status: 429 })), dx.DEXA_E_RATE_LIMITED);
  assert.equal(dx.errorCode(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } })),
    dx.DEXA_E_TRANSIENT);
});

test('a harness: its state, its new messages, reads inside, approval from its metadata', { timeout: 60000 }, async () => {
  const seen = [];
  const runs = { lookup: 0, cancel_order: 0 };
  const harness = new dx.Harness({
    name: 'fw/toy', ownsTranscript: true, runsReads: true,
    runSegment: async (req) => {
      // its own transcript: the state it set, then the entries appended since
      const list = [...(req.state || []), ...req.stateEntries.flat()];
      const fresh = req.newMessages;
      seen.push({ stateLen: (req.state || []).length, entries: req.stateEntries.length,
        fresh: fresh.map((m) => `${m.role}:${m.text || m.status}`), harness: req.harness });
      const added = fresh.map((m) => ({ role: m.role, text: m.text || m.output }));
      const last = fresh.at(-1);
      if (last.role === 'user' && last.text === 'look up 7') {
        const r = await req.callTool('lookup', { id: 7 }, { callId: 'inner-1' });
        await assert.rejects(req.callTool('refund', { id: 7 }), dx.BadStateError); // a write never runs inside
        const text = `order 7: ${r.output}`;
        return { text, stateEntries: [[...added, { role: 'assistant', text }]] };
      }
      if (last.role === 'user') {
        // its own metadata: this call needs approval and is a write
        return { toolCalls: [{ callId: 'c-1', name: 'cancel_order', arguments: { id: 7 },
          effect: 'write', approval: true }], state: [...list, ...added, { role: 'assistant', calls: 1 }] };
      }
      const text = `${last.status}: ${last.output}`;
      return { text, stateEntries: [[...added, { role: 'assistant', text }]] };
    },
  });
  const agent = new dx.Agent({ models: [harness], tools: [
    dx.tool(async (a) => { runs.lookup++; return `shipped (${a.id})`; }, { name: 'lookup', effect: 'read' }),
    // its own policy says read without approval; the framework's metadata wins for the call
    dx.tool(async () => { runs.cancel_order++; return 'cancelled'; }, { name: 'cancel_order', effect: 'read' }),
    dx.tool(async () => 'refunded', { name: 'refund', effect: 'write' }),
  ] });
  const rt = new dx.Runtime(agent);
  try {
    const sid = await rt.startSession();
    let snap = await turn(rt, sid, 'look up 7');
    assert.equal(snap.messages.at(-1).text, 'order 7: shipped (7)');
    assert.equal(runs.lookup, 1);
    const evs = await eventsOf(rt, sid);
    const inner = evs.find((e) => e.type === 'segment_tool_call');
    assert.equal(inner.callId, 'inner-1');
    assert.equal(inner.status, 'ok');
    snap = await turn(rt, sid, 'cancel 7');
    assert.equal(snap.pending.length, 1, 'the framework said the call needs approval');
    assert.equal(snap.pending[0].effect, 'write');
    assert.equal(runs.cancel_order, 0);
    await rt.approve(sid, snap.pending[0].callId, 'go');
    await rt.waitIdle(sid, { timeoutMs: 30000 });
    snap = await rt.snapshot(sid);
    assert.equal(snap.messages.at(-1).text, 'ok: cancelled');
    assert.equal(runs.cancel_order, 1);
    // what each segment saw: only its new messages, its state as it left it
    assert.deepEqual(seen.map((s) => s.fresh), [['user:look up 7'], ['user:cancel 7'], ['tool:ok']]);
    assert.deepEqual(seen.map((s) => [s.stateLen, s.entries]), [[0, 0], [0, 1], [4, 0]]);
    assert.equal(seen[0].harness.ownsTranscript, true);
    assert.equal(seen[2].harness.segment, 3);
  } finally {
    await rt.close();
  }
});

test('Stop reaches a running segment as request.signal (host-driven with the host\'s stop)', { timeout: 60000 }, async () => {
  let started;
  const segmentStarted = new Promise((r) => { started = r; });
  let aborted = null;
  const harness = new dx.Harness({ name: 'fw/slow', runSegment: async (req) => {
    started();
    await new Promise((resolve) => {
      const t = setTimeout(resolve, 30000);
      req.signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
    aborted = req.signal.aborted ? String(req.signal.reason.message) : null;
    return { text: 'partial' };
  } });
  const rt = new dx.Runtime(new dx.Agent({ models: [harness] }), { workers: 0 });
  try {
    const sid = await rt.startSession();
    await rt.send(sid, 'go');
    for (let i = 0; i < 50; i++) {
      const task = await rt.poll({ timeoutMs: 2000 });
      if (!task) break;
      if (task.call.name !== 'RunModel') {
        await rt.complete(task, await task.dispatch());
        continue;
      }
      const stop = new AbortController();
      const done = task.dispatch({ stopSignal: stop.signal });
      await segmentStarted;
      await rt.stopTurn(sid);
      stop.abort(); // the host learned of the stop: the running segment hears it
      await rt.complete(task, await done);
    }
    assert.equal(aborted, 'the turn was stopped');
    const snap = await rt.snapshot(sid);
    assert.equal(snap.turn.status, 'cancelled');
    const types = (await eventsOf(rt, sid)).map((e) => e.type);
    assert.ok(types.includes('turn_cancelled'), types.join(','));
  } finally {
    await rt.close();
  }
});

test('Stop through the embedded runtime aborts the framework\'s signal', { timeout: 90000 }, async () => {
  let started;
  const segmentStarted = new Promise((r) => { started = r; });
  let aborted = null;
  let segments = 0;
  const harness = new dx.Harness({ name: 'fw/slow-embedded', runSegment: async (req) => {
    segments++;
    started();
    await new Promise((resolve) => {
      const t = setTimeout(resolve, 60000); // far past the test: only the abort ends it
      req.signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
    aborted = req.signal.aborted ? String(req.signal.reason.message) : null;
    return { text: 'partial' };
  } });
  const rt = new dx.Runtime(new dx.Agent({ models: [harness] }), { workers: 2 });
  try {
    const sid = await rt.startSession();
    await rt.send(sid, 'go');
    await segmentStarted;
    await rt.stopTurn(sid); // the runtime's own workers: no host in between
    await rt.waitIdle(sid, { timeoutMs: 60000 });
    assert.equal(aborted, 'the turn was stopped');
    assert.equal(segments, 1, 'a stopped segment is not retried');
    const snap = await rt.snapshot(sid);
    assert.equal(snap.turn.status, 'cancelled');
  } finally {
    await rt.close({ timeoutMs: 5000 });
  }
});

test('frameworkToolCalls: tools the framework ran itself are durable events, at least once', { timeout: 60000 }, async () => {
  let attempts = 0;
  const harness = new dx.Harness({ name: 'fw/hosted', runSegment: async (req) => {
    attempts++;
    const ran = [{ callId: `ws_${attempts}`, name: 'web_search', arguments: { q: 'dex' },
      output: { hits: 3 } }];
    if (attempts === 1) throw Object.assign(new Error('flaky'), { retryable: true });
    return { text: 'Found 3.', frameworkToolCalls: ran };
  } });
  const rt = new dx.Runtime(new dx.Agent({ models: [harness], limits: { runModelMaxAttempts: 3 } }), { workers: 1 });
  try {
    const sid = await rt.startSession();
    const snap = await turn(rt, sid, 'search');
    assert.equal(snap.messages.at(-1).text, 'Found 3.');
    const ran = (await eventsOf(rt, sid)).filter((e) => e.type === 'segment_tool_call');
    assert.equal(ran.length, 1, 'only the committed attempt\'s');
    assert.equal(ran[0].callId, 'ws_2');
    assert.equal(ran[0].ranBy, 'framework');
    assert.deepEqual(ran[0].arguments, { q: 'dex' });
    assert.equal(ran[0].output, '{"hits":3}');
    assert.equal(ran[0].attempt, 2);
  } finally {
    await rt.close();
  }
});

test('close({timeoutMs}) gives up a segment that never answers', { timeout: 60000 }, async () => {
  let reason = null;
  let started;
  const segmentStarted = new Promise((r) => { started = r; });
  const harness = new dx.Harness({ name: 'fw/stuck', runSegment: (req) => {
    started();
    req.signal.addEventListener('abort', () => { reason = req.signal.reason.message; });
    return new Promise(() => {});
  } });
  const rt = new dx.Runtime(new dx.Agent({ models: [harness] }));
  const sid = await rt.startSession();
  await rt.send(sid, 'go');
  await segmentStarted;
  await rt.close({ timeoutMs: 200 });
  assert.match(reason, /runtime closed/);
});
