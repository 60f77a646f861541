// test-needs: sqlite
'use strict';
// Host-driven mode in Node with the library's wait helper: evaluateWait()
// (dexa_wait_evaluate(3)) answers "is this stored wait satisfied, what does
// Execute consume, when to look again" from the host's channel counts and
// timers; WaitEvaluation.take() hands the consumed messages to Execute. A
// small in-memory host in JavaScript then runs whole turns with nothing but
// describe(), dispatch() and evaluateWait(): a write that waits for approval,
// a durable timer (on a simulated clock), a claimed single-attempt write whose
// result is lost (an unknown outcome, never a second run).
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const SANITIZED = !!process.env.SAN_FLAGS; // an ASan library cannot load into node
const dx = SANITIZED ? null : require(path.join(__dirname, '..', '..', 'bindings', 'node'));
const skip = SANITIZED && 'sanitizer build';

const ANSWER_OR_TIMER = { mode: 'any', conditions: [
  { id: 'answer', channel: 'ToolDecisions/c1', min: 1, max: 1 },
  { id: 'timer', timerMs: 60000 }] };

test('evaluateWait: channels, timers by the clock and by the host', { skip }, () => {
  let e = dx.evaluateWait(ANSWER_OR_TIMER, { nowMs: 1000, startedMs: 0, channelCounts: {} });
  assert.ok(e instanceof dx.WaitEvaluation);
  assert.equal(e.ready, false);
  assert.deepEqual(e.channels, ['ToolDecisions/c1']);
  assert.deepEqual(e.timers, [{ id: 'timer', timerMs: 60000, dueMs: 60000 }]);
  assert.equal(e.nextDueMs, 60000);
  assert.deepEqual(e.consume, []);
  // a message arrived: the channel wins and alone consumes
  e = dx.evaluateWait(ANSWER_OR_TIMER, { nowMs: 1000, startedMs: 0,
    channelCounts: new Map([['ToolDecisions/c1', 2]]) });
  assert.equal(e.ready, true);
  assert.deepEqual(e.consume, [{ id: 'answer', channel: 'ToolDecisions/c1', count: 1 }]);
  assert.equal(e.nextDueMs, null);
  // the clock passed the timer: timers are tried first
  e = dx.evaluateWait(ANSWER_OR_TIMER, { nowMs: 60000, startedMs: 0, channelCounts: () => 1 });
  assert.deepEqual([e.ready, e.fired, e.consume], [true, ['timer'], []]);
  // the host's own durable timer fired (the clock is not used then)
  e = dx.evaluateWait(ANSWER_OR_TIMER, { nowMs: 0, startedMs: 0, fired: ['timer'] });
  assert.deepEqual([e.ready, e.fired], [true, ['timer']]);
  e = dx.evaluateWait(ANSWER_OR_TIMER, { nowMs: 999999, startedMs: 0, fired: [] });
  assert.equal(e.ready, false);
  // "all" needs every condition; its text form and RawJSON are accepted
  const all = JSON.stringify({ mode: 'all', conditions: [{ id: 'a', channel: 'x', min: 2 },
    { id: 'b', channel: 'y', min: 1, max: 1 }] });
  assert.equal(dx.evaluateWait(all, { channelCounts: { x: 2 } }).ready, false);
  e = dx.evaluateWait(new dx.RawJSON(all), { channelCounts: (ch) => (ch === 'x' ? 3 : 1) });
  assert.deepEqual(e.consume, [{ id: 'a', channel: 'x', count: 3 }, { id: 'b', channel: 'y', count: 1 }]);
  // no wait: ready at once
  assert.equal(dx.evaluateWait(null).ready, true);
  assert.equal(e.document.nextDueMs, null);
});

