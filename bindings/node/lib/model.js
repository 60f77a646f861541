'use strict';
// Models and harnesses written in JavaScript (dexagents-harness(7)). The
// library calls them for each RunModel Step on a runtime worker thread; the
// addon (src/model.c) hands the call to the JS thread and waits. What a
// request asks of the library while the call runs (live deltas, reads inside
// the segment) goes back to that worker thread, which runs it: the library
// wants those calls on the thread running the segment. The answer is turned
// into reply operations that the worker applies.
const { native } = require('./native');
const { CODES, DexaError, errorFor, rethrow } = require('./errors');
const { checkOptions, checkInt, camelize } = require('./values');

// Reply operations of src/model.c (enum R_*).
const R = { ITEM: 1, TEXT: 2, REASONING: 3, TOOL_CALL: 4, POLICY: 5, USAGE: 6, FINISH: 7,
  STATE: 8, ENTRY: 9, ERROR: 10, RAN: 11 };
const EFFECTS = { read: 1, idempotent_write: 2, write: 3 };
const DELTA = { text: 1, reasoning: 2 };
const FINISH_REASONS = ['stop', 'tool_calls', 'length', 'content_filter', 'refusal', 'other'];

/** The error code a thrown value stands for: a DexaError keeps its own; an
 * error that says whether it is retryable (isRetryable, retryable: the AI
 * SDK's APICallError, the OpenAI SDK's) or carries an HTTP status is
 * classified by it (429 rate limited, 408/409/5xx transient, 401/403 auth,
 * other 4xx a model error); an abort or a timeout is a timeout; a network
 * failure (fetch failed, ECONNRESET, ...) is transient; anything else is a
 * model error, which fails the turn without retrying. */
function errorCode(e) {
  if (e instanceof DexaError) return e.errno;
  if (!e || typeof e !== 'object') return CODES.DEXA_E_MODEL;
  const status = e.statusCode || e.status || (e.response && e.response.status);
  if (status === 429) return CODES.DEXA_E_RATE_LIMITED;
  const retryable = e.isRetryable !== undefined ? e.isRetryable : e.retryable;
  if (retryable === true) return CODES.DEXA_E_TRANSIENT;
  if (status === 401 || status === 403) return CODES.DEXA_E_AUTH;
  if (status === 408 || status === 409 || status >= 500) return CODES.DEXA_E_TRANSIENT;
  if (retryable === false || (status >= 400 && status < 500)) return CODES.DEXA_E_MODEL;
  if (e.name === 'AbortError' || e.name === 'TimeoutError') return CODES.DEXA_E_TIMEOUT;
  const net = [e.code, e.cause && e.cause.code].filter(Boolean);
  if (net.some((c) => /^(ECONN|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|UND_ERR)/.test(c)) ||
      (e instanceof TypeError && /fetch failed|terminated/.test(e.message))) {
    return CODES.DEXA_E_TRANSIENT;
  }
  return CODES.DEXA_E_MODEL;
}

/** Milliseconds to wait before retrying, from the error (retryAfterMs, or a
 * Retry-After header), else 0 (the Step's backoff). */
function retryAfterMs(e) {
  if (!e || typeof e !== 'object') return 0;
  if (Number.isFinite(e.retryAfterMs)) return Math.max(0, Math.round(e.retryAfterMs));
  const h = e.responseHeaders || (e.headers && typeof e.headers === 'object' ? e.headers : null);
  const v = h && (typeof h.get === 'function' ? h.get('retry-after') : h['retry-after']);
  const s = Number(v);
  return Number.isFinite(s) && s > 0 ? Math.round(s * 1000) : 0;
}

function errorMessage(e) {
  if (e instanceof Error) return e.message || e.name;
  return String(e);
}

const text = (v) => (typeof v === 'string' ? v : JSON.stringify(v));

function effectOf(v, where) {
  if (v === undefined || v === null) return 0; // DEXA_TOOL_EFFECT_DEFAULT
  const n = typeof v === 'string' ? EFFECTS[v] : v;
  if (![1, 2, 3].includes(n)) throw new TypeError(`${where}: unknown effect ${String(v)}`);
  return n;
}

const approvalOf = (v) => (v === undefined || v === null ? -1 : (v ? 1 : 0));

/** One output item with its display text, reasoning and tool calls. */
function itemOps(ops, it, where) {
  if (it.item === undefined) throw new TypeError(`${where}: an item needs its item (any JSON value)`);
  ops.push([R.ITEM, text(it.item)]);
  if (it.text) ops.push([R.TEXT, String(it.text)]);
  if (it.reasoning) ops.push([R.REASONING, String(it.reasoning)]);
  for (const c of it.toolCalls || []) {
    if (!c || typeof c.callId !== 'string' || typeof c.name !== 'string') {
      throw new TypeError(`${where}: a tool call needs callId and name`);
    }
    ops.push([R.TOOL_CALL, c.callId, c.name, text(c.arguments === undefined ? {} : c.arguments)]);
    const effect = effectOf(c.effect, where);
    const approval = approvalOf(c.approval);
    if (effect !== 0 || approval !== -1) ops.push([R.POLICY, c.callId, effect, approval]);
  }
}

