'use strict';
// The agent definition, shaped like the Dex Agents SDK's: models, tools
// written in JavaScript (sync or async, with an AbortSignal), built-in
// tools, MCP tool sources, compaction and limits.
const { native } = require('./native');
const { rethrow, toDexa } = require('./errors');
const { checkOptions, checkInt, checkString, camelize, camel, libraryDocument } = require('./values');
const { newHostModel } = require('./model');

// The options of dexa_model_client_new(3) and dexa_harness_claude_code_new(3),
// in camelCase: true for a value kept as it is, an object for a nested one.
const CLIENT_OPTIONS = { baseUrl: true, apiKey: true, apiKeyEnv: true, timeoutMs: true,
  connectTimeoutMs: true, maxOutputTokens: true, temperature: true, topP: true, seed: true,
  stop: true, headers: true, query: true, reasoningEffort: true, reasoningSummary: true,
  encryptedReasoning: true, thinkingBudgetTokens: true, anthropicVersion: true, toolChoice: true,
  parallelToolCalls: true, strictTools: true, promptCaching: true, cacheTtl: true,
  price: { input: true, output: true, cachedInput: true, cacheWrite: true }, fallbacks: true,
  project: true, location: true, accessTokenEnv: true, tokenCommand: true, tokenTtlS: true,
  region: true, apiVersion: true, api: true };
const CLAUDE_CODE_OPTIONS = { cliPath: true, model: true, allowedTools: true, cwd: true, env: true,
  timeoutMs: true };

/** Options (camelCase) as the library's JSON text; a string is the
 * library's own JSON text (snake_case), passed unchanged. */
function optionsText(options, spec, where) {
  if (typeof options === 'string') return options;
  return JSON.stringify(libraryDocument(options || {}, spec, where));
}

/** The flow description with camelCase keys; the names of Steps and RPCs
 * (the keys of transitions.steps and transitions.rpcs) are kept. */
function flowDescription(d) {
  const { transitions, ...rest } = d;
  const out = camelize(rest);
  if (transitions && typeof transitions === 'object') {
    out.transitions = {};
    for (const [k, m] of Object.entries(transitions)) {
      out.transitions[camel(k)] = m && typeof m === 'object'
        ? Object.fromEntries(Object.entries(m).map(([name, x]) => [name, camelize(x)])) : m;
    }
  }
  return out;
}

/** A model client: Model.demo('mock/dex') or Model.client('openai/gpt-4.1', {...}). */
class Model {
  constructor(handle) { this.handle = handle; }

  /** The demo model `name` (mock/dex, mock/dex-mini): no key, no network. */
  static demo(name = 'mock/dex') { return new Model(rethrow(() => native().modelNew(name, null))); }

  /** A provider client configured by options (dexa_model_client_new(3)),
   * in camelCase: baseUrl, apiKey, apiKeyEnv, timeoutMs, ... (ClientOptions
   * in index.d.ts); an unknown key throws UnknownKeyError. A string is the
   * library's own JSON text (snake_case), passed unchanged. */
  static client(name, options = {}) {
    const opts = optionsText(options, CLIENT_OPTIONS, 'Model.client');
    return new Model(rethrow(() => native().modelNew(name, opts)));
  }

  /** The Claude Code harness (dexa_harness_claude_code_new): turns run in
   * the Claude Code CLI as durable segments; options: cliPath, model,
   * allowedTools, cwd, env, timeoutMs (the key from the environment). */
  static claudeCode(name = 'claude-code', options = {}) {
    const opts = optionsText(options, CLAUDE_CODE_OPTIONS, 'Model.claudeCode');
    return new Model(rethrow(() => native().claudeCodeNew(name, opts)));
  }

  /** demo() for 'mock/...' names, else client() with default options. */
  static named(name) { return name.startsWith('mock/') ? Model.demo(name) : Model.client(name); }

  /** A model written in JavaScript: generate(request) returns (or resolves
   * to) the reply (see ModelRequest and ModelReply in index.d.ts); a throw
   * is an error that retries or fails the turn by its kind. Options:
   * timeoutMs (how long a worker waits for one call; default 15 minutes). */
  static fromFunction(name, generate, options = {}) {
    const o = checkOptions(options, ['timeoutMs'], 'Model.fromFunction');
    return new Model(newHostModel(name, { run: generate }, o));
  }

  get name() { return native().modelName(this.handle); }
}

const HARNESS_OPTIONS = ['name', 'runSegment', 'summarize', 'ownsTranscript', 'runsReads',
  'timeoutMs'];

/** A harness written in JavaScript (dexagents-harness(7)): an agent
 * framework that runs the model part of a turn, one segment per RunModel
 * Step. runSegment(request) reads the framework's state and the new
 * messages from the request and returns a reply with its items, tool calls
 * (each then runs in its own Step) and new state; summarize(request)
 * (optional) writes Dex compaction's summary. ownsTranscript: the framework
 * keeps and compacts its own transcript (Dex compaction off; requests carry
 * only new messages); runsReads: it runs read tools inside the segment
 * (request.callTool). A Harness is a Model: put it in the agent's models. */
