'use strict';
// The OpenAI Agents SDK (@openai/agents) as a harness (dexagents-harness(7)).
// Each segment runs the agent with its function tools replaced by stand-ins
// that need approval, so the SDK stops with an interruption at every
// function call; each call then runs the real tool in its own Step
// (CallTool, CallSingleAttemptTool, after AwaitToolApproval when it needs
// approval). The interrupted run's RunState (state.toString()) is the
// harness's state: the next segment restores it (RunState.fromString),
// approves each call (the stand-in returns the recorded result) or rejects
// it with the person's note, and the SDK goes on with its own turn: the
// current agent after handoffs, its turn count and tool-use tracking. A turn
// that starts (a new or steered message) runs the agent on the stored
// transcript instead: the SDK's output items are stored verbatim, so Dex
// compaction works (summarize runs the agent's model without tools).
// What the SDK runs itself inside the segment: the tools of the agents' MCP
// servers (mcpServers), hosted tools (web search, file search, code
// interpreter, hosted MCP: run by OpenAI's servers) and any other tool that
// is not a function tool. They are at least once (again when the segment
// reruns) and recorded as segment_tool_call events (frameworkToolCalls).
const { Harness } = require('../lib/agent');
const { checkOptions } = require('../lib/values');
const { toolPolicy, dexTool, usageOf, resultText, peer, ranOutput } = require('./_common');

// Dex's own tools: offered to the SDK as stand-ins too; their calls wait durably in the flow.
const BUILT_IN = new Set(['ask_user', 'durable_wait', 'write_todos']);
const OPTIONS = ['name', 'agent', 'runner', 'effects', 'approvals', 'maxTurns', 'timeoutMs'];

/** Every agent reachable from root through handoffs (an Agent, or a Handoff's agent). */
function agentGraph(root) {
  const seen = new Set();
  const walk = (a) => {
    if (!a || seen.has(a)) return;
    seen.add(a);
    for (const h of a.handoffs || []) walk(h.agent || h);
  };
  walk(root);
  return [...seen];
}

/** Text and reasoning of an SDK output item, for Dex's record. */
function textOf(raw) {
  if (!raw || raw.type !== 'message' || !Array.isArray(raw.content)) return '';
  return raw.content.map((c) => (c.type === 'output_text' ? c.text : c.type === 'refusal' ? c.refusal : ''))
    .join('');
}
function reasoningOf(raw) {
  if (!raw || raw.type !== 'reasoning') return '';
  const parts = [...(raw.content || []), ...(raw.summary || [])];
  return parts.map((c) => c.text || '').join('');
}

/** The stored transcript (and Dex's summary) as the SDK's input items. */
function toAgentInput(req) {
  const out = [];
  if (req.summary && req.summary.text) {
    out.push({ role: 'user', content: `Summary of the earlier conversation:\n${req.summary.text}` });
  }
  for (const m of req.messages) {
    if (m.role === 'user') {
      out.push({ role: 'user', content: m.text || '' });
    } else if (m.role === 'model') {
      const it = m.item;
      if (it && typeof it === 'object' && typeof it.type === 'string') {
        out.push(it); // the SDK's own output item, stored verbatim
      } else { // written by another model: its text and calls
        if (m.text) {
          out.push({ type: 'message', role: 'assistant', status: 'completed',
            content: [{ type: 'output_text', text: m.text }] });
        }
        for (const c of m.toolCalls || []) {
          out.push({ type: 'function_call', callId: c.callId, name: c.name, status: 'completed',
            arguments: JSON.stringify(c.arguments || {}) });
        }
      }
    } else if (m.role === 'tool') {
      out.push({ type: 'function_call_result', callId: m.callId, name: m.name, status: 'completed',
        output: { type: 'text', text: resultText(m) } });
    }
  }
  return out;
}

/** The usage of the model responses of one segment, summed. */
function segmentUsage(responses) {
  const sum = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 };
  const detail = (d, k) => [].concat(d || []).reduce((n, x) => n + ((x && x[k]) || 0), 0);
  for (const r of responses) {
    const u = r.usage || {};
    sum.inputTokens += u.inputTokens || 0;
    sum.outputTokens += u.outputTokens || 0;
    sum.cachedInputTokens += detail(u.inputTokensDetails, 'cached_tokens');
    sum.reasoningTokens += detail(u.outputTokensDetails, 'reasoning_tokens');
  }
  return usageOf(sum);
}

/**
 * A harness running an OpenAI Agents SDK agent. Options:
 *   name       the model name sessions select it by (default "openai-agents/<agent name>");
 *   agent      the starting Agent (its handoffs' agents come along);
 *   runner     a Runner (its config: model provider, tracing, ...; default new Runner());
 *   effects, approvals  per tool name (function tools carry no effect metadata);
 *   maxTurns   the SDK's maxTurns per segment; timeoutMs.
 * Returns a Harness whose `tools` are the Dex tools to give the agent.
 */