const REPLY_KEYS = ['items', 'item', 'text', 'reasoning', 'toolCalls', 'usage', 'finishReason',
  'providerFinishReason', 'state', 'stateEntries', 'frameworkToolCalls'];

/** A reply object as the addon's reply operations. */
function replyOps(reply, where) {
  const r = checkOptions(reply, REPLY_KEYS, where);
  const ops = [];
  let items = r.items;
  if (items === undefined) {
    const calls = r.toolCalls || [];
    const item = r.item !== undefined ? r.item : { type: 'message', role: 'assistant',
      content: r.text || '', ...(calls.length ? { tool_calls: calls.map((c) => ({ id: c.callId,
        name: c.name, arguments: c.arguments === undefined ? {} : c.arguments })) } : {}) };
    items = [{ item, text: r.text, reasoning: r.reasoning, toolCalls: calls }];
  } else if (!Array.isArray(items)) {
    throw new TypeError(`${where}: items must be an array`);
  }
  for (const it of items) itemOps(ops, it, where);
  if (r.usage) {
    const u = checkOptions(r.usage, ['inputTokens', 'outputTokens', 'cachedInputTokens',
      'cacheWriteTokens', 'reasoningTokens', 'costUsd'], `${where} usage`);
    for (const k of ['inputTokens', 'outputTokens', 'cachedInputTokens', 'cacheWriteTokens',
      'reasoningTokens']) checkInt(u[k], `usage.${k}`);
    ops.push([R.USAGE, u.inputTokens || 0, u.outputTokens || 0, u.cachedInputTokens || 0,
      u.cacheWriteTokens || 0, u.reasoningTokens || 0,
      Number.isFinite(u.costUsd) ? u.costUsd : -1]);
  }
  if (r.finishReason !== undefined) {
    if (!FINISH_REASONS.includes(r.finishReason)) {
      throw new TypeError(`${where}: finishReason must be one of ${FINISH_REASONS.join(', ')}`);
    }
    ops.push([R.FINISH, r.finishReason, r.providerFinishReason ? String(r.providerFinishReason) : null]);
  }
  if (r.state !== undefined) ops.push([R.STATE, r.state === null ? null : JSON.stringify(r.state)]);
  for (const e of r.stateEntries || []) ops.push([R.ENTRY, JSON.stringify(e)]);
  // tools the framework ran itself inside the segment: segment_tool_call events, at least once
  for (const c of r.frameworkToolCalls || []) {
    if (!c || typeof c.callId !== 'string' || typeof c.name !== 'string') {
      throw new TypeError(`${where}: a framework tool call needs callId and name`);
    }
    const output = c.output === undefined || c.output === null ? ''
      : typeof c.output === 'string' ? c.output : JSON.stringify(c.output);
    ops.push([R.RAN, JSON.stringify({ call_id: c.callId, name: c.name,
      arguments: c.arguments === undefined ? {} : c.arguments, status: c.status || 'ok', output })]);
  }
  return ops;
}

/** What a model or harness gets for one call: the request document's
 * fields in camelCase (model, sessionId, turn, round, attempt,
 * instructions, planMode, messages, tools, summary, harness, ...: see
 * dexa_model_request_json(3); tool arguments, items and structured results
 * are kept as they came), plus the harness's state, the new messages, an
 * AbortSignal that aborts when the turn is stopped, live deltas and reads
 * inside the segment. */
class ModelRequest {
  constructor(handle, info, signal, tools) {
    const doc = JSON.parse(info.json);
    Object.assign(this, camelize(doc));
    Object.defineProperties(this, {
      document: { value: doc, enumerable: false },
      _handle: { value: handle, enumerable: false },
      _tools: { value: tools, enumerable: false },
      signal: { value: signal, enumerable: false },
    });
    if (!Array.isArray(this.messages)) this.messages = [];
    /** Index of the first message new for the harness (0 for a model). */
    this.firstNewMessage = info.harness ? info.firstNew : 0;
    /** The harness's state as its last committed segment set it (null: none). */
    this.state = info.state === null ? null : JSON.parse(info.state);
    /** The entries appended to the state since it was last set, oldest first. */
    this.stateEntries = info.entries.map((e) => JSON.parse(e));
  }

