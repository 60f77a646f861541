'use strict';
// The package's type declarations: `tsc --strict` (TypeScript pinned exactly
// in test/node/types/package.json and package-lock.json, installed with
// `npm ci` into $BUILD/npm-types, never into the source tree) compiles
// test/node/types/consumer.ts against bindings/node/index.d.ts, found as a
// user's project finds it (node_modules/dexagents, the exports map's types,
// moduleResolution node16). The declaration file itself is checked too
// (skipLibCheck off), and every @ts-expect-error in the consumer must be an
// error. When the registry cannot be reached the test is skipped (fails
// under CI).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const SRC = path.join(__dirname, 'types');
const DIR = path.resolve(ROOT, process.env.BUILD || 'build', 'npm-types');

function install() {
  const tsc = path.join(DIR, 'node_modules', 'typescript', 'bin', 'tsc');
  const lock = path.join(SRC, 'package-lock.json');
  const have = path.join(DIR, 'package-lock.json');
  if (fs.existsSync(tsc) && fs.existsSync(have) && fs.readFileSync(have, 'utf8') === fs.readFileSync(lock, 'utf8')) {
    return { tsc };
  }
  fs.mkdirSync(DIR, { recursive: true });
  fs.copyFileSync(path.join(SRC, 'package.json'), path.join(DIR, 'package.json'));
  fs.copyFileSync(lock, have);
  const r = spawnSync('npm', ['ci', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund',
    '--loglevel=error'], { cwd: DIR, encoding: 'utf8', timeout: 600000 });
  if (r.status !== 0 || !fs.existsSync(tsc)) {
    fs.rmSync(have, { force: true });
    return { why: `npm ci of typescript failed (offline?): ${(r.stderr || '').trim().split('\n').slice(-3).join(' ')}` };
  }
  return { tsc };
}

const got = install();
const skip = got.why && !process.env.CI ? got.why : false;

test('tsc --strict: the declarations type a consumer, and reject snake_case', { skip, timeout: 300000 }, (t) => {
  assert.ok(got.tsc, got.why);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dexa-tsc-'));
  t.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
  fs.mkdirSync(path.join(tmp, 'node_modules'));
  fs.symlinkSync(path.join(ROOT, 'bindings', 'node'), path.join(tmp, 'node_modules', 'dexagents'));
  fs.copyFileSync(path.join(SRC, 'consumer.ts'), path.join(tmp, 'consumer.ts'));
  fs.writeFileSync(path.join(tmp, 'package.json'), '{"name":"consumer","private":true}\n');
  const config = { compilerOptions: { strict: true, noEmit: true, skipLibCheck: false,
    target: 'es2022', module: 'node16', moduleResolution: 'node16',
    lib: ['es2022', 'esnext.disposable', 'dom'], types: [], noUnusedLocals: false },
  files: ['consumer.ts', 'node_modules/dexagents/index.d.ts'] };
  fs.writeFileSync(path.join(tmp, 'tsconfig.json'), JSON.stringify(config, null, 2));
  const r = spawnSync(process.execPath, [got.tsc, '-p', tmp, '--pretty', 'false'],
    { cwd: tmp, encoding: 'utf8', timeout: 240000 });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);

  // ...and a consumer that gets a type wrong fails: the check is not vacuous.
  fs.appendFileSync(path.join(tmp, 'consumer.ts'), "\nconst wrong: number = agent.describe().flowType;\nvoid wrong;\n");
  const bad = spawnSync(process.execPath, [got.tsc, '-p', tmp, '--pretty', 'false'],
    { cwd: tmp, encoding: 'utf8', timeout: 240000 });
  assert.notEqual(bad.status, 0);
  assert.match(bad.stdout, /consumer\.ts\(\d+,\d+\): error TS2322/);
});
