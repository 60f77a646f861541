// The AI Agent page: plain JavaScript modules, no build step.
//
// Access: the token of each chat is kept in localStorage under
// "ai-agent-token:<session id>" (with its title under "ai-agent-meta:<id>"),
// and the URL carries only ?session=<id>, so a copied URL grants nothing.
// Every request sends X-Agent-Session-Token.
//
// Updates: the page loads the snapshot (the truth, with a resume token), then
// reads the event stream with fetch (EventSource cannot send a header) and
// applies each event to the transcript in place: items are keyed (message
// seq, tool call id, turn) and only ever added, updated or moved, never
// rebuilt, so a text selection, an open card or a half-typed note survive.
// Snapshots reloaded later (after each turn and every 15 s) are merged the
// same way, since live delivery is best effort.
import { renderMarkdown } from './markdown.js';

const BASE = location.pathname.replace(/[^/]*$/, ''); // ".../products/ai-agent/"
const SNAPSHOT_EVERY_MS = 15000;
const OLDER_PAGE = 50;
const $ = (id) => document.getElementById(id);

// ---- small helpers ---------------------------------------------------------------

function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

function icon(path) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', path);
  svg.append(p);
  return svg;
}

const ICONS = {
  tool: 'M14.7 6.3a4 4 0 0 0-5.4 5.4L3 18l3 3 6.3-6.3a4 4 0 0 0 5.4-5.4l-2.5 2.5-2.5-.5-.5-2.5z',
  shield: 'M12 3l8 3v6c0 4.5-3.4 8.3-8 9-4.6-.7-8-4.5-8-9V6z',
  question: 'M21 12a8 8 0 0 1-11.6 7.1L4 20l1-4.6A8 8 0 1 1 21 12zM9.5 9.5a2.5 2.5 0 1 1 3.5 2.3c-.6.3-1 .9-1 1.5M12 16.5h.01',
  clock: 'M12 7v5l3 2M21 12a9 9 0 1 1-18 0 9 9 0 0 1 18 0z',
  plan: 'M9 6h11M9 12h11M9 18h11M4 6h.01M4 12h.01M4 18h.01',
  chev: 'M6 9l6 6 6-6',
  copy: 'M9 9h10v10H9zM5 15V5h10',
  alert: 'M12 9v4M12 17h.01M10.3 3.9L2 18a2 2 0 0 0 1.7 3h16.6a2 2 0 0 0 1.7-3L13.7 3.9a2 2 0 0 0-3.4 0z',
  retry: 'M4 4v6h6M20 20v-6h-6M5.5 15a7 7 0 0 0 12.2 2.5M18.5 9A7 7 0 0 0 6.3 6.5',
  close: 'M6 6l12 12M18 6L6 18',
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const oneLine = (s, n) => { const t = String(s).replace(/\s+/g, ' ').trim(); return t.length > n ? `${t.slice(0, n - 1)}…` : t; };
const pretty = (v) => (v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v, null, 2));

