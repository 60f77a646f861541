'use strict';
// A libdexagents session on Restate: one virtual object per session (its key
// is the session id). The library decides (dispatch, evaluateWait); Restate
// stores, journals, waits and retries. README.md explains the mapping.
//
// Exclusive handlers hold the session's lock: the RPCs, and the internal
// handlers that begin, finish, retry and wake Steps. They keep the
// session's state in Restate's K/V store:
//   attr/<key>   an attribute's JSON text, exactly as the library wrote it
//   chan/<name>  a channel: the JSON texts of its messages, oldest first
//   event/<n>    the n-th durable event of AgentEvents (events: the count)
//   steps, seq   the Step executions not finished yet, and the id counter
// Locked Step methods (no I/O: WaitFor, StartAgentSession, RecordToolOutcome,
// ...) run inside the exclusive handler that made them ready. The others
// (RunModel, CallTool, CallSingleAttemptTool, ...) each run in a runStep
// invocation, a shared handler, so the model or the tool never holds the
// lock. A waiting Step is a waitStep invocation suspended on an awakeable
// and on a Restate timer for its next timer condition.
const restate = require('@restatedev/restate-sdk');
const dx = require('dexagents');
const { hold } = require('./agent');

const NAME = 'AgentSession';
const self = (ctx) => ctx.objectClient({ name: NAME }, ctx.key);
const later = (ctx) => ctx.objectSendClient({ name: NAME }, ctx.key);

// The library's JSON text stored as it is, byte for byte (no re-encoding).
const TEXT = { contentType: 'application/json', serialize: (s) => Buffer.from(s, 'utf8'),
  deserialize: (b) => Buffer.from(b).toString('utf8') };
const ATTR = 'attr/';
const CHAN = 'chan/';
const eventKey = (n) => `event/${String(n).padStart(9, '0')}`;

/** Runs one Step method or RPC with the library; the plain document of
 * its Result (attribute values and messages as JSON text), for ctx.run to
 * journal: a replay takes this document and never calls the library, the
 * model or a tool again. */
async function dispatchDoc(agent, call, reader) {
  const nowMs = Date.now();
  try {
    const r = await dx.dispatch(agent, { ...call, nowMs }, reader);
    return { nowMs, status: r.status, error: r.error, retryAfterMs: r.retryAfterMs,
      writes: r.writes, publishes: r.publishes, events: r.events, wait: r.wait,
      decision: r.decision, response: r.response };
  } catch (e) { // refused before it ran (a bug of this host): a failed attempt
    return { nowMs, status: typeof e.errno === 'number' ? e.errno : dx.DEXA_E_INTERNAL,
      error: String((e && e.message) || e), retryAfterMs: 0, writes: [], publishes: [], events: [] };
  }
}

/** Execute's conditions as JSON text: the messages stay the text they were published as. */
function conditionsText(fired, got) {
  const channels = Object.entries(got).map(([id, msgs]) => `${JSON.stringify(id)}:[${msgs.join(',')}]`);
  return `{"fired":${JSON.stringify(fired)},"channels":{${channels.join(',')}}}`;
}

function backoffMs(o, attempt) {
  return Math.min(o.maxBackoffMs, o.initialBackoffMs * o.backoffCoefficient ** (attempt - 1));
}

/** The session as one exclusive handler sees it; save() writes it back. */
class Session {
  constructor(ctx, agent, defaults) {
    Object.assign(this, { ctx, agent, defaults, attrs: null, channels: new Map(), dirty: new Set() });
  }

  static async open(ctx, agent, defaults) {
    const s = new Session(ctx, agent, defaults);
    s.steps = (await ctx.get('steps')) || {};
    s.seq = (await ctx.get('seq')) || 0;
    return s;
  }

  /** Every attribute, loaded once per invocation on first use (Restate sends
   * the object's state with the invocation, so these reads are local). */
  async attributes() {
    if (this.attrs) return this.attrs;
    this.attrs = new dx.MemoryAttributes();
    for (const k of await this.ctx.stateKeys()) {
      if (k.startsWith(ATTR)) this.attrs.set(k.slice(ATTR.length), await this.ctx.get(k, TEXT));
    }
    return this.attrs;
  }

  async channel(name) {
    if (!this.channels.has(name)) this.channels.set(name, (await this.ctx.get(CHAN + name)) || []);
    return this.channels.get(name);
  }

  save() {
    this.ctx.set('steps', this.steps);
    this.ctx.set('seq', this.seq);
    for (const name of this.dirty) {
      const q = this.channels.get(name);
      if (q.length) this.ctx.set(CHAN + name, q);
      else this.ctx.clear(CHAN + name);
    }
    this.dirty.clear();
  }

