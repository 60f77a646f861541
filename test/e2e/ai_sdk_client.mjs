// The AI SDK's client against the C host's UI message stream route, run by
// test/e2e/ai_sdk.sh on Node 22:
//   node ai_sdk_client.mjs BASE_URL      (NODE_MODULES, CHROMIUM from the env)
// First in Node (the ai package's Chat and DefaultChatTransport), then the
// same scenarios in headless Chromium: the page is served by playwright at
// the host's origin (so no CORS is involved, as for an app served next to
// the routes) and loads the ai package's ES modules through an import map
// from NODE_MODULES; no bundler (one CommonJS dependency of the gateway
// provider gets a small ES module stand-in). Prints "ok/FAIL" lines and
// "N passed, N failed[, N skipped]". Without Chromium its scenarios are
// skipped, but under CI (CI set and not "false") that is a failure: a CI
// run must not pass without them.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { runRefusals, runScenarios } from './ai_sdk_scenarios.mjs';

const [base] = process.argv.slice(2);
const nm = process.env.NODE_MODULES;
let passed = 0;
let failed = 0;
let skipped = 0;
const underCI = !!process.env.CI && process.env.CI !== 'false' && process.env.CI !== '0';

function report(name, err) {
  if (!err) {
    passed++;
    console.log(`ok   ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name}`);
    console.log(`    ${String(err).split('\n').slice(0, 4).join('\n    ')}`);
  }
}

async function check(name, fn) {
  try {
    await fn();
    report(name, null);
  } catch (e) {
    report(name, e && e.stack ? e.stack : e);
  }
}

// The file a bare specifier names (package exports: browser, import, default).
function resolveSpec(spec) {
  const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
  const sub = spec.slice(pkg.length);
  const pj = JSON.parse(fs.readFileSync(path.join(nm, pkg, 'package.json'), 'utf8'));
  const pick = (e) => (typeof e === 'string' ? e
    : e && (pick(e.browser) || pick(e.import) || pick(e.default) || pick(e.module)));
  const exp = pj.exports;
  const entry = typeof exp === 'string' && !sub ? exp : exp && pick(exp[`.${sub}`]);
  return path.join(nm, pkg, entry || sub || pj.module || pj.main);
}

// @vercel/oidc (used by the ai package's gateway provider, not by the chat
// client) is CommonJS, which a browser cannot import; an app's bundler
// converts it. This module is what its browser entry exports.
const OIDC_SHIM = `export const getContext = () => ({});
export async function getVercelOidcToken() { return ''; }
export function getVercelOidcTokenSync() { return ''; }
export async function getVercelToken() { throw new Error('not in a browser'); }
export class AccessTokenMissingError extends Error {}
export class RefreshAccessTokenFailedError extends Error {}`;
const SHIMS = { '@vercel/oidc': 'shim-vercel-oidc.mjs' };

// Every bare specifier reachable from the ai package, for an import map.
function importMap(prefix) {
  const map = {};
  const seen = new Set();
  const walk = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const src = fs.readFileSync(file, 'utf8');
    const re = /(?:^|[;\n}])\s*(?:import|export)\s[^'"]*?from\s*["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)|^\s*import\s*["']([^"']+)["']/gm;
    let m;
    while ((m = re.exec(src))) {
      const spec = m[1] || m[2] || m[3];
      if (spec.startsWith('.')) walk(path.resolve(path.dirname(file), spec));
      else if (SHIMS[spec]) map[spec] = prefix.replace(/nm\/$/, '') + SHIMS[spec];
      else if (!map[spec]) {
        const f = resolveSpec(spec);
        map[spec] = prefix + path.relative(nm, f);
        walk(f);
      }
    }
  };
  const entry = resolveSpec('ai');
  map.ai = prefix + path.relative(nm, entry);
  walk(entry);
  return map;
}

// The scenarios run in Node, counted (Chromium runs the same ones).
let scenarios = 0;

async function inNode() {
  const ai = await import(pathToFileURL(resolveSpec('ai')).href);
  await runScenarios(ai, base, (name, fn) => {
    scenarios++;
    return check(name, fn);
  }, 'node');
  await runRefusals(base, check);
}

async function inChromium() {
  const require = createRequire(path.join(nm, 'x.js'));
  const { chromium } = require('playwright-core');
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    const root = `${base}/products/ai-agent/__aisdk/`;
    const prefix = '/products/ai-agent/__aisdk/nm/';
    const html = `<!doctype html><meta charset="utf-8"><title>ai sdk</title>
<script type="importmap">${JSON.stringify({ imports: importMap(prefix) })}</script>
<script type="module">
import * as ai from 'ai';
import { runScenarios } from './scenarios.mjs';
window.runAll = async () => {
  const results = [];
  const check = async (name, fn) => {
    try { await fn(); results.push([name, null]); } catch (e) { results.push([name, String(e && e.stack || e)]); }
  };
  await runScenarios(ai, location.origin, check, 'chromium');
  return results;
};
window.aiLoaded = typeof ai.DefaultChatTransport === 'function';
</script>`;
    // Only the test's page and modules are served by playwright; every
    // request to the routes goes to the C host.
    await page.route(`${root}**`, (route) => {
      const rel = route.request().url().slice(root.length);
      if (rel === 'test.html') return route.fulfill({ contentType: 'text/html', body: html });
      if (rel === SHIMS['@vercel/oidc']) return route.fulfill({ contentType: 'text/javascript', body: OIDC_SHIM });
      const file = rel === 'scenarios.mjs' ? path.join(path.dirname(new URL(import.meta.url).pathname), 'ai_sdk_scenarios.mjs')
        : rel.startsWith('nm/') ? path.join(nm, decodeURIComponent(rel.slice(3))) : null;
      if (!file || !file.startsWith(nm) && !file.endsWith('ai_sdk_scenarios.mjs') || !fs.existsSync(file))
        return route.fulfill({ status: 404, body: 'no such file' });
      return route.fulfill({ contentType: 'text/javascript', body: fs.readFileSync(file) });
    });
    await check('chromium: the ai package loads as ES modules', async () => {
      await page.goto(`${root}test.html`);
      await page.waitForFunction(() => window.aiLoaded === true, null, { timeout: 30000 })
        .catch((e) => { throw new Error(`${e.message}: ${errors.join('; ')}`); });
    });
    const results = await page.evaluate(() => window.runAll());
    for (const [name, err] of results) report(name, err);
    if (errors.length) report('chromium: no page errors', errors.join('; '));
  } finally {
    await browser.close();
  }
}

try {
  await inNode();
  const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
  if (fs.existsSync(chromium)) {
    await inChromium();
  } else if (underCI) {
    report('chromium: the scenarios run in Chromium', `no chromium at ${chromium} (CI must run them: apt-get install chromium)`);
  } else {
    skipped += scenarios + 1; // the scenarios and the module load
    console.log(`skip the Chromium scenarios: no chromium at ${chromium}`);
  }
} catch (e) {
  report('AI SDK client', e && e.stack ? e.stack : e);
}
console.log(skipped ? `${passed} passed, ${failed} failed, ${skipped} skipped` : `${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
