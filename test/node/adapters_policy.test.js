'use strict';
// The adapters' tool policies (bindings/node/adapters/_common.js), without
// any framework: a tool with no effect metadata and no option is a write
// that needs approval; the framework's hints and the adapter's options set
// the effect; a framework's per-call approval function (the AI SDK's
// needsApproval(input), Mastra's requireApproval(input)) is called with each
// call's arguments and decides that call alone. And the AI SDK adapter's
// reply: calls the SDK ran itself (provider-executed, runInside) do not leave
// the segment; they become frameworkToolCalls.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
process.env.DEXAGENTS_LIBRARY = process.env.DEXAGENTS_LIBRARY ||
  path.join(root, process.env.LIBOUT || 'lib', 'libdexagents.so.1');
const { toolPolicy } = require(path.join(root, 'bindings', 'node', 'adapters', '_common.js'));
const aiSdk = require(path.join(root, 'bindings', 'node', 'adapters', 'ai-sdk.js'));

test('a tool with no effect metadata is a write that needs approval', () => {
  assert.deepEqual(toolPolicy('mystery', {}, {}), { effect: 'write', approval: true, perCall: null });
  assert.deepEqual(toolPolicy('mystery', { description: 'x', execute() {} }), { effect: 'write', approval: true, perCall: null });
  // an effect from the options alone: a read needs no approval, a write still does
  assert.deepEqual(toolPolicy('r', {}, { effects: { r: 'read' } }), { effect: 'read', approval: false, perCall: null });
  assert.deepEqual(toolPolicy('w', {}, { effects: { w: 'write' } }), { effect: 'write', approval: true, perCall: null });
  // the framework's hints come first
  assert.equal(toolPolicy('h', { annotations: { readOnlyHint: true } }, { effects: { h: 'write' } }).effect, 'read');
  assert.equal(toolPolicy('m', { mcp: { annotations: { idempotentHint: true } } }).effect, 'idempotent_write');
  assert.equal(toolPolicy('d', { metadata: { destructiveHint: true } }).effect, 'write');
  assert.throws(() => toolPolicy('x', {}, { effects: { x: 'sometimes' } }), /unknown effect/);
  // a boolean flag of the framework wins over the options
  assert.equal(toolPolicy('r', {}, { effects: { r: 'read' }, approvals: { r: false } }, true).approval, true);
  assert.equal(toolPolicy('w', {}, { effects: { w: 'write' }, approvals: { w: false } }).approval, false);
});

test('a per-call approval function decides each call', async () => {
  const needsApproval = (input) => input.amount > 100;
  const pol = toolPolicy('pay', {}, { effects: { pay: 'write' } }, needsApproval);
  assert.equal(pol.perCall, needsApproval);
  assert.equal(pol.effect, 'write');
  const messages = [{ role: 'assistant', content: [
    { type: 'tool-call', toolCallId: 'c1', toolName: 'pay', input: { amount: 5 } },
    { type: 'tool-call', toolCallId: 'c2', toolName: 'pay', input: { amount: 500 } },
    { type: 'tool-call', toolCallId: 'c3', toolName: 'unknown_tool', input: {} },
  ] }];
  const items = await aiSdk.replyItems(messages, (n) => (n === 'pay' ? pol : undefined));
  const calls = items[0].toolCalls;
  assert.deepEqual(calls.map((c) => [c.callId, c.effect, c.approval]),
    [['c1', 'write', false], ['c2', 'write', true], ['c3', undefined, undefined]]);
  // an async function too
  const asyncPol = toolPolicy('pay', {}, {}, async (input) => input.amount > 100);
  const again = await aiSdk.replyItems(messages.map((m) => ({ ...m, content: m.content.slice(0, 2) })), () => asyncPol);
  assert.deepEqual(again[0].toolCalls.map((c) => c.approval), [false, true]);
});

test('the AI SDK adapter: tools the SDK ran do not leave the segment, they are recorded', async () => {
  const messages = [
    { role: 'assistant', content: [
      { type: 'tool-call', toolCallId: 'ws', toolName: 'web_search', input: { q: 'dex' }, providerExecuted: true },
      { type: 'tool-result', toolCallId: 'ws', toolName: 'web_search', output: { type: 'json', value: { hits: 3 } } },
      { type: 'tool-call', toolCallId: 'r1', toolName: 'get_rate', input: { pair: 'EURUSD' } },
      { type: 'tool-call', toolCallId: 'w1', toolName: 'send_mail', input: { to: 'ann' } },
    ] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'r1', toolName: 'get_rate',
      output: { type: 'error-text', value: 'no rate' } }] },
  ];
  const ran = aiSdk.ranInside(messages);
  assert.deepEqual(ran, [
    { callId: 'ws', name: 'web_search', arguments: { q: 'dex' }, status: 'ok', output: '{"hits":3}' },
    { callId: 'r1', name: 'get_rate', arguments: { pair: 'EURUSD' }, status: 'error', output: 'no rate' },
  ]);
  const items = await aiSdk.replyItems(messages, () => undefined, new Set(ran.map((r) => r.callId)));
  assert.deepEqual(items.flatMap((i) => i.toolCalls.map((c) => c.callId)), ['w1']);
});
