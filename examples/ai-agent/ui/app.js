// The AI Agent page: plain JavaScript, no build step.
//
// Session access: the token of each session is kept in localStorage under
// "ai-agent-token:<session id>", and the URL carries only ?session=<id>, so a
// copied URL grants nothing. Every request sends X-Agent-Session-Token.
//
// Live events: the page loads the snapshot (the truth, with the resume token),
// then reads the event stream with fetch (EventSource cannot send a header),
// resuming from the last event id after a drop. Delivery is best effort, so
// the snapshot is reloaded after each turn, after each action, and every 8 s.
'use strict';

const BASE = location.pathname.replace(/[^/]*$/, ''); // ".../products/ai-agent/"
const SNAPSHOT_EVERY_MS = 8000;
const OLDER_PAGE = 50;
const $ = (id) => document.getElementById(id);

const state = {
  id: null,
  token: null,
  snap: null,
  older: [],          // messages loaded with "Load older messages", oldest first
  olderHasMore: null, // null: not asked yet
  lastEventId: null,
  gen: 0,             // bumps when the page leaves a session
  streamCtrl: null,
  reloadTimer: null,
  live: { turn: 0, text: '', reasoning: '' },
  activity: [],
};

// ---- helpers ------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const tokenKey = (id) => `ai-agent-token:${id}`;

function showError(msg) {
  const b = $('error');
  b.textContent = msg || '';
  b.hidden = !msg;
}

