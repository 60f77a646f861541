// test-needs: sqlite
'use strict';
// The npm package installs like any other, offline, with the installed
// Node: the tarball packed by bindings/node/tools/pack.sh (npm pack, with
// the pinned node-api-headers bundled), the C library installed by
// `make install` into a temporary prefix, then `npm install --offline` of the
// tarball into a new project with an empty npm cache and the system's Node
// headers hidden (DEXAGENTS_NODEDIR names a directory that does not exist),
// which compiles the addon with the system compiler against the bundled Node
// headers and the installed library's headers (found through pkg-config).
// From there a session runs through require() and import, with no RUNPATH
// in the addon and no environment variable. And `npm install ./bindings/node`
// of a fresh git clone builds and runs a session the same way.
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
    'DEXAGENTS_INCLUDE', 'DEXAGENTS_LIBDIR', 'NODE_PATH', 'NODE_INCLUDE', 'DEXAGENTS_NODEDIR']) delete env[k];
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
  const packed = run('bash', [path.join(PKG, 'tools', 'pack.sh'), tmp]);
  assert.equal(packed.status, 0, packed.out);
  const tgz = packed.out.trim().split('\n').pop();
  const listing = run('tar', ['tzf', tgz]).out.split('\n');
  for (const f of ['package/src/addon.c', 'package/src/api.c', 'package/build.js', 'package/index.d.ts',
    'package/index.mjs', 'package/lib/runtime.js', 'package/node_modules/node-api-headers/include/node_api.h',
    'package/node_modules/node-api-headers/package.json']) assert.ok(listing.includes(f), f);
  const manifest = JSON.parse(run('tar', ['xzOf', tgz, 'package/package.json']).out);
  assert.equal(manifest.dependencies['node-api-headers'], '1.9.0', 'pinned exactly');
  assert.deepEqual(manifest.bundleDependencies, ['node-api-headers']);
  assert.ok(!listing.some((f) => f.startsWith('package/build/')), 'no build output in the tarball');

  const prefix = path.join(tmp, 'prefix');
  const made = run('make', ['-s', '--no-print-directory', '-C', ROOT, `BUILD=${process.env.BUILD || 'build'}`,
    `LIBOUT=${process.env.LIBOUT || 'lib'}`, `PREFIX=${prefix}`, 'LDCONFIG=true', 'install']);
  assert.equal(made.status, 0, made.out);

  const app = path.join(tmp, 'app');
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), '{"name":"app","private":true}\n');
  // No system Node headers: build.js looks under DEXAGENTS_NODEDIR only.
  const pcEnv = cleanEnv({ PKG_CONFIG_PATH: path.join(prefix, 'lib', 'pkgconfig'),
    DEXAGENTS_NODEDIR: path.join(tmp, 'no-such-node') });
  const installed = run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--cache',
    path.join(tmp, 'npm-cache'), tgz], { cwd: app, env: pcEnv });
  assert.equal(installed.status, 0, installed.out);
  const addon = path.join(app, 'node_modules', 'dexagents', 'build', 'dexagents.node');
  assert.ok(fs.existsSync(addon), installed.out);
  const config = JSON.parse(fs.readFileSync(path.join(path.dirname(addon), 'config.json'), 'utf8'));
  assert.equal(config.nodeInclude, path.join(app, 'node_modules', 'dexagents', 'node_modules',
    'node-api-headers', 'include'), 'built against the bundled headers');
  assert.ok(!fs.readdirSync(path.join(tmp, 'npm-cache')).includes('_cacache') ||
    !run('grep', ['-rl', 'node-api-headers', path.join(tmp, 'npm-cache', '_cacache', 'index-v5')]).out.trim(),
  'nothing fetched into the empty cache');

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

// A fresh clone of the repository (what a user who cloned it has: no lib/,
// no build/), the library installed into a temporary prefix; npm links the
// folder and runs its install script, which builds the addon against the
// clone's headers and Node's own headers, and records the installed
// library's directory (pkg-config). npm installs no dependency of a linked
// folder, so where Node has no headers (Debian's nodejs without
// libnode-dev) the pinned node-api-headers are put next to it first with
// `npm ci` in bindings/node, as the README says.
test('npm install ./bindings/node from a fresh git clone runs a session', { skip, timeout: 600000 }, async (t) => {
  if (run('git', ['-C', ROOT, 'rev-parse', '--git-dir']).status !== 0) {
    t.skip('not a git checkout');
    return;
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dexa-clone-'));
  t.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
  const clone = path.join(tmp, 'clone');
  const cloned = run('git', ['clone', '-q', '--no-hardlinks', ROOT, clone]);
  assert.equal(cloned.status, 0, cloned.out);
  assert.ok(!fs.existsSync(path.join(clone, 'lib', 'libdexagents.so.1')), 'a fresh clone has no library');

  const prefix = path.join(tmp, 'prefix');
  const made = run('make', ['-s', '--no-print-directory', '-C', ROOT, `BUILD=${process.env.BUILD || 'build'}`,
    `LIBOUT=${process.env.LIBOUT || 'lib'}`, `PREFIX=${prefix}`, 'LDCONFIG=true', 'install']);
  assert.equal(made.status, 0, made.out);

  const app = path.join(tmp, 'app');
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), '{"name":"app","private":true}\n');
  const env = cleanEnv({ PKG_CONFIG_PATH: path.join(prefix, 'lib', 'pkgconfig') });
  const cloned_pkg = path.join(clone, 'bindings', 'node');
  if (run(process.execPath, [path.join(cloned_pkg, 'build.js'), '--has-node-headers']).status !== 0) {
    const ci = run('npm', ['ci', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'],
      { cwd: cloned_pkg, env });
    assert.equal(ci.status, 0, ci.out);
  }
  const installed = run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund',
    path.join(clone, 'bindings', 'node')], { cwd: app, env });
  assert.equal(installed.status, 0, installed.out);
  const addon = path.join(clone, 'bindings', 'node', 'build', 'dexagents.node');
  assert.ok(fs.existsSync(addon), installed.out);
  const config = JSON.parse(fs.readFileSync(path.join(path.dirname(addon), 'config.json'), 'utf8'));
  assert.equal(config.libdir, path.join(prefix, 'lib'), 'the installed library, found by pkg-config');

  const cjs = run(process.execPath, ['-e', SESSION], { cwd: app, env: cleanEnv() });
  assert.equal(cjs.status, 0, cjs.out);
  const lines = cjs.out.trim().split('\n');
  assert.equal(lines.at(-1), 'Tool save (ok): saved a.txt');
  assert.equal(fs.realpathSync(path.dirname(lines.at(-2))), fs.realpathSync(path.join(clone, 'bindings', 'node')));
});