  /** Runs a Step method or RPC on the attributes, journaled. */
  async dispatch(kind, name, fields) {
    const reader = await this.attributes();
    const label = fields.stepExecutionId ? `${kind} ${fields.stepExecutionId}` : `${kind} ${name}`;
    return this.ctx.run(label, () => dispatchDoc(this.agent,
      { kind, sessionId: this.ctx.key, name, ...fields }, reader));
  }

  /** Applies a result: writes, publishes, events, then the decision. */
  async apply(r) {
    const attrs = await this.attributes();
    for (const { key, value } of r.writes) {
      if (value === null) {
        attrs.delete(key);
        this.ctx.clear(ATTR + key);
      } else {
        attrs.set(key, value);
        this.ctx.set(ATTR + key, value, TEXT);
      }
    }
    for (const { channel, value } of r.publishes) {
      (await this.channel(channel)).push(value);
      this.dirty.add(channel);
    }
    if (r.events.length) {
      let n = (await this.ctx.get('events')) || 0;
      for (const e of r.events) this.ctx.set(eventKey(++n), e, TEXT);
      this.ctx.set('events', n);
    }
    const d = r.decision || {};
    for (const type of d.cancel || []) this.cancel(type);
    for (const next of d.next || []) this.addStep(next.step, next.input, null, next.options);
    if (d.complete) this.ctx.set('completed', true);
  }

  addStep(type, input, recoveryError = null, options = null) {
    const o = { ...this.defaults.get(type), ...(options || {}) };
    const id = `${type}-${++this.seq}`;
    this.steps[id] = { id, type, input, recoveryError, options: o, attempt: 0,
      phase: o.hasWaitFor ? 'wait_for' : 'ready' };
  }

  /** decision.cancel: queued and waiting executions end (a waiter is woken
   * to return); a running one finishes and finishStep drops its result. */
  cancel(type) {
    for (const s of Object.values(this.steps)) {
      if (s.type !== type) continue;
      if (s.awakeable) this.ctx.resolveAwakeable(s.awakeable, 'cancelled');
      delete this.steps[s.id];
    }
  }

  /** Runs what can run now: locked methods here, under the lock; the
   * others in runStep invocations. Then saves. */
  async pump() {
    for (let n = 0; n < 1000; n++) {
      const s = await this.nextLocked();
      if (!s) break;
      if (s.phase === 'wait_for') await this.waitFor(s);
      else await this.executeLocked(s);
    }
    this.save();
  }

  async nextLocked() {
    for (const s of Object.values(this.steps)) {
      if (s.phase === 'waiting' && !(await this.wake(s))) continue;
      if (s.phase === 'wait_for' || (s.phase === 'ready' && s.options.locked)) return s;
      if (s.phase === 'ready') this.launch(s);
    }
    return null;
  }

  async waitFor(s) {
    s.attempt += 1;
    const r = await this.dispatch('wait_for', s.type, this.callFields(s));
    if (r.status !== 0) return this.failed(s, r, 'wait_for');
    await this.apply(r);
    Object.assign(s, { attempt: 0, wait: r.wait, since: r.nowMs, fired: [],
      phase: r.wait ? 'waiting' : 'ready' });
  }

  async executeLocked(s) {
    s.attempt += 1;
    const r = await this.dispatch('execute', s.type, this.callFields(s));
    if (r.status !== 0) return this.failed(s, r, 'ready');
    delete this.steps[s.id];
    await this.apply(r);
  }

  /** An unlocked Step runs in its own invocation (runStep), outside the lock. */
  launch(s) {
    s.attempt += 1;
    s.phase = 'running';
    later(this.ctx).runStep({ id: s.id, attempt: s.attempt });
  }

  /** A failed attempt: again after the Step's backoff (a delayed call, a
   * Restate timer), or its recovery Step once the attempts ran out. */
  failed(s, r, phase) {
    if (s.attempt < s.options.maxAttempts) {
      Object.assign(s, { phase: 'retry', retryPhase: phase });
      const delay = r.retryAfterMs || backoffMs(s.options, s.attempt);
      later(this.ctx).retryStep({ id: s.id }, restate.rpc.sendOpts({ delay }));
      return;
    }
    delete this.steps[s.id];
    if (s.options.recovery) this.addStep(s.options.recovery, s.input, { code: r.status, message: r.error });
    else this.ctx.set('failed', { step: s.id, code: r.status, message: r.error });
  }