test('evaluateWait refuses bad waits and state', { skip }, () => {
  // the package's waits are camelCase: the library's spelling is refused, not passed on
  assert.throws(() => dx.evaluateWait({ mode: 'any', conditions: [{ id: 't', timer_ms: 5 }] }),
    (e) => e instanceof dx.UnknownKeyError && /timer_ms/.test(e.message) && /timerMs/.test(e.message));
  assert.throws(() => dx.evaluateWait({ mode: 'any', conditions: [], extra: 1 }), dx.UnknownKeyError);
  // ... and stays what JSON text (or RawJSON) of the library says
  assert.equal(dx.evaluateWait('{"mode":"any","conditions":[{"id":"t","timer_ms":5}]}',
    { nowMs: 10, startedMs: 0 }).ready, true);
  assert.throws(() => dx.evaluateWait({ mode: 'sometimes', conditions: [] }), dx.InvalidJSONError);
  assert.throws(() => dx.evaluateWait({ mode: 'any', conditions: [{ channel: 'x' }] }),
    dx.InvalidJSONError);
  assert.throws(() => dx.evaluateWait(ANSWER_OR_TIMER, { channelCounts: { 'ToolDecisions/c1': -1 } }),
    dx.InvalidJSONError);
  assert.throws(() => dx.evaluateWait(ANSWER_OR_TIMER, { nowMs: 1.5 }), TypeError);
  assert.throws(() => dx.evaluateWait(ANSWER_OR_TIMER, { fired: 'timer' }), TypeError);
  assert.throws(() => dx.evaluateWait(ANSWER_OR_TIMER, { channelCount: {} }), dx.UnknownKeyError);
});

test('WaitEvaluation.take removes the consumed messages, oldest first', { skip }, () => {
  const channels = { 'ToolDecisions/c1': [{ d: 1 }, { d: 2 }] };
  const e = dx.evaluateWait(ANSWER_OR_TIMER, { channelCounts: { 'ToolDecisions/c1': 2 } });
  assert.deepEqual(e.take(channels), { fired: [], channels: { answer: [{ d: 1 }] } });
  assert.deepEqual(channels['ToolDecisions/c1'], [{ d: 2 }]);
  const idle = dx.evaluateWait(ANSWER_OR_TIMER, { channelCounts: {} });
  assert.throws(() => idle.take(channels), /not ready/);
});

// ---- a whole host in memory ---------------------------------------------------

/** The smallest host: attributes, channels and Steps in memory, one thread;
 * time is simulated (nowMs advances to the next timer when nothing runs).
 * loseClaimedWrite plays a crash right after a single-attempt Step's claim. */
function memoryHost(agent, { loseClaimedWrite = false } = {}) {
  const flow = agent.describe();
  const options = new Map(flow.steps.map((s) => [s.name, s.options]));
  const h = { attrs: new dx.MemoryAttributes(), channels: new Map(), steps: [], events: [],
    nowMs: 1_700_000_000_000, counter: 0, log: [] };
  const sid = 's-js-host';

  function addStep(type, input, recoveryError = null) {
    h.steps.push({ type, input, recoveryError, id: `${type}-${++h.counter}`, attempt: 0,
      waitFor: options.get(type).hasWaitFor, wait: null, conditions: null, claimed: false });
  }

  function apply(r) {
    h.attrs.apply(r);
    for (const p of r.publishes) {
      if (!h.channels.has(p.channel)) h.channels.set(p.channel, []);
      h.channels.get(p.channel).push(JSON.parse(p.value));
    }
    h.events.push(...r.events.map((e) => JSON.parse(e).type));
    const d = r.decision || {};
    h.steps = h.steps.filter((s) => !(d.cancel || []).includes(s.type));
    for (const n of d.next || []) addStep(n.step, n.input);
  }

  async function runStep(s) {
    const opts = options.get(s.type);
    const kind = s.waitFor ? 'wait_for' : 'execute';
    const single = kind === 'execute' && opts.maxAttempts === 1;
    if (single && s.claimed) { // claimed before and no result: it may have run
      h.log.push(`${s.id} lost: unknown outcome`);
      h.steps.splice(h.steps.indexOf(s), 1);
      addStep(opts.recovery, s.input, { code: dx.DEXA_E_TIMEOUT, message: 'the worker was lost' });
      return;
    }
    s.claimed = single; // a real host commits this claim durably first
    s.attempt += 1;
    const r = await agent.dispatch({ kind, sessionId: sid, name: s.type, stepExecutionId: s.id,
      attempt: s.attempt, input: s.input, conditions: s.conditions, recoveryError: s.recoveryError,
      nowMs: h.nowMs }, h.attrs);
    if (single && loseClaimedWrite) {
      loseClaimedWrite = false;
      h.log.push(`${s.id} result lost`);
      return;
    }
    assert.ok(r.ok, `${s.id}: ${r.error}`);
    if (kind === 'wait_for') {
      apply(r);
      Object.assign(s, { waitFor: false, attempt: 0, wait: r.wait, since: h.nowMs });
    } else {
      h.steps.splice(h.steps.indexOf(s), 1);
      apply(r);
    }
  }

  /** A waiting Step whose wait is satisfied takes its messages; else null. */
  function readyStep() {
    let due = null;
    for (const s of h.steps) {
      if (!s.wait) return { step: s };
      const e = dx.evaluateWait(s.wait, { nowMs: h.nowMs, startedMs: s.since,
        channelCounts: (ch) => (h.channels.get(ch) || []).length });
      if (e.ready) {
        s.conditions = e.take(h.channels);
        s.wait = null;
        if (e.fired.length) h.log.push(`${s.id} timer fired`);
        return { step: s };
      }
      if (e.nextDueMs !== null && (due === null || e.nextDueMs < due)) due = e.nextDueMs;
    }
    return { due };
  }

  async function runUntilIdle() {
    for (let n = 0; n < 500; n++) {
      const { step, due } = readyStep();
      if (step) await runStep(step);
      else if (due !== null) h.nowMs = due; // sleep until the timer (simulated)
      else return;
    }
    throw new Error('the host did not become idle');
  }

  async function rpc(name, input) {
    const r = await agent.dispatch({ kind: 'rpc', sessionId: sid, name, input, nowMs: h.nowMs },
      h.attrs);
    r.throwIfFailed();
    apply(r);
    await runUntilIdle();
    return r.response;
  }

  h.start = async () => { addStep(flow.startStep, { settings: {} }); await runUntilIdle(); };
  h.rpc = rpc;
  h.pending = () => h.attrs.scan('PendingToolCalls/').map(([, v]) => JSON.parse(v));
  h.transcript = () => h.attrs.scan('AgentMessages/').map(([, v]) => JSON.parse(v));
  return h;
}