async function api(path, { method = 'GET', body } = {}) {
  const headers = {};
  if (state.token) headers['X-Agent-Session-Token'] = state.token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(BASE + path, {
    method, headers, cache: 'no-store',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let doc = null;
  try { doc = await res.json(); } catch (_) { /* not JSON */ }
  if (!res.ok) {
    const err = new Error((doc && doc.error && doc.error.message) || `${res.status} ${res.statusText}`);
    err.status = res.status;
    throw err;
  }
  return doc;
}

const sessionPath = (rest = '') => `sessions/${encodeURIComponent(state.id)}${rest}`;

// Runs an action; shows its error; reloads the snapshot after it.
async function act(fn) {
  try {
    showError('');
    await fn();
  } catch (e) {
    showError(e.message);
  }
  scheduleSnapshot(0);
}

function fmtArgs(a) {
  if (a === undefined || a === null) return '';
  return typeof a === 'string' ? a : JSON.stringify(a);
}

// ---- the first page ---------------------------------------------------------------

async function showHome() {
  $('chat').hidden = true;
  $('home').hidden = false;
  try {
    const s = await api('settings');
    $('set-model').textContent = s.model;
    $('set-prompt').textContent = s.system_prompt || '(none)';
    $('set-context').textContent = s.context_window_tokens
      ? `${Number(s.context_window_tokens).toLocaleString('en-US')} tokens` : 'compaction off';
    const mcp = $('set-mcp');
    mcp.textContent = '';
    const tools = s.mcp_tools || [];
    const servers = (s.mcp && s.mcp.servers) || [];
    if (tools.length) mcp.append(el('ul', {}, ...tools.map((t) => el('li', { text: t.name || JSON.stringify(t) }))));
    else if (servers.length) mcp.textContent = `servers: ${servers.join(', ')}`;
    else if (s.mcp && s.mcp.available === false) mcp.textContent = 'MCP is not available in this build';
    else mcp.textContent = 'none configured (DEX_AGENT_MCP_CONFIG)';
    const sel = $('start-model');
    sel.textContent = '';
    for (const m of s.models) sel.append(el('option', { value: m, text: m, selected: m === s.model }));
  } catch (e) {
    showError(`cannot load the settings: ${e.message}`);
  }
}

$('start-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  $('start').disabled = true;
  try {
    const r = await api('sessions', { method: 'POST', body: { model: $('start-model').value } });
    localStorage.setItem(tokenKey(r.session_id), r.session_token);
    history.pushState(null, '', `${BASE}?session=${encodeURIComponent(r.session_id)}`);
    openSession(r.session_id);
  } catch (e) {
    showError(`cannot start a session: ${e.message}`);
  } finally {
    $('start').disabled = false;
  }
});

// ---- a session ------------------------------------------------------------------------

function openSession(id) {
  state.gen++;
  if (state.streamCtrl) state.streamCtrl.abort();
  Object.assign(state, {
    id, token: localStorage.getItem(tokenKey(id)), snap: null, older: [], olderHasMore: null,
    lastEventId: null, activity: [], live: { turn: 0, text: '', reasoning: '' },
  });
  $('home').hidden = true;
  $('chat').hidden = false;
  $('session-id').textContent = id;
  $('messages').textContent = '';
  $('pending').textContent = '';
  renderLive();
  renderActivity();
  showError('');
  const gen = state.gen;
  loadSnapshot(gen, true).then((ok) => { if (ok) streamEvents(gen); });
}

// Loads the snapshot; the first one also positions the event stream.
async function loadSnapshot(gen = state.gen, positionStream = false) {
  if (gen !== state.gen || !state.id) return false;
  try {
    const snap = await api(sessionPath());
    if (gen !== state.gen) return false;
    state.snap = snap;
    if (positionStream || !state.lastEventId) state.lastEventId = snap.resume_token || '';
    render();
    return true;
  } catch (e) {
    if (gen !== state.gen) return false;
    if (e.status === 403) {
      showError(`${e.message}. Open the session from the browser that started it.`);
      $('chat').dataset.refused = 'true';
      disableChat();
    } else {
      showError(e.message);
    }
    return false;
  }
}

function disableChat() {
  for (const id of ['send', 'stop', 'message', 'plan-mode']) $(id).disabled = true;
}

function scheduleSnapshot(delay = 150) {
  clearTimeout(state.reloadTimer);
  const gen = state.gen;
  state.reloadTimer = setTimeout(() => loadSnapshot(gen), delay);
}

setInterval(() => { if (state.id && state.snap) loadSnapshot(state.gen); }, SNAPSHOT_EVERY_MS);

// ---- rendering ------------------------------------------------------------------------

function render() {
  const s = state.snap;
  if (!s) return;
  const turn = s.turn || {};
  $('session-model').textContent = (s.session && s.session.model) || '';
  $('turn-number').textContent = turn.turn || 0;
  const status = turn.status || 'idle';
  const badge = $('turn-status');
  badge.textContent = turn.mode && turn.mode !== 'chat' && status === 'running' ? `${status} (${turn.mode})` : status;
  badge.className = `badge ${status}`;
  document.body.dataset.turnStatus = status;
  $('stop').disabled = status !== 'running';
  $('send').disabled = false;
  if (status !== 'running') {
    state.live = { turn: 0, text: '', reasoning: '' };
    renderLive();
  }
  renderMessages();
  renderPending(s.pending || []);
  renderPlan(s.plan);
  renderQueue(s.queue || []);
}

function allMessages() {
  const seen = new Set();
  const out = [];
  for (const m of [...state.older, ...((state.snap && state.snap.messages) || [])]) {
    if (seen.has(m.seq)) continue;
    seen.add(m.seq);
    out.push(m);
  }
  return out.sort((a, b) => a.seq - b.seq);
}

function renderMessage(m) {
  const li = el('li', { class: m.role, 'data-seq': m.seq });
  if (m.role === 'user') {
    li.append(el('div', { class: 'bubble user', text: m.text || '' }));
    li.append(el('div', { class: 'meta', text: `you · turn ${m.turn}` }));
  } else if (m.role === 'model') {
    if (m.reasoning) li.append(el('div', { class: 'reasoning', text: m.reasoning }));
    if (m.text) li.append(el('div', { class: 'bubble model', text: m.text }));
    for (const c of m.tool_calls || []) {
      li.append(el('div', { class: 'tool call', text: `→ ${c.name} ${fmtArgs(c.arguments)}` }));
    }
    li.append(el('div', { class: 'meta', text: `${m.model || 'model'} · turn ${m.turn}` }));
  } else if (m.role === 'tool') {
    let out = fmtArgs(m.output);
    if (out.length > 600) out = `${out.slice(0, 600)}…`;
    li.append(el('div', { class: `tool result ${m.status}`, text: `← ${m.name}: ${m.status}${out ? ` · ${out}` : ''}` }));
  } else {
    li.append(el('div', { class: 'meta', text: JSON.stringify(m) }));
  }
  return li;
}

function renderMessages() {
  const list = $('messages');
  const msgs = allMessages();
  const stick = list.lastElementChild === null ||
    window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
  list.textContent = '';
  for (const m of msgs) list.append(renderMessage(m));
  const first = msgs.length ? msgs[0].seq : 0;
  const firstSeq = state.snap && state.snap.transcript ? state.snap.transcript.first_seq : 1;
  const more = state.olderHasMore === null ? msgs.length > 0 && first > (firstSeq || 1) : state.olderHasMore;
  $('load-older').hidden = !more;
  if (stick) window.scrollTo(0, document.body.scrollHeight);
}

$('load-older').addEventListener('click', () => act(async () => {
  const msgs = allMessages();
  if (!msgs.length) return;
  const r = await api(sessionPath(`/messages?before_seq=${msgs[0].seq}&limit=${OLDER_PAGE}`));
  state.older = [...r.messages, ...state.older];
  state.olderHasMore = !!r.has_more;
  renderMessages();
}));

function renderLive() {
  const { text, reasoning } = state.live;
  $('live').hidden = !text && !reasoning;
  $('live-text').textContent = text;
  $('live-text').hidden = !text;
  $('live-reasoning').textContent = reasoning;
  $('live-reasoning').hidden = !reasoning;
}

function renderActivity() {
  const ul = $('activity');
  ul.textContent = '';
  for (const a of state.activity.slice(-12)) ul.append(el('li', { text: a }));
}

function approvalCard(p) {
  const note = el('input', { type: 'text', placeholder: 'note (optional)', class: 'note' });
  const decide = (decision) => act(() => api(sessionPath('/approvals'), {
    method: 'POST', body: note.value ? { call_id: p.call_id, decision, note: note.value } : { call_id: p.call_id, decision },
  }));
  return el('div', { class: 'card approval', 'data-call-id': p.call_id },
    el('h3', { text: `Approve ${p.name}?` }),
    el('pre', { text: fmtArgs(p.arguments) }),
    el('div', { class: 'row' }, note,
      el('button', { type: 'button', class: 'approve', text: 'Approve', onclick: () => decide('approve') }),
      el('button', { type: 'button', class: 'reject danger', text: 'Reject', onclick: () => decide('reject') })));
}

function questionCard(p) {
  const answer = (text) => act(() => api(sessionPath('/answers'), { method: 'POST', body: { call_id: p.call_id, answer: text } }));
  const card = el('div', { class: 'card question', 'data-call-id': p.call_id }, el('h3', { text: p.prompt || 'The agent asks' }));
  if (Array.isArray(p.choices) && p.choices.length) {
    card.append(el('div', { class: 'row choices' },
      ...p.choices.map((c) => el('button', { type: 'button', class: 'choice', text: c, onclick: () => answer(c) }))));
  } else {
    const input = el('input', { type: 'text', class: 'answer', placeholder: 'Your answer' });
    const form = el('form', { class: 'row' }, input, el('button', { type: 'submit', text: 'Answer' }));
    form.addEventListener('submit', (ev) => { ev.preventDefault(); if (input.value.trim()) answer(input.value); });
    card.append(form);
  }
  return card;
}

function timerCard(p) {
  const left = el('span', { class: 'left', 'data-fires-at': p.fires_at_ms || '' });
  return el('div', { class: 'card timer', 'data-call-id': p.call_id },
    el('h3', { text: `Waiting ${p.seconds !== undefined ? `${p.seconds}s` : ''}${p.reason ? `: ${p.reason}` : ''}` }),
    el('div', { class: 'muted small' }, 'fires in ', left, ' · Steer or Stop interrupts it'));
}

function tickTimers() {
  for (const s of document.querySelectorAll('.card.timer .left')) {
    const at = Number(s.dataset.firesAt);
    s.textContent = at ? `${Math.max(0, Math.ceil((at - Date.now()) / 1000))}s` : '…';
  }
}
setInterval(tickTimers, 500);

function renderPending(pending) {
  const box = $('pending');
  // Keep what the user is typing (a note, an answer) across snapshot reloads.
  const typed = new Map();
  let focused = null;
  for (const input of box.querySelectorAll('input[type=text]')) {
    const key = `${input.closest('.card').dataset.callId}/${input.className}`;
    typed.set(key, input.value);
    if (document.activeElement === input) focused = key;
  }
  box.textContent = '';
  for (const p of pending) {
    if (p.kind === 'approval') box.append(approvalCard(p));
    else if (p.kind === 'question') box.append(questionCard(p));
    else if (p.kind === 'timer') box.append(timerCard(p));
  }
  for (const input of box.querySelectorAll('input[type=text]')) {
    const key = `${input.closest('.card').dataset.callId}/${input.className}`;
    if (typed.has(key)) input.value = typed.get(key);
    if (key === focused) input.focus();
  }
  tickTimers();
}

function renderPlan(plan) {
  const box = $('plan');
  box.textContent = '';
  if (!plan) {
    box.append(el('p', { class: 'muted small', text: 'No plan. Send a message with Plan mode on.' }));
    return;
  }
  box.dataset.status = plan.status;
  box.append(el('div', { class: 'small' }, `revision ${plan.revision} · `, el('span', { class: 'plan-status', text: plan.status })));
  const marks = { completed: '✓', in_progress: '▸', pending: '○' };
  box.append(el('ol', { class: 'todos' }, ...(plan.todos || []).map((t) => el('li', { class: t.status },
    el('span', { class: 'st', text: marks[t.status] || '○' }), t.content))));
  if (plan.status === 'draft') {
    box.append(el('button', {
      type: 'button', id: 'execute-plan', text: 'Execute plan',
      onclick: () => act(() => api(sessionPath('/plan/execute'), { method: 'POST', body: { revision: plan.revision } })),
    }));
  }
}

function renderQueue(queue) {
  const ul = $('queue');
  ul.textContent = '';
  $('queue-empty').hidden = queue.length > 0;
  for (const q of queue) {
    ul.append(el('li', { 'data-id': q.id },
      el('div', { class: 'text', text: q.text }),
      el('div', { class: 'row small' },
        q.plan_mode ? el('span', { class: 'badge', text: 'plan' }) : null,
        q.steered ? el('span', { class: 'badge', text: 'steering' }) : null,
        el('div', { class: 'spacer' }),
        el('button', {
          type: 'button', class: 'small steer', text: 'Steer', disabled: q.steered,
          onclick: () => act(() => api(sessionPath('/queue/steer'), { method: 'POST', body: { message_id: q.id } })),
        }),
        el('button', {
          type: 'button', class: 'small ghost delete', text: 'Delete',
          onclick: () => act(() => api(sessionPath('/queue/delete'), { method: 'POST', body: { message_id: q.id } })),
        }))));
  }
}

// ---- actions ----------------------------------------------------------------------------

$('send-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const text = $('message').value;
  if (!text.trim()) return;
  const planMode = $('plan-mode').checked;
  act(async () => {
    await api(sessionPath('/messages'), { method: 'POST', body: planMode ? { text, plan_mode: true } : { text } });
    $('message').value = '';
    $('plan-mode').checked = false;
  });
});

