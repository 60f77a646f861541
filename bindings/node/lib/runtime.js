'use strict';
// The embedded runtime: an agent's sessions on a durable store, run by
// worker threads or driven by the host (poll, dispatch, complete). Every
// method that may wait returns a Promise and runs on a thread of its own,
// never on libuv's pool.
const { native } = require('./native');
const { CODES, errorFor, rethrow, toDexa, closed, RuntimeClosedError } = require('./errors');
const { checkOptions, checkInt, checkString, camelize } = require('./values');
const { Task, withSignal } = require('./host');

// Operation kinds of native.runtimeOp (enum op_kind in src/runtime.c).
const OP = { START_SESSION: 0, CALL: 1, READ_EVENTS: 2, WAIT_IDLE: 3, LIST_SESSIONS: 4,
  RUN_READY: 5, STOP: 6, POLL: 7 };
const FOREVER = -1;
const RUNTIME_OPTIONS = ['store', 'workers', 'sqliteSynchronous', 'leaseMs', 'workerId',
  'eventsRetained', 'sessionCacheBytes', 'sessionIdleTimeoutMs', 'sessionRetentionMs',
  'sweepIntervalMs', 'onLog'];

/** One AgentEvents event: its fields in camelCase (type, at, ...), with
 * `token` (resume after it) and `live` (a best-effort delta) besides. */
class Event {
  constructor(token, event, live) {
    Object.assign(this, camelize(event));
    Object.defineProperty(this, 'token', { value: token, enumerable: false });
    Object.defineProperty(this, 'live', { value: !!live, enumerable: false });
  }
}

function timeoutOf(ms, dflt) {
  const v = ms === undefined ? dflt : ms;
  if (v === Infinity || v === FOREVER) return FOREVER;
  checkInt(v, 'timeoutMs');
  return v;
}

/** The embedded runtime of an agent. Options: store (':memory:', a SQLite
 * path, 'sqlite:PATH'), workers (worker threads; 0: drive it with
 * runReady() or poll()), sqliteSynchronous ('full' | 'normal'), leaseMs,
 * workerId, eventsRetained, sessionCacheBytes, sessionIdleTimeoutMs (30 days;
 * 0 never), sessionRetentionMs (7 days; 0 forever), sweepIntervalMs
 * (60000; 0: no automatic sweep), onLog (a function receiving {level,
 * levelName, message} for each error the runtime handles itself, on the JS
 * thread; what it throws is ignored). An unknown option throws
 * UnknownKeyError. Close it (close(), or `await using`) when done. */
class Runtime {
  constructor(agent, options = {}) {
    const o = checkOptions(options, RUNTIME_OPTIONS, 'new Runtime()');
    checkString(o.store, 'store');
    checkString(o.sqliteSynchronous, 'sqliteSynchronous');
    checkString(o.workerId, 'workerId');
    checkInt(o.workers, 'workers', { max: 256 });
    for (const k of ['leaseMs', 'eventsRetained', 'sessionCacheBytes', 'sessionIdleTimeoutMs',
      'sessionRetentionMs', 'sweepIntervalMs']) checkInt(o[k], k);
    if (o.onLog !== undefined && typeof o.onLog !== 'function') {
      throw new TypeError('onLog must be a function ({level, levelName, message}) => void');
    }
    if (!agent || !agent.handle) throw new TypeError('new Runtime(agent, options): agent must be an Agent');
    const { workers = 2, ...libOptions } = o;
    if (libOptions.store === undefined) libOptions.store = ':memory:';
    this.agent = agent;
    const made = rethrow(() => native().runtimeNew(agent.handle, libOptions));
    this.handle = made.handle;
    /** The dexa_runtime_options this runtime was made with, read back from
     * the struct given to the library (its fields in camelCase). */
    this.libraryOptions = camelize(made.options);
    this._closing = null;
    this._running = false; // worker threads started
    this._unref = false;
    if (workers) this.start(workers);
  }

  /** Starts `workers` worker threads (1..256). While they run, the runtime
   * keeps the event loop alive, like a server (see unref()). */
  start(workers = 2) {
    if (this._closing) throw closed();
    checkInt(workers, 'workers', { min: 1, max: 256 });
    rethrow(() => native().runtimeStart(this.handle, workers));
    this._running = true;
    this._hold();
  }

  _hold() { native().runtimeHold(this.handle, this._running && !this._unref && !this._closing); }

  /** Lets the process exit while worker threads run (like server.unref()):
   * at exit, running Steps are left for the next process, as after a crash. */
  unref() { this._unref = true; this._hold(); return this; }

  /** Undoes unref(): the worker threads keep the event loop alive again. */
  ref() { this._unref = false; this._hold(); return this; }

  /** True once close() began. */
  get closed() { return this._closing !== null; }

