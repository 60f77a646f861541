'use strict';
// LangGraph.js (@langchain/langgraph) as a harness (dexagents-harness(7)):
// a ReAct-style graph (createReactAgent, or your own StateGraph with a tool
// node) compiled with interruptBefore its tool node, so each segment runs
// the graph until the model proposes tool calls (or answers). Each call
// runs in its own Step; the next segment writes the recorded results into
// the graph as the tool node's output (updateState as that node) and
// resumes it. The graph's checkpoint is the harness's state, kept by the
// session: any worker in any process resumes the thread. The graph keeps
// its own transcript (its messages channel), so Dex compaction is off.
const { Harness } = require('../lib/agent');
const { checkOptions } = require('../lib/values');
const { toolPolicy, dexTool, usageOf, finishReasonOf, resultText, peer } = require('./_common');

const OPTIONS = ['name', 'graph', 'tools', 'toolNode', 'effects', 'approvals', 'recursionLimit',
  'timeoutMs'];
const THREAD = { thread_id: 'dex', checkpoint_ns: '' };

/** The latest checkpoint of the saver's thread as JSON (serialized by the
 * graph's own serializer, bytes in base64). */
async function dumpCheckpoint(saver) {
  const t = await saver.getTuple({ configurable: { thread_id: THREAD.thread_id } });
  if (!t) return null;
  const [ctype, cbytes] = await saver.serde.dumpsTyped(t.checkpoint);
  const [mtype, mbytes] = await saver.serde.dumpsTyped(t.metadata || {});
  return { v: 1, ctype, checkpoint: Buffer.from(cbytes).toString('base64'), mtype,
    metadata: Buffer.from(mbytes).toString('base64') };
}

async function loadCheckpoint(saver, s) {
  if (!s || s.v !== 1) return;
  const checkpoint = await saver.serde.loadsTyped(s.ctype, Buffer.from(s.checkpoint, 'base64'));
  const metadata = await saver.serde.loadsTyped(s.mtype, Buffer.from(s.metadata, 'base64'));
  await saver.put({ configurable: { ...THREAD } }, checkpoint, metadata, {});
}

/** Text of a LangChain message's content (a string or content blocks). */
function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.filter((b) => b && (b.type === 'text' || b.type === 'text_delta')).map((b) => b.text).join('');
}

/**
 * A harness running a LangGraph graph. Options:
 *   name       the model name sessions select it by (default "langgraph/agent");
 *   graph      a StateGraph, or a compiled graph (createReactAgent(...)): it is
 *              compiled again with the session's checkpoint and an interrupt
 *              before its tool node;
 *   tools      the LangChain tools the graph's model is bound to (they run in
 *              their own Steps);
 *   toolNode   the tool node's name (default "tools");
 *   effects, approvals  per tool name, where its metadata says nothing;
 *   recursionLimit, timeoutMs.
 * Returns a Harness whose `tools` are the Dex tools to give the agent.
 */
function langGraphHarness(options) {
  const o = checkOptions(options, OPTIONS, 'langGraphHarness');
  if (!o.graph) throw new TypeError('langGraphHarness: graph is needed');
  const builder = typeof o.graph.compile === 'function' ? o.graph : o.graph.builder;
  if (!builder) throw new TypeError('langGraphHarness: graph must be a StateGraph or a compiled graph');
  const toolNode = o.toolNode || 'tools';
  const policies = new Map();
  const tools = (o.tools || []).map((t) => {
    const pol = toolPolicy(t.name, t, o);
    policies.set(t.name, pol);
    const params = t.schema && !t.schema._def && !t.schema._zod && t.schema.type ? t.schema : null;
    return dexTool(t.name, t.description, params, pol, (args, call) =>
      t.invoke(args, { signal: call.signal, toolCall: undefined }));
  });

  async function runSegment(req) {
    const [{ MemorySaver }, msgs] = await Promise.all([peer('@langchain/langgraph'),
      peer('@langchain/core/messages')]);
    const saver = new MemorySaver();
    await loadCheckpoint(saver, req.state);
    const graph = builder.compile({ checkpointer: saver, interruptBefore: [toolNode] });
    const config = { configurable: { ...THREAD }, signal: req.signal,
      recursionLimit: o.recursionLimit || 25 };
    const before = req.state ? await graph.getState(config) : null;
    const seen = before ? (before.values.messages || []).length : 0;
    const fresh = req.newMessages;
    const results = fresh.filter((m) => m.role === 'tool').map((m) => new msgs.ToolMessage({
      tool_call_id: m.callId, name: m.name, content: resultText(m),
      status: m.status === 'ok' ? 'success' : 'error' }));
    const users = fresh.filter((m) => m.role === 'user').map((m) => new msgs.HumanMessage(m.text || ''));
    let input = users.length ? { messages: users } : null;
    if (results.length && before && before.next.includes(toolNode)) {
      await graph.updateState(config, { messages: results }, toolNode); // as if the tool node ran
    } else if (results.length) {
      input = { messages: [...results, ...users] };
    }
    const stream = await graph.stream(input, { ...config, streamMode: 'messages' });
    for await (const [chunk] of stream) {
      const t = chunk && chunk._getType && chunk._getType() === 'ai' ? textOf(chunk.content) : '';
      if (t) req.emitDelta(t);
    }
    const after = await graph.getState(config);
    const all = after.values.messages || [];
    const added = all.slice(seen).filter((m) => m._getType() === 'ai');
    const stopped = after.next.includes(toolNode);
    const items = added.map((m, i) => {
      const last = i === added.length - 1;
      const toolCalls = last && stopped ? (m.tool_calls || []).map((c) => {
        const pol = policies.get(c.name);
        return { callId: c.id, name: c.name, arguments: c.args || {},
          ...(pol ? { effect: pol.effect, approval: pol.approval } : {}) };
      }) : [];
      return { item: msgs.mapChatMessagesToStoredMessages([m])[0], text: textOf(m.content), toolCalls };
    });
    if (!items.length) throw Object.assign(new Error('the graph added no model message'), { retryable: true });
    const lastMsg = added.at(-1);
    const meta = lastMsg.response_metadata || {};
    return { items, usage: usageOf(lastMsg.usage_metadata), state: await dumpCheckpoint(saver),
      finishReason: stopped ? 'tool_calls' : (finishReasonOf(meta.finish_reason || meta.stop_reason) || 'stop'),
      providerFinishReason: meta.finish_reason || meta.stop_reason || undefined };
  }

  const h = new Harness({ name: o.name || 'langgraph/agent', runSegment, ownsTranscript: true,
    timeoutMs: o.timeoutMs });
  h.tools = tools;
  return h;
}

module.exports = { langGraphHarness };
