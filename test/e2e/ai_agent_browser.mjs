// Browser tests of the AI Agent page, run by test/e2e/ai_agent.sh against a
// running examples/ai-agent/ai-agent:
//   node ai_agent_browser.mjs BASE_URL OUT_DIR
// playwright-core drives Debian's chromium; screenshots go to OUT_DIR.
// Prints "ok   name" / "FAIL name" lines and "N passed, N failed".
import { createRequire } from 'node:module';
import path from 'node:path';

const [base, outDir] = process.argv.slice(2);
const require = createRequire(process.env.PLAYWRIGHT_DIR ? path.join(process.env.PLAYWRIGHT_DIR, 'x.js') : import.meta.url);
const { chromium } = require('playwright-core');

const T = 15000; // per wait
let passed = 0;
let failed = 0;

async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}`);
    console.log(`    ${String(e && e.stack ? e.stack : e).split('\n').slice(0, 4).join('\n    ')}`);
  }
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

// launch() gives Chromium a fresh, empty --user-data-dir of its own (it
// refuses one in args); the flags are those this closed network needs.
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

const shot = (page, name) => page.screenshot({ path: path.join(outDir, `${name}.png`), fullPage: true });

// The text of every rendered message, one string per <li>.
const messages = (page) => page.$$eval('#messages li', (lis) => lis.map((li) => li.innerText));
async function waitMessage(page, text, timeout = T) {
  await page.waitForFunction((t) => [...document.querySelectorAll('#messages li')].some((li) => li.innerText.includes(t)),
    text, { timeout });
}
async function waitIdle(page, timeout = T) {
  await page.waitForFunction(() => ['idle', 'cancelled', 'failed'].includes(document.body.dataset.turnStatus) &&
    !document.querySelector('#queue li'), null, { timeout });
}
async function send(page, text, { plan = false } = {}) {
  await page.fill('#message', text);
  if (plan) await page.check('#plan-mode');
  await page.click('#send');
  await page.waitForFunction(() => document.getElementById('message').value === '', null, { timeout: T });
}

try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const consoleErrors = [];
  page.on('pageerror', (e) => consoleErrors.push(String(e)));

  await check('the first page shows model, prompt, context window and MCP tools', async () => {
    await page.goto(`${base}/products/ai-agent/`);
    await page.waitForFunction(() => document.getElementById('set-model').textContent !== '', null, { timeout: T });
    assert(await page.textContent('#set-model') === 'mock/dex', 'default model');
    assert((await page.textContent('#set-prompt')).includes('e2e system prompt'), 'system prompt');
    assert((await page.textContent('#set-context')).includes('64,000'), 'context window');
    assert((await page.textContent('#set-mcp')).length > 0, 'MCP line');
    const options = await page.$$eval('#start-model option', (o) => o.map((x) => x.value));
    assert(JSON.stringify(options) === '["mock/dex","mock/dex-mini"]', `models ${options}`);
    await shot(page, '01-home');
  });

  let sessionUrl = '';
  let sessionId = '';
  await check('start a session with the chosen model; the URL has the id, not the token', async () => {
    await page.selectOption('#start-model', 'mock/dex-mini');
    await page.click('#start');
    await page.waitForURL(/\?session=ai-agent-[0-9a-f-]{36}$/, { timeout: T });
    sessionUrl = page.url();
    sessionId = new URL(sessionUrl).searchParams.get('session');
    const token = await page.evaluate((id) => localStorage.getItem(`ai-agent-token:${id}`), sessionId);
    assert(/^[0-9a-f]{64}$/.test(token || ''), 'token in localStorage');
    assert(!sessionUrl.includes(token), 'token not in the URL');
    await page.waitForFunction(() => document.getElementById('session-model').textContent === 'mock/dex-mini', null, { timeout: T });
  });

  await check('send a message and see the streamed answer', async () => {
    await page.waitForFunction(() => document.body.dataset.stream === 'live', null, { timeout: T });
    await send(page, 'hello browser');
    await waitMessage(page, 'Local demo response: hello browser');
    const deltas = Number(await page.evaluate(() => document.body.dataset.textDeltas || 0));
    assert(deltas >= 3, `text deltas seen: ${deltas}`);
    await waitIdle(page);
    await shot(page, '02-answer');
  });

  await check('a READ tool runs at once', async () => {
    await send(page, '/tool clock {}');
    await waitMessage(page, '← clock: ok');
    await waitIdle(page);
  });

  await check('approve a tool call', async () => {
    await send(page, '/tool send_note {"text":"ship it"}');
    await page.waitForSelector('.card.approval >> text=Approve send_note?', { timeout: T });
    await shot(page, '03-approval');
    await page.click('.card.approval button.approve');
    await waitMessage(page, '← send_note: ok');
    assert((await messages(page)).some((m) => m.includes('sent to the team') && m.includes('ship it')), 'tool output');
    await page.waitForSelector('.card.approval', { state: 'detached', timeout: T });
    await waitIdle(page);
  });

  await check('reject a tool call with a note', async () => {
    await send(page, '/tool send_note {"text":"nope"}');
    await page.waitForSelector('.card.approval', { timeout: T });
    await page.fill('.card.approval input.note', 'not today');
    // A snapshot reload (as every 8 s) keeps what is typed in the card.
    await page.evaluate(() => loadSnapshot());
    assert(await page.inputValue('.card.approval input.note') === 'not today', 'note kept across a reload');
    await page.click('.card.approval button.reject');
    await waitMessage(page, '← send_note: rejected');
    await waitIdle(page);
  });

  await check('answer /choose with a choice button', async () => {
    await send(page, '/choose Pick a color | Red | Green | Blue');
    await page.waitForSelector('.card.question >> text=Pick a color', { timeout: T });
    const choices = await page.$$eval('.card.question button.choice', (b) => b.map((x) => x.textContent));
    assert(JSON.stringify(choices) === '["Red","Green","Blue"]', `choices ${choices}`);
    await shot(page, '04-question');
    await page.click('.card.question button.choice >> text=Green');
    await page.waitForSelector('.card.question', { state: 'detached', timeout: T });
    await waitMessage(page, 'Green');
    await waitIdle(page);
  });

  await check('answer /ask in the text box', async () => {
    await send(page, '/ask What is your name?');
    await page.waitForSelector('.card.question input.answer', { timeout: T });
    await page.fill('.card.question input.answer', 'Ada Lovelace');
    await page.click('.card.question button[type=submit]');
    await waitMessage(page, 'Ada Lovelace');
    await waitIdle(page);
  });

  await check('a /wait 2 timer shows and fires', async () => {
    const t0 = Date.now();
    await send(page, '/wait 2 tea');
    await page.waitForSelector('.card.timer >> text=tea', { timeout: T });
    await shot(page, '05-timer');
    await page.waitForSelector('.card.timer', { state: 'detached', timeout: T });
    await waitMessage(page, '← durable_wait: ok');
    assert(Date.now() - t0 >= 1500, 'fired too early');
    await waitIdle(page);
  });

  await check('draft a plan in plan mode and execute it', async () => {
    await send(page, 'write the release notes', { plan: true });
    await page.waitForSelector('#execute-plan', { timeout: T });
    const todos = await page.$$eval('#plan .todos li', (l) => l.length);
    assert(todos === 2, `todos ${todos}`);
    assert(await page.textContent('#plan .plan-status') === 'draft', 'draft');
    await waitIdle(page);
    await shot(page, '06-plan-draft');
    await page.click('#execute-plan');
    await page.waitForFunction(() => document.querySelector('#plan .plan-status')?.textContent === 'completed', null, { timeout: T });
    const done = await page.$$eval('#plan .todos li.completed', (l) => l.length);
    assert(done === 2, `completed todos ${done}`);
    await waitIdle(page);
    await shot(page, '07-plan-done');
  });

  await check('queued messages: delete one, steer another', async () => {
    await send(page, '/wait 30 long wait');
    await page.waitForSelector('.card.timer >> text=long wait', { timeout: T });
    await send(page, 'drop me');
    await send(page, 'change of plan');
    await page.waitForFunction(() => document.querySelectorAll('#queue li').length === 2, null, { timeout: T });
    await shot(page, '08-queue');
    await page.click('#queue li:has-text("drop me") button.delete');
    await page.waitForFunction(() => document.querySelectorAll('#queue li').length === 1, null, { timeout: T });
    await page.click('#queue li:has-text("change of plan") button.steer');
    await waitMessage(page, 'Local demo response: change of plan');
    await page.waitForSelector('.card.timer', { state: 'detached', timeout: T });
    assert(!(await messages(page)).some((m) => m.includes('drop me')), 'deleted message never ran');
    await waitIdle(page);
  });

  await check('stop a turn', async () => {
    await send(page, '/wait 30 stop me');
    await page.waitForSelector('.card.timer >> text=stop me', { timeout: T });
    await page.waitForFunction(() => !document.getElementById('stop').disabled, null, { timeout: T });
    await page.click('#stop');
    await page.waitForFunction(() => document.body.dataset.turnStatus === 'cancelled', null, { timeout: T });
    await page.waitForSelector('.card.timer', { state: 'detached', timeout: T });
    await shot(page, '09-stopped');
  });

  await check('reload the page mid-turn and see the same state', async () => {
    await send(page, '/tool send_note {"text":"after reload"}');
    await page.waitForSelector('.card.approval', { timeout: T });
    const callId = await page.getAttribute('.card.approval', 'data-call-id');
    const before = await messages(page);
    await page.reload();
    await page.waitForSelector(`.card.approval[data-call-id="${callId}"]`, { timeout: T });
    assert(await page.evaluate(() => document.body.dataset.turnStatus) === 'running', 'turn still running');
    const after = await messages(page);
    assert(JSON.stringify(before) === JSON.stringify(after), 'same messages after reload');
    await page.waitForFunction(() => document.body.dataset.stream === 'live', null, { timeout: T });
    await page.click('.card.approval button.approve');
    await waitMessage(page, 'after reload');
    await waitMessage(page, '← send_note: ok');
    await waitIdle(page);
    await shot(page, '10-after-reload');
  });

  await check('the session URL in another browser without the token is refused', async () => {
    const other = await browser.newContext();
    const p2 = await other.newPage();
    const refused = [];
    p2.on('response', (r) => { if (r.status() === 403) refused.push(r.url()); });
    await p2.goto(sessionUrl);
    await p2.waitForSelector('#error:not([hidden])', { timeout: T });
    const banner = await p2.textContent('#error');
    assert(banner.includes('no token'), `banner: ${banner}`);
    assert(refused.length >= 1, 'a 403 from the server');
    assert((await p2.$$('#messages li')).length === 0, 'no messages shown');
    await shot(p2, '11-refused');
    await other.close();
  });

  await check('load older messages', async () => {
    // A second session with more than 200 messages, filled through the routes.
    const r = await page.evaluate(async () => {
      const res = await fetch('sessions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
      return res.json();
    });
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
    await page.goto(`${base}/products/ai-agent/?session=${r.session_id}`);
    await waitMessage(page, 'Local demo response: bulk 110', 60000);
    await waitIdle(page, 60000);
    await page.reload();
    await page.waitForSelector('#load-older:not([hidden])', { timeout: T });
    const n = (await messages(page)).length;
    assert(n === 200, `newest 200 shown, not ${n}`);
    assert(!(await messages(page)).some((m) => m.startsWith('bulk 1\n') || m === 'bulk 1'), 'oldest not shown yet');
    await page.click('#load-older');
    await page.waitForFunction(() => document.querySelectorAll('#messages li').length > 200, null, { timeout: T });
    await waitMessage(page, 'bulk 1\n');
    await shot(page, '12-older');
  });

  await check('no page errors', async () => {
    assert(consoleErrors.length === 0, consoleErrors.join('; '));
  });
  await context.close();
} catch (e) {
  failed++;
  console.log(`FAIL browser session: ${e}`);
} finally {
  await browser.close();
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
