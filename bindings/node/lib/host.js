'use strict';
// Host-driven mode: your engine stores the session's state and calls the
// library once per Step method or RPC (dexa_dispatch(3)).
//
// The cycle of a host: register the flow from agent.describe(); for each
// Step method or RPC call agent.dispatch(call, reader) with a reader over
// your state; apply the Result atomically (attribute writes, null deletes;
// channel publishes; durable events; then the wait or the decision); retry
// a failed Step per its options; evaluate each wait against your channels
// and timers and hand the consumed messages and fired timers to Execute as
// `conditions`.
//
// evaluateWait() is the library's wait helper (dexa_wait_evaluate(3)): it
// tells whether a stored wait is satisfied by the host's channels and
// timers, which messages Execute then consumes, and when to look again;
// WaitEvaluation.take() takes those messages from an in-memory host's
// channels and builds Execute's `conditions`.
//
// The documents of the flow protocol come in camelCase like the rest of the
// package (wait: conditions[].timerMs; decision: next[].options.maxAttempts;
// response; the flow description; live events), and evaluateWait() takes a
// wait in that shape back (refusing any other key). What a host stores and
// hands back unchanged is kept as the library wrote it: attribute values
// (writes), durable events (JSON text), a decision's next[].input (which
// becomes a call's input), and any wait given as JSON text or RawJSON.
const { native } = require('./native');
const { CODES, errorFor, rethrow, toDexa } = require('./errors');
const { checkOptions, jsonText, parse, RawJSON, camelize, libraryDocument } = require('./values');

// A decision's Step inputs go back to the library as call inputs: kept.
const DECISION_OPAQUE = new Set(['arguments', 'content', 'item', 'input']);
const WAIT_CONDITION = { id: true, channel: true, min: true, max: true, timerMs: true };

/** A wait (camelCase object, JSON text, RawJSON, null) as the library's JSON text. */
function waitText(wait) {
  if (wait === undefined || wait === null) return null;
  if (typeof wait === 'string') return wait;
  if (wait instanceof RawJSON) return wait.text;
  const w = checkOptions(wait, ['mode', 'conditions'], 'wait');
  const doc = { ...w };
  if (Array.isArray(w.conditions)) {
    doc.conditions = w.conditions.map((c, i) => (c && typeof c === 'object' && !Array.isArray(c)
      ? libraryDocument(c, WAIT_CONDITION, `wait condition ${i}`) : c));
  }
  return JSON.stringify(doc);
}

// A live event of dispatch(): an Event like the runtime's (camelCase, live).
function liveEvent(e) {
  const { Event } = require('./runtime'); // runtime.js requires this module
  return new Event('', e, true);
}

/** What a call runs: a Step's WaitFor or Execute, or an RPC. */
const CallKind = Object.freeze({ WAIT_FOR: 1, EXECUTE: 2, RPC: 3 });
const KIND_NAMES = { wait_for: 1, execute: 2, rpc: 3 };

/** An attribute reader over a Map of key -> JSON text, with apply() for a
 * result's writes: the state of a small in-memory host, or a cache. */
class MemoryAttributes {
  constructor(entries) { this.map = new Map(entries || []); }

  /** The JSON text of key, or null. */
  get(key) { return this.map.has(key) ? this.map.get(key) : null; }

  /** [key, JSON text] pairs whose key starts with prefix, in bytewise
   * (UTF-8) key order. */
  scan(prefix) {
    return [...this.map.entries()].filter(([k]) => k.startsWith(prefix))
      .sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  }

  set(key, value) { this.map.set(key, value); return this; }

  delete(key) { return this.map.delete(key); }

  get size() { return this.map.size; }

  /** Applies a result's attribute writes (a null value deletes). */
  apply(result) {
    for (const w of result.writes) {
      if (w.value === null) this.map.delete(w.key);
      else this.map.set(w.key, w.value);
    }
  }
}