$('message').addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && !ev.shiftKey) {
    ev.preventDefault();
    $('send-form').requestSubmit();
  }
});

$('stop').addEventListener('click', () => act(() => api(sessionPath('/stop'), { method: 'POST', body: {} })));

// ---- the event stream -------------------------------------------------------------------

const TURN_END = new Set(['turn_finished', 'turn_failed', 'turn_cancelled']);

function onEvent(ev) {
  const live = state.live;
  switch (ev.type) {
    case 'turn_started':
      state.live = { turn: ev.turn, text: '', reasoning: '' };
      state.activity = [];
      renderActivity();
      renderLive();
      break;
    case 'text_delta':
      live.text += ev.text || '';
      // Counted so a test can tell that the answer streamed in.
      document.body.dataset.textDeltas = String(Number(document.body.dataset.textDeltas || 0) + 1);
      renderLive();
      return; // live only: no snapshot reload
    case 'reasoning_delta':
      live.reasoning += ev.text || '';
      renderLive();
      return;
    case 'message_appended':
      if (ev.message && ev.message.role === 'model') {
        state.live = { turn: live.turn, text: '', reasoning: '' };
        renderLive();
      }
      break;
    case 'tool_call_proposed':
      state.activity.push(`${ev.name} proposed ${fmtArgs(ev.arguments)}`);
      break;
    case 'tool_call_awaiting_approval':
      state.activity.push(`${ev.name} waits for approval`);
      break;
    case 'tool_call_started':
      state.activity.push(`${ev.name} running`);
      break;
    case 'tool_call_finished':
      state.activity.push(`${ev.name} finished: ${ev.status}`);
      break;
    case 'approval_resolved':
      state.activity.push(`approval ${ev.decision || 'resolved'}`);
      break;
    case 'question_asked':
      state.activity.push('the agent asks a question');
      break;
    case 'timer_set':
      state.activity.push('durable timer set');
      break;
    case 'timer_fired':
      state.activity.push('timer fired');
      break;
    case 'turn_control':
      state.activity.push(`${ev.action} requested`);
      break;
    default:
      break;
  }
  if (TURN_END.has(ev.type)) state.activity = []; // the messages show what happened
  renderActivity();
  // Durable events change the snapshot: reload it (debounced); right away
  // at the end of a turn.
  scheduleSnapshot(TURN_END.has(ev.type) ? 0 : 150);
}

