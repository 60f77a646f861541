// A Streamable HTTP MCP server built with @modelcontextprotocol/sdk (pinned
// in test/mcp/_npm_setup.sh), for the tests of elicitation, sampling,
// roots, logging and OAuth in agent sessions. Listens on 127.0.0.1 on a free
// port and prints "PORT <n>" once it listens.
//
//   node _sdk_server.mjs [--auth] [--count-dir DIR]
//   node _sdk_server.mjs --stdio [--count-dir DIR]     (the same tools over stdio)
//
// Tools (each appends a line to DIR/<tool>.start when its handler starts and
// DIR/<tool>.done when it finishes, so tests count runs at the server):
//   ask_name        read-only: elicits {name (required), color (enum, default
//                   "blue")} on the call's own stream; "Hello NAME (COLOR)"
//   ask_twice       read-only: two elicitations in a row
//   delete_files    destructive: elicits a confirmation; "deleted" / "kept"
//   summarize       read-only: sampling/createMessage of its text argument
//   show_roots      read-only: roots/list
//   chatty          read-only: three log messages (notifications/message)
//   whoami          read-only: "ok"
//   client_caps     read-only: the capabilities the client declared at
//                   initialize, as JSON
// With --auth the SDK's authorization server (mcpAuthRouter: metadata, DCR,
// PKCE, refresh tokens) runs on the same port and /mcp requires a bearer
// token (requireBearerAuth, protected resource metadata). The authorization
// endpoint signs in at once and redirects with the code. Test hooks:
// POST /__test/revoke drops every token (refresh tokens included);
// POST /__test/expire drops the access tokens only.
import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import express from 'express';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import {
  CallToolRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListRootsResultSchema,
  ListToolsRequestSchema
} from '@modelcontextprotocol/sdk/types.js';

const args = process.argv.slice(2);
const auth = args.includes('--auth');
const countDir = args.includes('--count-dir') ? args[args.indexOf('--count-dir') + 1] : null;
const count = (tool, what) => {
  if (countDir) appendFileSync(`${countDir}/${tool}.${what}`, `${Date.now()}\n`);
};

// ---- the authorization server (in memory) ----
class Provider {
  constructor() {
    this.clients = new Map();
    this.codes = new Map();
    this.tokens = new Map();
    this.refresh = new Map();
    this.clientsStore = {
      getClient: async (id) => this.clients.get(id),
      registerClient: async (c) => {
        this.clients.set(c.client_id, c);
        return c;
      }
    };
  }
  async authorize(client, params, res) {
    if (!client.redirect_uris.includes(params.redirectUri)) throw new Error('unregistered redirect_uri');
    const code = randomUUID();
    this.codes.set(code, { client, params });
    const target = new URL(params.redirectUri);
    target.searchParams.set('code', code);
    if (params.state !== undefined) target.searchParams.set('state', params.state);
    res.redirect(target.toString());
  }
  async challengeForAuthorizationCode(client, code) {
    const c = this.codes.get(code);
    if (!c) throw new Error('invalid code');
    return c.params.codeChallenge;
  }
  issue(clientId, scopes, resource) {
    const access = randomUUID(), refresh = randomUUID();
    this.tokens.set(access, { clientId, scopes, resource, expiresAt: Date.now() + 3600000 });
    this.refresh.set(refresh, { clientId, scopes, resource });
    return { access_token: access, token_type: 'bearer', expires_in: 3600, refresh_token: refresh, scope: scopes.join(' ') };
  }
  async exchangeAuthorizationCode(client, code, _verifier, _redirectUri, resource) {
    const c = this.codes.get(code);
    if (!c || c.client.client_id !== client.client_id) throw new Error('invalid code');
    this.codes.delete(code);
    return this.issue(client.client_id, c.params.scopes || [], (resource || c.params.resource)?.toString());
  }
  async exchangeRefreshToken(client, token) {
    const r = this.refresh.get(token);
    if (!r || r.clientId !== client.client_id) throw new Error('invalid refresh token');
    this.refresh.delete(token);
    return this.issue(r.clientId, r.scopes, r.resource);
  }
  async verifyAccessToken(token) {
    const t = this.tokens.get(token);
    if (!t || t.expiresAt < Date.now()) throw new InvalidTokenError('invalid or expired token');
    return { token, clientId: t.clientId, scopes: t.scopes, expiresAt: Math.floor(t.expiresAt / 1000) };
  }
}
const provider = new Provider();