  async _op(kind, a = null, b = null, c = null, n1 = 0, n2 = 0, signal = undefined) {
    if (this._closing) throw closed();
    if (signal && signal.aborted) throw signal.reason;
    const token = signal ? native().cancelToken() : null;
    const p = rethrow(() => native().runtimeOp(this.handle, kind, a, b, c, n1, n2, token));
    const r = await withSignal(p, signal, token).catch((e) => { throw toDexa(e); });
    if (r.ended === 'closed') throw closed();
    let doc = null;
    if (r.out) doc = JSON.parse(r.out);
    if (r.rc !== 0) {
      const msg = (doc && doc.error && doc.error.message) || r.errmsg;
      throw errorFor(r.rc, msg, doc === null ? undefined : doc);
    }
    if (kind === OP.RUN_READY) return r.n;
    if (kind === OP.POLL) return r;
    return doc;
  }

  /** Starts a session; resolves to its id (the runtime picks
   * 's-<32 hex>' without sessionId). model names one of the agent's models. */
  async startSession(options = {}) {
    const o = checkOptions(options, ['sessionId', 'model', 'settings'], 'startSession');
    const s = { ...(o.settings || {}) };
    if (o.model) s.model = o.model;
    const doc = await this._op(OP.START_SESSION, o.sessionId || null, null,
      Object.keys(s).length ? JSON.stringify(s) : null);
    return doc ? doc.session_id : o.sessionId;
  }

  /** Runs a session RPC by name; payload is the RPC's input document
   * (dexagents-flow(7), as a dispatch call's input); resolves to its
   * response in camelCase, as the typed methods below do. */
  async call(sessionId, rpc, payload = {}) {
    return camelize(await this._op(OP.CALL, sessionId, rpc, JSON.stringify(payload)));
  }

  _rpc(sessionId, rpc, payload) { return this.call(sessionId, rpc, payload); }

  /** Sends a user message: {messageId, queued}. */
  send(sessionId, text, options = {}) {
    const o = checkOptions(options, ['planMode'], 'send');
    return this._rpc(sessionId, 'send_message', o.planMode ? { text, plan_mode: true } : { text });
  }

  /** The durable view of the session (camelCase). */
  snapshot(sessionId) { return this._rpc(sessionId, 'snapshot', {}); }

  /** A page of older messages: {messages, hasMore}. */
  messages(sessionId, options = {}) {
    const o = checkOptions(options, ['beforeSeq', 'limit'], 'messages');
    const p = {};
    if (o.beforeSeq !== undefined) p.before_seq = o.beforeSeq;
    if (o.limit !== undefined) p.limit = o.limit;
    return this._rpc(sessionId, 'list_agent_messages', p);
  }

  delete(sessionId, messageId) { return this._rpc(sessionId, 'delete_message', { message_id: messageId }); }

  steer(sessionId, messageId) { return this._rpc(sessionId, 'steer', { message_id: messageId }); }

  stopTurn(sessionId) { return this._rpc(sessionId, 'cancel_turn', {}); }

  cancelTurn(sessionId) { return this.stopTurn(sessionId); }

  /** Ends the session for good (end_session): running Steps are cancelled,
   * waits end, later changes fail with SessionEndedError. */
  endSession(sessionId, reason) {
    if (reason !== undefined) checkString(reason, 'reason');
    return this._rpc(sessionId, 'end_session', reason === undefined ? {} : { reason });
  }

  approve(sessionId, callId, note) { return this._resolve(sessionId, callId, 'approve', note); }

  reject(sessionId, callId, note) { return this._resolve(sessionId, callId, 'reject', note); }

  _resolve(sessionId, callId, decision, note) {
    const p = { call_id: callId, decision };
    if (note !== undefined) p.note = note;
    return this._rpc(sessionId, 'resolve_approval', p);
  }

  answer(sessionId, callId, answer) {
    return this._rpc(sessionId, 'answer_question', { call_id: callId, answer });
  }

  executePlan(sessionId, revision) { return this._rpc(sessionId, 'execute_plan', { revision }); }

  /** Sessions, newest first: {sessions, next}. */
  async listSessions(options = {}) {
    const o = checkOptions(options, ['after', 'limit'], 'listSessions');
    return camelize(await this._op(OP.LIST_SESSIONS, null, o.after || null, null,
      o.limit === undefined ? 100 : o.limit));
  }

  /** One read: {events, token}, waiting up to timeoutMs (default 0;
   * Infinity: until one comes) for the first event. */
  async readEvents(sessionId, token = '', options = {}) {
    const o = checkOptions(options, ['max', 'timeoutMs', 'signal'], 'readEvents');
    const doc = await this._op(OP.READ_EVENTS, sessionId, token || '', null,
      o.max === undefined ? 100 : o.max, timeoutOf(o.timeoutMs, 0), o.signal);
    return { events: doc.events.map((e) => new Event(e.token, e.event, e.live)), token: doc.token };
  }

