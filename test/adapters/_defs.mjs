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
    async open_vault(args) {
      mark('open_vault');
      return `vault ${args.id} open`;
    },
    async slow_write(args) {
      mark('slow_write');
      if (process.env.DEXA_BLOCK_WRITES === '1') await new Promise(() => {}); // killed in here
      return `wrote ${args.what}`;
    },
  };
}

/** The tool a framework runs itself, inside the segment (the AI SDK's
 * runInside, the OpenAI Agents SDK's MCP server); counted like the others. */
export function insideBody(dir) {
  const runs = path.join(dir, 'runs');
  return async (args) => {
    fs.appendFileSync(runs, 'get_rate\n');
    return `rate ${args.pair} 1.1`;
  };
}
const RATE_SCHEMA = { type: 'object', properties: { pair: { type: 'string' } }, required: ['pair'] };

const SCHEMAS = {
  get_weather: { type: 'object', properties: { city: { type: 'string' }, sync: { type: 'boolean' } }, required: ['city'] },
  get_time: { type: 'object', properties: { tz: { type: 'string' }, sync: { type: 'boolean' } }, required: ['tz'] },
  cancel_order: { type: 'object', properties: { id: { type: 'number' } }, required: ['id'] },
  slow_write: { type: 'object', properties: { what: { type: 'string' } }, required: ['what'] },
  open_vault: { type: 'object', properties: { id: { type: 'number' } }, required: ['id'] },
};
// The tools whose approval the framework's own flag asks for (open_vault is a read).
const GATED = new Set(['cancel_order', 'open_vault']);
const DESCRIPTIONS = { get_weather: 'The weather in a city', get_time: 'The time in a zone',
  cancel_order: 'Cancels an order', slow_write: 'Writes something slowly',
  open_vault: 'Opens a vault (a read that the framework gates on approval)' };

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
      // the AI SDK's own metadata: cancel_order and open_vault need approval
      ...(GATED.has(name) ? { needsApproval: true } : {}) });
  }
  // a tool whose execute the SDK runs itself, inside the segment
  tools.get_rate = tool({ description: 'The exchange rate of a currency pair', inputSchema: jsonSchema(RATE_SCHEMA),
    execute: insideBody(dir) });
  return aiSdkHarness({ name: `ai-sdk/${provider}`, model, tools, runInside: ['get_rate'],
    effects: { get_weather: 'read', get_time: 'read', cancel_order: 'write', slow_write: 'write', open_vault: 'read' },
    approvals: { slow_write: false } });
}

async function langGraph(base, dir) {
  const { tool } = await import('@langchain/core/tools');
  const { ChatOpenAI } = await import('@langchain/openai');
  const { createReactAgent } = await import('@langchain/langgraph/prebuilt');
  const { langGraphHarness } = require('dexagents/adapters/langgraph');
  const bodies = toolBodies(dir);
  const meta = { get_weather: { readOnlyHint: true }, get_time: { readOnlyHint: true },
    slow_write: { destructiveHint: true }, open_vault: { readOnlyHint: true } }; // LangChain tool metadata; cancel_order has none
  const tools = Object.keys(bodies).map((name) => tool(bodies[name], { name,
    description: DESCRIPTIONS[name], schema: SCHEMAS[name], metadata: meta[name] }));
  const llm = new ChatOpenAI({ model: 'gpt-test', apiKey: 'test', maxRetries: 0,
    configuration: { baseURL: `${base}/v1` } });
  const graph = createReactAgent({ llm, tools });
  return langGraphHarness({ name: 'langgraph/react', graph, tools, // LangChain has no approval flag
    effects: { cancel_order: 'write' }, approvals: { slow_write: false, open_vault: true } });
}

async function openAIAgents(base, dir) {
  const { Agent, Runner, OpenAIProvider, tool } = await import('@openai/agents');
  const { openAIAgentsHarness } = require('dexagents/adapters/openai-agents');
  const bodies = toolBodies(dir);
  const tools = Object.keys(bodies).map((name) => tool({ name, description: DESCRIPTIONS[name],
    parameters: SCHEMAS[name], strict: false, execute: (args) => bodies[name](args),
    needsApproval: GATED.has(name) })); // the SDK's own flag: cancel_order and open_vault need approval
  // an MCP server whose tools the SDK calls itself, inside the segment (in
  // memory: the MCPServer interface the SDK lists and calls)
  const rate = insideBody(dir);
  const mcp = { name: 'rates', cacheToolsList: false, async connect() {}, async close() {},
    async invalidateToolsCache() {},
    async listTools() { return [{ name: 'get_rate', description: 'The exchange rate of a currency pair', inputSchema: RATE_SCHEMA }]; },
    async callTool(name, args) { return [{ type: 'text', text: await rate(args || {}) }]; } };
  const agent = new Agent({ name: 'assistant', instructions: 'You are a test agent.', model: 'gpt-test', tools,
    mcpServers: [mcp] });
  const runner = new Runner({ tracingDisabled: true,
    modelProvider: new OpenAIProvider({ apiKey: 'test', baseURL: `${base}/v1` }) });
  return openAIAgentsHarness({ agent, runner,
    effects: { get_weather: 'read', get_time: 'read', cancel_order: 'write', slow_write: 'write', open_vault: 'read' },
    approvals: { slow_write: false } });
}

/** The OpenAI Agents SDK with a handoff: a triage agent that hands the turn to
 * an agent owning the tools (through handoff(), so the Handoff object is kept). */
