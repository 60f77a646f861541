// Scenarios of the AI SDK UI message stream route, run by ai_sdk_client.mjs
// in Node and, unchanged, in Chromium. `ai` is the imported ai package; its
// Chat (AbstractChat, what useChat of @ai-sdk/react runs) talks to
// POST sessions/ID/chat through DefaultChatTransport, which parses every
// chunk with the ai package's own schema, so a chunk the SDK does not
// accept fails the scenario.

// The state a framework keeps (like @ai-sdk/react's): plain arrays here.
class PlainState {
  constructor() {
    this.messages = [];
    this.status = 'ready';
    this.error = undefined;
  }
  pushMessage(m) { this.messages = this.messages.concat(m); }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; }
  snapshot(v) { return structuredClone(v); }
}

export async function runScenarios(ai, base, check, label) {
  const P = `${base}/products/ai-agent`;
  const assert = (cond, msg) => { if (!cond) throw new Error(msg); };
  const post = (path, token, body, type = 'application/json') => fetch(P + path, {
    method: 'POST',
    headers: { 'Content-Type': type, ...(token ? { 'X-Agent-Session-Token': token } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const newSession = async () => (await post('/sessions', null, {})).json();
  const until = async (what, fn, ms = 20000) => {
    const end = Date.now() + ms;
    for (;;) {
      const v = fn();
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  // A Chat on a new session, as an app would make it.
  async function chatOn() {
    const s = await newSession();
    const data = [];
    const errors = [];
    class Chat extends ai.AbstractChat {}
    const chat = new Chat({
      id: s.session_id,
      state: new PlainState(),
      transport: new ai.DefaultChatTransport({
        api: `${P}/sessions/${s.session_id}/chat`,
        headers: { 'X-Agent-Session-Token': s.session_token },
      }),
      onData: (d) => data.push(d),
      onError: (e) => errors.push(e),
    });
    const reply = () => chat.messages.find((m) => m.role === 'assistant');
    const part = (pred) => (reply()?.parts || []).find(pred);
    return { s, chat, data, errors, reply, part };
  }

  await check(`${label}: a message streams back as the text of one assistant message`, async () => {
    const { chat, reply } = await chatOn();
    await chat.sendMessage({ text: 'hello sdk' });
    assert(chat.status === 'ready', `status ${chat.status}`);
    const m = reply();
    assert(m && m.id === 'turn-1', `assistant message ${m && m.id}`);
    const texts = m.parts.filter((p) => p.type === 'text');
    assert(texts.length === 1 && texts[0].text === 'Local demo response: hello sdk', JSON.stringify(m.parts));
    assert(texts[0].state === 'done', 'text part done');
    assert(m.metadata && m.metadata.turn === 1, 'metadata turn');
  });

  await check(`${label}: a READ tool call is a dynamic-tool part with its output`, async () => {
    const { chat, part } = await chatOn();
    await chat.sendMessage({ text: '/tool clock {}' });
    const tool = part((p) => p.type === 'dynamic-tool');
    assert(tool && tool.toolName === 'clock' && tool.state === 'output-available', JSON.stringify(tool));
    assert(/^\d{4}-\d\d-\d\dT/.test(String(tool.output)), `output ${tool.output}`);
    assert(part((p) => p.type === 'text' && p.text.includes('Tool clock (ok)')), 'the answer after the tool');
  });

  await check(`${label}: an approval is a data-approval part, approved through /approvals`, async () => {
    const { s, chat, part } = await chatOn();
    const done = chat.sendMessage({ text: '/tool send_note {"text":"from the sdk"}' });
    const pending = await until('data-approval', () => part((p) => p.type === 'data-approval'));
    assert(pending.data.status === 'pending' && pending.data.toolName === 'send_note', JSON.stringify(pending));
    assert(chat.status === 'streaming', `status while waiting: ${chat.status}`);
    const r = await post(`/sessions/${s.session_id}/approvals`, s.session_token,
      { call_id: pending.id, decision: 'approve' });
    assert(r.status === 200, `approve: ${r.status}`);
    await done;
    const tool = part((p) => p.type === 'dynamic-tool');
    assert(tool.state === 'output-available' && String(tool.output).includes('from the sdk'), JSON.stringify(tool));
    assert(part((p) => p.type === 'data-approval').data.status === 'approved', 'approval updated in place');
    assert(chat.messages.at(-1).parts.filter((p) => p.type === 'data-approval').length === 1, 'one approval part');
  });

  await check(`${label}: a rejected call is output-denied`, async () => {
    const { s, chat, part } = await chatOn();
    const done = chat.sendMessage({ text: '/tool send_note {"text":"no"}' });
    const pending = await until('data-approval', () => part((p) => p.type === 'data-approval'));
    await post(`/sessions/${s.session_id}/approvals`, s.session_token,
      { call_id: pending.id, decision: 'reject', note: 'not now' });
    await done;
    assert(part((p) => p.type === 'dynamic-tool').state === 'output-denied', 'denied');
    const a = part((p) => p.type === 'data-approval').data;
    assert(a.status === 'rejected' && a.note === 'not now', JSON.stringify(a));
  });

  await check(`${label}: a question is a data-question part, answered through /answers`, async () => {
    const { s, chat, part } = await chatOn();
    const done = chat.sendMessage({ text: '/choose Pick one | Red | Blue' });
    const q = await until('data-question', () => part((p) => p.type === 'data-question'));
    assert(q.data.prompt === 'Pick one' && JSON.stringify(q.data.choices) === '["Red","Blue"]', JSON.stringify(q));
    const r = await post(`/sessions/${s.session_id}/answers`, s.session_token, { call_id: q.id, answer: 'Blue' });
    assert(r.status === 200, `answer: ${r.status}`);
    await done;
    const a = part((p) => p.type === 'data-question').data;
    assert(a.status === 'answered' && a.answer === 'Blue', JSON.stringify(a));
    assert(part((p) => p.type === 'text' && p.text.includes('Blue')), 'the answer reaches the model');
  });

  await check(`${label}: a failed turn is an error with its message; retries arrive as data-retry`, async () => {
    const { chat, data, errors } = await chatOn();
    await chat.sendMessage({ text: '/fail 9' });
    assert(chat.status === 'error', `status ${chat.status}`);
    assert(chat.error && chat.error.message.includes('/fail 9'), `error ${chat.error && chat.error.message}`);
    assert(errors.length >= 1, 'onError called');
    const retries = data.filter((d) => d.type === 'data-retry').map((d) => d.data);
    assert(retries.length === 2, `retries ${JSON.stringify(retries)}`);
    assert(retries[0].attempt === 2 && retries[0].maxAttempts === 3 && retries[0].delayMs > 0, JSON.stringify(retries[0]));
    assert(retries[1].attempt === 3 && retries[0].message.includes('/fail 9'), JSON.stringify(retries[1]));
  });
}

// Requests the route refuses, each with its status (plain fetch).
export async function runRefusals(base, check) {
  const P = `${base}/products/ai-agent`;
  const assert = (cond, msg) => { if (!cond) throw new Error(msg); };
  await check('node: the chat route refuses bad requests and changes nothing', async () => {
    const s = await (await fetch(`${P}/sessions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })).json();
    const url = `${P}/sessions/${s.session_id}/chat`;
    const user = { id: 'u', role: 'user', parts: [{ type: 'text', text: 'hi' }] };
    const send = (body, headers = {}) => fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Agent-Session-Token': s.session_token, ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const cases = [
      [{ messages: [user], trigger: 'regenerate-message' }, {}, 400],
      [{ messages: [] }, {}, 400],
      [{ messages: [{ id: 'a', role: 'assistant', parts: [{ type: 'text', text: 'x' }] }] }, {}, 400],
      [{ messages: [user], extra: 1 }, {}, 400],
      [`{"messages":[${JSON.stringify(user)}]} trailing`, {}, 400],
      [{ messages: [user] }, { 'X-Agent-Session-Token': '0'.repeat(64) }, 403],
      [{ messages: [user] }, { 'Content-Type': 'text/plain' }, 415],
    ];
    for (const [body, headers, want] of cases) {
      const r = await send(body, headers);
      assert(r.status === want, `${JSON.stringify(body)}: ${r.status}, expected ${want}`);
    }
    const get = await fetch(url, { headers: { 'X-Agent-Session-Token': s.session_token } });
    assert(get.status === 405, `GET: ${get.status}`);
    const snap = await (await fetch(`${P}/sessions/${s.session_id}`, { headers: { 'X-Agent-Session-Token': s.session_token } })).json();
    assert(snap.messages.length === 0 && snap.queue.length === 0, 'nothing was sent');
  });
}
