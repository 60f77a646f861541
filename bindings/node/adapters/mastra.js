'use strict';
// Mastra agents (@mastra/core) as a harness (dexagents-harness(7)). Each
// segment runs agent.stream() with the agent's tools passed again as client
// tools, which Mastra offers to the model without their execute functions:
// its agent loop stops at the tool calls (the way it hands calls to a
// browser). Each call then runs the tool's execute in its own Step
// (CallTool, CallSingleAttemptTool, after AwaitToolApproval when it needs
// approval); the next segment gets the recorded results as tool messages.
// The transcript is Dex's: each step is stored as an AI SDK message (its
// parts and provider metadata as streamed) and the messages are rebuilt
// each segment (Mastra memory is not used), so Dex compaction works
// (summarize runs agent.generate without tools).
// What Mastra runs itself inside the segment: the agent's sub-agents
// (agents: {...}, offered as agent-<name> tools), its workflows (workflow-<name>)
// and any tool it got another way (toolsets, MCP clients). They are at least
// once (again when the segment reruns) and recorded as segment_tool_call
// events (frameworkToolCalls).
const { Harness } = require('../lib/agent');
const { checkOptions } = require('../lib/values');
const { toolPolicy, dexTool, usageOf, finishReasonOf, ranOutput } = require('./_common');
const { toModelMessages, summaryMessages } = require('./ai-sdk');

// Dex's own tools: offered to Mastra as client tools; their calls wait durably in the flow.
const BUILT_IN = new Set(['ask_user', 'durable_wait', 'write_todos']);
const OPTIONS = ['name', 'agent', 'effects', 'approvals', 'streamOptions', 'timeoutMs'];

/** The steps of a segment from Mastra's stream chunks, each as the parts of
 * an AI SDK assistant message (with their provider metadata, so that they
 * replay as they came) and the results of tools Mastra ran inside it. The
 * chunks are the record: a step's own content keeps only its last tool call. */
function stepCollector() {
  const steps = [];
  let cur = null;
  const step = () => cur || (cur = { content: [], ran: [], open: new Map() });
  const meta = (pm) => (pm && typeof pm === 'object' && Object.keys(pm).length ? { providerOptions: pm } : {});
  const textPart = (kind, p) => {
    const s = step();
    const key = `${kind}:${p.id}`;
    if (!s.open.has(key)) {
      const part = { type: kind, text: '', ...meta(p.providerMetadata) };
      s.open.set(key, part);
      s.content.push(part);
    }
    return s.open.get(key);
  };
  return {
    add(c) {
      const p = c.payload || {};
      const kind = c.type.startsWith('reasoning-') ? 'reasoning' : 'text';
      if (/^(text|reasoning)-(start|end)$/.test(c.type)) Object.assign(textPart(kind, p), meta(p.providerMetadata));
      else if (c.type === 'text-delta' || c.type === 'reasoning-delta') textPart(kind, p).text += p.text || '';
      else if (c.type === 'tool-call') {
        step().content.push({ type: 'tool-call', toolCallId: p.toolCallId, toolName: p.toolName,
          input: p.args || {}, ...meta(p.providerMetadata) });
      } else if (c.type === 'tool-result' || c.type === 'tool-error') step().ran.push({ type: c.type, ...p });
      else if (c.type === 'step-finish' && cur) { steps.push(cur); cur = null; }
    },
    end() { if (cur) steps.push(cur); cur = null; return steps; },
  };
}

/** A tool result part of a tool Mastra ran inside the segment, as a ModelMessage part. */
function resultPart(p) {
  if (p.type === 'tool-error') {
    const e = p.error;
    return { type: 'tool-result', toolCallId: p.toolCallId, toolName: p.toolName,
      output: { type: 'error-text', value: String(e && e.message ? e.message : e) } };
  }
  const v = p.result;
  return { type: 'tool-result', toolCallId: p.toolCallId, toolName: p.toolName,
    output: typeof v === 'string' ? { type: 'text', value: v } : { type: 'json', value: v === undefined ? null : v } };
}

/**
 * A harness running a Mastra Agent. Options:
 *   name       the model name sessions select it by (default "mastra/<agent name>");
 *   agent      the Agent (new Agent({name, instructions, model, tools}));
 *   effects, approvals  per tool name, where its mcp.annotations and requireApproval say nothing;
 *   streamOptions  more agent.stream() options (modelSettings, providerOptions, ...);
 *   timeoutMs.
 * Resolves to a Harness whose `tools` are the Dex tools to give the agent
 * (the agent's tools are listed once, here).
 */
