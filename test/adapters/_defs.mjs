// The adapters under test, each built from the real framework package with
// the same four tools, written in the framework's own way (its tool
// metadata where it has any, the adapter's options otherwise), against the
// mock LLM server at base. Every tool appends a line to $DIR/runs first, so
// the counts are the tool's own; see _table.mjs.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** Tool behaviour shared by every adapter. */
export function toolBodies(dir) {
  const runs = path.join(dir, 'runs');
  const mark = (line) => fs.appendFileSync(runs, `${line}\n`);
  const count = (name) => (fs.existsSync(runs) ? fs.readFileSync(runs, 'utf8').split('\n')
    .filter((l) => l === name || l.startsWith(`${name} `)).length : 0);
  // Parallel reads wait for each other: each finishes only once both started.
  const barrier = async (name, other) => {
    for (let i = 0; i < 400; i++) {
      if (count(`${other} started`) > 0) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  };
  return {
    async get_weather(args) {
      mark('get_weather');
      if (args.sync) {
        mark('get_weather started');
        if (!(await barrier('get_weather', 'get_time'))) return 'not parallel';
      }
      return `sunny in ${args.city}`;
    },
    async get_time(args) {
      mark('get_time');
      if (args.sync) {
        mark('get_time started');
        if (!(await barrier('get_time', 'get_weather'))) return 'not parallel';
      }
      return `12:00 ${args.tz}`;
    },
    async cancel_order(args) {
      mark('cancel_order');
      return `order ${args.id} cancelled`;
    },
    async slow_write(args) {
      mark('slow_write');
      if (process.env.DEXA_BLOCK_WRITES === '1') await new Promise(() => {}); // killed in here
      return `wrote ${args.what}`;
    },
  };
}

const SCHEMAS = {
  get_weather: { type: 'object', properties: { city: { type: 'string' }, sync: { type: 'boolean' } }, required: ['city'] },
  get_time: { type: 'object', properties: { tz: { type: 'string' }, sync: { type: 'boolean' } }, required: ['tz'] },
  cancel_order: { type: 'object', properties: { id: { type: 'number' } }, required: ['id'] },
  slow_write: { type: 'object', properties: { what: { type: 'string' } }, required: ['what'] },
};
const DESCRIPTIONS = { get_weather: 'The weather in a city', get_time: 'The time in a zone',
  cancel_order: 'Cancels an order', slow_write: 'Writes something slowly' };

async function aiSdk(base, dir, provider) {
  const { tool, jsonSchema } = await import('ai');
  const { aiSdkHarness } = require('dexagents/adapters/ai-sdk');
  const model = provider === 'anthropic'
    ? (await import('@ai-sdk/anthropic')).createAnthropic({ baseURL: `${base}/v1`, apiKey: 'test' })('claude-test')
    : (await import('@ai-sdk/openai')).createOpenAI({ baseURL: `${base}/v1`, apiKey: 'test' })('gpt-test');
  const bodies = toolBodies(dir);
  const tools = {};
  for (const name of Object.keys(bodies)) {
    tools[name] = tool({ description: DESCRIPTIONS[name], inputSchema: jsonSchema(SCHEMAS[name]),
      execute: bodies[name],
      // the AI SDK's own metadata: cancel_order needs approval
      ...(name === 'cancel_order' ? { needsApproval: true } : {}) });
  }
  return aiSdkHarness({ name: `ai-sdk/${provider}`, model, tools,
    effects: { get_weather: 'read', get_time: 'read', cancel_order: 'write', slow_write: 'write' },
    approvals: { slow_write: false } });
}

async function langGraph(base, dir) {
  const { tool } = await import('@langchain/core/tools');
  const { ChatOpenAI } = await import('@langchain/openai');
  const { createReactAgent } = await import('@langchain/langgraph/prebuilt');
  const { langGraphHarness } = require('dexagents/adapters/langgraph');
  const bodies = toolBodies(dir);
  const meta = { get_weather: { readOnlyHint: true }, get_time: { readOnlyHint: true },
    slow_write: { destructiveHint: true } }; // LangChain tool metadata; cancel_order has none
  const tools = Object.keys(bodies).map((name) => tool(bodies[name], { name,
    description: DESCRIPTIONS[name], schema: SCHEMAS[name], metadata: meta[name] }));
  const llm = new ChatOpenAI({ model: 'gpt-test', apiKey: 'test', maxRetries: 0,
    configuration: { baseURL: `${base}/v1` } });
  const graph = createReactAgent({ llm, tools });
  return langGraphHarness({ name: 'langgraph/react', graph, tools,
    effects: { cancel_order: 'write' }, approvals: { slow_write: false } });
}

/** Adapters that offer Dex's built-in tools (ask_user, ...) to their framework. */
export const BUILT_INS = new Set(['ai-sdk-openai', 'ai-sdk-anthropic']);

/** name -> (base, dir) => Harness with .tools */
export const ADAPTERS = {
  'ai-sdk-openai': (base, dir) => aiSdk(base, dir, 'openai'),
  'ai-sdk-anthropic': (base, dir) => aiSdk(base, dir, 'anthropic'),
  langgraph: (base, dir) => langGraph(base, dir),
};

/** The agent of an adapter: its harness and its tools. */
export async function makeAgent(dx, adapter, base, dir) {
  const h = await ADAPTERS[adapter](base, dir);
  return new dx.Agent({ instructions: 'You are a test agent.', models: [h], tools: h.tools,
    builtInTools: BUILT_INS.has(adapter) ? ['ask_user'] : [], limits: { runModelMaxAttempts: 3 } });
}