/** What one dispatch returned; nothing in it is applied by the library. */
class Result {
  constructor(handle) {
    const r = native().resultRead(handle);
    /** The C result, handed to Runtime.complete(). */
    this.handle = handle;
    /** 0 (DEXA_OK) or a negative DEXA_E_* code. */
    this.status = r.status;
    /** What went wrong ('' when ok). */
    this.error = r.error;
    /** For a failed Step: how long to wait before the next attempt (0: the Step's backoff). */
    this.retryAfterMs = r.retryAfterMs;
    /** Attribute writes in order: {key, value} with value the JSON text or null (delete). */
    this.writes = r.writes.map(([key, value]) => ({ key, value }));
    /** Channel publishes in order: {channel, value} (JSON text). */
    this.publishes = r.publishes.map(([channel, value]) => ({ channel, value }));
    /** Durable events (JSON text each) to append to AgentEvents, in order. */
    this.events = r.events;
    this._wait = r.wait;
    this._decision = r.decision;
    this._response = r.response;
  }

  /** True when status is 0. */
  get ok() { return this.status === 0; }

  /** A WaitFor's wait ({mode, conditions: [{id, channel, min, max} | {id,
   * timerMs}]}) or null; evaluateWait() takes it back as it is. */
  get wait() { return camelize(parse(this._wait)); }

  /** The wait as the library wrote it (JSON text) or null: what a host stores. */
  get waitText() { return this._wait === undefined ? null : this._wait; }

  /** An Execute's or RPC's decision ({next: [{step, input, options}],
   * complete, cancel}) or null; next[].input is kept as the library wrote it. */
  get decision() { return camelize(parse(this._decision), DECISION_OPAQUE); }

  /** An RPC's response document (camelCase) or null. */
  get response() { return camelize(parse(this._response)); }

  /** Throws the DexaError subclass of the status unless it is 0. */
  throwIfFailed() { if (!this.ok) throw errorFor(this.status, this.error); }

  /** The whole result as one object (the fields of dexa_result_json(3), in camelCase). */
  toJSON() {
    return { status: this.status, error: this.error, retryAfterMs: this.retryAfterMs,
      writes: this.writes.map((w) => ({ key: w.key, value: parse(w.value) })),
      publishes: this.publishes.map((p) => ({ channel: p.channel, value: parse(p.value) })),
      events: this.events.map(parse), wait: this.wait, decision: this.decision,
      response: this.response };
  }
}

/** The addon's handler for one dispatch: reader requests (0 get, 1 scan)
 * and live events (2). Keeps the reader's first error. */
function makeHandler(reader, onEvent, failure) {
  return (kind, text, reply) => {
    if (kind === 2) {
      if (onEvent) {
        try { onEvent(liveEvent(JSON.parse(text))); } catch (e) { failure.error = failure.error || e; }
      }
      return;
    }
    Promise.resolve()
      .then(() => (kind === 0 ? reader.get(text) : reader.scan(text)))
      .then(async (v) => {
        if (kind === 0) {
          if (v !== null && v !== undefined && typeof v !== 'string') {
            throw new TypeError(`reader.get('${text}') must return JSON text or null`);
          }
          reply(true, v === undefined ? null : v);
          return;
        }
        const pairs = [];
        for await (const [k, x] of v || []) pairs.push([String(k), String(x)]);
        reply(true, pairs);
      })
      .catch((e) => {
        failure.error = failure.error || e;
        reply(false);
      });
  };
}

function withSignal(promise, signal, cancelToken) {
  if (!signal) return promise;
  if (signal.aborted) {
    native().cancel(cancelToken);
    return Promise.reject(signal.reason);
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      native().cancel(cancelToken);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then((v) => { signal.removeEventListener('abort', onAbort); resolve(v); },
      (e) => { signal.removeEventListener('abort', onAbort); reject(e); });
  });
}

function settleDispatch(r, failure) {
  if (r.readerFailed || (failure.error && r.rc === CODES.DEXA_E_CALLBACK_FAILED)) {
    const cause = failure.error;
    throw errorFor(CODES.DEXA_E_CALLBACK_FAILED,
      cause ? `the attribute reader failed: ${cause.message || cause}` : 'the attribute reader failed',
      undefined, cause ? { cause } : undefined);
  }
  if (!r.result) throw errorFor(r.rc, 'dispatch failed');
  return new Result(r.result);
}