function openAIAgentsHarness(options) {
  const o = checkOptions(options, OPTIONS, 'openAIAgentsHarness');
  if (!o.agent || typeof o.agent.clone !== 'function') {
    throw new TypeError('openAIAgentsHarness: agent (an Agent of @openai/agents) is needed');
  }
  const graph = agentGraph(o.agent);
  const fnTools = new Map();
  for (const a of graph) {
    for (const t of a.tools || []) {
      if (t.type !== 'function') continue;
      if (fnTools.has(t.name) && fnTools.get(t.name) !== t) {
        throw new TypeError(`openAIAgentsHarness: two function tools are named ${t.name}`);
      }
      fnTools.set(t.name, t);
    }
  }
  const policies = new Map();
  const tools = [];
  for (const [name, t] of fnTools) {
    const pol = toolPolicy(name, t, o);
    policies.set(name, pol);
    tools.push(dexTool(name, t.description, t.parameters, pol, async (args, call) => {
      const { RunContext } = await peer('@openai/agents');
      const input = JSON.stringify(args);
      return t.invoke(new RunContext(), input, { signal: call.signal,
        toolCall: { type: 'function_call', callId: call.callId, name, arguments: input } });
    }));
  }
  let defaultRunner = null;

  /** The agent graph with stand-in tools that stop the run; results come from `recorded`. */
  function standIns(sdk, recorded, builtIns) {
    const stand = (name, description, parameters, strict) => sdk.tool({ name, description: description || '',
      parameters: parameters || { type: 'object', properties: {}, additionalProperties: true },
      strict: strict === true, needsApproval: true,
      execute: async (_args, _ctx, details) => {
        const m = recorded.get(details && details.toolCall && details.toolCall.callId);
        return m ? resultText(m) : '(no recorded result)';
      } });
    const extra = builtIns.map((t) => stand(t.name, t.description, t.parameters, false));
    const clones = new Map();
    for (const a of graph) {
      clones.set(a, a.clone({ tools: [...(a.tools || []).map((t) => (t.type === 'function'
        ? stand(t.name, t.description, t.parameters, t.strict) : t)), ...extra] }));
    }
    for (const [a, c] of clones) { // handoffs to the clones, each Handoff kept as it is otherwise
      c.handoffs = (a.handoffs || []).map((h) => {
        if (clones.has(h)) return clones.get(h);
        const target = clones.get(h.agent);
        return Object.assign(Object.create(Object.getPrototypeOf(h)), h, { agent: target,
          onInvokeHandoff: async (ctx, args) => { await h.onInvokeHandoff(ctx, args); return target; } });
      });
    }
    return clones;
  }

  /** A call's effect and approval: the options, then the tool's own needsApproval (per call). */
  async function proposed(sdk, raw) {
    let args = {};
    try { args = raw.arguments ? JSON.parse(raw.arguments) : {}; } catch { /* the tool's Step reports it */ }
    const call = { callId: raw.callId, name: raw.name, arguments: args };
    const pol = policies.get(raw.name);
    if (!pol) return call;
    call.effect = pol.effect;
    call.approval = pol.approval;
    const explicit = o.approvals && typeof o.approvals[raw.name] === 'boolean';
    if (!explicit && !call.approval) {
      call.approval = !!(await fnTools.get(raw.name).needsApproval(new sdk.RunContext(), args, raw.callId));
    }
    return call;
  }

  /** The interrupted run of the turn, approved (or rejected) with the recorded
   * results, when the new messages are exactly those results; else null. */
  async function resumed(sdk, req, clones, recorded) {
    const s = req.state && typeof req.state === 'object' ? req.state : {};
    const fresh = req.newMessages;
    if (!s.runState || !fresh.length || !fresh.every((m) => m.role === 'tool')) return null;
    const state = await sdk.RunState.fromString(clones.get(o.agent), s.runState);
    for (const m of fresh) recorded.set(m.callId, m);
    const pending = state.getInterruptions();
    if (!pending.length || !pending.every((i) => recorded.has(i.rawItem.callId))) return null;
    for (const i of pending) {
      const m = recorded.get(i.rawItem.callId);
      if (m.status === 'rejected') state.reject(i, { message: resultText(m) });
      else state.approve(i);
    }
    const so = new sdk.RunResult(state); // what the run had before this segment
    return { state, items: so.newItems.length, responses: so.rawResponses.length };
  }

  /** The segment's reply items: the SDK's new output items, verbatim. */
  async function replyItems(sdk, result, from, recorded) {
    const pendingIds = new Set();
    for (const i of result.interruptions || []) {
      if (!i.rawItem || i.rawItem.type !== 'function_call') {
        throw new Error(`openAIAgentsHarness: ${i.rawItem && i.rawItem.type} needs approval inside the SDK; ` +
          'only function tools leave the segment');
      }
      pendingIds.add(i.rawItem.callId);
    }
    const items = [];
    const ran = [];
    const calls = new Map();
    for (const it of result.newItems) if (it.rawItem && it.rawItem.callId) calls.set(it.rawItem.callId, it.rawItem);
    for (const it of result.newItems.slice(from)) {
      if (it.type === 'tool_approval_item') continue;
      const raw = it.rawItem;
      if (it.type === 'tool_call_output_item' && recorded.has(raw.callId)) continue; // Dex's record
      if (it.type === 'tool_call_output_item') { // a tool the SDK ran itself (an MCP server's, ...)
        const c = calls.get(raw.callId) || {};
        let args = {};
        try { args = c.arguments ? JSON.parse(c.arguments) : {}; } catch { args = { raw: c.arguments }; }
        const out = raw.output && typeof raw.output === 'object' && raw.output.type === 'text' ? raw.output.text
          : it.output !== undefined ? it.output : raw.output;
        ran.push({ callId: raw.callId, name: raw.name || c.name || 'tool', arguments: args,
          status: raw.status === 'incomplete' || raw.status === 'failed' ? 'error' : 'ok', output: ranOutput(out) });
      } else if (raw && raw.type === 'hosted_tool_call') { // run by OpenAI's servers
        let args = {};
        try { args = raw.arguments ? JSON.parse(raw.arguments) : {}; } catch { args = { raw: raw.arguments }; }
        ran.push({ callId: raw.id || raw.callId || `${raw.name}-${ran.length}`, name: raw.name || 'hosted_tool',
          arguments: args, status: raw.status === 'failed' ? 'error' : 'ok', output: ranOutput(raw.output) });
      }
      const toolCalls = raw.type === 'function_call' && pendingIds.has(raw.callId) ? [await proposed(sdk, raw)] : [];
      items.push({ item: raw, text: textOf(raw), reasoning: reasoningOf(raw), toolCalls });
    }
    if (!items.length) items.push({ item: { type: 'message', role: 'assistant', status: 'completed', content: [] } });
    return { items, ran, stopped: pendingIds.size > 0 };
  }

  async function runSegment(req) {
    const sdk = await peer('@openai/agents');
    const recorded = new Map();
    const builtIns = req.tools.filter((t) => BUILT_IN.has(t.name) && !fnTools.has(t.name));
    const clones = standIns(sdk, recorded, builtIns);
    const runner = o.runner || (defaultRunner = defaultRunner || new sdk.Runner());
    const resume = await resumed(sdk, req, clones, recorded);
    // a turn that starts runs on the stored transcript, with the agent the last turn ended with
    const current = (req.state && req.state.agent) || o.agent.name;
    const agent = resume ? clones.get(o.agent)
      : [...clones.values()].find((c) => c.name === current) || clones.get(o.agent);
    const result = await runner.run(agent, resume ? resume.state : toAgentInput(req), { stream: true,
      signal: req.signal, ...(o.maxTurns ? { maxTurns: o.maxTurns } : {}) });
    for await (const ev of result) {
      const d = ev.type === 'raw_model_stream_event' ? ev.data : {};
      if (d.type === 'output_text_delta' && d.delta) req.emitDelta(d.delta);
      else if (d.type === 'model' && d.event && /reasoning.*text\.delta$/.test(d.event.type || '') && d.event.delta) {
        req.emitDelta(d.event.delta, 'reasoning');
      }
    }
    await result.completed;
    if (result.error) throw result.error;
    if (req.signal.aborted || result.cancelled) throw Object.assign(new Error('aborted'), { name: 'AbortError' });
    const { items, ran, stopped } = await replyItems(sdk, result, resume ? resume.items : 0, recorded);
    const last = result.lastAgent || result.currentAgent;
    const state = { agent: last ? last.name : o.agent.name };
    if (stopped) state.runState = result.state.toString();
    return { items, frameworkToolCalls: ran, usage: segmentUsage(result.rawResponses.slice(resume ? resume.responses : 0)),
      finishReason: stopped ? 'tool_calls' : 'stop', state };
  }

  async function summarize(req) {
    const sdk = await peer('@openai/agents');
    const runner = o.runner || (defaultRunner = defaultRunner || new sdk.Runner());
    const summarizer = new sdk.Agent({ name: `${o.agent.name} summarizer`, model: o.agent.model,
      instructions: req.instructions || 'Summarize the conversation.' });
    const input = toAgentInput(req).filter((i) => !i.type || i.type === 'message');
    const r = await runner.run(summarizer, input, { signal: req.signal });
    const text = typeof r.finalOutput === 'string' ? r.finalOutput : JSON.stringify(r.finalOutput);
    return { item: { type: 'message', role: 'assistant', status: 'completed',
      content: [{ type: 'output_text', text }] }, text, usage: segmentUsage(r.rawResponses) };
  }

  const h = new Harness({ name: o.name || `openai-agents/${o.agent.name}`, runSegment, summarize,
    timeoutMs: o.timeoutMs });
  h.tools = tools;
  return h;
}

module.exports = { openAIAgentsHarness, toAgentInput };