function stampAgent(runs) {
  const stamp = dx.tool(() => { runs.push(1); return 'stamped'; }, { name: 'stamp',
    description: 'Stamps the document (a write).', effect: 'write', approval: true });
  return new dx.Agent({ models: ['mock/dex'], tools: [stamp], builtInTools: ['durable_wait'] });
}

test('a JavaScript host runs turns with dispatch and evaluateWait', { skip, timeout: 120000 }, async () => {
  const runs = [];
  const h = memoryHost(stampAgent(runs));
  await h.start();
  await h.rpc('send_message', { text: '/wait 30 a short pause' });
  assert.ok(h.log.some((l) => /^AwaitTimer-\d+ timer fired$/.test(l)), h.log.join('\n'));
  assert.ok(h.events.includes('timer_fired'), h.events.join());
  await h.rpc('send_message', { text: '/tool stamp {}' });
  const [pending] = h.pending();
  assert.equal(pending.kind, 'approval');
  assert.deepEqual(runs, []); // nothing runs before the approval
  await h.rpc('resolve_approval', { call_id: pending.call_id, decision: 'approve' });
  assert.deepEqual(runs, [1]);
  assert.deepEqual(h.pending(), []);
  const tool = h.transcript().filter((m) => m.role === 'tool').map((m) => m.output);
  assert.ok(tool.some((o) => /Waited 30 seconds/.test(o)), JSON.stringify(tool));
  assert.ok(tool.includes('stamped'), JSON.stringify(tool));
  const snap = await h.rpc('snapshot', {});
  assert.equal(snap.turn.status, 'idle');
});

test('a claimed single-attempt write that lost its result is never run again', { skip, timeout: 120000 }, async () => {
  const runs = [];
  const h = memoryHost(stampAgent(runs), { loseClaimedWrite: true });
  await h.start();
  await h.rpc('send_message', { text: '/tool stamp {}' });
  await h.rpc('resolve_approval', { call_id: h.pending()[0].call_id, decision: 'approve' });
  assert.deepEqual(runs, [1]); // ran once, then the "crash" lost its result
  assert.ok(h.log.some((l) => /unknown outcome/.test(l)), h.log.join('\n'));
  const tool = h.transcript().filter((m) => m.role === 'tool');
  assert.equal(tool.length, 1);
  assert.match(JSON.stringify(tool[0]), /unknown/i);
  assert.equal((await h.rpc('snapshot', {})).turn.status, 'idle');
});
