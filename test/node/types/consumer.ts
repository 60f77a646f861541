// A TypeScript program that uses the package as a user would, compiled with
// `tsc --strict` (test/node/types.test.js): the declarations of
// bindings/node/index.d.ts must type it, and the @ts-expect-error lines must
// be errors (snake_case options and documents are not the package's).
import * as dx from 'dexagents';
import { Agent, Runtime, Model, tool, type Wait, type FlowDescription } from 'dexagents';

const save = tool(async (args: Record<string, unknown>, call) => {
  call.signal.throwIfAborted();
  return `saved ${String(args.path)} (${call.idempotencyKey})`;
}, { name: 'save', effect: 'write', approval: true,
  parameters: { type: 'object', properties: { path: { type: 'string' } } } });

const client: Model = Model.client('openai/gpt-4.1', { apiKey: 'k', timeoutMs: 1000,
  headers: { 'X-Org': 'o' }, price: { input: 1, output: 2, cachedInput: 0.5 }, reasoningEffort: 'low' });
// @ts-expect-error snake_case is the library's spelling: not an option of the package
Model.client('openai/gpt-4.1', { api_key: 'k' });
// @ts-expect-error an unknown effort
Model.client('openai/gpt-4.1', { reasoningEffort: 'extreme' });
const harness = Model.claudeCode('claude-code', { model: 'sonnet', allowedTools: ['Read'], cliPath: 'claude' });
// @ts-expect-error snake_case
Model.claudeCode('claude-code', { allowed_tools: ['Read'] });
const raw: Model = Model.client('openai/x', '{"api_key":"k"}'); // the library's own JSON text

const agent = new Agent({ models: ['mock/dex', client, harness, raw], tools: [save],
  builtInTools: ['ask_user', 'durable_wait'], limits: { toolTimeoutMs: 1000 } });
const flow: FlowDescription = agent.describe();
const start: string = flow.startStep;
const readOnly: boolean[] = flow.rpcs.map((r) => r.readOnly);
const attempts: number | undefined = flow.steps[0].options.maxAttempts;
// @ts-expect-error the description is camelCase
void flow.start_step;

const wait: Wait = { mode: 'any', conditions: [{ id: 't', timerMs: 1000 }, { id: 'c', channel: 'x', min: 1 }] };
// @ts-expect-error timer_ms is not a field of a Wait
const badWait: Wait = { mode: 'any', conditions: [{ id: 't', timer_ms: 1000 }] };
const e = dx.evaluateWait(wait, { nowMs: 0, startedMs: 0, channelCounts: new Map([['x', 1]]) });
const due: number | null = e.nextDueMs;
const timers: number[] = e.timers.map((t) => t.timerMs);
if (e.ready) e.take({ x: [1] });

async function main(): Promise<void> {
  await using rt = new Runtime(agent, { store: ':memory:', workers: 1, sessionCacheBytes: 1 << 20 });
  const leaseMs: number = rt.libraryOptions.leaseMs;
  const logs: string[] = [];
  await using logged = new Runtime(agent, { workers: 0, onLog: (m: dx.LogMessage) => {
    const level: 1 | 2 | 3 | 4 = m.level;
    logs.push(`${m.levelName} ${level}: ${m.message}`);
  } });
  // @ts-expect-error onLog receives one message object, not (level, message)
  new Runtime(agent, { onLog: (level: number, message: string) => void [level, message] });
  void logged;
  const sid = await rt.startSession({ settings: {} });
  const sent: { messageId: string; queued: boolean } = await rt.send(sid, '/ask What colour?');
  await rt.waitIdle(sid, { timeoutMs: 5000, signal: AbortSignal.timeout(10000) });
  const snap = await rt.snapshot(sid);
  const pending = snap.pending[0];
  await rt.answer(sid, pending.callId, 'blue');
  for await (const ev of rt.events(sid, { follow: false })) {
    const t: string = ev.type;
    void t;
  }
  const state = new dx.MemoryAttributes();
  const r = await agent.dispatch({ kind: 'execute', sessionId: 'h', name: start,
    stepExecutionId: `${start}-1`, input: { settings: {} } }, state,
  { onEvent: (ev: dx.Event) => { const live: boolean = ev.live; void live; } });
  const next = r.decision?.next?.[0];
  const maxAttempts: number | undefined = next?.options?.maxAttempts;
  const w: Wait | null = r.wait;
  const text: string | null = r.waitText;
  const retry: number = r.toJSON().retryAfterMs;
  state.apply(r);
  try {
    r.throwIfFailed();
  } catch (err) {
    if (err instanceof dx.UnknownKeyError || err instanceof dx.DexaError) console.log(err.message);
  }
  void [leaseMs, sent, maxAttempts, w, text, retry];
}

void [readOnly, attempts, badWait, due, timers, main];