  /** The messages stored since the harness's last committed segment. */
  get newMessages() { return this.messages.slice(this.firstNewMessage); }

  /** True once the turn was stopped (this.signal aborted). */
  get cancelled() { return this.signal.aborted; }

  /** Sends a live text delta (kind 'reasoning' for a reasoning summary) to
   * the session's event readers. Best effort; false once the call is over. */
  emitDelta(delta, kind = 'text') {
    if (!DELTA[kind]) throw new TypeError(`emitDelta: kind must be 'text' or 'reasoning'`);
    return native().modelCallEmit(this._handle, DELTA[kind], String(delta));
  }

  /** Runs one of the agent's read tools now, inside the segment (a harness
   * with runsReads): resolves to {status: 'ok'|'error'|'cancelled', output,
   * content?, code?}. It runs at least once (again when the segment reruns)
   * and is recorded as a segment_tool_call event. Rejects with the
   * library's error (BadStateError: the tool must leave the segment;
   * NotFoundError: no such tool). */
  callTool(name, args = {}, options = {}) {
    const o = checkOptions(options, ['callId'], 'callTool');
    return this._tools.call(this._handle, o.callId || `seg-${this.turn}-${this.round}-${name}-${this._tools.next}`,
      name, args);
  }
}

/** The reads inside the segments of one model: a Promise per read,
 * settled when the worker thread answers. */
class PendingReads {
  constructor() { this.seq = 0; this.waiting = new Map(); }

  get next() { return this.seq + 1; }

  call(handle, callId, name, args) {
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.waiting.set(seq, { resolve, reject });
      let queued;
      try {
        queued = native().modelCallTool(handle, seq, String(callId), String(name), JSON.stringify(args));
      } catch (e) {
        this.waiting.delete(seq);
        reject(e);
        return;
      }
      if (!queued) {
        this.waiting.delete(seq);
        reject(errorFor(CODES.DEXA_E_BAD_STATE, 'callTool: the segment is over'));
      }
    });
  }

  answer(seq, rc, out) {
    const w = this.waiting.get(seq);
    if (!w) return;
    this.waiting.delete(seq);
    if (rc !== 0) w.reject(errorFor(rc, `callTool: ${native().errorInfo(rc).message}`));
    else w.resolve(camelize(JSON.parse(out)));
  }
}

/** The function the addon calls on the JS thread for every message of
 * one model: start a call, abort one, answer a read. */
function makeDispatcher(fns, name) {
  const running = new Map(); // call id -> {ac, reads}
  return (kind, id, a, b, c) => {
    const call = running.get(id);
    if (kind === 1) {
      if (call) call.ac.abort(new DOMException(String(a), 'AbortError'));
      return;
    }
    if (kind === 2) {
      if (call) call.reads.answer(a, b, c);
      return;
    }
    const handle = a;
    const info = b;
    const ac = new AbortController();
    const reads = new PendingReads();
    running.set(id, { ac, reads });
    const fn = info.which === 1 ? fns.summarize : fns.run;
    const where = `model ${name}`;
    let settled = false;
    const finish = (rc, ops) => {
      if (settled) return;
      settled = true;
      running.delete(id);
      try {
        native().modelCallDone(handle, rc, ops);
      } catch { /* the addon never throws here */ }
    };
    const fail = (e) => finish(errorCode(e), [[R.ERROR, errorMessage(e), retryAfterMs(e)]]);
    Promise.resolve()
      .then(() => fn(new ModelRequest(handle, info, ac.signal, reads)))
      .then((reply) => {
        if (!reply || typeof reply !== 'object') throw new TypeError(`${where}: the reply must be an object`);
        finish(0, replyOps(reply, where));
      })
      .catch(fail);
  };
}

const HARNESS_FLAGS = { ownsTranscript: 1, runsReads: 2 };

/** Makes the library model of a JavaScript model or harness (a Model's handle). */
function newHostModel(name, fns, options) {
  if (typeof name !== 'string' || !name) throw new TypeError('a model needs a name');
  if (typeof fns.run !== 'function') throw new TypeError(`model ${name}: needs a function`);
  if (fns.summarize !== undefined && typeof fns.summarize !== 'function') {
    throw new TypeError(`model ${name}: summarize must be a function`);
  }
  checkInt(options.timeoutMs, 'timeoutMs');
  let flags = 0;
  for (const [k, bit] of Object.entries(HARNESS_FLAGS)) if (options[k]) flags |= bit;
  return rethrow(() => native().modelNewJs(name, makeDispatcher(fns, name), {
    harness: !!options.harness, flags, summarize: !!fns.summarize,
    timeoutMs: options.timeoutMs || 0,
  }));
}

module.exports = { newHostModel, errorCode, retryAfterMs, replyOps, ModelRequest };
