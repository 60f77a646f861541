'use strict';
// Node bindings of libdexagents (durable AI-agent sessions): the JavaScript
// half over the N-API addon build/dexagents.node (src/addon.c). Runtime calls
// that may wait return Promises (napi_async_work); events are an async
// iterator; tools are JavaScript functions (sync or async) called on the JS
// thread while a runtime worker thread waits for their result.
const path = require('node:path');

const native = require(process.env.DEXAGENTS_NODE_ADDON ||
  path.join(__dirname, 'build', 'dexagents.node'));

const EFFECTS = { read: 1, idempotent_write: 2, write: 3 };
const READ = 1, IDEMPOTENT_WRITE = 2, WRITE = 3;
const BUILTIN_ASK_USER = 1, BUILTIN_DURABLE_WAIT = 2, BUILTIN_WRITE_TODOS = 4, BUILTIN_ALL = 7;
// Operation kinds of native.runtimeOp (enum op_kind in src/addon.c).
const OP = { START_SESSION: 0, CALL: 1, READ_EVENTS: 2, WAIT_IDLE: 3, LIST_SESSIONS: 4,
  RUN_READY: 5, STOP: 6, CLOSE: 7 };

/** A failed libdexagents call: code is the DEXA_E_* name, errno the number. */
class DexaError extends Error {
  constructor(errno, message, document) {
    const info = native.errorInfo(errno);
    super(message || info.message);
    this.name = 'DexaError';
    this.code = info.name;
    this.errno = errno;
    this.errorClass = info.errorClass;
    if (document !== undefined) this.document = document;
  }
}

// Errors thrown by the addon itself carry code and errno already; make them DexaErrors.
function rethrow(fn) {
  try {
    return fn();
  } catch (e) {
    if (e && typeof e.errno === 'number' && !(e instanceof DexaError)) {
      throw new DexaError(e.errno, e.message);
    }
    throw e;
  }
}

const errorName = (code) => native.errorInfo(code).name;
const strerror = (code) => native.errorInfo(code).message;
const CODES = {};
for (const n of [101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116,
  201, 202, 203, 204, 205, 301, 302, 303, 304, 305, 306, 307, 901, 902]) {
  CODES[errorName(-n)] = -n;
}

/** A model client: Model.demo('mock/dex') or Model.client('openai/gpt-4.1', {...}). */
class Model {
  constructor(handle) { this.handle = handle; }
  static demo(name = 'mock/dex') { return new Model(rethrow(() => native.modelNew(name, null))); }
  static client(name, options = {}) {
    const opts = typeof options === 'string' ? options : JSON.stringify(options || {});
    return new Model(rethrow(() => native.modelNew(name, opts)));
  }
  /** The Claude Code harness (dexa_harness_claude_code_new): turns run in
   * the Claude Code CLI as durable segments. */
  static claudeCode(name = 'claude-code', options = {}) {
    const opts = typeof options === 'string' ? options : JSON.stringify(options || {});
    return new Model(rethrow(() => native.claudeCodeNew(name, opts)));
  }
  get name() { return native.modelName(this.handle); }
}

/** A tool written in JavaScript: fn(args, call) returns (or resolves to) a
 * string (the text the model sees) or any JSON value; a throw or rejection
 * becomes a tool error result. */
class Tool {
  constructor(fn, { name, description, parameters, effect = READ, approval = false } = {}) {
    if (typeof fn !== 'function') throw new TypeError('a tool needs a function');
    this.fn = fn;
    this.name = name || fn.name;
    this.description = description || '';
    this.parameters = parameters || { type: 'object' };
    this.effect = typeof effect === 'string' ? EFFECTS[effect] : effect;
    this.approval = approval ? 1 : 0;
  }
}
const tool = (fn, options) => new Tool(fn, options);

function errorText(e) {
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return `Error: ${String(e)}`;
}

/** An immutable agent: instructions, allowed models (the first is the
 * default; a string 'mock/...' is a demo model, another a provider client),
 * tools, built-in tools, plan mode and limits ({toolMaxAttempts: 2, ...}). */
class Agent {
  constructor({ instructions = '', models = ['mock/dex'], tools = [], builtinTools = 0,
    planMode = false, flowType, limits, toolSourceName = 'js' } = {}) {
    this.models = models.map((m) => (m instanceof Model ? m
      : (m.startsWith('mock/') ? Model.demo(m) : Model.client(m))));
    this.tools = tools.map((t) => (t instanceof Tool ? t : new Tool(t)));
    const list = this.tools;
    // Called on the JS thread for every tool call; done() wakes the worker.
    const dispatcher = (index, argsJson, call, done) => {
      let settled = false;
      const finish = (text, isError, content) => {
        if (settled) return;
        settled = true;
        done(text, isError, content);
      };
      Promise.resolve()
        .then(() => list[index].fn(argsJson ? JSON.parse(argsJson) : {}, call))
        .then((r) => {
          if (typeof r === 'string') finish(r, false, null);
          else if (r === undefined) finish('', false, null);
          else { const s = JSON.stringify(r); finish(s, false, s); }
        }, (e) => finish(errorText(e), true, null))
        .catch((e) => finish(errorText(e), true, null));
    };
    this.handle = rethrow(() => native.agentNew({
      instructions, flowType, builtinTools, planMode, limits, toolSourceName, dispatcher,
      models: this.models.map((m) => m.handle),
      tools: this.tools.map((t) => ({ name: t.name, description: t.description,
        parameters: JSON.stringify(t.parameters), effect: t.effect, approval: t.approval })),
    }));
  }
  describe() { return JSON.parse(rethrow(() => native.agentDescribe(this.handle))); }
}