async function mastraHarness(options) {
  const o = checkOptions(options, OPTIONS, 'mastraHarness');
  if (!o.agent || typeof o.agent.stream !== 'function' || typeof o.agent.listTools !== 'function') {
    throw new TypeError('mastraHarness: agent (an Agent of @mastra/core) is needed');
  }
  const agentTools = await o.agent.listTools();
  const policies = new Map();
  const tools = [];
  for (const [name, t] of Object.entries(agentTools)) {
    const perCall = typeof t.needsApprovalFn === 'function' ? t.needsApprovalFn
      : typeof t.requireApproval === 'function' ? t.requireApproval : undefined;
    const pol = toolPolicy(name, t, o, t.requireApproval === true ? true : perCall);
    policies.set(name, pol);
    if (typeof t.execute === 'function') {
      tools.push(dexTool(name, t.description, null, pol, (args, call) =>
        t.execute(args, { abortSignal: call.signal, agent: { toolCallId: call.callId, messages: [] } })));
    }
  }
  const streamOptions = o.streamOptions || {};

  /** The tools Mastra ran inside the segment, as frameworkToolCalls. */
  function ranInside(steps) {
    const ran = [];
    for (const step of steps) {
      for (const p of step.ran) {
        const call = step.content.find((x) => x.type === 'tool-call' && x.toolCallId === p.toolCallId);
        const e = p.error;
        ran.push({ callId: p.toolCallId, name: p.toolName, arguments: call ? call.input || {} : p.args || {},
          status: p.type === 'tool-error' ? 'error' : 'ok',
          output: p.type === 'tool-error' ? String(e && e.message ? e.message : e) : ranOutput(p.result) });
      }
    }
    return ran;
  }

  /** The segment's reply items: one AI SDK message per step (and the results of tools Mastra ran). */
  async function replyItems(steps) {
    const items = [];
    for (const step of steps) {
      const done = new Set(step.ran.map((p) => p.toolCallId));
      const toolCalls = [];
      for (const p of step.content.filter((x) => x.type === 'tool-call' && !done.has(x.toolCallId))) {
        const call = { callId: p.toolCallId, name: p.toolName, arguments: p.input };
        const pol = policies.get(p.toolName);
        if (pol) {
          call.effect = pol.effect;
          call.approval = pol.perCall ? !!(await pol.perCall(p.input, {})) : pol.approval;
        }
        toolCalls.push(call);
      }
      items.push({ item: { role: 'assistant', content: step.content },
        text: step.content.filter((p) => p.type === 'text').map((p) => p.text).join(''),
        reasoning: step.content.filter((p) => p.type === 'reasoning').map((p) => p.text).join(''), toolCalls });
      if (step.ran.length) items.push({ item: { role: 'tool', content: step.ran.map(resultPart) }, text: '' });
    }
    return items;
  }

  async function runSegment(req) {
    const clientTools = {};
    for (const [name, t] of Object.entries(agentTools)) clientTools[name] = t; // Mastra drops execute
    for (const t of req.tools) { // Dex's built-in tools, when the agent enables them
      if (BUILT_IN.has(t.name) && !clientTools[t.name]) {
        clientTools[t.name] = { id: t.name, description: t.description,
          inputSchema: t.parameters || { type: 'object' } };
      }
    }
    const result = await o.agent.stream(toModelMessages(req), { ...streamOptions, clientTools,
      abortSignal: req.signal, maxSteps: streamOptions.maxSteps || 25 });
    let failure = null;
    const steps = stepCollector();
    for await (const c of result.fullStream) {
      const p = c.payload || {};
      steps.add(c);
      if (c.type === 'text-delta' && p.text) req.emitDelta(p.text);
      else if (c.type === 'reasoning-delta' && p.text) req.emitDelta(p.text, 'reasoning');
      else if (c.type === 'error') failure = failure || p.error || new Error('the Mastra stream failed');
    }
    if (failure) throw failure;
    if (req.signal.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' });
    const all = steps.end();
    const items = await replyItems(all);
    if (!items.length) items.push({ item: { role: 'assistant', content: [] }, text: '' });
    const finish = await result.finishReason;
    return { items, frameworkToolCalls: ranInside(all), usage: usageOf(await result.usage), finishReason: finishReasonOf(finish),
      providerFinishReason: finish || undefined };
  }

  async function summarize(req) {
    const r = await o.agent.generate(summaryMessages(req), {
      instructions: req.instructions || 'Summarize the conversation.',
      abortSignal: req.signal, toolChoice: 'none', activeTools: [] });
    return { item: { role: 'assistant', content: [{ type: 'text', text: r.text }] }, text: r.text,
      usage: usageOf(r.usage) };
  }

  const h = new Harness({ name: o.name || `mastra/${o.agent.name}`, runSegment, summarize,
    timeoutMs: o.timeoutMs });
  h.tools = tools;
  return h;
}

module.exports = { mastraHarness };