const CALL_KEYS = ['kind', 'sessionId', 'name', 'stepExecutionId', 'attempt', 'input',
  'conditions', 'recoveryError', 'nowMs'];

/** A cancel token that is cancelled when signal aborts (the host's "turn
 * stopped" for a running model call: dexa_call.cancelled), or null. */
function stopToken(signal) {
  if (!signal) return null;
  const token = native().cancelToken();
  if (signal.aborted) native().cancel(token);
  else signal.addEventListener('abort', () => native().cancel(token), { once: true });
  return token;
}

/** Runs call on agent with reader ({get(key), scan(prefix)}, each may
 * return a Promise) as the session's state; resolves to its Result, also
 * when the Step failed (check result.ok). options: onEvent(event) for live
 * events, signal (AbortSignal) to stop waiting for the reader, stopSignal
 * (AbortSignal) aborted when the host learns that the call's turn was
 * stopped: a running model call or harness segment sees it
 * (dexa_model_request_cancelled; a JavaScript model's request.signal). */
async function dispatch(agent, call, reader, options = {}) {
  const o = checkOptions(options, ['onEvent', 'signal', 'stopSignal'], 'dispatch');
  const c = checkOptions(call, CALL_KEYS, 'dispatch call');
  if (!reader || typeof reader.get !== 'function' || typeof reader.scan !== 'function') {
    throw new TypeError('dispatch needs a reader with get(key) and scan(prefix)');
  }
  const kind = typeof c.kind === 'string' ? KIND_NAMES[c.kind] : c.kind;
  if (![1, 2, 3].includes(kind)) throw new TypeError(`unknown call kind ${String(c.kind)}`);
  const failure = { error: null };
  const token = o.signal ? native().cancelToken() : null;
  const p = rethrow(() => native().dispatch(agent.handle, {
    kind, sessionId: c.sessionId, name: c.name, stepExecutionId: c.stepExecutionId,
    attempt: c.attempt === undefined ? 1 : c.attempt, input: jsonText(c.input),
    conditions: jsonText(c.conditions), recoveryError: jsonText(c.recoveryError),
    nowMs: c.nowMs === undefined ? Date.now() : c.nowMs,
  }, makeHandler(reader, o.onEvent, failure), token, stopToken(o.stopSignal)));
  const r = await withSignal(p, o.signal, token).catch((e) => { throw toDexa(e); });
  return settleDispatch(r, failure);
}

/** A wait's channels (its channel conditions, in order, once each). */
function waitChannels(wait) {
  const out = [];
  for (const c of (wait && wait.conditions) || []) {
    if (c && typeof c.channel === 'string' && !out.includes(c.channel)) out.push(c.channel);
  }
  return out;
}

/** {channel: queued} from an object, a Map or a function(channel). */
function channelCountsText(counts, wait) {
  if (counts === undefined || counts === null) return null;
  let obj = counts;
  if (typeof counts === 'function') {
    obj = {};
    for (const ch of waitChannels(typeof wait === 'string' ? parse(wait) : wait)) obj[ch] = counts(ch);
  } else if (counts instanceof Map) {
    obj = Object.fromEntries(counts);
  } else if (typeof counts !== 'object' || Array.isArray(counts)) {
    throw new TypeError('channelCounts must be an object, a Map or a function(channel)');
  }
  return JSON.stringify(obj);
}

function checkTime(v, name) {
  if (!Number.isSafeInteger(v)) throw new TypeError(`${name} must be an integer (ms since the epoch)`);
}

/** What evaluateWait() said of a wait (dexa_wait_evaluate(3)). */
class WaitEvaluation {
  constructor(text) {
    const d = JSON.parse(text);
    /** The whole answer (camelCase). */
    this.document = camelize(d);
    /** True when Execute may run now, with the messages of `consume`. */
    this.ready = d.ready;
    /** The ids of the timer conditions that fired. */
    this.fired = d.fired;
    /** When ready: [{id, channel, count}], the oldest `count` messages of
     * each channel to take, in this order. Empty otherwise. */
    this.consume = d.consume;
    /** Every channel the wait watches: evaluate again when one gets a message. */
    this.channels = d.channels;
    /** Every timer condition: [{id, timerMs, dueMs}]. */
    this.timers = d.timers.map((t) => ({ id: t.id, timerMs: t.timer_ms, dueMs: t.due_ms }));
    /** The earliest timer not fired (ms since the epoch), or null: evaluate again then. */
    this.nextDueMs = d.next_due_ms;
  }