class Harness extends Model {
  constructor(options = {}) {
    const o = checkOptions(options, HARNESS_OPTIONS, 'new Harness()');
    super(newHostModel(o.name, { run: o.runSegment, summarize: o.summarize },
      { harness: true, ownsTranscript: o.ownsTranscript, runsReads: o.runsReads,
        timeoutMs: o.timeoutMs }));
    this.ownsTranscript = !!o.ownsTranscript;
    this.runsReads = !!o.runsReads;
  }
}

/** What a tool does outside the session (CallTool retries READ and
 * IDEMPOTENT_WRITE; WRITE runs at most once in CallSingleAttemptTool). */
const ToolEffect = Object.freeze({ READ: 1, IDEMPOTENT_WRITE: 2, WRITE: 3 });
const EFFECTS = { read: 1, idempotent_write: 2, write: 3 };

const TOOL_OPTIONS = ['name', 'description', 'parameters', 'effect', 'approval', 'requiresApproval'];

/** A tool written in JavaScript: fn(args, call) returns (or resolves to) a
 * string (the text the model sees), a ToolResult, or any JSON value; a throw
 * or rejection becomes a tool error result. call.signal aborts when the
 * worker stops waiting (tool timeout, runtime closed with a timeout). */
class Tool {
  constructor(fn, options = {}) {
    if (typeof fn !== 'function') throw new TypeError('a tool needs a function');
    const o = checkOptions(options, TOOL_OPTIONS, 'tool');
    checkString(o.name, 'tool name');
    checkString(o.description, 'tool description');
    this.fn = fn;
    this.name = o.name || fn.name;
    if (!this.name) throw new TypeError('a tool needs a name (options.name or a named function)');
    this.description = o.description || '';
    this.parameters = o.parameters || { type: 'object' };
    const effect = o.effect === undefined ? ToolEffect.READ : o.effect;
    this.effect = typeof effect === 'string' ? EFFECTS[effect] : effect;
    if (![1, 2, 3].includes(this.effect)) {
      throw new TypeError(`unknown tool effect ${String(effect)} (read, idempotent_write, write)`);
    }
    this.approval = !!(o.requiresApproval !== undefined ? o.requiresApproval : o.approval);
  }
}

/** tool(fn, options): a new Tool. */
const tool = (fn, options) => new Tool(fn, options);

/** A tool's result spelled out: the text the model sees, optional
 * structured content, and whether it is a tool-level error. */
class ToolResult {
  constructor(text, { content, isError = false } = {}) {
    this.text = String(text);
    this.content = content;
    this.isError = !!isError;
  }
}

/** The built-in tools; Object.values(BuiltInTool) selects all. */
const BuiltInTool = Object.freeze({ ASK_USER: 'ask_user', DURABLE_WAIT: 'durable_wait',
  WRITE_TODOS: 'write_todos' });
const BUILTIN_BITS = { ask_user: 1, durable_wait: 2, write_todos: 4 };

function builtinBits(v) {
  if (v === undefined) return 0;
  if (typeof v === 'number') return v;
  let bits = 0;
  for (const name of v) {
    if (!BUILTIN_BITS[name]) throw new TypeError(`unknown built-in tool '${name}'`);
    bits |= BUILTIN_BITS[name];
  }
  return bits;
}

/** MCP servers as tool sources, from the worker's configuration: an object
 * in the common {mcpServers: {...}} shape (or its inner object), or the path
 * of such a JSON file. Unknown keys throw UnknownKeyError; secrets are
 * redacted by redacted(). */
class McpToolSource {
  constructor(servers) {
    if (typeof servers === 'string') {
      this.handle = rethrow(() => native().mcpNew(null, servers));
    } else if (servers && typeof servers === 'object') {
      const doc = servers.mcpServers ? servers : { mcpServers: servers };
      this.handle = rethrow(() => native().mcpNew(JSON.stringify(doc), null));
    } else {
      throw new TypeError('McpToolSource needs a configuration object or a file path');
    }
  }

  /** The configuration with every env and header value replaced by "<redacted>". */
  redacted() { return JSON.parse(rethrow(() => native().mcpRedacted(this.handle))); }

  /** The configured servers' names. */
  get serverNames() { return Object.keys(this.redacted().mcpServers || {}); }

  /** Lists every server's tools now (starting or connecting to each). */
  async listTools() {
    const lists = await rethrow(() => native().mcpListTools(this.handle)).catch((e) => { throw toDexa(e); });
    return lists.flatMap((t) => JSON.parse(t));
  }
}

const AGENT_OPTIONS = ['instructions', 'models', 'tools', 'toolSources', 'builtInTools',
  'planModeEnabled', 'compaction', 'limits', 'flowType', 'toolSourceName',
  'builtinTools', 'planMode']; // the last two: earlier names
const COMPACTION = { contextWindowTokens: 'contextWindowTokens', thresholdPct: 'compactionThresholdPct',
  keepPct: 'compactionKeepPct', retentionMessages: 'retentionMessages',
  keepFullTranscript: 'keepFullTranscript' };