function timeAgo(ms) {
  if (!ms) return '';
  const s = Math.round((Date.now() - ms) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  const d = new Date(ms);
  return d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
}

// ---- what this browser keeps --------------------------------------------------------

const TOKEN = 'ai-agent-token:';
const META = 'ai-agent-meta:';
const store = {
  token: (id) => localStorage.getItem(TOKEN + id),
  setToken: (id, t) => localStorage.setItem(TOKEN + id, t),
  meta(id) {
    try { return JSON.parse(localStorage.getItem(META + id)) || {}; } catch (_) { return {}; }
  },
  setMeta(id, patch) {
    localStorage.setItem(META + id, JSON.stringify({ ...store.meta(id), ...patch }));
  },
  forget(id) {
    localStorage.removeItem(TOKEN + id);
    localStorage.removeItem(META + id);
  },
  ids() {
    const out = [];
    for (let i = 0; i < localStorage.length; i++) {
      const k = localStorage.key(i);
      if (k && k.startsWith(TOKEN)) out.push(k.slice(TOKEN.length));
    }
    return out;
  },
};

const titleOf = (text) => oneLine(text || '', 60) || 'New chat';

// ---- theme --------------------------------------------------------------------------------

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  $('theme-toggle').setAttribute('aria-label', theme === 'dark' ? 'Switch to the light theme' : 'Switch to the dark theme');
}
applyTheme(localStorage.getItem('ai-agent-theme') ||
  (window.matchMedia && matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'));
$('theme-toggle').addEventListener('click', () => {
  const next = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
  localStorage.setItem('ai-agent-theme', next);
  applyTheme(next);
});

// ---- the server -----------------------------------------------------------------------------

async function api(path, { method = 'GET', body, token = S.token } = {}) {
  const headers = {};
  if (token) headers['X-Agent-Session-Token'] = token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(BASE + path, { method, headers, cache: 'no-store', body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    const err = new Error('The server cannot be reached.');
    err.status = 0;
    throw err;
  }
  let doc = null;
  try { doc = await res.json(); } catch (_) { /* not JSON */ }
  if (!res.ok) {
    const err = new Error((doc && doc.error && doc.error.message) || `${res.status} ${res.statusText}`);
    err.status = res.status;
    throw err;
  }
  return doc;
}

// ---- state -------------------------------------------------------------------------------------

const S = {
  settings: null,
  id: null,
  token: null,
  gen: 0,              // bumps when the page leaves a chat
  access: 'ok',        // ok | denied | changed-key | missing
  turn: { turn: 0, status: 'idle' },
  items: new Map(),    // key -> <li>
  calls: new Map(),    // call id -> card state
  turnSeq: new Map(),  // turn -> newest seq seen in it
  turnUser: new Map(), // turn -> the user's text of it (for Retry)
  maxSeq: 0,
  liveN: 0,
  live: null,          // the answer being streamed: { turn, li, text, reasoning }
  plan: null,
  queue: [],
  lastEventId: null,
  streamCtrl: null,
  olderHasMore: null,
  retry: null,         // { attempt, max, until, callId }
};

// ---- banners --------------------------------------------------------------------------------------

function banner(text, tone = 'warn', actions = []) {
  const b = $('banner');
  b.hidden = !text;
  b.dataset.tone = tone;
  b.dataset.kind = text ? tone : '';
  $('banner-text').textContent = text || '';
  $('banner-actions').replaceChildren(...actions);
}
let toastTimer = null;
function toast(text) {
  banner(text, 'error');
  $('banner').dataset.kind = 'toast';
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { if ($('banner').dataset.kind === 'toast') banner(''); }, 8000);
}

// ---- scrolling: stick to the bottom unless the reader scrolled up ---------------------------

const scroller = $('scroller');
let stick = true;
const atBottom = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
function toBottom() {
  scroller.scrollTop = scroller.scrollHeight;
  stick = true;
  $('jump').hidden = true;
}
// Only a scroll up (the reader's) lets go of the bottom: the scroll event of
// our own jump to the bottom may come after the content grew again, and must
// not be taken for the reader leaving.
let lastTop = 0;
scroller.addEventListener('scroll', () => {
  const up = scroller.scrollTop < lastTop - 1;
  lastTop = scroller.scrollTop;
  if (up || atBottom()) stick = atBottom();
  $('jump').hidden = stick || document.body.dataset.view !== 'chat';
});
const stickObserver = new ResizeObserver(() => {
  if (stick) scroller.scrollTop = scroller.scrollHeight;
  else $('jump').hidden = document.body.dataset.view !== 'chat';
});
// Content that grows, and a transcript that shrinks (chips above the
// composer), both keep the newest line in view.
for (const e of [document.querySelector('.transcript-wrap'), scroller]) stickObserver.observe(e);
$('jump').addEventListener('click', toBottom);

// ---- the transcript: keyed items in order ------------------------------------------------------

const list = $('messages');

// Inserts li under key at its order (a message's seq; live items get a
// fraction above the newest seq) unless the key is there already.
function place(key, li, order) {
  const have = S.items.get(key);
  if (have) return have;
  li.dataset.key = key;
  li.dataset.order = String(order);
  let before = null;
  for (const c of list.children) {
    if (Number(c.dataset.order) > order) { before = c; break; }
  }
  list.insertBefore(li, before);
  S.items.set(key, li);
  markAvatars();
  return li;
}

function move(li, order) {
  if (Number(li.dataset.order) === order) return;
  li.dataset.order = String(order);
  let before = null;
  for (const c of list.children) {
    if (c !== li && Number(c.dataset.order) > order) { before = c; break; }
  }
  if (li.nextSibling !== before) list.insertBefore(li, before);
  markAvatars();
}

const liveOrder = () => S.maxSeq + (++S.liveN) * 1e-6;
const afterTurn = (turn, frac) => (S.turnSeq.get(turn) || S.maxSeq) + frac;

// One avatar per run of answers and cards.
function markAvatars() {
  let prevModel = false;
  for (const c of list.children) {
    const model = c.classList.contains('model');
    c.classList.toggle('no-avatar', model && prevModel);
    prevModel = model;
  }
}

function seen(m) {
  if (typeof m.seq === 'number') {
    S.maxSeq = Math.max(S.maxSeq, m.seq);
    if (m.turn) S.turnSeq.set(m.turn, Math.max(S.turnSeq.get(m.turn) || 0, m.seq));
  }
}

function copyButton(getText, label) {
  const b = h('button', { type: 'button', 'aria-label': label }, icon(ICONS.copy), h('span', { text: 'Copy' }));
  b.addEventListener('click', () => {
    if (!navigator.clipboard) return;
    navigator.clipboard.writeText(getText()).then(() => {
      b.lastChild.textContent = 'Copied';
      setTimeout(() => { b.lastChild.textContent = 'Copy'; }, 1500);
    }, () => {});
  });
  return b;
}

function userItem(m) {
  seen(m);
  if (m.turn) S.turnUser.set(m.turn, [S.turnUser.get(m.turn), m.text].filter(Boolean).join('\n\n'));
  const key = `m-${m.seq}`;
  if (S.items.has(key)) return;
  place(key, h('li', { class: 'msg user', 'data-seq': m.seq },
    h('div', { class: 'bubble', text: m.text || '' })), m.seq);
}

function modelItem(key, order) {
  const have = S.items.get(key);
  if (have) return have;
  const li = h('li', { class: 'msg model' },
    h('span', { class: 'avatar', 'aria-hidden': 'true' }, h('img', { src: 'icon.svg', alt: '', width: 18, height: 18 })),
    h('div', { class: 'body' },
      h('div', { class: 'reasoning-box' }),
      h('div', { class: 'answer' }),
      h('div', { class: 'cards' })));
  li._text = '';
  return place(key, li, order);
}

function setAnswer(li, text, streaming) {
  li.classList.toggle('streaming', !!streaming);
  if (text && !streaming && !li.querySelector('.msg-actions'))
    li.querySelector('.body').append(h('div', { class: 'msg-actions' }, copyButton(() => li._text, 'Copy the answer')));
  if (li._text === text) return; // unchanged: keep the nodes (and any selection)
  li._text = text;
  const answer = li.querySelector('.answer');
  answer.replaceChildren(renderMarkdown(text));
  answer.hidden = !text;
}

function setReasoning(li, text) {
  const box = li.querySelector('.reasoning-box');
  if (!text) { box.replaceChildren(); return; }
  let d = box.querySelector('details');
  if (!d) {
    d = h('details', { class: 'reasoning' }, h('summary', { text: 'Reasoning' }), h('div', { class: 'reasoning-text' }));
    box.append(d);
  }
  d.querySelector('.reasoning-text').textContent = text;
}

// An answer cut at the model's output token limit says so under its text.
function setTruncated(li, truncated) {
  const have = li.querySelector('.truncated');
  if (!truncated) { if (have) have.remove(); return; }
  if (have) return;
  li.querySelector('.answer').after(h('p', { class: 'truncated', role: 'note',
    text: 'The answer was cut short: the model reached its output token limit.' }));
}

// A stored message, from a snapshot, a page of older ones or an event.
function mergeMessage(m) {
  if (m.role === 'user') return userItem(m);
  seen(m);
  if (m.role === 'tool') {
    const call = callState(m.call_id, m.name);
    call.status = m.status;
    call.output = m.output;
    call.pending = null;
    renderCard(call);
    return;
  }
  if (m.role !== 'model') return;
  const key = `m-${m.seq}`;
  let li = S.items.get(key);
  const calls = m.tool_calls || [];
  const newCalls = calls.filter((c) => !S.calls.get(c.call_id)?.card);
  if (!li && S.live && S.live.turn === m.turn && (m.text || m.reasoning)) {
    // The streamed answer becomes this message: same node, now keyed by seq.
    li = S.live.li;
    S.items.delete(li.dataset.key);
    li.dataset.key = key;
    S.items.set(key, li);
    move(li, m.seq);
    S.live = null;
  }
  if (li && S.live && S.live.turn === m.turn && S.live.li !== li && (m.text || '').startsWith(S.live.text)) {
    // Deltas of a message a snapshot brought first: one copy is enough.
    S.items.delete(S.live.li.dataset.key);
    S.live.li.remove();
    S.live = null;
    markAvatars();
  }
  if (!li && !m.text && !m.reasoning && !newCalls.length) return;
  li = li || modelItem(key, m.seq);
  li.dataset.seq = m.seq;
  if (m.reasoning) setReasoning(li, m.reasoning);
  if (m.text !== undefined) setAnswer(li, m.text || '', false);
  setTruncated(li, m.finish_reason === 'length');
  for (const c of calls) {
    const call = callState(c.call_id, c.name, c.arguments);
    if (!call.card) attachCard(call, li);
  }
  placeTurnTail(m.turn);
}

// ---- the streamed answer -----------------------------------------------------------------------

function liveItem(turn) {
  if (!S.live || S.live.turn !== turn) {
    const key = `live-${turn}-${S.liveN + 1}`;
    S.live = { turn, li: modelItem(key, liveOrder()), text: '', reasoning: '' };
  }
  return S.live;
}

function endLive() {
  if (S.live) S.live.li.classList.remove('streaming');
  S.live = null;
}

// ---- tool cards ---------------------------------------------------------------------------------------

const FRIENDLY = { write_todos: 'Plan update', ask_user: 'Question', durable_wait: 'Timer' };

function callState(id, name, args) {
  let c = S.calls.get(id);
  if (!c) {
    c = { id, name: name || 'tool', args, status: 'proposed', output: undefined, pending: null, card: null };
    S.calls.set(id, c);
  }
  if (name) c.name = name;
  if (args !== undefined && c.args === undefined) c.args = args;
  return c;
}

function summary(call) {
  const a = call.args || {};
  if (call.name === 'ask_user') return a.prompt || a.question || '';
  if (call.name === 'durable_wait') return `${a.seconds ?? ''} s${a.reason ? ` · ${a.reason}` : ''}`;
  if (call.name === 'write_todos') {
    const todos = a.todos || [];
    const done = todos.filter((t) => t.status === 'completed').length;
    return done ? `${done} of ${todos.length} tasks done` : `${todos.length} tasks`;
  }
  return typeof a === 'string' ? a : JSON.stringify(a);
}

function badgeOf(call) {
  const p = call.pending;
  if (p && p.kind === 'approval') return ['Needs your approval', 'wait'];
  if (p && p.kind === 'question' && p.purpose === 'sign_in') return ['Needs you to sign in', 'wait'];
  if (p && p.kind === 'question') return ['Waiting for your answer', 'wait'];
  if (p && p.kind === 'timer') return ['Waiting', 'wait'];
  if (S.retry && S.retry.callId === call.id && ['proposed', 'running'].includes(call.status)) return ['Retrying', 'wait'];
  switch (call.status) {
    case 'ok': return ['Done', 'ok'];
    case 'error': return ['Failed', 'bad'];
    case 'rejected': return ['Rejected', 'bad'];
    case 'cancelled': return ['Cancelled', ''];
    case 'unknown_outcome': return ['Outcome unknown', 'bad'];
    default: return ['Running', 'busy'];
  }
}

function cardIcon(call) {
  if (call.name === 'ask_user') return ICONS.question;
  if (call.pending && call.pending.kind === 'question' && call.pending.purpose === 'sign_in') return ICONS.shield;
  if (call.pending && call.pending.kind === 'question') return ICONS.question;
  if (call.name === 'durable_wait') return ICONS.clock;
  if (call.name === 'write_todos') return ICONS.plan;
  if (call.pending && call.pending.kind === 'approval') return ICONS.shield;
  return ICONS.tool;
}

function attachCard(call, li) {
  const bodyId = `tool-body-${call.id.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const head = h('button', { type: 'button', class: 'tool-head', 'aria-expanded': 'false', 'aria-controls': bodyId },
    h('span', { class: 'tool-icon' }), h('span', { class: 'tool-name' }), h('span', { class: 'tool-args' }),
    h('span', { class: 'badge' }), h('span', { class: 'chev' }, icon(ICONS.chev)));
  const body = h('div', { class: 'tool-body', id: bodyId, hidden: true });
  const card = h('div', { class: 'tool', 'data-call-id': call.id, 'data-name': call.name }, head, body);
  head.addEventListener('click', () => {
    const open = head.getAttribute('aria-expanded') !== 'true';
    head.setAttribute('aria-expanded', String(open));
    body.hidden = !open;
  });
  call.card = card;
  li.querySelector('.cards').append(card);
  renderCard(call);
}

// Updates a card in place: badge, body, and the inline approval, question
// or timer while one is pending (kept as is while it stays pending, so a
// half-typed note survives).
function renderCard(call) {
  if (!call.card) {
    const li = modelItem(`calls-${call.id}`, liveOrder());
    attachCard(call, li);
    return;
  }
  const card = call.card;
  const [word, tone] = badgeOf(call);
  card.dataset.status = call.pending ? call.pending.kind : call.status;
  card.querySelector('.tool-icon').replaceChildren(icon(cardIcon(call)));
  card.querySelector('.tool-name').textContent = FRIENDLY[call.name] || call.name;
  card.querySelector('.tool-args').textContent = oneLine(summary(call), 90);
  const badge = card.querySelector('.badge');
  badge.textContent = word;
  badge.dataset.tone = tone;
  card.classList.toggle('wait', !!call.pending);
  const body = card.querySelector('.tool-body');
  const parts = [h('h4', { text: 'Arguments' }), h('pre', { class: 'args', text: pretty(call.args ?? {}) })];
  if (call.output !== undefined) parts.push(h('h4', { text: 'Result' }), h('pre', { class: 'result', text: pretty(call.output) }));
  if (call.decision) parts.push(h('h4', { text: 'Your decision' }), h('pre', { text: call.decision }));
  if (call.retryText) parts.push(h('div', { class: 'retrying', text: call.retryText }));
  body.replaceChildren(...parts);
  renderAsk(call);
}

function renderAsk(call) {
  const card = call.card;
  let ask = card.querySelector('.ask');
  const kind = call.pending ? call.pending.kind : null;
  if (ask && ask.dataset.kind === kind) {
    if (kind === 'timer') tickTimers();
    return;
  }
  if (ask) ask.remove();
  if (!kind) return;
  ask = kind === 'approval' ? approvalBox(call) : kind === 'question' ? questionBox(call) : timerBox(call);
  ask.classList.add('ask');
  ask.dataset.kind = kind;
  card.append(ask);
  tickTimers();
}

function approvalBox(call) {
  const note = h('input', { type: 'text', class: 'note-input', placeholder: 'Add a note (optional)', 'aria-label': `Note for ${call.name}` });
  const decide = (decision) => act(async () => {
    for (const b of box.querySelectorAll('button')) b.disabled = true;
    const body = { call_id: call.id, decision };
    if (note.value.trim()) body.note = note.value.trim();
    await api(sessionPath('/approvals'), { method: 'POST', body });
  }, () => { for (const b of box.querySelectorAll('button')) b.disabled = false; });
  const box = h('div', {},
    h('div', { class: 'ask-prompt', text: `Allow ${call.name} to run with these arguments?` }),
    h('pre', { class: 'args', text: pretty(call.args ?? {}) }),
    h('div', { class: 'ask-row' }, note,
      h('button', { type: 'button', class: 'btn primary approve', onclick: () => decide('approve') }, 'Approve'),
      h('button', { type: 'button', class: 'btn danger reject', onclick: () => decide('reject') }, 'Reject')));
  return box;
}

// A tool's own question (asked_by "tool": an MCP server's elicitation, a
// sign-in, a sampling request to allow) is answered, declined or cancelled
// through the same /answers route as ask_user's.
function toolQuestionBox(call) {
  const p = call.pending;
  const box = h('div', {});
  const send = (body) => act(async () => {
    for (const b of box.querySelectorAll('button, input, select')) b.disabled = true;
    await api(sessionPath('/answers'), { method: 'POST', body: { call_id: call.id, ...body } });
  }, () => { for (const b of box.querySelectorAll('button, input, select')) b.disabled = false; });
  const refuse = () => [
    h('button', { type: 'button', class: 'btn decline', onclick: () => send({ action: 'decline' }) }, 'Decline'),
    h('button', { type: 'button', class: 'btn cancel', onclick: () => send({ action: 'cancel' }) }, 'Cancel')];
  if (p.purpose === 'sign_in') return signInBox(call, p, box, send);
  box.append(h('div', { class: 'ask-prompt', text: p.prompt || 'The tool asks' }));
  if (p.url) {
    box.append(h('div', { class: 'ask-row' }, h('a', { class: 'btn primary open-link', href: p.url, target: '_blank', rel: 'noopener noreferrer' }, `Open ${hostOf(p.url)}`)));
    box.append(h('div', { class: 'ask-row' },
      h('button', { type: 'button', class: 'btn primary accept', onclick: () => send({ action: 'accept' }) }, 'Done'), ...refuse()));
  } else if (Array.isArray(p.choices) && p.choices.length) {
    box.append(h('div', { class: 'ask-row choices', role: 'group', 'aria-label': p.prompt || 'Choices' },
      ...p.choices.map((c) => h('button', { type: 'button', class: 'btn choice', onclick: () => send({ answer: c }) }, c)), ...refuse().slice(1)));
  } else if (Array.isArray(p.fields) && p.fields.length) {
    box.append(fieldsForm(p.fields, (fields) => send({ fields }), refuse()));
  } else {
    box.append(h('div', { class: 'ask-row' },
      h('button', { type: 'button', class: 'btn primary accept', onclick: () => send({ action: 'accept' }) }, 'Accept'), ...refuse()));
  }
  return box;
}

function hostOf(url) {
  try { return new URL(url).host; } catch (e) { return 'the page'; }
}

// The sign-in card: the page opens in a new tab; the server's redirect
// comes back to this app (oauth/callback), which answers for you. "I have
// signed in" is for when the redirect could not come back here.
function signInBox(call, p, box, send) {
  box.classList.add('sign-in');
  box.append(h('div', { class: 'ask-prompt', text: p.prompt || 'Sign in to continue' }));
  box.append(h('div', { class: 'ask-row' },
    h('a', { class: 'btn primary sign-in-link', href: p.url, target: '_blank', rel: 'noopener noreferrer' }, `Sign in at ${hostOf(p.url)}`),
    h('button', { type: 'button', class: 'btn signed-in', onclick: () => send({ action: 'accept' }) }, 'I have signed in'),
    h('button', { type: 'button', class: 'btn cancel', onclick: () => send({ action: 'cancel' }) }, 'Cancel')));
  box.append(h('div', { class: 'hint', text: 'The call goes on once you have signed in. The agent never sees your password or the token.' }));
  return box;
}

// A form for the question's fields (MCP elicitation's restricted schema):
// text, e-mail, URL and date inputs, numbers, check boxes, a select for a
// choice, check boxes for several. Empty optional fields are left out (the
// server's defaults apply).
function fieldsForm(fields, submit, extra) {
  const rows = fields.map((f) => {
    const label = `${f.title || f.name}${f.required ? ' *' : ''}`;
    let input;
    if (f.type === 'boolean') {
      input = h('input', { type: 'checkbox', name: f.name, checked: f.default === true });
    } else if (f.type === 'array') {
      input = h('span', { class: 'multi', 'data-name': f.name },
        ...(f.enum || []).map((v, i) => h('label', {}, h('input', { type: 'checkbox', value: v, checked: Array.isArray(f.default) && f.default.includes(v) }), ` ${(f.enum_names || [])[i] || v}`)));
    } else if (Array.isArray(f.enum)) {
      input = h('select', { name: f.name }, ...(f.required ? [] : [h('option', { value: '' }, '')]),
        ...f.enum.map((v, i) => h('option', { value: v, selected: f.default === v }, (f.enum_names || [])[i] || v)));
    } else {
      const kind = f.type === 'number' || f.type === 'integer' ? 'number'
        : { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' }[f.format] || 'text';
      input = h('input', { type: kind, name: f.name, step: f.type === 'integer' ? '1' : f.type === 'number' ? 'any' : null,
        min: f.minimum, max: f.maximum, minlength: f.min_length, maxlength: f.max_length, required: !!f.required,
        placeholder: f.default !== undefined ? String(f.default) : '' });
    }
    input.dataset.type = f.type;
    return h('label', { class: 'field' }, h('span', { text: label }), input, f.description ? h('small', { text: f.description }) : null);
  });
  const form = h('form', { class: 'ask-fields' }, ...rows,
    h('div', { class: 'ask-row' }, h('button', { type: 'submit', class: 'btn primary submit' }, 'Submit'), ...extra));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (!form.reportValidity()) return;
    const out = {};
    for (const f of fields) {
      const el = form.querySelector(`[name="${CSS.escape(f.name)}"], [data-name="${CSS.escape(f.name)}"]`);
      if (!el) continue;
      if (f.type === 'boolean') out[f.name] = el.checked;
      else if (f.type === 'array') out[f.name] = [...el.querySelectorAll('input:checked')].map((c) => c.value);
      else if (el.value === '') continue;
      else if (f.type === 'integer') out[f.name] = parseInt(el.value, 10);
      else if (f.type === 'number') out[f.name] = Number(el.value);
      else out[f.name] = el.value;
    }
    submit(out);
  });
  return form;
}

function questionBox(call) {
  const p = call.pending;
  if (p.asked_by === 'tool') return toolQuestionBox(call);
  const answer = (text) => act(async () => {
    for (const b of box.querySelectorAll('button, input')) b.disabled = true;
    await api(sessionPath('/answers'), { method: 'POST', body: { call_id: call.id, answer: text } });
  }, () => { for (const b of box.querySelectorAll('button, input')) b.disabled = false; });
  const box = h('div', {}, h('div', { class: 'ask-prompt', text: p.prompt || 'The agent asks' }));
  if (Array.isArray(p.choices) && p.choices.length) {
    box.append(h('div', { class: 'ask-row choices', role: 'group', 'aria-label': p.prompt || 'Choices' },
      ...p.choices.map((c) => h('button', { type: 'button', class: 'btn choice', onclick: () => answer(c) }, c))));
  } else {
    const input = h('input', { type: 'text', class: 'answer-input', placeholder: 'Your answer', 'aria-label': p.prompt || 'Your answer' });
    const form = h('form', { class: 'ask-row' }, input, h('button', { type: 'submit', class: 'btn primary answer-send' }, 'Answer'));
    form.addEventListener('submit', (ev) => { ev.preventDefault(); if (input.value.trim()) answer(input.value.trim()); });
    box.append(form);
  }
  return box;
}

function timerBox(call) {
  const p = call.pending;
  return h('div', {},
    h('div', { class: 'ask-prompt' }, `Waiting${p.reason ? `: ${p.reason}` : ''} · `,
      h('span', { class: 'left', 'data-fires-at': p.fires_at_ms || '' })),
    h('div', { class: 'hint', text: 'The wait survives restarts. Send a message and Steer it, or Stop, to end it early.' }));
}

function tickTimers() {
  for (const s of document.querySelectorAll('.tool .left')) {
    const at = Number(s.dataset.firesAt);
    const left = at ? Math.max(0, Math.ceil((at - Date.now()) / 1000)) : null;
    s.textContent = left === null ? '…' : left ? `${left} s left` : 'any moment now';
  }
  renderTyping();
}
setInterval(tickTimers, 500);

async function fetchResult(call, seq) {
  if (typeof seq !== 'number') return;
  const gen = S.gen;
  try {
    const r = await api(sessionPath(`/messages?before_seq=${seq + 1}&limit=1`));
    if (gen !== S.gen) return;
    const m = (r.messages || []).find((x) => x.seq === seq);
    if (m) mergeMessage(m);
  } catch (_) { /* the next snapshot brings it */ }
}

// ---- the plan, errors, notes -----------------------------------------------------------------------

// The plan is one card in the conversation, after the turn that drafted it,
// with Execute beside it while it is a draft.
function renderPlan() {
  const plan = S.plan;
  let li = S.items.get('plan');
  if (!plan) { if (li) li.hidden = true; return; }
  if (!li) {
    li = place('plan', h('li', { class: 'plan-item' }, h('section', { class: 'plan-card', 'aria-label': 'Plan' },
      h('div', { class: 'plan-head' }, icon(ICONS.plan), h('h3', { text: 'Plan' }), h('span', { class: 'rev' }), h('span', { class: 'badge plan-status' })),
      h('ol', { class: 'todos' }), h('div', { class: 'plan-foot' }))), afterTurn(plan.turn || S.turn.turn, 0.9));
  }
  li.hidden = false;
  placeTurnTail(plan.turn);
  li.querySelector('.rev').textContent = `revision ${plan.revision}`;
  const words = { draft: ['Draft: review it', 'wait'], active: ['In progress', 'busy'], completed: ['Completed', 'ok'], cancelled: ['Cancelled', ''] };
  const [word, tone] = words[plan.status] || [plan.status, ''];
  const st = li.querySelector('.plan-status');
  st.textContent = word;
  st.dataset.tone = tone;
  st.dataset.status = plan.status;
  li.dataset.status = plan.status;
  const marks = { completed: '✓', in_progress: '', pending: '' };
  li.querySelector('.todos').replaceChildren(...(plan.todos || []).map((t) => h('li', { class: t.status },
    h('span', { class: 'st', 'aria-hidden': 'true', text: marks[t.status] ?? '' }),
    h('span', { class: 'todo-text', text: t.content }),
    h('span', { class: 'visually-hidden', text: ` (${t.status.replace('_', ' ')})` }))));
  const foot = li.querySelector('.plan-foot');
  const running = S.turn.status === 'running';
  if (plan.status === 'draft' || (plan.status === 'active' && !running)) {
    const label = plan.status === 'draft' ? 'Execute plan' : 'Continue plan';
    let btn = foot.querySelector('#execute-plan');
    if (!btn) {
      btn = h('button', { type: 'button', id: 'execute-plan', class: 'btn primary' });
      btn.addEventListener('click', () => act(async () => {
        btn.disabled = true;
        await api(sessionPath('/plan/execute'), { method: 'POST', body: { revision: S.plan.revision } });
      }, () => { btn.disabled = false; }));
      foot.replaceChildren(h('span', { class: 'hint', text: '' }), btn);
    }
    foot.querySelector('.hint').textContent = running ? 'You can execute it when the agent is done.' : plan.status === 'draft'
      ? 'Nothing runs until you execute it. Send a message to change it.' : 'The plan stopped before its end.';
    btn.textContent = label;
    btn.disabled = running;
    foot.hidden = false;
  } else {
    foot.replaceChildren();
    foot.hidden = true;
  }
}

// The plan card and a failed turn's error card stay after the last message
// of their turn.
function placeTurnTail(turn) {
  const plan = S.items.get('plan');
  if (plan && S.plan && S.plan.turn === turn) move(plan, afterTurn(turn, 0.9));
  const err = S.items.get(`error-${turn}`);
  if (err) move(err, afterTurn(turn, 0.95));
}

function errorCard(turn, error) {
  const key = `error-${turn}`;
  if (S.items.has(key)) return;
  const retry = h('button', { type: 'button', class: 'btn small retry' }, icon(ICONS.retry), 'Retry');
  retry.addEventListener('click', () => {
    const text = S.turnUser.get(turn);
    if (!text) return;
    retry.disabled = true;
    sendText(text, false).catch(() => { retry.disabled = false; });
  });
  place(key, h('li', { class: 'error-item' }, h('div', { class: 'error-card', role: 'alert' },
    h('span', { class: 'error-icon' }, icon(ICONS.alert)),
    h('div', { class: 'error-body' },
      h('strong', { text: 'The agent could not answer.' }),
      h('div', { class: 'error-message', text: (error && error.message) || 'The model call failed.' })),
    S.turnUser.get(turn) ? retry : null)), afterTurn(turn, 0.95));
}

function noteItem(turn, text) {
  place(`note-${turn}`, h('li', { class: 'note', text }), afterTurn(turn, 0.97));
}

// ---- the queue ------------------------------------------------------------------------------------

function renderQueue() {
  const ul = $('queue');
  const want = new Set(S.queue.map((q) => q.id));
  for (const li of [...ul.children]) if (!want.has(li.dataset.id)) li.remove();
  for (const q of S.queue) {
    let li = ul.querySelector(`li[data-id="${CSS.escape(q.id)}"]`);
    if (!li) {
      li = h('li', { class: 'chip', 'data-id': q.id },
        h('span', { class: 'label', text: 'Queued' }),
        h('span', { class: 'text' }),
        h('button', { type: 'button', class: 'btn small steer', title: 'Interrupt the agent at the next safe point and continue with this message',
          onclick: () => act(() => api(sessionPath('/queue/steer'), { method: 'POST', body: { message_id: q.id } })) }, 'Steer'),
        h('button', { type: 'button', class: 'btn small delete', 'aria-label': 'Delete the queued message',
          onclick: () => act(() => api(sessionPath('/queue/delete'), { method: 'POST', body: { message_id: q.id } })) }, 'Delete'));
      ul.append(li);
    }
    li.querySelector('.text').textContent = q.text;
    li.querySelector('.text').title = q.text;
    li.querySelector('.label').textContent = q.steered ? 'Steering' : q.plan_mode ? 'Queued · plan' : 'Queued';
    li.querySelector('.steer').disabled = !!q.steered;
  }
}

// ---- header, status, composer ------------------------------------------------------------------------

function pendingKinds() {
  const kinds = new Set();
  for (const c of S.calls.values()) if (c.pending) kinds.add(c.pending.kind);
  return kinds;
}

function statusWords() {
  const t = S.turn;
  if (S.access !== 'ok') return ['', ''];
  if (t.status !== 'running') return ['Ready', 'ok'];
  if (t.control) return [t.control === 'cancel' ? 'Stopping…' : 'Steering…', 'busy'];
  const kinds = pendingKinds();
  if (kinds.has('approval')) return ['Waiting for your approval', 'wait'];
  if (kinds.has('question')) return ['Waiting for your answer', 'wait'];
  if (kinds.has('timer')) return ['Waiting on a timer', 'wait'];
  if (S.retry) return ['Retrying', 'wait'];
  if (t.mode === 'planning') return ['Drafting a plan…', 'busy'];
  if (t.mode === 'executing') return ['Carrying out the plan…', 'busy'];
  return ['Working…', 'busy'];
}

function retryText() {
  const r = S.retry;
  if (!r) return '';
  const left = Math.max(0, Math.ceil((r.until - Date.now()) / 1000));
  const of = r.max ? ` of ${r.max}` : '';
  return left ? `Retrying (attempt ${r.attempt}${of}) in ${left} s` : `Retrying (attempt ${r.attempt}${of})…`;
}

function renderTyping() {
  const running = S.turn.status === 'running' && S.access === 'ok';
  const streaming = S.live && S.live.text;
  const waitingForUser = pendingKinds().size > 0;
  const show = running && !streaming && !waitingForUser;
  $('typing').hidden = !show;
  const words = S.retry ? retryText() : S.turn.mode === 'planning' ? 'Drafting a plan…' : 'Thinking…';
  if ($('typing-text').textContent !== words) $('typing-text').textContent = words;
  const pill = $('turn-status');
  const [w, tone] = statusWords();
  const text = S.retry && S.turn.status === 'running' ? retryText() : w;
  if (pill.textContent !== text) pill.textContent = text;
  pill.dataset.tone = tone;
}

function updateChrome() {
  const running = S.turn.status === 'running';
  document.body.dataset.turnStatus = S.turn.status;
  $('stop').hidden = !running || S.access !== 'ok';
  $('stop').disabled = !!S.turn.control;
  const open = S.access === 'ok';
  $('message').disabled = !open;
  $('plan-mode').disabled = !open;
  updateSend();
  renderTyping();
  if (S.plan) renderPlan();
}

function updateSend() {
  $('send').disabled = S.access !== 'ok' || !$('message').value.trim();
  $('message').placeholder = S.turn.status === 'running' ? 'Queue a message (Steer to interrupt)' : 'Message the agent';
}

function setTitle(text) {
  $('chat-title').textContent = text;
  document.title = text && text !== 'New chat' ? `${text} · AI Agent` : 'AI Agent';
}

// ---- the sidebar ---------------------------------------------------------------------------------------

function renderSidebar() {
  const ul = $('session-list');
  const ids = store.ids().map((id) => ({ id, meta: store.meta(id) }))
    .sort((a, b) => (b.meta.last || b.meta.created || 0) - (a.meta.last || a.meta.created || 0));
  $('session-list-empty').hidden = ids.length > 0;
  const keep = new Set(ids.map((x) => x.id));
  for (const li of [...ul.children]) if (!keep.has(li.dataset.id)) li.remove();
  ids.forEach(({ id, meta }, i) => {
    let li = ul.querySelector(`li[data-id="${CSS.escape(id)}"]`);
    if (!li) {
      const a = h('a', { class: 'session-link', href: `${BASE}?session=${encodeURIComponent(id)}` },
        h('span', { class: 't' }), h('span', { class: 'when' }));
      a.addEventListener('click', (ev) => { ev.preventDefault(); go(id); });
      const forget = h('button', { type: 'button', class: 'forget' }, icon(ICONS.close));
      forget.addEventListener('click', () => {
        if (!confirm('Remove this chat from this browser? The server keeps it, but this browser loses access.')) return;
        store.forget(id);
        if (S.id === id) go(null);
        renderSidebar();
      });
      li = h('li', { 'data-id': id }, a, forget);
    }
    if (ul.children[i] !== li) ul.insertBefore(li, ul.children[i] || null);
    const title = meta.title || 'Untitled chat';
    li.querySelector('.t').textContent = title;
    li.querySelector('.when').textContent = timeAgo(meta.last || meta.created);
    li.querySelector('.forget').setAttribute('aria-label', `Remove "${title}" from this browser`);
    const a = li.querySelector('a');
    if (id === S.id) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  });
  fillTitles(ids.filter((x) => !x.meta.title && !x.meta.noTitle).map((x) => x.id));
}

let fillingTitles = false;
// Chats started before titles were kept: the first message names them.
async function fillTitles(ids) {
  if (fillingTitles || !ids.length) return;
  fillingTitles = true;
  for (const id of ids) {
    try {
      const r = await api(`sessions/${encodeURIComponent(id)}/messages?before_seq=2&limit=1`, { token: store.token(id) });
      const first = (r.messages || []).find((m) => m.role === 'user');
      store.setMeta(id, first ? { title: titleOf(first.text), created: store.meta(id).created || first.at } : { noTitle: true });
    } catch (_) {
      store.setMeta(id, { noTitle: true });
    }
  }
  fillingTitles = false;
  renderSidebar();
}

function drawer(open) {
  document.body.classList.toggle('drawer-open', open);
  $('scrim').hidden = !open;
  $('open-sidebar').setAttribute('aria-expanded', String(open));
  if (open) $('new-chat').focus();
}
$('open-sidebar').addEventListener('click', () => drawer(true));
$('close-sidebar').addEventListener('click', () => drawer(false));
$('scrim').addEventListener('click', () => drawer(false));
document.addEventListener('keydown', (ev) => {
  if (ev.key === 'Escape' && document.body.classList.contains('drawer-open')) drawer(false);
});

// ---- actions ---------------------------------------------------------------------------------------------

const sessionPath = (rest = '') => `sessions/${encodeURIComponent(S.id)}${rest}`;

// Runs an action; a failure shows in the banner (and `undo` runs).
async function act(fn, undo) {
  try {
    await fn();
  } catch (e) {
    if (undo) undo();
    toast(e.message);
  }
}

async function sendText(text, planMode) {
  stick = true;
  toBottom();
  await api(sessionPath('/messages'), { method: 'POST', body: planMode ? { text, plan_mode: true } : { text } });
  store.setMeta(S.id, { last: Date.now(), ...(store.meta(S.id).title ? {} : { title: titleOf(text) }) });
  renderSidebar();
}

$('send-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const text = $('message').value.trim();
  if (!text || S.access !== 'ok') return;
  const planMode = $('plan-mode').checked;
  $('message').value = '';
  $('plan-mode').checked = false;
  autosize();
  updateSend();
  act(async () => {
    if (!S.id) await startChat(text, planMode);
    else await sendText(text, planMode);
  }, () => {
    if (!$('message').value) $('message').value = text;
    autosize();
    updateSend();
  });
});

function autosize() {
  const t = $('message');
  t.style.height = 'auto';
  t.style.height = `${Math.min(t.scrollHeight, window.innerHeight * 0.4)}px`;
}
$('message').addEventListener('input', () => { autosize(); updateSend(); });
$('message').addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    $('send-form').requestSubmit();
  }
});

$('stop').addEventListener('click', () => act(async () => {
  $('stop').disabled = true;
  await api(sessionPath('/stop'), { method: 'POST', body: {} });
}, () => { $('stop').disabled = false; }));

for (const id of ['new-chat', 'new-chat-top']) $(id).addEventListener('click', () => { drawer(false); go(null); });

$('load-older').addEventListener('click', () => act(async () => {
  const seqs = [...list.children].map((c) => Number(c.dataset.seq)).filter((n) => n > 0);
  if (!seqs.length) return;
  const r = await api(sessionPath(`/messages?before_seq=${Math.min(...seqs)}&limit=${OLDER_PAGE}`));
  // Keep what the reader sees where it is: the page grows above it.
  const before = scroller.scrollHeight;
  const top = scroller.scrollTop;
  stick = false;
  for (const m of r.messages || []) mergeMessage(m);
  scroller.scrollTop = top + (scroller.scrollHeight - before);
  S.olderHasMore = !!r.has_more;
  $('load-older').hidden = !S.olderHasMore;
}));

// ---- the first screen ----------------------------------------------------------------------------------

const SUGGESTIONS = [
  ['Use a tool', '/tool clock {}', false],
  ['Ask before acting', '/tool send_note {"text":"Ship it"}', false],
  ['Let the agent ask you', '/choose Pick a color | Red | Green | Blue', false],
  ['Draft a plan first', 'Write the release notes', true],
];

async function loadSettings() {
  if (S.settings) return S.settings;
  const s = await api('settings', { token: null });
  S.settings = s;
  $('set-model').textContent = s.model;
  $('set-prompt').textContent = s.system_prompt || '(none)';
  $('set-context').textContent = s.context_window_tokens
    ? `${Number(s.context_window_tokens).toLocaleString('en-US')} tokens` : 'compaction off';
  const tools = s.mcp_tools || [];
  const servers = (s.mcp && s.mcp.servers) || [];
  const mcp = $('set-mcp');
  if (tools.length) mcp.replaceChildren(h('ul', {}, ...tools.map((t) => h('li', { text: t.name || JSON.stringify(t) }))));
  else if (servers.length) mcp.textContent = `servers: ${servers.join(', ')}`;
  else mcp.textContent = 'none configured (DEX_AGENT_MCP_CONFIG)';
  $('start-model').replaceChildren(...s.models.map((m) => h('option', { value: m, text: m, selected: m === s.model })));
  return s;
}

function showWelcome() {
  document.body.dataset.view = 'welcome';
  $('welcome').hidden = false;
  $('model-select-wrap').hidden = false;
  $('session-model').textContent = '';
  setTitle('New chat');
  $('suggestions').replaceChildren(...SUGGESTIONS.map(([title, text, plan]) =>
    h('button', { type: 'button', class: 'suggestion', onclick: () => {
      $('message').value = text;
      $('plan-mode').checked = plan;
      autosize();
      updateSend();
      $('message').focus();
    } }, h('strong', { text: title }), h('span', { text: plan ? `Plan mode · ${text}` : text }))));
  loadSettings().catch((e) => banner(`The agent's settings cannot be loaded: ${e.message}`, 'error'));
}

async function startChat(text, planMode) {
  const r = await api('sessions', { method: 'POST', body: { model: $('start-model').value || undefined }, token: null });
  store.setToken(r.session_id, r.session_token);
  store.setMeta(r.session_id, { title: titleOf(text), created: Date.now(), last: Date.now() });
  history.pushState(null, '', `${BASE}?session=${encodeURIComponent(r.session_id)}`);
  openSession(r.session_id);
  await sendText(text, planMode);
}

// ---- the session graph ------------------------------------------------------------------------------
// A side panel with the session's flow (graph-panel.js, GET sessions/ID/graph):
// drawn when it opens, and again after each turn while it is open.

const graph = { open: false, panel: null, sessionId: null };

function showGraph(open) {
  graph.open = open && !!S.id;
  $('graph-panel').hidden = !graph.open;
  $('graph-toggle').setAttribute('aria-expanded', String(graph.open));
  $('graph-toggle').setAttribute('aria-label', graph.open ? 'Hide the session graph' : 'Show the session graph');
  refreshGraph();
}

function refreshGraph() {
  if (!graph.open || !S.id || !S.token || !window.DexaGraphPanel) return;
  if (graph.sessionId === S.id && graph.panel) { graph.panel.refresh(); return; }
  graph.sessionId = S.id;
  graph.panel = window.DexaGraphPanel.mount($('graph-view'), { base: BASE, sessionId: S.id, token: S.token, inlineStyle: false });
}

$('graph-toggle').addEventListener('click', () => showGraph(!graph.open));
$('close-graph').addEventListener('click', () => showGraph(false));

// ---- a chat --------------------------------------------------------------------------------------------

function resetChat(id) {
  S.gen++;
  if (S.streamCtrl) S.streamCtrl.abort();
  Object.assign(S, {
    id, token: id ? store.token(id) : null, access: 'ok', turn: { turn: 0, status: 'idle' },
    items: new Map(), calls: new Map(), turnSeq: new Map(), turnUser: new Map(), maxSeq: 0, liveN: 0,
    live: null, plan: null, queue: [], lastEventId: null, streamCtrl: null, olderHasMore: null, retry: null,
  });
  list.replaceChildren();
  $('queue').replaceChildren();
  $('load-older').hidden = true;
  banner('');
  document.body.dataset.textDeltas = '0';
  setStream('');
  graph.panel = null;
  graph.sessionId = null;
  $('graph-view').replaceChildren();
  $('graph-toggle').hidden = !id;
  if (!id) showGraph(false);
}

function openSession(id) {
  resetChat(id);
  document.body.dataset.view = 'chat';
  $('welcome').hidden = true;
  $('model-select-wrap').hidden = true;
  const meta = store.meta(id);
  setTitle(meta.title || 'Chat');
  renderSidebar();
  updateChrome();
  toBottom();
  if (!S.token) {
    refuse('denied');
    return;
  }
  const gen = S.gen;
  refreshGraph();
  loadSnapshot(gen, true).then((ok) => { if (ok) streamEvents(gen); });
}

// Access refused: the banner says why, truthfully, and what to do.
function refuse(why) {
  S.access = why;
  const forget = h('button', { type: 'button', class: 'btn small', onclick: () => { store.forget(S.id); go(null); } }, 'Remove from this browser');
  const fresh = h('button', { type: 'button', class: 'btn small primary', onclick: () => go(null) }, 'New chat');
  if (why === 'denied') {
    banner('This browser has no access to this chat. A chat opens only in the browser that started it.', 'error', [fresh]);
  } else if (why === 'changed-key') {
    banner('This browser holds a key for this chat, but the server no longer accepts it: it was restarted with a different session key (DEX_AGENT_SESSION_KEY). Keep that variable set to keep chats across restarts.', 'error', [forget, fresh]);
  } else {
    banner('This chat no longer exists on the server. Its store may have been reset or replaced.', 'error', [forget, fresh]);
  }
  $('banner').dataset.kind = why;
  setStream('closed');
  updateChrome();
}

async function loadSnapshot(gen = S.gen, positionStream = false) {
  if (gen !== S.gen || !S.id || S.access !== 'ok') return false;
  try {
    const snap = await api(sessionPath());
    if (gen !== S.gen) return false;
    if (positionStream || !S.lastEventId) S.lastEventId = snap.resume_token || '';
    mergeSnapshot(snap);
    return true;
  } catch (e) {
    if (gen !== S.gen) return false;
    if (e.status === 403) refuse('changed-key');
    else if (e.status === 404) refuse('missing');
    else if (e.status === 0) setStream('reconnecting');
    else toast(e.message);
    return false;
  }
}

// An ended session (end_session, or the server's idle timeout) stays
// readable until its retention passes; it takes no more messages.
function showEnded(ended) {
  if (S.access === 'ended') return;
  S.access = 'ended';
  const fresh = h('button', { type: 'button', class: 'btn small primary', onclick: () => go(null) }, 'New chat');
  const why = ended && ended.reason === 'idle_timeout' ? ': it was idle for too long' : '';
  banner(`This chat has ended${why}. You can still read it; start a new chat to go on.`, 'warn', [fresh]);
  $('banner').dataset.kind = 'ended';
  updateChrome();
}

function mergeSnapshot(snap) {
  $('session-model').textContent = (snap.session && snap.session.model) || '';
  const msgs = (snap.messages || []).slice().sort((a, b) => a.seq - b.seq);
  for (const m of msgs) mergeMessage(m);
  const pendingIds = new Set();
  for (const p of snap.pending || []) {
    pendingIds.add(p.call_id);
    const call = callState(p.call_id, p.name, p.arguments);
    call.pending = p;
    renderCard(call);
  }
  for (const c of S.calls.values()) {
    if (c.pending && !pendingIds.has(c.id)) { c.pending = null; renderCard(c); }
  }
  const t = snap.turn || {};
  S.turn = { turn: t.turn || 0, status: t.status || 'idle', mode: t.mode, control: snap.control ? snap.control.action : null };
  if (S.turn.status !== 'running') { endLive(); S.retry = null; }
  if (t.status === 'failed' && t.error) errorCard(t.turn, t.error);
  S.plan = snap.plan || null;
  renderPlan();
  S.queue = snap.queue || [];
  renderQueue();
  const first = msgs.length ? msgs[0].seq : 0;
  const firstSeq = (snap.transcript && snap.transcript.first_seq) || 1;
  if (S.olderHasMore === null) $('load-older').hidden = !(first > firstSeq);
  const meta = store.meta(S.id);
  const firstUser = msgs.find((m) => m.role === 'user');
  if (!meta.title && firstUser && firstUser.seq === firstSeq) {
    store.setMeta(S.id, { title: titleOf(firstUser.text), created: meta.created || firstUser.at });
    renderSidebar();
  }
  setTitle(store.meta(S.id).title || 'Chat');
  if (snap.ended) showEnded(snap.ended);
  updateChrome();
}

let snapTimer = null;
function scheduleSnapshot(delay = 300) {
  clearTimeout(snapTimer);
  const gen = S.gen;
  snapTimer = setTimeout(() => loadSnapshot(gen), delay);
}
// The periodic reload waits while a turn streams live (its deltas and its
// stored message would race); events end each turn with a reload anyway.
setInterval(() => {
  const streaming = S.turn.status === 'running' && document.body.dataset.stream === 'live';
  if (S.id && S.access === 'ok' && !document.hidden && !streaming) loadSnapshot(S.gen);
}, SNAPSHOT_EVERY_MS);

// ---- events ----------------------------------------------------------------------------------------------

function onEvent(ev) {
  switch (ev.type) {
    case 'session_ended':
      showEnded({ reason: ev.reason });
      break;
    case 'turn_started':
      S.turn = { turn: ev.turn, status: 'running', mode: ev.mode, control: null };
      S.retry = null;
      S.queue = S.queue.filter((q) => !(ev.message_ids || []).includes(q.id));
      renderQueue();
      break;
    case 'queue_changed':
      if (ev.action === 'added' && ev.message && !S.queue.some((q) => q.id === ev.message.id)) S.queue.push(ev.message);
      if (ev.action === 'deleted') S.queue = S.queue.filter((q) => q.id !== ev.id);
      renderQueue();
      break;
    case 'message_appended':
      if (ev.message) mergeMessage(ev.message);
      break;
    case 'text_delta': {
      const live = liveItem(ev.turn);
      live.text += ev.text || '';
      S.retry = null;
      setAnswer(live.li, live.text, true);
      // Counted so a test can tell that the answer streamed in.
      document.body.dataset.textDeltas = String(Number(document.body.dataset.textDeltas || 0) + 1);
      break;
    }
    case 'reasoning_delta': {
      const live = liveItem(ev.turn);
      live.reasoning += ev.text || '';
      setReasoning(live.li, live.reasoning);
      break;
    }
    case 'tool_call_proposed': {
      endLive();
      const call = callState(ev.call_id, ev.name, ev.arguments);
      renderCard(call);
      break;
    }
    case 'tool_call_awaiting_approval': {
      const call = callState(ev.call_id, ev.name, ev.arguments);
      call.pending = { kind: 'approval', call_id: ev.call_id, name: ev.name, arguments: ev.arguments };
      renderCard(call);
      break;
    }
    case 'question_asked': {
      const call = callState(ev.call_id, ev.name || 'ask_user', ev.arguments);
      call.pending = { kind: 'question', prompt: ev.prompt, choices: ev.choices, fields: ev.fields, url: ev.url, purpose: ev.purpose, asked_by: ev.asked_by };
      renderCard(call);
      break;
    }
    case 'timer_set': {
      const call = callState(ev.call_id, 'durable_wait');
      call.pending = { kind: 'timer', seconds: ev.seconds, fires_at_ms: ev.fires_at_ms, reason: ev.reason };
      renderCard(call);
      break;
    }
    case 'approval_resolved':
    case 'question_answered':
    case 'timer_fired': {
      const call = S.calls.get(ev.call_id);
      if (call) {
        call.pending = null;
        const d = ev.decision || {};
        if (d.decision === 'approve') call.decision = `Approved${d.note ? `: ${d.note}` : ''}`;
        else if (d.decision === 'reject') call.decision = `Rejected${d.note ? `: ${d.note}` : ''}`;
        else if (d.decision === 'answer' && d.action && d.action !== 'accept') call.decision = d.action === 'decline' ? 'Declined' : 'Cancelled';
        else if (d.decision === 'answer' && d.fields) call.decision = `Answered: ${JSON.stringify(d.fields)}`;
        else if (d.decision === 'answer') call.decision = d.answer !== undefined ? `Answered: ${d.answer}` : 'Done';
        renderCard(call);
      }
      break;
    }
    case 'tool_call_started': {
      const call = S.calls.get(ev.call_id);
      if (call && call.status === 'proposed') { call.status = 'running'; renderCard(call); }
      break;
    }
    case 'tool_call_finished': {
      const call = callState(ev.call_id, ev.name);
      call.status = ev.status;
      call.pending = null;
      if (S.retry && S.retry.callId === ev.call_id) S.retry = null;
      call.retryText = '';
      seen({ seq: ev.seq, turn: S.turn.turn });
      renderCard(call);
      fetchResult(call, ev.seq);
      break;
    }
    case 'plan_updated':
      S.plan = ev.plan || null;
      renderPlan();
      break;
    case 'step_retrying': {
      S.retry = { attempt: ev.attempt, max: ev.max_attempts, until: Date.now() + (ev.delay_ms || 0), callId: ev.call_id || null };
      const call = ev.call_id && S.calls.get(ev.call_id);
      if (call) {
        call.retryText = `${ev.error ? `${ev.error.message}. ` : ''}${retryText()}`;
        renderCard(call);
      }
      break;
    }
    case 'turn_control':
      S.turn.control = ev.action;
      break;
    case 'turn_cancelled':
      S.turn = { ...S.turn, status: 'cancelled', control: null };
      endLive();
      S.retry = null;
      noteItem(ev.turn, ev.action === 'steer' ? 'Interrupted: continuing with your new message' : 'Stopped');
      scheduleSnapshot();
      refreshGraph();
      break;
    case 'turn_finished':
      S.turn = { ...S.turn, status: 'idle', control: null };
      endLive();
      S.retry = null;
      scheduleSnapshot();
      refreshGraph();
      break;
    case 'turn_failed':
      S.turn = { ...S.turn, status: 'failed', control: null, error: ev.error };
      endLive();
      S.retry = null;
      errorCard(ev.turn, ev.error);
      scheduleSnapshot();
      refreshGraph();
      break;
    default:
      break;
  }
  updateChrome();
}

// Parses the "id:" and "data:" lines of one SSE frame.
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

function setStream(s) {
  document.body.dataset.stream = s;
  const kind = $('banner').dataset.kind;
  if (s === 'reconnecting' && S.access === 'ok') {
    banner('Reconnecting to live updates…', 'info');
    $('banner').dataset.kind = 'reconnecting';
  } else if (s === 'live' && kind === 'reconnecting') {
    banner('');
  }
}

async function streamEvents(gen) {
  let failures = 0;
  while (gen === S.gen && S.access === 'ok') {
    const ctrl = new AbortController();
    S.streamCtrl = ctrl;
    try {
      const headers = { 'X-Agent-Session-Token': S.token || '', Accept: 'text/event-stream' };
      if (S.lastEventId) headers['Last-Event-ID'] = S.lastEventId;
      const res = await fetch(BASE + sessionPath('/events'), { headers, signal: ctrl.signal, cache: 'no-store' });
      if (res.status === 400) { // the token is no longer valid: start over from a snapshot
        S.lastEventId = null;
        await loadSnapshot(gen, true);
        continue;
      }
      if (res.status === 403) { refuse('changed-key'); return; }
      if (res.status === 404) { refuse('missing'); return; }
      if (!res.ok || !res.body) throw new Error(`event stream: ${res.status}`);
      // Whatever was missed while away comes from a fresh snapshot.
      if (failures) scheduleSnapshot(0);
      failures = 0;
      setStream('live');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done || gen !== S.gen) break;
        buf += value;
        let m;
        while ((m = /\r\n\r\n|\n\n|\r\r/.exec(buf))) {
          const frame = buf.slice(0, m.index);
          buf = buf.slice(m.index + m[0].length);
          const { id, data } = parseFrame(frame);
          if (data !== null) {
            try { onEvent(JSON.parse(data)); } catch (e) { console.warn('bad event', e); }
          }
          if (id) S.lastEventId = id;
        }
      }
    } catch (e) {
      if (ctrl.signal.aborted || gen !== S.gen) return;
    }
    if (gen !== S.gen) return;
    failures++;
    setStream('reconnecting');
    await sleep(Math.min(1000 * failures, 5000));
  }
}

// ---- routing -------------------------------------------------------------------------------------------------

function go(id) {
  history.pushState(null, '', id ? `${BASE}?session=${encodeURIComponent(id)}` : BASE);
  route();
}

function route() {
  drawer(false);
  const id = new URLSearchParams(location.search).get('session');
  if (id) {
    openSession(id);
  } else {
    resetChat(null);
    renderSidebar();
    updateChrome();
    showWelcome();
  }
}

window.addEventListener('popstate', route);
// For tests: reload the snapshot now (as the periodic reload does).
window.agentReloadSnapshot = () => loadSnapshot(S.gen);
route();