  callFields(s) {
    return { stepExecutionId: s.id, attempt: s.attempt, input: s.input,
      conditions: s.conditions ? new dx.RawJSON(s.conditions) : undefined,
      recoveryError: s.recoveryError || undefined };
  }

  /** The library's wait helper decides; the timers that fired are the ones
   * Restate fired (the clock is not read, so a replay decides the same). */
  async evaluate(s) {
    const counts = {};
    for (const c of s.wait.conditions) if (c.channel) counts[c.channel] = (await this.channel(c.channel)).length;
    return dx.evaluateWait(s.wait, { nowMs: s.since, startedMs: s.since, fired: s.fired,
      channelCounts: counts });
  }

  /** A waiting Step whose wait is satisfied takes its messages (atomically
   * with what this handler applies) and becomes ready; its waiter is woken.
   * Otherwise a waiter is started once. */
  async wake(s) {
    const e = await this.evaluate(s);
    if (!e.ready) {
      if (!s.waiter) {
        s.waiter = true;
        later(this.ctx).waitStep({ id: s.id });
      }
      return false;
    }
    const got = {};
    for (const c of e.consume) {
      got[c.id] = (got[c.id] || []).concat((await this.channel(c.channel)).splice(0, c.count));
      this.dirty.add(c.channel);
    }
    if (s.awakeable) this.ctx.resolveAwakeable(s.awakeable, 'ready');
    Object.assign(s, { conditions: conditionsText(e.fired, got), phase: 'ready', wait: null,
      awakeable: null });
    return true;
  }

  /** The timers of a waiting Step that have not fired: [{id, dueMs}]. */
  async timers(s) {
    return (await this.evaluate(s)).timers.filter((t) => !s.fired.includes(t.id))
      .map((t) => ({ id: t.id, dueMs: t.dueMs }));
  }
}

