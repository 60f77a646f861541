'use strict';
// Google's Agent Development Kit for TypeScript (@google/adk) as a harness
// (dexagents-harness(7)). Each segment runs the agent with ADK's own
// client-side tool execution (runConfig.pauseOnToolCalls): the runner ends
// the invocation after a model response with function calls, before any
// tool runs. Each call then runs the tool (FunctionTool.runAsync) in its own
// Step (CallTool, CallSingleAttemptTool, after AwaitToolApproval when it
// needs approval); the next segment sends the recorded results as the
// function responses of the new user content. The ADK session's events are
// the harness's state, appended a segment at a time: each segment restores
// them into an InMemorySessionService, so any worker in any process resumes
// the session. ADK keeps its own transcript (the events), so Dex compaction
// is off.
const { Harness } = require('../lib/agent');
const { checkOptions } = require('../lib/values');
const { toolPolicy, dexTool, usageOf, finishReasonOf, resultText, peer } = require('./_common');

// Dex's own tools: declared to the model by a plugin; their calls wait durably in the flow.
const BUILT_IN = new Set(['ask_user', 'durable_wait', 'write_todos']);
const OPTIONS = ['name', 'agent', 'appName', 'effects', 'approvals', 'runConfig', 'plugins', 'timeoutMs'];
const USER = 'dex';
const FOLD_AFTER = 16; // state entries before the segment writes the whole event list again

/** Every agent of the tree (the root and its sub-agents). */
function agentTree(root) {
  const out = [];
  const walk = (a) => { if (a && !out.includes(a)) { out.push(a); (a.subAgents || []).forEach(walk); } };
  walk(root);
  return out;
}

const partsOf = (e) => (e && e.content && Array.isArray(e.content.parts) ? e.content.parts : []);

/** The recorded results and user messages new for ADK, as one user content. */
function newContent(fresh) {
  const parts = [];
  for (const m of fresh.filter((x) => x.role === 'tool')) {
    const text = resultText(m);
    parts.push({ functionResponse: { id: m.callId, name: m.name,
      response: m.status === 'ok' ? { result: text } : { error: text, status: m.status } } });
  }
  for (const m of fresh.filter((x) => x.role === 'user')) parts.push({ text: m.text || '' });
  return { role: 'user', parts };
}

/** The usage of a segment's model events, summed (Gemini's usageMetadata). */
function segmentUsage(events) {
  let input = 0; let output = 0; let cached = 0; let thoughts = 0;
  for (const e of events) {
    const u = e.usageMetadata;
    if (!u) continue;
    input += u.promptTokenCount || 0;
    output += (u.candidatesTokenCount || 0) + (u.thoughtsTokenCount || 0);
    cached += u.cachedContentTokenCount || 0;
    thoughts += u.thoughtsTokenCount || 0;
  }
  return usageOf({ inputTokens: input, outputTokens: output, cachedInputTokens: cached, reasoningTokens: thoughts });
}

/**
 * A harness running an ADK agent. Options:
 *   name       the model name sessions select it by (default "adk/<agent name>");
 *   agent      the root agent (an LlmAgent; its sub-agents' tools come along);
 *   appName    the ADK app name of the session (default "dex");
 *   effects, approvals  per tool name (ADK's FunctionTool carries no effect metadata;
 *              requireConfirmation asks for approval);
 *   runConfig  more RunConfig settings (streamingMode defaults to SSE); plugins;
 *   timeoutMs.
 * Returns a Harness whose `tools` are the Dex tools to give the agent.
 */
