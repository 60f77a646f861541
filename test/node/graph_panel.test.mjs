// test-needs: sqlite
// The AI Agent page's graph panel (examples/ai-agent/ui/graph-panel.js)
// draws the session graph that the library serves: every node and edge of a
// real graph document (from `dexagents graph --session --json` on a session
// that waits for an answer), Step boxes that do not overlap, the waiting Step
// and the Steps that ran marked, text escaped.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(import.meta.url);
const panel = require(join(root, 'examples', 'ai-agent', 'ui', 'graph-panel.js'));
const dex = join(root, process.env.BUILD || 'build', 'bin', 'dexagents');

function sessionGraph() {
  const dir = mkdtempSync(join(tmpdir(), 'dexa-panel-'));
  try {
    const env = { ...process.env, DEX_AGENT_STORE: join(dir, 's.db') };
    for (const k of Object.keys(env)) if (k.startsWith('DEX_CONNECTOR')) delete env[k];
    const run = (...args) => execFileSync(dex, [...args, '--json'], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const sid = JSON.parse(run('sessions', 'start')).session_id;
    run('send', sid, '/tool clock {}', '--wait');
    run('send', sid, '/ask Your name?', '--wait');
    return JSON.parse(run('graph', '--session', sid));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('draws every node and edge of the session graph, marked by state', () => {
  const doc = sessionGraph();
  const svg = panel.render(doc);
  assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  for (const n of doc.nodes) {
    const id = n.id.replace(/"/g, '&quot;');
    assert.equal(svg.split(`data-id="${id}"`).length - 1, 1, n.id);
  }
  assert.equal((svg.match(/<line class="edge /g) || []).length, doc.edges.length);
  assert.match(svg, /<g class="node step waiting wait" data-id="AwaitQuestionAnswer">/);
  assert.match(svg, /<g class="node step ran" data-id="CallTool">/);
  assert.match(svg, /data-id="RunModel"><title>RunModel<\/title><rect [^>]*\/><text [^>]*>RunModel \u00d73<\/text>/);

  const { boxes, width, height } = panel.layout(doc);
  const list = [...boxes.values()];
  for (const b of list) {
    assert.ok(b.x >= 0 && b.y >= 0 && b.x + b.w <= width && b.y + b.h <= height, b.node.id);
  }
  for (let i = 0; i < list.length; i++) {
    for (let j = i + 1; j < list.length; j++) {
      const a = list[i], b = list[j];
      const apart = a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
      assert.ok(apart, `${a.node.id} overlaps ${b.node.id}`);
    }
  }
  // the start Step is on the first row, RunModel below it
  assert.ok(boxes.get(doc.start).y < boxes.get('RunModel').y);
});

test('escapes the text it draws', () => {
  const doc = {
    start: 'A<b>', nodes: [{ id: 'A<b>', kind: 'step', label: 'A<b>"&' }, { id: 'rpc:x', kind: 'rpc', label: "it's" }],
    edges: [{ from: 'rpc:x', to: 'A<b>', kind: 'publish' }],
  };
  const svg = panel.render(doc);
  assert.ok(svg.includes('A&lt;b&gt;&quot;&amp;'));
  assert.ok(svg.includes('it&#39;s'));
  assert.ok(!svg.includes('<b>'));
});