/** The AgentSession virtual object for agent. */
function sessionObject(agent) {
  const flow = agent.describe();
  const defaults = new Map(flow.steps.map((s) => [s.name, s.options]));
  const open = (ctx) => Session.open(ctx, agent, defaults);
  const internal = (fn) => restate.handlers.object.exclusive({ ingressPrivate: true }, fn);
  const sharedInternal = (fn) => restate.handlers.object.shared({ ingressPrivate: true }, fn);

  const handlers = {
    /** Starts the session (once): its start Step with the settings. */
    start: async (ctx, settings) => {
      const s = await open(ctx);
      if (!(await ctx.get('started'))) {
        ctx.set('started', true);
        s.addStep(flow.startStep, { settings: settings || {} });
        await s.pump();
      }
      return { sessionId: ctx.key };
    },

    /** Hands a runStep invocation its Step and a copy of the attributes;
     * null when the Step was cancelled meanwhile. */
    beginStep: internal(async (ctx, { id, attempt }) => {
      const s = await open(ctx);
      const step = s.steps[id];
      if (!step || step.phase !== 'running' || step.attempt !== attempt) return null;
      return { type: step.type, input: step.input, attempt, conditions: step.conditions || null,
        recoveryError: step.recoveryError, singleAttempt: step.options.maxAttempts === 1,
        attrs: [...(await s.attributes()).map] };
    }),

    /** Runs one unlocked Step method outside the lock. */
    runStep: sharedInternal(async (ctx, { id, attempt }) => {
      const b = await self(ctx).beginStep({ id, attempt });
      if (!b) return 'cancelled';
      let callAttempt = b.attempt;
      if (b.singleAttempt) {
        // The claim is journaled (durable) before the write can run. Found in
        // the journal, it was made by an attempt that died: the write may
        // have run, so the library records an unknown outcome instead.
        let claimedNow = false;
        await ctx.run(`claim ${id}`, () => { claimedNow = true; return 'claimed'; });
        if (!claimedNow) callAttempt += 1;
      }
      const reader = new dx.MemoryAttributes(b.attrs);
      const result = await ctx.run(`execute ${id}`, () => dispatchDoc(agent, {
        kind: 'execute', sessionId: ctx.key, name: b.type, stepExecutionId: id, attempt: callAttempt,
        input: b.input, conditions: b.conditions ? new dx.RawJSON(b.conditions) : undefined,
        recoveryError: b.recoveryError || undefined }, reader));
      await hold(`after-${b.type}`);
      return self(ctx).finishStep({ id, attempt, result });
    }),

    /** Applies a runStep's result (dropped when the Step was cancelled). */
    finishStep: internal(async (ctx, { id, attempt, result }) => {
      const s = await open(ctx);
      const step = s.steps[id];
      if (!step || step.phase !== 'running' || step.attempt !== attempt) return 'dropped';
      if (result.status !== 0) {
        s.failed(step, result, 'ready');
      } else {
        delete s.steps[id];
        await s.apply(result);
      }
      await s.pump();
      return 'applied';
    }),

    retryStep: internal(async (ctx, { id }) => {
      const s = await open(ctx);
      const step = s.steps[id];
      if (step && step.phase === 'retry') step.phase = step.retryPhase;
      await s.pump();
    }),

    /** A waiting Step: suspended on its awakeable (resolved when the wait
     * is satisfied or the Step cancelled) and on a Restate timer for the
     * next timer condition. */
    waitStep: sharedInternal(async (ctx, { id }) => {
      const awake = ctx.awakeable();
      const woken = awake.promise.map(() => 'woken');
      let w = await self(ctx).watchStep({ id, awakeable: awake.id });
      while (!w.done) {
        if (!w.timers.length) return woken;
        const due = Math.min(...w.timers.map((t) => t.dueMs));
        const now = await ctx.date.now();
        const timer = ctx.sleep(Math.max(0, due - now)).map(() => 'timer');
        if ((await restate.RestatePromise.race([woken, timer])) === 'woken') return 'woken';
        w = await self(ctx).timerFired({ id, fired: w.timers.filter((t) => t.dueMs <= due).map((t) => t.id) });
      }
      return 'done';
    }),

    watchStep: internal(async (ctx, { id, awakeable }) => {
      const s = await open(ctx);
      const step = s.steps[id];
      if (!step || step.phase !== 'waiting') return { done: true };
      step.awakeable = awakeable;
      s.save();
      return { done: false, timers: await s.timers(step) };
    }),

    timerFired: internal(async (ctx, { id, fired }) => {
      const s = await open(ctx);
      const step = s.steps[id];
      if (!step || step.phase !== 'waiting') return { done: true };
      step.fired = [...new Set([...step.fired, ...fired])];
      if (await s.wake(step)) { // (resolving the caller's awakeable is harmless)
        await s.pump();
        return { done: true };
      }
      s.save();
      return { done: false, timers: await s.timers(step) };
    }),

    /** AgentEvents after sequence number `after` (at most 200). */
    events: restate.handlers.object.shared(async (ctx, req) => {
      const after = (req && req.after) || 0;
      const count = (await ctx.get('events')) || 0;
      const events = [];
      for (let n = after + 1; n <= count && events.length < 200; n++) {
        events.push({ seq: n, event: JSON.parse(await ctx.get(eventKey(n), TEXT)) });
      }
      return { events, count };
    }),
  };

  // Every RPC of the flow (send_message, resolve_approval, answer_question,
  // snapshot, ...) is a handler of its name, under the lock. Its input is
  // the RPC's document (dexagents-flow(7): {call_id, decision}, ...); its
  // response comes back in camelCase, as the Node package gives it.
  const rpcHandler = (rpc) => async (ctx, input) => {
    const s = await open(ctx);
    const r = await s.dispatch('rpc', rpc.name, { input: input === undefined ? {} : input });
    if (r.status !== 0) {
      throw new restate.TerminalError(`${dx.errorName(r.status)}: ${r.error}`, { errorCode: 400 });
    }
    if (!rpc.readOnly) {
      await s.apply(r);
      await s.pump();
    }
    return r.response;
  };
  for (const rpc of flow.rpcs) handlers[rpc.name] = rpcHandler(rpc);

  // The answers a person gives, in the package's camelCase: /approve
  // {callId, approve, note?} and /answer {callId, answer} (an ask_user
  // question). Each is the flow's RPC: it publishes the decision, and the
  // waiting Step's waitStep invocation, suspended on its awakeable, is
  // woken by the handler that sees its wait satisfied.
  const rpcNamed = (name) => rpcHandler(flow.rpcs.find((r) => r.name === name));
  const resolveApproval = rpcNamed('resolve_approval');
  const answerQuestion = rpcNamed('answer_question');
  handlers.approve = async (ctx, { callId, approve, note } = {}) => resolveApproval(ctx,
    { call_id: callId, decision: approve === false ? 'reject' : 'approve', ...(note ? { note } : {}) });
  handlers.answer = async (ctx, { callId, answer } = {}) => answerQuestion(ctx,
    { call_id: callId, answer });
  return restate.object({ name: NAME, handlers });
}

module.exports = { sessionObject, NAME };