export async function openAIAgentsHandoff(dx, base, dir) {
  const { Agent, Runner, OpenAIProvider, tool, handoff } = await import('@openai/agents');
  const { openAIAgentsHarness } = require('dexagents/adapters/openai-agents');
  const bodies = toolBodies(dir);
  const weather = tool({ name: 'get_weather', description: DESCRIPTIONS.get_weather,
    parameters: SCHEMAS.get_weather, strict: false, execute: (args) => bodies.get_weather(args) });
  const expert = new Agent({ name: 'expert', instructions: 'You are the weather expert.', model: 'gpt-test', tools: [weather] });
  const triage = new Agent({ name: 'triage', instructions: 'You are the triage agent.', model: 'gpt-test',
    handoffs: [handoff(expert)] });
  const runner = new Runner({ tracingDisabled: true,
    modelProvider: new OpenAIProvider({ apiKey: 'test', baseURL: `${base}/v1` }) });
  const h = openAIAgentsHarness({ agent: triage, runner, effects: { get_weather: 'read' } });
  return new dx.Agent({ models: [h], tools: h.tools });
}

async function mastra(base, dir) {
  const { Agent } = await import('@mastra/core/agent');
  const { createTool } = await import('@mastra/core/tools');
  const { createOpenAI } = await import('@ai-sdk/openai');
  const { mastraHarness } = require('dexagents/adapters/mastra');
  const bodies = toolBodies(dir);
  const hints = { get_weather: { readOnlyHint: true }, get_time: { readOnlyHint: true },
    slow_write: { destructiveHint: true }, open_vault: { readOnlyHint: true } }; // Mastra's MCP annotations; cancel_order has none
  const tools = {};
  for (const name of Object.keys(bodies)) {
    tools[name] = createTool({ id: name, description: DESCRIPTIONS[name], inputSchema: SCHEMAS[name],
      execute: (input) => bodies[name](input), ...(hints[name] ? { mcp: { annotations: hints[name] } } : {}),
      ...(GATED.has(name) ? { requireApproval: true } : {}) }); // Mastra's own approval flag
  }
  const model = createOpenAI({ baseURL: `${base}/v1`, apiKey: 'test' })('gpt-test');
  // a sub-agent: Mastra offers it as the tool agent-helper and runs it itself, inside the segment
  const helper = new Agent({ id: 'helper', name: 'helper', description: 'Answers a task',
    instructions: 'You are the helper agent.', model });
  const agent = new Agent({ id: 'assistant', name: 'assistant', instructions: 'You are a test agent.', model, tools,
    agents: { helper } });
  return mastraHarness({ agent, approvals: { slow_write: false } });
}

async function adk(base, dir) {
  const { LlmAgent, FunctionTool, Gemini, setLogLevel, LogLevel } = await import('@google/adk');
  const { adkHarness } = require('dexagents/adapters/adk');
  setLogLevel(LogLevel.ERROR); // ADK logs each model request to the console
  // Gemini against the mock server: the Gemini API's generateContent and
  // streamGenerateContent, which aimock serves too
  class MockGemini extends Gemini {
    getHttpOptions() { return { ...super.getHttpOptions(), baseUrl: base }; }
  }
  const bodies = toolBodies(dir);
  const tools = Object.keys(bodies).map((name) => new FunctionTool({ name, description: DESCRIPTIONS[name],
    parameters: SCHEMAS[name], execute: (args) => bodies[name](args),
    requireConfirmation: GATED.has(name) })); // ADK's own gate: cancel_order and open_vault ask
  const agent = new LlmAgent({ name: 'assistant', instruction: 'You are a test agent.',
    model: new MockGemini({ model: 'gemini-2.5-flash', apiKey: 'test' }), tools });
  return adkHarness({ agent,
    effects: { get_weather: 'read', get_time: 'read', cancel_order: 'write', slow_write: 'write', open_vault: 'read' },
    approvals: { slow_write: false } });
}

/** Adapters that offer Dex's built-in tools (ask_user, ...) to their framework. */
export const BUILT_INS = new Set(['ai-sdk-openai', 'ai-sdk-anthropic', 'openai-agents', 'mastra', 'adk']);

/** name -> (base, dir) => Harness with .tools */
export const ADAPTERS = {
  'ai-sdk-openai': (base, dir) => aiSdk(base, dir, 'openai'),
  'ai-sdk-anthropic': (base, dir) => aiSdk(base, dir, 'anthropic'),
  langgraph: (base, dir) => langGraph(base, dir),
  'openai-agents': (base, dir) => openAIAgents(base, dir),
  mastra: (base, dir) => mastra(base, dir),
  adk: (base, dir) => adk(base, dir),
};

/** Adapters whose framework runs a tool inside the segment in the table
 * (the AI SDK's runInside tool, an OpenAI Agents SDK MCP server's tool, a
 * Mastra sub-agent): the name and the output of its segment_tool_call event. */
export const INSIDE = {
  'ai-sdk-openai': ['get_rate', 'rate EURUSD 1.1'],
  'ai-sdk-anthropic': ['get_rate', 'rate EURUSD 1.1'],
  'openai-agents': ['get_rate', 'rate EURUSD 1.1'],
  mastra: ['agent-helper', 'The helper says 42.'],
};

/** Adapters whose transcript is Dex's: Dex compaction summarizes through the framework. */
export const COMPACTS = new Set(['ai-sdk-openai', 'ai-sdk-anthropic', 'openai-agents', 'mastra']);

/** The agent of an adapter: its harness and its tools (more agent options in extra). */
export async function makeAgent(dx, adapter, base, dir, extra = {}) {
  const h = await ADAPTERS[adapter](base, dir);
  return new dx.Agent({ instructions: 'You are a test agent.', models: [h], tools: h.tools,
    builtInTools: BUILT_INS.has(adapter) ? ['ask_user', 'durable_wait', 'write_todos'] : [],
    planModeEnabled: BUILT_INS.has(adapter), limits: { runModelMaxAttempts: 3 }, ...extra });
}