/** One AgentEvents event with its resume token and live flag. */
class Event {
  constructor(token, event, live) {
    Object.assign(this, event);
    Object.defineProperty(this, 'token', { value: token, enumerable: false });
    Object.defineProperty(this, 'live', { value: !!live, enumerable: false });
  }
}

/** The embedded runtime of an agent on a store (':memory:', a SQLite path),
 * with `workers` worker threads (0: drive it with runReady). Every method
 * that may wait returns a Promise; failures reject with DexaError. Call
 * close() (awaited) when done: it waits for running Steps (JS tools too). */
class Runtime {
  constructor(agent, { store = ':memory:', workers = 2, sqliteSynchronous, leaseMs, workerId,
    eventsRetained } = {}) {
    this.agent = agent;
    this.handle = rethrow(() => native.runtimeNew(agent.handle,
      { store, sqliteSynchronous, leaseMs, workerId, eventsRetained }));
    this.closed = false;
    if (workers) this.start(workers);
  }

  start(workers = 2) { rethrow(() => native.runtimeStart(this.handle, workers)); }

  async _op(kind, a = null, b = null, c = null, n1 = 0, n2 = 0) {
    if (this.closed) throw new DexaError(CODES.DEXA_E_INVALID_ARG, 'the runtime is closed');
    const r = await rethrow(() => native.runtimeOp(this.handle, kind, a, b, c, n1, n2));
    let doc = null;
    if (r.out) doc = JSON.parse(r.out);
    if (r.rc !== 0) {
      const msg = (doc && doc.error && doc.error.message) || r.errmsg;
      throw new DexaError(r.rc, msg, doc === null ? undefined : doc);
    }
    return kind === OP.RUN_READY ? r.n : doc;
  }

  async startSession({ sessionId = null, model, settings } = {}) {
    const s = { ...(settings || {}) };
    if (model) s.model = model;
    const doc = await this._op(OP.START_SESSION, sessionId, null,
      Object.keys(s).length ? JSON.stringify(s) : null);
    return doc ? doc.session_id : sessionId;
  }

  call(sessionId, rpc, payload = {}) {
    return this._op(OP.CALL, sessionId, rpc, JSON.stringify(payload));
  }
  send(sessionId, text, { planMode = false } = {}) {
    return this.call(sessionId, 'send_message', planMode ? { text, plan_mode: true } : { text });
  }
  snapshot(sessionId) { return this.call(sessionId, 'snapshot'); }
  messages(sessionId, { beforeSeq, limit } = {}) {
    const p = {};
    if (beforeSeq !== undefined) p.before_seq = beforeSeq;
    if (limit !== undefined) p.limit = limit;
    return this.call(sessionId, 'list_agent_messages', p);
  }
  delete(sessionId, messageId) { return this.call(sessionId, 'delete_message', { message_id: messageId }); }
  steer(sessionId, messageId) { return this.call(sessionId, 'steer', { message_id: messageId }); }
  stopTurn(sessionId) { return this.call(sessionId, 'cancel_turn'); }
  approve(sessionId, callId, note) { return this._resolve(sessionId, callId, 'approve', note); }
  reject(sessionId, callId, note) { return this._resolve(sessionId, callId, 'reject', note); }
  _resolve(sessionId, callId, decision, note) {
    const p = { call_id: callId, decision };
    if (note !== undefined) p.note = note;
    return this.call(sessionId, 'resolve_approval', p);
  }
  answer(sessionId, callId, answer) {
    return this.call(sessionId, 'answer_question', { call_id: callId, answer });
  }
  executePlan(sessionId, revision) { return this.call(sessionId, 'execute_plan', { revision }); }
  listSessions({ after = null, limit = 100 } = {}) {
    return this._op(OP.LIST_SESSIONS, null, after, null, limit);
  }

  /** One read: {events: [Event], token}. */
  async readEvents(sessionId, token = '', { max = 100, timeoutMs = 0 } = {}) {
    const doc = await this._op(OP.READ_EVENTS, sessionId, token || '', null, max, timeoutMs);
    return { events: doc.events.map((e) => new Event(e.token, e.event, e.live)), token: doc.token };
  }

  /** Async iterator over the events after token ('' from the oldest kept).
   * follow false ends when none arrives within timeoutMs; true waits for
   * more until the loop is left. live false leaves out live deltas. */
  async *events(sessionId, { token = '', follow = false, timeoutMs = 1000, live = true } = {}) {
    let t = token;
    for (;;) {
      const r = await this.readEvents(sessionId, t, { timeoutMs });
      for (const ev of r.events) if (live || !ev.live) yield ev;
      if (r.token) t = r.token;
      if (!r.events.length && !follow) return;
    }
  }

  async waitIdle(sessionId, timeoutMs = 10000) { await this._op(OP.WAIT_IDLE, sessionId, null, null, timeoutMs); }
  runReady() { return this._op(OP.RUN_READY); }
  async stop() { await this._op(OP.STOP); }
  get errmsg() { return native.runtimeErrmsg(this.handle); }

  async close() {
    if (this.closed) return;
    const p = rethrow(() => native.runtimeOp(this.handle, OP.CLOSE, null, null, null, 0, 0));
    this.closed = true;
    await p;
  }
}

module.exports = {
  DexaError, Model, Tool, tool, Agent, Runtime, Event, version: native.version, errorName,
  strerror, errorClass: (code) => native.errorInfo(code).errorClass, READ, IDEMPOTENT_WRITE,
  WRITE, BUILTIN_ASK_USER, BUILTIN_DURABLE_WAIT, BUILTIN_WRITE_TODOS, BUILTIN_ALL, ...CODES,
};