// ---- the MCP server ----
const tools = [
  { name: 'ask_name', description: 'Asks the user for a name', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
  { name: 'ask_twice', description: 'Asks two questions', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
  { name: 'delete_files', description: 'Deletes files after a confirmation', inputSchema: { type: 'object' }, annotations: { readOnlyHint: false, destructiveHint: true } },
  { name: 'summarize', description: 'Asks the client model', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, annotations: { readOnlyHint: true } },
  { name: 'show_roots', description: 'Lists the roots', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
  { name: 'chatty', description: 'Logs', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
  { name: 'whoami', description: 'Says ok', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
  { name: 'client_caps', description: 'The client capabilities', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }
];

const nameSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Your name' },
    color: { type: 'string', enum: ['red', 'green', 'blue'], default: 'blue' }
  },
  required: ['name']
};

const text = (t) => ({ content: [{ type: 'text', text: t }] });

async function callTool(req, extra, server) {
  const name = req.params.name;
  count(name, 'start');
  const elicit = (message, requestedSchema) =>
    extra.sendRequest({ method: 'elicitation/create', params: { message, requestedSchema } }, ElicitResultSchema,
      { timeout: 600000 });
  let out;
  if (name === 'ask_name') {
    const r = await elicit('What is your name?', nameSchema);
    out = r.action === 'accept' ? text(`Hello ${r.content.name} (${r.content.color})`) : text(`no name: ${r.action}`);
  } else if (name === 'ask_twice') {
    const a = await elicit('First: your name?', nameSchema);
    const b = await elicit('Second: your city?', { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] });
    out = text(`${a.action}:${a.content?.name ?? ''} ${b.action}:${b.content?.city ?? ''}`);
  } else if (name === 'delete_files') {
    const r = await elicit('Delete 3 files?', { type: 'object', properties: { sure: { type: 'boolean', default: false } } });
    out = text(r.action === 'accept' && r.content.sure ? 'deleted' : `kept (${r.action})`);
  } else if (name === 'summarize') {
    try {
      const r = await extra.sendRequest({
        method: 'sampling/createMessage',
        params: { messages: [{ role: 'user', content: { type: 'text', text: req.params.arguments?.text ?? 'hello' } }], maxTokens: 100, systemPrompt: 'Summarize.' }
      }, CreateMessageResultSchema, { timeout: 600000 });
      out = text(`model ${r.model} said: ${r.content.text}`);
    } catch (e) {
      out = text(`sampling refused: ${e.message}`);
    }
  } else if (name === 'show_roots') {
    const r = await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema);
    out = text(JSON.stringify(r.roots));
  } else if (name === 'chatty') {
    for (const [level, data] of [['info', 'one'], ['warning', 'two'], ['error', { n: 3 }]])
      await extra.sendNotification({ method: 'notifications/message', params: { level, logger: 'chatty', data } });
    out = text('logged');
  } else if (name === 'whoami') {
    out = text('ok');
  } else if (name === 'client_caps') {
    out = text(JSON.stringify(server.getClientCapabilities() ?? {}));
  } else {
    throw new Error(`unknown tool ${name}`);
  }
  count(name, 'done');
  return out;
}

function newServer() {
  const s = new Server({ name: 'dexa-sdk-peer', version: '1.0.0' }, { capabilities: { tools: {}, logging: {} } });
  s.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  s.setRequestHandler(CallToolRequestSchema, (req, extra) => callTool(req, extra, s));
  return s;
}

if (args.includes('--stdio')) {
  await newServer().connect(new StdioServerTransport());
} else {
  serveHttp();
}

function serveHttp() {
const app = express();
app.use(express.json());
const transports = new Map();
const server = app.listen(0, '127.0.0.1', () => {
  const port = server.address().port;
  const base = `http://127.0.0.1:${port}`;
  const mcp = [];
  if (auth) {
    app.use(mcpAuthRouter({
      provider,
      issuerUrl: new URL(`${base}/`),
      resourceServerUrl: new URL(`${base}/mcp`),
      scopesSupported: ['mcp:tools'],
      authorizationOptions: { rateLimit: false },
      clientRegistrationOptions: { rateLimit: false },
      tokenOptions: { rateLimit: false },
      revocationOptions: { rateLimit: false }
    }));
    mcp.push(requireBearerAuth({ verifier: provider, resourceMetadataUrl: `${base}/.well-known/oauth-protected-resource/mcp` }));
    app.post('/__test/revoke', (req, res) => { provider.tokens.clear(); provider.refresh.clear(); res.json({ ok: true }); });
    app.post('/__test/expire', (req, res) => { provider.tokens.clear(); res.json({ ok: true }); });
  }
  const handle = async (req, res) => {
    const sid = req.headers['mcp-session-id'];
    let t = sid && transports.get(sid);
    if (!t) {
      if (sid || req.method !== 'POST' || req.body?.method !== 'initialize') {
        res.status(sid ? 404 : 400).json({ jsonrpc: '2.0', error: { code: -32000, message: 'No valid session ID' }, id: null });
        return;
      }
      t = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, t)
      });
      t.onclose = () => t.sessionId && transports.delete(t.sessionId);
      await newServer().connect(t);
    }
    await t.handleRequest(req, res, req.body);
  };
  app.post('/mcp', ...mcp, handle);
  app.get('/mcp', ...mcp, handle);
  app.delete('/mcp', ...mcp, handle);
  console.log(`PORT ${port}`);
});
}
process.on('SIGTERM', () => process.exit(0));