const LIMITS = ['runModelMaxAttempts', 'runModelTimeoutMs', 'toolMaxAttempts', 'toolTimeoutMs',
  'maxStateBytes', 'maxMessageBytes',
  // earlier places of the compaction settings
  'contextWindowTokens', 'compactionThresholdPct', 'compactionKeepPct', 'retentionMessages',
  'keepFullTranscript'];

function errorText(e) {
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return `Error: ${String(e)}`;
}

/** Runs JavaScript tools for the addon: dispatcher(kind, id, index, args,
 * call, done) with kind 0 (call) or 1 (abort call id; args is the reason). */
function makeDispatcher(tools) {
  const running = new Map(); // call id -> AbortController
  return (kind, id, index, argsJson, call, done) => {
    if (kind === 1) {
      const ac = running.get(id);
      if (ac) ac.abort(new DOMException(argsJson, 'AbortError'));
      return;
    }
    const ac = new AbortController();
    running.set(id, ac);
    let settled = false;
    const finish = (text, isError, content) => {
      if (settled) return;
      settled = true;
      running.delete(id);
      done(text, isError, content);
    };
    Promise.resolve()
      .then(() => tools[index].fn(argsJson ? JSON.parse(argsJson) : {}, { ...call, signal: ac.signal }))
      .then((r) => {
        if (r instanceof ToolResult) {
          finish(r.text, r.isError, r.content === undefined ? null : JSON.stringify(r.content));
        } else if (typeof r === 'string') finish(r, false, null);
        else if (r === undefined || r === null) finish('', false, null);
        else { const s = JSON.stringify(r); finish(s, false, s); }
      }, (e) => finish(errorText(e), true, null))
      .catch((e) => finish(errorText(e), true, null));
  };
}

/** An immutable agent. Options: instructions, models (the allow-list; the
 * first is the default; 'mock/...' strings are demo models, other strings
 * provider clients), tools, toolSources (McpToolSource), builtInTools
 * (names of BuiltInTool), planModeEnabled, compaction {contextWindowTokens,
 * thresholdPct, keepPct, retentionMessages, keepFullTranscript}, limits
 * {runModelMaxAttempts, runModelTimeoutMs, toolMaxAttempts, toolTimeoutMs,
 * maxStateBytes, maxMessageBytes}, flowType, toolSourceName. Unknown
 * options and limits throw UnknownKeyError. */
class Agent {
  constructor(options = {}) {
    const o = checkOptions(options, AGENT_OPTIONS, 'new Agent()');
    const limits = { ...checkOptions(o.limits, LIMITS, 'Agent limits') };
    for (const [k, v] of Object.entries(checkOptions(o.compaction, Object.keys(COMPACTION), 'Agent compaction'))) {
      limits[COMPACTION[k]] = v;
    }
    for (const [k, v] of Object.entries(limits)) {
      if (typeof v === 'boolean') limits[k] = v ? 1 : 0;
      else checkInt(v, `limits.${k}`, { min: -1 });
    }
    checkString(o.instructions, 'instructions');
    checkString(o.flowType, 'flowType');
    const models = o.models === undefined ? ['mock/dex'] : o.models;
    if (!Array.isArray(models)) throw new TypeError('models must be an array');
    this.models = models.map((m) => (m instanceof Model ? m : Model.named(m)));
    this.tools = (o.tools || []).map((t) => (t instanceof Tool ? t : new Tool(t)));
    this.toolSources = (o.toolSources || []).map((s) => {
      if (!(s instanceof McpToolSource)) throw new TypeError('toolSources must be McpToolSource objects');
      return s;
    });
    const planMode = o.planModeEnabled !== undefined ? o.planModeEnabled : o.planMode;
    this.handle = rethrow(() => native().agentNew({
      instructions: o.instructions || '', flowType: o.flowType,
      builtinTools: builtinBits(o.builtInTools !== undefined ? o.builtInTools : o.builtinTools),
      planMode: !!planMode, limits, toolSourceName: o.toolSourceName,
      dispatcher: makeDispatcher(this.tools),
      models: this.models.map((m) => m.handle),
      toolSources: this.toolSources.map((s) => s.handle),
      tools: this.tools.map((t) => ({ name: t.name, description: t.description,
        parameters: JSON.stringify(t.parameters), effect: t.effect, approval: t.approval })),
    }));
  }

  /** The flow type ("AgentSession" unless flowType named one). */
  get flowType() { return native().agentFlowType(this.handle); }

  /** The flow description (dexa_flow_describe(3)) with camelCase keys
   * (flowType, startStep, steps[].options.maxAttempts, rpcs[].readOnly,
   * ...); Step and RPC names are kept as they are. */
  describe() { return flowDescription(JSON.parse(rethrow(() => native().agentDescribe(this.handle)))); }

  /** Host-driven mode: runs one Step method or RPC with `reader` as the
   * session's state (see host.js, dispatch()). */
  dispatch(call, reader, options) { return require('./host').dispatch(this, call, reader, options); }
}

module.exports = { Model, Harness, Tool, tool, ToolResult, ToolEffect, BuiltInTool, McpToolSource, Agent };