  /** Async iterator over the events after token ('' from the oldest kept).
   * Without follow, the events there are now (no waiting). With follow,
   * more as they come: forever, or until none came for timeoutMs; it ends
   * when the runtime closes or signal aborts. live false leaves out live
   * deltas. */
  async *events(sessionId, options = {}) {
    const o = checkOptions(options, ['token', 'follow', 'timeoutMs', 'live', 'signal'], 'events');
    let t = o.token || '';
    const wait = o.follow ? timeoutOf(o.timeoutMs, FOREVER) : 0;
    for (;;) {
      let r;
      try {
        r = await this.readEvents(sessionId, t, { timeoutMs: wait, signal: o.signal });
      } catch (e) {
        if (o.follow && e instanceof RuntimeClosedError) return; // closed while following
        throw e;
      }
      for (const ev of r.events) if (o.live !== false || !ev.live) yield ev;
      if (r.token) t = r.token;
      if (!r.events.length) return;
    }
  }

  /** Waits until the session has no Step ready or running; rejects with
   * TimedOutError after timeoutMs (default: no limit). The second argument
   * may be the timeout in ms. */
  async waitIdle(sessionId, options = {}) {
    const o = typeof options === 'number' ? { timeoutMs: options }
      : checkOptions(options, ['timeoutMs', 'signal'], 'waitIdle');
    await this._op(OP.WAIT_IDLE, sessionId, null, null, 0, timeoutOf(o.timeoutMs, FOREVER), o.signal);
  }

  /** Runs ready Steps until none is ready now; resolves to how many ran. */
  runReady() { return this._op(OP.RUN_READY); }

  /** Stops the worker threads, letting each finish its current Step. */
  async stop() {
    await this._op(OP.STOP);
    this._running = false;
    if (!this._closing) this._hold();
  }

  /** Host-driven: claims one ready Step method, waiting up to timeoutMs
   * (default 0; Infinity: until one is ready); resolves to a Task or null. */
  async poll(options = {}) {
    const o = checkOptions(options, ['timeoutMs', 'signal'], 'poll');
    const r = await this._op(OP.POLL, null, null, null, 0, timeoutOf(o.timeoutMs, 0), o.signal)
      .catch((e) => { if (e.errno === CODES.DEXA_E_TIMEOUT) return null; throw e; });
    return r && r.task ? new Task(this, r.task) : null;
  }

  /** Applies a task's result (null: the attempt failed without one) in one
   * transaction. Rejects with TimedOutError when the lease was lost. */
  async complete(task, result) {
    if (this._closing) throw closed();
    const r = await rethrow(() => native().runtimeComplete(this.handle, task.handle,
      result ? result.handle : null)).catch((e) => { throw toDexa(e); });
    if (r.rc !== 0) throw errorFor(r.rc, r.errmsg);
  }

  /** Gives a claimed task back without a result (retried once its lease ends). */
  abandon(task) { rethrow(() => native().taskAbandon(task.handle)); }

  /** The last error message of this runtime. */
  get errmsg() { return native().runtimeErrmsg(this.handle); }

  /** Closes the runtime: no new operation, waits end (event iterators
   * finish), the workers finish their Steps (JavaScript tools included),
   * the store closes. With timeoutMs, running JavaScript tools still going
   * after it are given up: their AbortSignals abort and their Steps are
   * left as after a crash (resumed by the next process; a single-attempt
   * write is recorded as unknown_outcome). */
  close(options = {}) {
    if (this._closing) return this._closing;
    const o = checkOptions(options, ['timeoutMs'], 'close');
    const p = rethrow(() => native().runtimeClose(this.handle));
    const limit = o.timeoutMs;
    if (limit !== undefined && limit !== Infinity) checkInt(limit, 'timeoutMs');
    this._closing = (async () => {
      if (limit === undefined || limit === Infinity) {
        await p;
        return;
      }
      let timer;
      const late = new Promise((r) => { timer = setTimeout(r, limit, 'late'); });
      const first = await Promise.race([p.then(() => 'closed'), late]);
      clearTimeout(timer);
      if (first === 'late') {
        native().runtimeAbandonTools(this.handle, `the runtime closed after ${limit} ms`);
        await p;
      }
    })();
    return this._closing;
  }

  /** `await using rt = new Runtime(...)` closes it. */
  [Symbol.asyncDispose]() { return this.close(); }
}

/** The dexa_runtime_options the options make, read back (for tests and
 * diagnostics: what reaches the library). */
function runtimeOptions(options = {}) {
  const { workers, onLog, ...rest } = checkOptions(options, RUNTIME_OPTIONS, 'runtimeOptions');
  return camelize(rethrow(() => native().runtimeOptions(rest)));
}

module.exports = { Runtime, Event, runtimeOptions };
