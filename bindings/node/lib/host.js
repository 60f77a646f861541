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
// Evaluating a wait is the host's job today: Result.wait returns the wait
// document of <dexagents/flow.h>. A helper of the C library that evaluates a
// wait against the host's state is being added; it will be bound here as
// evaluateWait() next to Result.wait (this is the hook), so a JavaScript
// host (the Restate example) need not re-implement those rules.
//
// The JSON documents of the flow protocol (wait, decision, response, the
// flow description, attribute values) are kept as the library wrote them
// (snake_case), since hosts store and exchange them unchanged.
const { native } = require('./native');
const { CODES, errorFor, rethrow, toDexa } = require('./errors');
const { checkOptions, jsonText, parse, RawJSON } = require('./values');

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

  /** A WaitFor's wait ({mode, conditions}) or null. */
  get wait() { return parse(this._wait); }

  /** An Execute's or RPC's decision ({next, complete, cancel}) or null. */
  get decision() { return parse(this._decision); }

  /** An RPC's response document or null. */
  get response() { return parse(this._response); }

  /** Throws the DexaError subclass of the status unless it is 0. */
  throwIfFailed() { if (!this.ok) throw errorFor(this.status, this.error); }

  /** The whole result as one object (the shape of dexa_result_json(3)). */
  toJSON() {
    return { status: this.status, error: this.error, retry_after_ms: this.retryAfterMs,
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
        try { onEvent(JSON.parse(text)); } catch (e) { failure.error = failure.error || e; }
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

module.exports = { CallKind, MemoryAttributes, Result, Task, RawJSON, dispatch, withSignal };