  /** For a ready wait: removes the consumed messages from channels (a Map or
   * an object of channel -> array, oldest first) and returns Execute's
   * conditions {fired, channels: {<condition id>: [messages]}}. */
  take(channels) {
    if (!this.ready) throw new Error('take: the wait is not ready');
    const get = (name) => (channels instanceof Map ? channels.get(name) : channels[name]) || [];
    const got = {};
    for (const c of this.consume) {
      const queue = get(c.channel);
      if (queue.length < c.count) throw new Error(`take: channel ${c.channel} holds fewer than ${c.count} messages`);
      got[c.id] = (got[c.id] || []).concat(queue.splice(0, c.count));
    }
    return { fired: this.fired, channels: got };
  }
}

/** Evaluates a stored wait (Result.wait: an object, its JSON text or a
 * RawJSON; null: no wait) against the host's state: {nowMs, startedMs (when
 * the wait was stored), fired (ids of timers the host's own timers fired;
 * absent: timers fire by nowMs), channelCounts ({channel: queued}, a Map, or
 * a function(channel) -> queued)}. Synchronous and pure. */
function evaluateWait(wait, state) {
  const s = checkOptions(state, ['nowMs', 'startedMs', 'fired', 'channelCounts'], 'evaluateWait');
  const nowMs = s.nowMs === undefined ? Date.now() : s.nowMs;
  const startedMs = s.startedMs === undefined ? nowMs : s.startedMs;
  checkTime(nowMs, 'nowMs');
  checkTime(startedMs, 'startedMs');
  if (s.fired !== undefined && s.fired !== null && !Array.isArray(s.fired)) {
    throw new TypeError('fired must be an array of timer condition ids');
  }
  const text0 = waitText(wait);
  const counts = channelCountsText(s.channelCounts, wait instanceof RawJSON ? wait.text : wait);
  const text = rethrow(() => native().waitEvaluate(text0, nowMs, startedMs,
    s.fired === undefined || s.fired === null ? null : JSON.stringify(s.fired), counts));
  return new WaitEvaluation(text);
}

/** A Step method the embedded runtime claimed for you (Runtime.poll()):
 * `call` describes it; dispatch() runs it with the runtime's store as the
 * reader; hand the result to Runtime.complete() (or give the task back
 * with Runtime.abandon()). */
class Task {
  constructor(runtime, handle) {
    this.runtime = runtime;
    this.handle = handle;
    const c = native().taskInfo(handle);
    /** The call: {kind, sessionId, name, stepExecutionId, attempt, input,
     * conditions, recoveryError, nowMs} with JSON values parsed. */
    this.call = { kind: c.kind, sessionId: c.sessionId, name: c.name,
      stepExecutionId: c.stepExecutionId, attempt: c.attempt, input: parse(c.input),
      conditions: parse(c.conditions), recoveryError: parse(c.recoveryError), nowMs: c.nowMs };
  }

  /** Runs the task on the runtime's agent; onEvent receives live events
   * (else they go to the runtime's event readers); stopSignal aborts when
   * the host learns that the task's turn was stopped (see dispatch()). */
  async dispatch(options = {}) {
    const o = checkOptions(options, ['onEvent', 'stopSignal'], 'task.dispatch');
    const failure = { error: null };
    const handler = o.onEvent ? makeHandler(null, o.onEvent, failure) : null;
    const r = await rethrow(() => native().taskDispatch(this.runtime.handle, this.handle,
      this.runtime.agent.handle, handler, stopToken(o.stopSignal))).catch((e) => { throw toDexa(e); });
    return settleDispatch(r, failure);
  }
}

module.exports = { CallKind, MemoryAttributes, Result, Task, RawJSON, WaitEvaluation, dispatch,
  evaluateWait, withSignal };