function adkHarness(options) {
  const o = checkOptions(options, OPTIONS, 'adkHarness');
  if (!o.agent || typeof o.agent.runAsync !== 'function') {
    throw new TypeError('adkHarness: agent (an LlmAgent of @google/adk) is needed');
  }
  const appName = o.appName || 'dex';
  const fnTools = new Map();
  for (const a of agentTree(o.agent)) {
    for (const t of a.tools || []) {
      if (!t || typeof t.runAsync !== 'function' || typeof t.name !== 'string') continue; // toolsets: not listed
      if (fnTools.has(t.name) && fnTools.get(t.name) !== t) {
        throw new TypeError(`adkHarness: two tools are named ${t.name}`);
      }
      fnTools.set(t.name, t);
    }
  }
  const confirms = (t, args) => (typeof t.checkRequireConfirmation === 'function'
    ? t.checkRequireConfirmation(args) : false);
  const policies = new Map();
  const tools = [];
  for (const [name, t] of fnTools) {
    const pol = toolPolicy(name, t, o);
    policies.set(name, pol);
    const decl = typeof t._getDeclaration === 'function' ? t._getDeclaration() : null;
    tools.push(dexTool(name, t.description, decl && decl.parametersJsonSchema, pol, async (args, call) => {
      // A call that ADK would gate on confirmation was approved in Dex: it runs
      // as confirmed. The tool has no ADK session here (no state, no actions).
      const toolContext = (await confirms(t, args)) ? { toolConfirmation: { confirmed: true },
        functionCallId: call.callId, actions: {}, abortSignal: call.signal } : undefined;
      return t.runAsync({ args, toolContext });
    }));
  }

  /** A call's effect and approval: the options, then requireConfirmation (per call). */
  async function proposed(fc) {
    const call = { callId: fc.id, name: fc.name, arguments: fc.args || {} };
    const pol = policies.get(fc.name);
    if (!pol) return call;
    call.effect = pol.effect;
    call.approval = pol.approval;
    const explicit = o.approvals && typeof o.approvals[fc.name] === 'boolean';
    if (!explicit && !call.approval) call.approval = !!(await confirms(fnTools.get(fc.name), call.arguments));
    return call;
  }

  /** A plugin declaring Dex's built-in tools to the model (their calls pause like any other). */
  function builtInsPlugin(adk, offered) {
    const decls = offered.map((t) => ({ name: t.name, description: t.description,
      parametersJsonSchema: t.parameters || { type: 'object' } }));
    return new (class extends adk.BasePlugin {
      async beforeModelCallback({ llmRequest }) {
        const config = llmRequest.config || (llmRequest.config = {});
        const list = config.tools || (config.tools = []);
        let holder = list.find((x) => Array.isArray(x.functionDeclarations));
        if (!holder) list.push(holder = { functionDeclarations: [] });
        for (const d of decls) if (!holder.functionDeclarations.some((x) => x.name === d.name)) holder.functionDeclarations.push(d);
        return undefined;
      }
    })('dex_built_in_tools');
  }

  /** The reply's items: each new model event verbatim, with its calls that have no response. */
  async function replyItems(added) {
    const answered = new Set(added.flatMap((e) => partsOf(e).filter((p) => p.functionResponse)
      .map((p) => p.functionResponse.id)));
    const items = [];
    for (const e of added.filter((x) => x.author !== 'user' && partsOf(x).length)) {
      const parts = partsOf(e);
      const calls = parts.filter((p) => p.functionCall && !answered.has(p.functionCall.id)).map((p) => p.functionCall);
      items.push({ item: e, text: parts.filter((p) => p.text && !p.thought).map((p) => p.text).join(''),
        reasoning: parts.filter((p) => p.text && p.thought).map((p) => p.text).join(''),
        toolCalls: await Promise.all(calls.map(proposed)) });
    }
    if (!items.length) { // an error ADK recorded as an event (errorCode), or nothing at all
      const failed = added.find((e) => e.errorCode);
      throw Object.assign(new Error(failed ? `${failed.errorCode}: ${failed.errorMessage || 'the model failed'}`
        : 'the agent added no model event'), { retryable: true });
    }
    return items;
  }

  async function runSegment(req) {
    const adk = await peer('@google/adk');
    const newMessage = newContent(req.newMessages);
    if (!newMessage.parts.length) throw new Error('adkHarness: nothing new for the agent');
    // the session as the last committed segment left it, in memory
    const sessions = new adk.InMemorySessionService();
    const ids = { appName, userId: USER, sessionId: req.sessionId };
    const session = await sessions.createSession(ids);
    const stored = [...(Array.isArray(req.state) ? req.state : []), ...req.stateEntries.flat()];
    for (const event of stored) await sessions.appendEvent({ session, event });
    const offered = req.tools.filter((t) => BUILT_IN.has(t.name) && !fnTools.has(t.name));
    const runner = new adk.Runner({ appName, agent: o.agent, sessionService: sessions,
      plugins: [...(o.plugins || []), ...(offered.length ? [builtInsPlugin(adk, offered)] : [])] });
    const runConfig = { streamingMode: adk.StreamingMode.SSE, ...(o.runConfig || {}), pauseOnToolCalls: true };
    for await (const ev of runner.runAsync({ ...ids, newMessage, runConfig, abortSignal: req.signal })) {
      if (!ev.partial) continue;
      for (const p of partsOf(ev)) if (p.text) req.emitDelta(p.text, p.thought ? 'reasoning' : 'text');
    }
    if (req.signal.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' });
    const added = JSON.parse(JSON.stringify((await sessions.getSession(ids)).events.slice(stored.length)));
    const items = await replyItems(added);
    const stopped = items.some((i) => i.toolCalls.length);
    const last = added.filter((e) => e.finishReason).at(-1);
    const fold = req.stateEntries.length >= FOLD_AFTER;
    return { items, usage: segmentUsage(added),
      finishReason: stopped ? 'tool_calls' : (finishReasonOf(last && String(last.finishReason).toLowerCase()) || 'stop'),
      providerFinishReason: last ? String(last.finishReason) : undefined,
      ...(fold ? { state: [...stored, ...added] } : { stateEntries: [added] }) };
  }

  const h = new Harness({ name: o.name || `adk/${o.agent.name}`, runSegment, ownsTranscript: true,
    timeoutMs: o.timeoutMs });
  h.tools = tools;
  return h;
}

module.exports = { adkHarness };
