// test-needs: sqlite
'use strict';
// The npm package installs like any other, offline, with the installed
// Node: `npm pack` of bindings/node, the C library installed by
// `make install` into a temporary prefix, then `npm install --offline` of the
// tarball into a new project, which compiles the addon with the system
// compiler against Node's headers and the installed library's headers
// (found through pkg-config). From there a session runs through require()
// and import, with no RUNPATH in the addon and no environment variable.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..', '..');
const PKG = path.join(ROOT, 'bindings', 'node');
const SANITIZED = !!process.env.SAN_FLAGS;
const missing = ['npm', 'make', 'cc', 'pkg-config'].find((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status !== 0);
// Without a tool the test cannot set up: it fails when CI is set, else it is skipped.
const skip = SANITIZED ? 'sanitizer build' : (missing && !process.env.CI ? `${missing} is not installed` : false);

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 300000, ...opts });
  return { status: r.status, out: `${r.stdout || ''}${r.stderr || ''}${r.error ? r.error.message : ''}` };
}

// The environment of a user who set nothing up.
function cleanEnv(extra = {}) {
  const env = { ...process.env };
  for (const k of ['LD_LIBRARY_PATH', 'DEXAGENTS_LIBRARY', 'DEXAGENTS_NODE_ADDON', 'PKG_CONFIG_PATH',
    'DEXAGENTS_INCLUDE', 'DEXAGENTS_LIBDIR', 'NODE_PATH']) delete env[k];
  return { ...env, ...extra };
}

const SESSION = `
const dx = require('dexagents');
(async () => {
  const save = dx.tool(async (args) => 'saved ' + args.path, { name: 'save', effect: 'write', approval: true });
  const rt = new dx.Runtime(new dx.Agent({ tools: [save] }), { store: 'session.db', workers: 2 });
  try {
    const sid = await rt.startSession();
    await rt.send(sid, '/tool save {"path": "a.txt"}');
    await rt.waitIdle(sid, { timeoutMs: 60000 });
    await rt.approve(sid, (await rt.snapshot(sid)).pending[0].callId);
    await rt.waitIdle(sid, { timeoutMs: 60000 });
    console.log(require.resolve('dexagents'));
    console.log((await rt.snapshot(sid)).messages.at(-1).text);
  } finally {
    await rt.close();
  }
})().catch((e) => { console.error(e); process.exit(1); });`;

test('npm pack, then npm install --offline into a new project, runs a session', { skip, timeout: 600000 }, async (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dexa-npm-'));
  t.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
  const packed = run('npm', ['pack', '--silent', '--pack-destination', tmp], { cwd: PKG });
  assert.equal(packed.status, 0, packed.out);
  const tgz = path.join(tmp, packed.out.trim().split('\n').pop());
  const listing = run('tar', ['tzf', tgz]).out.split('\n');
  for (const f of ['package/src/addon.c', 'package/src/api.c', 'package/build.js', 'package/index.d.ts',
    'package/index.mjs', 'package/lib/runtime.js']) assert.ok(listing.includes(f), f);
  assert.ok(!listing.some((f) => f.startsWith('package/build/')), 'no build output in the tarball');

  const prefix = path.join(tmp, 'prefix');
  const made = run('make', ['-s', '--no-print-directory', '-C', ROOT, `BUILD=${process.env.BUILD || 'build'}`,
    `LIBOUT=${process.env.LIBOUT || 'lib'}`, `PREFIX=${prefix}`, 'LDCONFIG=true', 'install']);
  assert.equal(made.status, 0, made.out);

  const app = path.join(tmp, 'app');
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), '{"name":"app","private":true}\n');
  const pcEnv = cleanEnv({ PKG_CONFIG_PATH: path.join(prefix, 'lib', 'pkgconfig') });
  const installed = run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--cache',
    path.join(tmp, 'npm-cache'), tgz], { cwd: app, env: pcEnv });
  assert.equal(installed.status, 0, installed.out);
  const addon = path.join(app, 'node_modules', 'dexagents', 'build', 'dexagents.node');
  assert.ok(fs.existsSync(addon), installed.out);

  const dyn = run('readelf', ['-d', addon]).out;
  assert.doesNotMatch(dyn, /RUNPATH|RPATH/, 'no RUNPATH in the addon');
  assert.doesNotMatch(dyn, /libdexagents/, 'the library is opened at run time');
  assert.ok(!dyn.includes(ROOT), 'no path into the checkout');

  const cjs = run(process.execPath, ['-e', SESSION], { cwd: app, env: cleanEnv() });
  assert.equal(cjs.status, 0, cjs.out);
  const lines = cjs.out.trim().split('\n');
  assert.equal(lines.at(-1), 'Tool save (ok): saved a.txt');
  assert.ok(lines.at(-2).startsWith(path.join(app, 'node_modules', 'dexagents')), lines.at(-2));

  const esm = run(process.execPath, ['--input-type=module', '-e',
    "import { version, Agent, Runtime } from 'dexagents'; import dx from 'dexagents';" +
    "const rt = new Runtime(new Agent(), { workers: 0 }); await rt.startSession({ sessionId: 'e' });" +
    "await rt.close(); console.log(version(), dx.Runtime === Runtime);"], { cwd: app, env: cleanEnv() });
  assert.equal(esm.status, 0, esm.out);
  assert.equal(esm.out.trim(), '1.1.0 true');

  const gone = run(process.execPath, ['-e', "try { require('dexagents').version() } catch (e) { console.log(e.message) }"],
    { cwd: app, env: cleanEnv({ DEXAGENTS_LIBRARY: path.join(tmp, 'nowhere', 'libdexagents.so.1') }) });
  assert.match(gone.out, /make install/);
  assert.match(gone.out, /LD_LIBRARY_PATH/);

  // Without the installed headers the build says where it looked and what to do.
  if (!fs.existsSync('/usr/local/include/dexagents') && !fs.existsSync('/usr/include/dexagents')) {
    const noHeaders = run(process.execPath, [path.join(app, 'node_modules', 'dexagents', 'build.js')],
      { cwd: app, env: cleanEnv() });
    assert.notEqual(noHeaders.status, 0);
    assert.match(noHeaders.out, /dexagents\/dexagents\.h.*are not in/);
    assert.match(noHeaders.out, /make install/);
  }
});
