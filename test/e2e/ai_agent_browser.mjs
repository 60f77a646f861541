// Browser tests of the AI Agent page, run by test/e2e/ai_agent.sh against a
// running examples/ai-agent/ai-agent (session key E2E_SESSION_KEY):
//   node ai_agent_browser.mjs BASE_URL OUT_DIR
// playwright-core drives Debian's chromium at 1280x860 and at 390x844 (a
// phone); every state is asserted (layout included: what must be on screen
// is checked against the viewport) and saved as OUT_DIR/<size>-NN-name.png.
// Prints "ok   name" / "FAIL name" lines and "N passed, N failed".
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';

const [base, outDir] = process.argv.slice(2);
const require = createRequire(process.env.PLAYWRIGHT_DIR ? path.join(process.env.PLAYWRIGHT_DIR, 'x.js') : import.meta.url);
const { chromium } = require('playwright-core');
const KEY = process.env.E2E_SESSION_KEY || 'e2e-session-key';
const APP = `${base}/products/ai-agent/`;

const T = 60000; // per wait: generous, the machine may be loaded (a wait ends when its condition holds)
let passed = 0;
let failed = 0;
let skipped = 0;

async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}`);
    console.log(`    ${String(e && e.stack ? e.stack : e).split('\n').slice(0, 5).join('\n    ')}`);
  }
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

// ---- helpers ------------------------------------------------------------------------

function shooter(page, size) {
  let n = 0;
  return (name) => page.screenshot({ path: path.join(outDir, `${size}-${String(++n).padStart(2, '0')}-${name}.png`) });
}

// The element is entirely inside the viewport (and not hidden).
async function onScreen(page, selector, what = selector) {
  const loc = page.locator(selector).first();
  await loc.waitFor({ state: 'visible', timeout: T });
  const box = await loc.boundingBox();
  const vp = page.viewportSize();
  assert(box, `${what}: no box`);
  assert(box.y >= 0 && box.y + box.height <= vp.height + 1 && box.x >= 0 && box.x + box.width <= vp.width + 1,
    `${what} is not on screen: ${JSON.stringify(box)} in ${vp.width}x${vp.height}`);
}

const texts = (page, sel) => page.$$eval(sel, (els) => els.map((e) => e.innerText));
const transcript = (page) => texts(page, '#messages > li');

async function waitText(page, text, timeout = T) {
  await page.waitForFunction((t) => document.getElementById('messages').innerText.includes(t), text, { timeout });
}
async function waitIdle(page, timeout = T) {
  await page.waitForFunction(() => ['idle', 'cancelled', 'failed'].includes(document.body.dataset.turnStatus) &&
    !document.querySelector('#queue li'), null, { timeout });
}
async function waitLive(page) {
  await page.waitForFunction(() => document.body.dataset.stream === 'live', null, { timeout: T });
}
async function send(page, text, { plan = false } = {}) {
  await page.fill('#message', text);
  if (plan) await page.check('#plan-mode');
  await page.click('#send');
  await page.waitForFunction(() => document.getElementById('message').value === '', null, { timeout: T });
}
const atBottom = (page) => page.evaluate(() => {
  const s = document.getElementById('scroller');
  return s.scrollHeight - s.scrollTop - s.clientHeight < 90;
});
const sign = (id) => crypto.createHmac('sha256', KEY).update(id).digest('hex');

async function newChat(page, text, opts) {
  await page.goto(APP);
  await page.waitForSelector('#welcome:not([hidden])', { timeout: T });
  await page.waitForFunction(() => document.querySelectorAll('#start-model option').length > 0, null, { timeout: T });
  await send(page, text, opts);
  await page.waitForURL(/\?session=ai-agent-[0-9a-f-]{36}$/, { timeout: T });
  await waitLive(page);
}

// ---- desktop ------------------------------------------------------------------------------

async function desktop() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const shot = shooter(page, 'desktop');

  await check('desktop: the page is served with a strict Content-Security-Policy', async () => {
    const res = await page.goto(APP);
    const h = res.headers();
    assert(/script-src 'self'/.test(h['content-security-policy'] || '') &&
      /frame-ancestors 'none'/.test(h['content-security-policy']), `CSP: ${h['content-security-policy']}`);
    assert(h['x-content-type-options'] === 'nosniff', 'nosniff');
  });

  await check('desktop: the first screen offers a start, the models and the agent settings', async () => {
    await page.waitForSelector('#welcome:not([hidden])', { timeout: T });
    await page.waitForFunction(() => document.getElementById('set-model').textContent !== '', null, { timeout: T });
    await page.click('#agent-settings summary');
    assert(await page.textContent('#set-model') === 'mock/dex', 'default model');
    assert((await page.textContent('#set-prompt')).includes('e2e system prompt'), 'system prompt');
    assert((await page.textContent('#set-context')).includes('64,000'), 'context window');
    const options = await page.$$eval('#start-model option', (o) => o.map((x) => x.value));
    assert(JSON.stringify(options) === '["mock/dex","mock/dex-mini"]', `models ${options}`);
    assert((await page.$$('.suggestion')).length === 4, 'suggestions');
    await onScreen(page, '#message', 'the message box');
    await shot('welcome');
  });

  let sessionUrl = '';
  let sessionId = '';
  await check('desktop: the first message starts a chat on the chosen model; it streams back as Markdown', async () => {
    await page.selectOption('#start-model', 'mock/dex-mini');
    await send(page, 'Hello **browser**, see `code` and:\n```js\nconst answer = 42;\n```');
    await page.waitForURL(/\?session=ai-agent-[0-9a-f-]{36}$/, { timeout: T });
    sessionUrl = page.url();
    sessionId = new URL(sessionUrl).searchParams.get('session');
    const token = await page.evaluate((id) => localStorage.getItem(`ai-agent-token:${id}`), sessionId);
    assert(/^[0-9a-f]{64}$/.test(token || ''), 'token in localStorage');
    assert(!sessionUrl.includes(token), 'token not in the URL');
    await waitText(page, 'Local demo response: Hello browser');
    await waitIdle(page);
    assert(Number(await page.evaluate(() => document.body.dataset.textDeltas)) >= 3, 'the answer streamed in deltas');
    assert(await page.textContent('#session-model') === 'mock/dex-mini', 'model in the header');
    assert(await page.$eval('.msg.model .answer strong', (e) => e.textContent) === 'browser', 'bold rendered');
    assert(await page.$eval('.msg.model .code-block code', (e) => e.textContent) === 'const answer = 42;', 'code block');
    assert(await page.$('.msg.model .code-block .copy-code'), 'copy button on the code block');
    assert(!(await page.$('.msg.model .answer script')), 'no markup from text');
    assert((await page.textContent('#chat-title')).startsWith('Hello **browser**'), 'title from the first message');
    assert(!(await page.textContent('.topbar')).includes(sessionId), 'no raw id in the header');
    assert((await page.textContent('#turn-status')) === 'Ready', 'plain status word');
    await shot('answer-markdown');
  });

  await check('desktop: model text is never HTML', async () => {
    await send(page, '<img src=x onerror="window.pwned=1"> [x](javascript:alert(1)) <b>bold</b>');
    await waitText(page, '<b>bold</b>');
    await waitIdle(page);
    assert(!(await page.evaluate(() => window.pwned)), 'no script ran');
    assert((await page.$$('.answer img, .answer b, .answer a[href^="javascript"]')).length === 0, 'no element from text');
  });

  await check('desktop: a READ tool is one card, run at once', async () => {
    await send(page, '/tool clock {}');
    await page.waitForSelector('.tool[data-name="clock"][data-status="ok"]', { timeout: T });
    await waitText(page, 'Tool clock (ok)');
    await waitIdle(page);
    assert((await page.$$('.tool[data-name="clock"]')).length === 1, 'one card');
    const all = (await transcript(page)).join('\n');
    assert(!all.includes('→ clock') && !all.includes('← clock'), 'no call or result lines');
    await page.click('.tool[data-name="clock"] .tool-head');
    assert(/^\d{4}-\d\d-\d\dT/.test((await page.textContent('.tool[data-name="clock"] .result')).trim()), 'result in the card');
    assert(await page.getAttribute('.tool[data-name="clock"] .tool-head', 'aria-expanded') === 'true', 'expanded');
  });

  await check('desktop: an approval waits inline; composer and Stop stay on screen; approve', async () => {
    await send(page, '/tool send_note {"text":"ship it"}');
    await page.waitForSelector('.tool[data-status="approval"] button.approve', { timeout: T });
    assert(await page.evaluate(() => document.body.dataset.turnStatus) === 'running', 'running');
    await onScreen(page, '.tool[data-status="approval"] button.approve', 'Approve');
    await onScreen(page, '#message', 'the message box');
    await onScreen(page, '#stop', 'Stop');
    assert((await page.textContent('#turn-status')).includes('approval'), 'status says approval');
    await shot('approval');
    await page.click('.tool[data-status="approval"] button.approve');
    await page.waitForSelector('.tool[data-name="send_note"][data-status="ok"]', { timeout: T });
    await waitText(page, 'sent to the team');
    await waitIdle(page);
    assert(await atBottom(page), 'still at the bottom after the approval');
    assert(await page.isHidden('#stop'), 'Stop gone when idle');
  });

  await check('desktop: reject with a note; the note survives a snapshot reload', async () => {
    await send(page, '/tool send_note {"text":"nope"}');
    await page.waitForSelector('.tool[data-status="approval"] .note-input', { timeout: T });
    await page.fill('.tool[data-status="approval"] .note-input', 'not today');
    await page.evaluate(() => window.agentReloadSnapshot());
    assert(await page.inputValue('.tool[data-status="approval"] .note-input') === 'not today', 'note kept');
    await page.click('.tool[data-status="approval"] button.reject');
    await page.waitForSelector('.tool[data-status="rejected"]', { timeout: T });
    await waitIdle(page);
  });

  await check('desktop: /choose shows choice buttons inline', async () => {
    await send(page, '/choose Pick a color | Red | Green | Blue');
    await page.waitForSelector('.tool[data-status="question"] button.choice', { timeout: T });
    const choices = await texts(page, '.tool[data-status="question"] button.choice');
    assert(JSON.stringify(choices) === '["Red","Green","Blue"]', `choices ${choices}`);
    await onScreen(page, '.tool[data-status="question"] button.choice', 'a choice');
    await shot('question');
    await page.click('.tool[data-status="question"] button.choice >> text=Green');
    await waitText(page, 'Green');
    await waitIdle(page);
  });

  await check('desktop: /ask takes a typed answer', async () => {
    await send(page, '/ask What is your name?');
    await page.waitForSelector('.tool[data-status="question"] .answer-input', { timeout: T });
    await page.fill('.tool[data-status="question"] .answer-input', 'Ada Lovelace');
    await page.press('.tool[data-status="question"] .answer-input', 'Enter');
    await waitText(page, 'Ada Lovelace');
    await waitIdle(page);
  });

  // With an MCP server that wants OAuth and elicits (ai_agent.sh starts
  // test/mcp/_sdk_server.mjs --auth and sets MCP_SDK_SERVER).
  if (process.env.MCP_SDK_SERVER) {
    await check('desktop: an MCP sign-in shows a sign-in card; signing in lets the call go on', async () => {
      await send(page, '/tool safe__sign_in {}');
      const card = '.tool[data-status="question"] .sign-in';
      await page.waitForSelector(`${card} a.sign-in-link`, { timeout: T });
      const href = await page.getAttribute(`${card} a.sign-in-link`, 'href');
      assert(href.startsWith(`${process.env.MCP_SDK_SERVER}/authorize?`), `sign-in link ${href}`);
      assert((await page.getAttribute(`${card} a.sign-in-link`, 'target')) === '_blank', 'opens a new tab');
      assert((await page.textContent('.tool[data-status="question"] .badge')).includes('sign in'), 'badge says sign in');
      await onScreen(page, `${card} a.sign-in-link`, 'the sign-in link');
      await shot('sign-in');
      const [tab] = await Promise.all([page.context().waitForEvent('page'), page.click(`${card} a.sign-in-link`)]);
      await tab.waitForLoadState();
      await tab.waitForFunction(() => document.body.innerText.includes('You are signed in'), null, { timeout: T });
      await tab.close();
      await waitText(page, 'Signed in to safe');
      await waitIdle(page);
    });

    await check('desktop: an MCP elicitation shows its form; the answer reaches the server', async () => {
      await send(page, '/tool safe__ask_name {}');
      await page.waitForSelector('.tool[data-status="question"] .ask-fields', { timeout: T });
      const labels = await texts(page, '.tool[data-status="question"] .ask-fields .field > span');
      assert(JSON.stringify(labels) === '["Your name *","color"]', `labels ${labels}`);
      assert((await page.inputValue('.tool[data-status="question"] select[name="color"]')) === 'blue', 'default chosen');
      await page.fill('.tool[data-status="question"] input[name="name"]', 'Grace');
      await shot('elicitation');
      await page.click('.tool[data-status="question"] button.submit');
      await waitText(page, 'Hello Grace (blue)');
      await waitIdle(page);
    });
  } else if (process.env.CI) {
    failed++;
    console.log('FAIL the MCP sign-in and form checks: no SDK server (npm?)');
  } else {
    skipped += 2;
    console.log('skip the MCP sign-in and form checks: no SDK server (npm?)');
  }

  await check('desktop: a /wait 2 timer counts down and fires', async () => {
    const t0 = Date.now();
    await send(page, '/wait 2 tea');
    await page.waitForSelector('.tool[data-status="timer"] .left', { timeout: T });
    assert((await page.textContent('.tool[data-status="timer"]')).includes('tea'), 'reason shown');
    await shot('timer');
    await page.waitForSelector('.tool[data-name="durable_wait"][data-status="ok"]', { timeout: T });
    assert(Date.now() - t0 >= 1500, 'fired too early');
    await waitIdle(page);
  });

  await check('desktop: a plan is a card in the conversation, in view after drafting; Execute runs it', async () => {
    await send(page, 'write the release notes', { plan: true });
    await page.waitForSelector('#execute-plan', { timeout: T });
    await waitIdle(page);
    assert((await page.$$('.plan-card .todos li')).length === 2, 'two tasks');
    assert(await page.getAttribute('.plan-card .plan-status', 'data-status') === 'draft', 'draft');
    await onScreen(page, '.plan-card', 'the plan card');
    await onScreen(page, '#execute-plan', 'Execute');
    await shot('plan-draft');
    await page.click('#execute-plan');
    await page.waitForFunction(() => document.querySelector('.plan-card .plan-status')?.dataset.status === 'completed', null, { timeout: T });
    assert((await page.$$('.plan-card .todos li.completed')).length === 2, 'tasks completed');
    await waitIdle(page);
    await shot('plan-done');
  });

  await check('desktop: queued messages are chips above the composer; Delete one, Steer another', async () => {
    await send(page, '/wait 30 long wait');
    await page.waitForSelector('.tool[data-status="timer"]', { timeout: T });
    await send(page, 'drop me');
    await send(page, 'change of plan');
    await page.waitForFunction(() => document.querySelectorAll('#queue li').length === 2, null, { timeout: T });
    await onScreen(page, '#queue li:has-text("change of plan") button.steer', 'Steer');
    await onScreen(page, '#queue li:has-text("drop me") button.delete', 'Delete');
    await onScreen(page, '#stop', 'Stop');
    await shot('queue');
    await page.click('#queue li:has-text("drop me") button.delete');
    await page.waitForFunction(() => document.querySelectorAll('#queue li').length === 1, null, { timeout: T });
    await page.click('#queue li:has-text("change of plan") button.steer');
    await waitText(page, 'Local demo response: change of plan');
    await waitIdle(page);
    assert(!(await transcript(page)).some((m) => m.includes('drop me')), 'the deleted message never ran');
    assert((await transcript(page)).some((m) => m.includes('Interrupted')), 'a note says the turn was interrupted');
  });

  await check('desktop: Stop ends a turn', async () => {
    await send(page, '/wait 30 stop me');
    await page.waitForSelector('.tool[data-status="timer"]', { timeout: T });
    await onScreen(page, '#stop', 'Stop');
    await page.click('#stop');
    await page.waitForFunction(() => document.body.dataset.turnStatus === 'cancelled', null, { timeout: T });
    await page.waitForSelector('.tool[data-name="durable_wait"][data-status="cancelled"]', { timeout: T });
    assert((await transcript(page)).some((m) => m.trim() === 'Stopped'), 'a Stopped note');
    await shot('stopped');
  });

  await check('desktop: /fail 2 shows "retrying (attempt 2 of 3)" then the answer', async () => {
    await send(page, '/fail 2');
    await page.waitForFunction(() => /Retrying \(attempt 2 of 3\) in \d+ s/.test(document.getElementById('typing').innerText), null, { timeout: T });
    await onScreen(page, '#typing', 'the retry line');
    await shot('retrying');
    await waitText(page, 'Recovered: /fail 2 succeeded on attempt 3');
    await waitIdle(page);
    assert(await page.isHidden('#typing'), 'the typing line goes');
  });

  await check('desktop: /fail 9 shows an error card with the message and Retry', async () => {
    await send(page, '/fail 9');
    await page.waitForSelector('.error-card', { timeout: T });
    assert((await page.textContent('.error-card')).includes('/fail 9 (attempt 3)'), 'the message');
    await onScreen(page, '.error-card', 'the error card');
    await onScreen(page, '.error-card button.retry', 'Retry');
    await shot('error');
    const before = (await page.$$('.error-card')).length;
    await page.click('.error-card button.retry');
    await page.waitForFunction((n) => document.querySelectorAll('.error-card').length > n, before, { timeout: T });
    await waitIdle(page);
  });

  await check('desktop: an answer cut at the output token limit says so', async () => {
    await send(page, '/truncate Once upon a time');
    await page.waitForSelector('#messages .msg.model .truncated', { timeout: T });
    await waitIdle(page);
    const note = await page.textContent('#messages .msg.model .truncated');
    assert(note.includes('output token limit'), `the note: ${note}`);
    const answer = await page.$$eval('#messages .msg.model', (els) => els.at(-1).querySelector('.answer').innerText);
    assert(answer.includes('Once upon a time'), `the answer is kept: ${answer}`);
  });

  await check('desktop: the session graph in a side panel: the Steps that ran, redrawn after a turn', async () => {
    const visits = () => page.$eval('#graph-view g.node.step[data-id="RunModel"] text', (t) => t.textContent);
    await page.click('#graph-toggle');
    await onScreen(page, '#graph-panel', 'the graph panel');
    await page.waitForSelector('#graph-view svg g.node.step[data-id="RunModel"].ran', { timeout: T });
    const fill = await page.$eval('#graph-view g.node.ran rect', (r) => getComputedStyle(r).fill);
    assert(fill === 'rgb(219, 234, 254)', `the page's sheet styles the graph (fill ${fill})`);
    assert((await page.getAttribute('#graph-toggle', 'aria-expanded')) === 'true', 'the toggle says it is open');
    const before = await visits();
    await shot('graph');
    await send(page, 'one more turn');
    await waitIdle(page);
    await page.waitForFunction((b) => {
      const t = document.querySelector('#graph-view g.node.step[data-id="RunModel"] text');
      return t && t.textContent !== b;
    }, before, { timeout: T });
    await page.click('#close-graph');
    assert(await page.isHidden('#graph-panel'), 'the panel closes');
  });

  await check('desktop: events update the transcript in place; a snapshot reload keeps nodes and selection', async () => {
    await page.evaluate(() => {
      const li = document.querySelector('#messages li.msg.user');
      li.dataset.probe = 'kept';
      const r = document.createRange();
      r.selectNodeContents(li.querySelector('.bubble'));
      getSelection().removeAllRanges();
      getSelection().addRange(r);
    });
    const count = (await page.$$('#messages > li')).length;
    // The reload's promise: resolved (true) once the snapshot is merged.
    assert(await page.evaluate(() => window.agentReloadSnapshot()) === true, 'the snapshot reloaded');
    assert(await page.$('#messages li[data-probe="kept"]'), 'the same node');
    assert((await page.evaluate(() => String(getSelection()))).length > 0, 'selection kept');
    assert((await page.$$('#messages > li')).length === count, 'nothing added or dropped');
  });

  await check('desktop: reading older messages stops auto-scroll; "jump to latest" returns', async () => {
    // Sending jumps to the latest; what arrives while the reader is up the
    // page does not move it.
    await send(page, '/wait 2 while you read');
    await page.waitForSelector('.tool[data-status="timer"]', { timeout: T });
    await page.evaluate(() => { document.getElementById('scroller').scrollTop = 0; });
    await page.waitForSelector('#jump:not([hidden])', { timeout: T });
    await waitText(page, 'Tool durable_wait (ok)');
    await waitIdle(page);
    assert(!(await atBottom(page)), 'did not jump while reading');
    assert(await page.evaluate(() => document.getElementById('scroller').scrollTop) < 50, 'stayed where the reader was');
    await onScreen(page, '#jump', 'jump to latest');
    await shot('jump-to-latest');
    await page.click('#jump');
    await page.waitForFunction(() => {
      const s = document.getElementById('scroller');
      return s.scrollHeight - s.scrollTop - s.clientHeight < 90;
    }, null, { timeout: T });
    assert(await page.isHidden('#jump'), 'button gone at the bottom');
  });

  await check('desktop: reload mid-turn shows the same state', async () => {
    await send(page, '/tool send_note {"text":"after reload"}');
    await page.waitForSelector('.tool[data-status="approval"]', { timeout: T });
    const callId = await page.getAttribute('.tool[data-status="approval"]', 'data-call-id');
    const before = await transcript(page);
    await page.reload();
    await page.waitForSelector(`.tool[data-call-id="${callId}"][data-status="approval"]`, { timeout: T });
    await waitLive(page);
    assert(await page.evaluate(() => document.body.dataset.turnStatus) === 'running', 'still running');
    const after = await transcript(page);
    assert(after.length >= Math.min(before.length, 1) && after.at(-1) === before.at(-1), 'same last item');
    await page.click(`.tool[data-call-id="${callId}"] button.approve`);
    await page.waitForSelector(`.tool[data-call-id="${callId}"][data-status="ok"]`, { timeout: T });
    await waitIdle(page);
  });

  await check('desktop: the sidebar lists this browser\'s chats, newest first, titled by their first message', async () => {
    await newChat(page, 'second chat please');
    await waitText(page, 'Local demo response: second chat please');
    const titles = await texts(page, '#session-list .session-link .t');
    assert(titles[0] === 'second chat please' && titles[1].startsWith('Hello **browser**'), `titles ${titles}`);
    assert(await page.getAttribute('#session-list li:first-child a', 'aria-current') === 'page', 'current chat marked');
    await page.click('#session-list li:nth-child(2) a');
    await page.waitForURL((u) => u.href.includes(sessionId), { timeout: T });
    await waitText(page, 'Local demo response: Hello browser');
    await shot('sidebar');
  });

  await check('desktop: keyboard: Enter sends, Shift+Enter adds a line; every button has a name', async () => {
    await page.focus('#message');
    await page.keyboard.type('line one');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('line two');
    assert(await page.inputValue('#message') === 'line one\nline two', 'a new line');
    await page.keyboard.press('Enter');
    await waitText(page, 'Local demo response: line one');
    await waitIdle(page);
    const unnamed = await page.$$eval('button:not([hidden])', (bs) => bs.filter((b) => b.offsetParent !== null &&
      !(b.getAttribute('aria-label') || b.textContent.trim())).map((b) => b.outerHTML.slice(0, 80)));
    assert(unnamed.length === 0, `buttons without a name: ${unnamed}`);
    assert(await page.getAttribute('#messages', 'role') === 'log', 'the transcript is a log');
  });

  await check('desktop: the dark theme', async () => {
    await page.click('#theme-toggle');
    assert(await page.evaluate(() => document.documentElement.dataset.theme) === 'dark', 'dark');
    await page.reload();
    await waitLive(page);
    assert(await page.evaluate(() => document.documentElement.dataset.theme) === 'dark', 'kept across a reload');
    await send(page, '/tool send_note {"text":"dark"}');
    await page.waitForSelector('.tool[data-status="approval"]', { timeout: T });
    await shot('dark-approval');
    await page.click('.tool[data-status="approval"] button.approve');
    await waitIdle(page);
    await page.click('#theme-toggle');
  });

  await check('desktop: a dropped event stream shows "Reconnecting" and recovers', async () => {
    await page.route('**/events', (route) => route.abort());
    await page.evaluate(() => { window.__abort = true; });
    await page.reload();
    await page.waitForFunction(() => document.body.dataset.stream === 'reconnecting', null, { timeout: T });
    assert((await page.textContent('#banner')).includes('Reconnecting'), 'banner');
    await shot('reconnecting');
    await page.unroute('**/events');
    await waitLive(page);
    await page.waitForSelector('#banner', { state: 'hidden', timeout: T });
  });

  await check('desktop: load earlier messages keeps the reading position', async () => {
    const r = await page.evaluate(async () => (await fetch('sessions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })).json());
    await page.evaluate(async ({ id, token }) => {
      localStorage.setItem(`ai-agent-token:${id}`, token);
      for (let i = 1; i <= 110; i++) {
        const res = await fetch(`sessions/${id}/messages`, {
          method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Agent-Session-Token': token },
          body: JSON.stringify({ text: `bulk ${i}` }),
        });
        if (!res.ok) throw new Error(`send ${i}: ${res.status}`);
      }
    }, { id: r.session_id, token: r.session_token });
    await page.goto(`${APP}?session=${r.session_id}`);
    await waitText(page, 'Local demo response: bulk 110', 60000);
    await waitIdle(page, 60000);
    await page.reload();
    await page.waitForSelector('#load-older:not([hidden])', { timeout: T });
    assert((await page.$$('#messages > li')).length === 200, 'newest 200 shown');
    await page.evaluate(() => { document.getElementById('scroller').scrollTop = 0; });
    const firstSeq = await page.$eval('#messages > li', (li) => li.dataset.seq);
    const y0 = await page.$eval(`#messages > li[data-seq="${firstSeq}"]`, (li) => li.getBoundingClientRect().top);
    await page.click('#load-older');
    await page.waitForFunction(() => document.querySelectorAll('#messages > li').length > 200, null, { timeout: T });
    const y1 = await page.$eval(`#messages > li[data-seq="${firstSeq}"]`, (li) => li.getBoundingClientRect().top);
    assert(Math.abs(y1 - y0) < 80, `the page did not jump: ${y0} -> ${y1}`);
    assert((await page.evaluate(() => document.getElementById('messages').innerText)).includes('bulk 1\n'), 'bulk 1 loaded');
    await shot('older');
  });

  await check('desktop: no page errors', async () => {
    assert(errors.length === 0, errors.join('; '));
  });
  await context.close();
  return sessionUrl;
}

// ---- access banners --------------------------------------------------------------------------

async function banners(sessionUrl) {
  await check('another browser without the token: "no access", nothing shown', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const p2 = await ctx.newPage();
    const refused = [];
    p2.on('response', (r) => { if (r.status() === 403) refused.push(r.url()); });
    await p2.goto(sessionUrl);
    await p2.waitForSelector('#banner:not([hidden])', { timeout: T });
    assert((await p2.textContent('#banner')).includes('no access'), await p2.textContent('#banner'));
    assert((await p2.$$('#messages > li')).length === 0, 'no messages');
    assert(await p2.isDisabled('#message'), 'composer disabled');
    assert(refused.length === 0, 'not even asked: no token');
    await p2.screenshot({ path: path.join(outDir, 'desktop-90-no-access.png') });
    await ctx.close();
  });

  await check('a key that no longer matches (server restarted with another key): a truthful banner', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const p2 = await ctx.newPage();
    const id = new URL(sessionUrl).searchParams.get('session');
    await p2.goto(APP);
    await p2.evaluate((sid) => localStorage.setItem(`ai-agent-token:${sid}`, 'ab'.repeat(32)), id);
    await p2.goto(sessionUrl);
    await p2.waitForSelector('#banner[data-kind="changed-key"]', { timeout: T });
    const text = await p2.textContent('#banner');
    assert(text.includes('different session key') && !text.includes('no access'), text);
    assert(await p2.$('#banner button >> text=Remove from this browser'), 'remove action');
    await p2.screenshot({ path: path.join(outDir, 'desktop-91-changed-key.png') });
    await ctx.close();
  });

  await check('an ended chat stays readable with a banner and takes no more messages', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const p2 = await ctx.newPage();
    await newChat(p2, 'a chat to end');
    await waitText(p2, 'Local demo response: a chat to end');
    await waitIdle(p2);
    const id = new URL(p2.url()).searchParams.get('session');
    const token = await p2.evaluate((sid) => localStorage.getItem(`ai-agent-token:${sid}`), id);
    // the live page hears session_ended
    const res = await p2.evaluate(async ({ sid, tok }) => {
      const r = await fetch(`sessions/${encodeURIComponent(sid)}/end`, { method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Agent-Session-Token': tok }, body: '{}' });
      return r.status;
    }, { sid: id, tok: token });
    assert(res === 200, `POST end: ${res}`);
    await p2.waitForSelector('#banner[data-kind="ended"]', { timeout: T });
    assert(await p2.isDisabled('#message'), 'composer disabled');
    // and a reload shows the same from the snapshot, the transcript still there
    await p2.reload();
    await p2.waitForSelector('#banner[data-kind="ended"]', { timeout: T });
    assert((await p2.textContent('#banner')).includes('has ended'), await p2.textContent('#banner'));
    await waitText(p2, 'Local demo response: a chat to end');
    assert(await p2.isDisabled('#message'), 'composer disabled after a reload');
    await p2.screenshot({ path: path.join(outDir, 'desktop-93-ended.png') });
    await ctx.close();
  });

  await check('a chat the server no longer has: "no longer exists"', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const p2 = await ctx.newPage();
    const id = 'ai-agent-00000000-0000-4000-8000-000000000000';
    await p2.goto(APP);
    await p2.evaluate(({ sid, tok }) => localStorage.setItem(`ai-agent-token:${sid}`, tok), { sid: id, tok: sign(id) });
    await p2.goto(`${APP}?session=${id}`);
    await p2.waitForSelector('#banner[data-kind="missing"]', { timeout: T });
    assert((await p2.textContent('#banner')).includes('no longer exists'), await p2.textContent('#banner'));
    await p2.click('#banner button >> text=Remove from this browser');
    await p2.waitForSelector('#welcome:not([hidden])', { timeout: T });
    assert(!(await p2.evaluate((sid) => localStorage.getItem(`ai-agent-token:${sid}`), id)), 'forgotten');
    await p2.screenshot({ path: path.join(outDir, 'desktop-92-missing.png') });
    await ctx.close();
  });
}