// Parses "id:", "data:" and comment lines of one SSE frame.
function parseFrame(frame) {
  let id = null;
  const data = [];
  for (const line of frame.split(/\r\n|\r|\n/)) {
    if (!line || line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'id') id = value;
    else if (field === 'data') data.push(value);
  }
  return { id, data: data.length ? data.join('\n') : null };
}

function setStreamState(s) {
  $('stream-state').textContent = s ? `· ${s}` : '';
  document.body.dataset.stream = s;
}

async function streamEvents(gen) {
  while (gen === state.gen) {
    const ctrl = new AbortController();
    state.streamCtrl = ctrl;
    try {
      const headers = { 'X-Agent-Session-Token': state.token || '', Accept: 'text/event-stream' };
      if (state.lastEventId) headers['Last-Event-ID'] = state.lastEventId;
      const res = await fetch(BASE + sessionPath('/events'), { headers, signal: ctrl.signal, cache: 'no-store' });
      if (res.status === 400) { // the resume token is no longer valid: start over from a snapshot
        state.lastEventId = null;
        await loadSnapshot(gen, true);
        continue;
      }
      if (res.status === 403 || res.status === 404) {
        const doc = await res.json().catch(() => null);
        showError((doc && doc.error && doc.error.message) || `event stream: ${res.status}`);
        setStreamState('closed');
        return;
      }
      if (!res.ok || !res.body) throw new Error(`event stream: ${res.status}`);
      setStreamState('live');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done || gen !== state.gen) break;
        buf += value;
        let m;
        while ((m = /\r\n\r\n|\n\n|\r\r/.exec(buf))) {
          const frame = buf.slice(0, m.index);
          buf = buf.slice(m.index + m[0].length);
          const { id, data } = parseFrame(frame);
          if (data !== null) {
            try { onEvent(JSON.parse(data)); } catch (e) { console.warn('bad event', e); }
          }
          if (id) state.lastEventId = id;
        }
      }
    } catch (e) {
      if (ctrl.signal.aborted || gen !== state.gen) return;
    }
    if (gen !== state.gen) return;
    setStreamState('reconnecting');
    await sleep(1000);
  }
}

// ---- routing ----------------------------------------------------------------------------

function route() {
  const id = new URLSearchParams(location.search).get('session');
  if (id) openSession(id);
  else {
    state.gen++;
    if (state.streamCtrl) state.streamCtrl.abort();
    state.id = null;
    showHome();
  }
}

window.addEventListener('popstate', route);
route();