// ---- a phone ---------------------------------------------------------------------------------------

async function phone() {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const shot = shooter(page, 'mobile');

  await check('mobile: the first screen fits the phone', async () => {
    await page.goto(APP);
    await page.waitForSelector('#welcome:not([hidden])', { timeout: T });
    await onScreen(page, '#message', 'the message box');
    assert(await page.isHidden('#sidebar') || !(await page.locator('#sidebar').boundingBox()) ||
      (await page.locator('#sidebar').boundingBox()).x + (await page.locator('#sidebar').boundingBox()).width <= 1, 'sidebar off screen');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth > innerWidth);
    assert(!overflow, 'no horizontal scrolling');
    await shot('welcome');
  });

  await check('mobile: an approval with the composer and Stop on screen', async () => {
    await newChat(page, '/tool send_note {"text":"from the phone"}');
    await page.waitForSelector('.tool[data-status="approval"] button.approve', { timeout: T });
    await onScreen(page, '.tool[data-status="approval"] button.approve', 'Approve');
    await onScreen(page, '#message', 'the message box');
    await onScreen(page, '#stop', 'Stop');
    await shot('approval');
    await page.click('.tool[data-status="approval"] button.approve');
    await page.waitForSelector('.tool[data-status="ok"]', { timeout: T });
    await waitIdle(page);
    await shot('answer');
  });

  await check('mobile: the plan card is in view after drafting', async () => {
    await send(page, 'plan a trip', { plan: true });
    await page.waitForSelector('#execute-plan', { timeout: T });
    await waitIdle(page);
    await onScreen(page, '#execute-plan', 'Execute');
    await shot('plan-draft');
    await page.click('#execute-plan');
    await page.waitForFunction(() => document.querySelector('.plan-card .plan-status')?.dataset.status === 'completed', null, { timeout: T });
    await waitIdle(page);
  });

  await check('mobile: queued chips and Stop above the keyboard line', async () => {
    await send(page, '/wait 30 hold on');
    await page.waitForSelector('.tool[data-status="timer"]', { timeout: T });
    await send(page, 'next thing');
    await page.waitForSelector('#queue li button.steer', { timeout: T });
    await onScreen(page, '#queue li button.steer', 'Steer');
    await onScreen(page, '#stop', 'Stop');
    await shot('queue');
    await page.click('#stop');
    await page.waitForFunction(() => document.body.dataset.turnStatus !== 'running' || !document.querySelector('.tool[data-status="timer"]'), null, { timeout: T });
    await waitIdle(page, 20000);
  });

  await check('mobile: a failed turn: the error and Retry are visible', async () => {
    await send(page, '/fail 9');
    await page.waitForSelector('.error-card button.retry', { timeout: T });
    await waitIdle(page);
    await onScreen(page, '.error-card', 'the error card');
    await onScreen(page, '.error-card button.retry', 'Retry');
    await shot('error');
  });

  await check('mobile: the chat list is a drawer', async () => {
    await page.click('#open-sidebar');
    await page.waitForFunction(() => document.body.classList.contains('drawer-open'), null, { timeout: T });
    // The slide-in transition has ended (no fixed wait: a loaded machine runs it late).
    await page.waitForFunction(() => document.querySelector('.sidebar').getAnimations().length === 0 &&
      document.querySelector('.sidebar').getBoundingClientRect().left >= 0, null, { timeout: T });
    await onScreen(page, '#session-list li a', 'a chat in the list');
    await shot('drawer');
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !document.body.classList.contains('drawer-open'), null, { timeout: T });
  });

  await check('mobile: the dark theme', async () => {
    await page.click('#theme-toggle');
    await shot('dark');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth > innerWidth);
    assert(!overflow, 'no horizontal scrolling');
  });

  await check('mobile: no page errors', async () => {
    assert(errors.length === 0, errors.join('; '));
  });
  await context.close();
}

try {
  const url = await desktop();
  await banners(url);
  await phone();
} catch (e) {
  failed++;
  console.log(`FAIL browser session: ${e}`);
} finally {
  await browser.close();
}

console.log(skipped ? `${passed} passed, ${failed} failed, ${skipped} skipped` : `${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
