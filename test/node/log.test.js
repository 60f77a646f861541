// test-needs: sqlite
'use strict';
// new Runtime(agent, {onLog}): the runtime's log messages (the errors it
// handles itself, dexa_runtime_options.log) reach a JavaScript function on
// the JS thread as {level, levelName, message}. Provoked as the Python test
// does (test_log_callback_hears_of_a_lost_worker): a claimed task is given
// up without a result, its lease runs out, and the Step run again is logged
// as "worker lost 1 time". A runtime closed with onLog lets the process exit.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { isMainThread } = require('node:worker_threads');
const { spawnSync } = require('node:child_process');

const SANITIZED = !!process.env.SAN_FLAGS; // an ASan library cannot load into node
const PKG = path.join(__dirname, '..', '..', 'bindings', 'node');
const dx = SANITIZED ? null : require(PKG);
const skip = SANITIZED && 'sanitizer build';
const WAIT_MS = 60000; // generous: the machine may be loaded
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const LOST = /worker lost 1 time/;

test('onLog: its type is checked, and unknown options are still refused', { skip, timeout: 120000 }, () => {
  const agent = new dx.Agent();
  assert.throws(() => new dx.Runtime(agent, { workers: 0, onLog: 'not a function' }), TypeError);
  assert.throws(() => new dx.Runtime(agent, { workers: 0, onlog: () => {} }),
    (e) => e instanceof dx.UnknownKeyError && /onlog/.test(e.message));
  assert.throws(() => new dx.Runtime(agent, { workers: 0, onLog: () => {}, logg: 1 }), dx.UnknownKeyError);
  assert.equal(dx.runtimeOptions({ onLog: () => {}, leaseMs: 200 }).leaseMs, 200);
});

test('onLog hears of a lost worker on the JS thread, as {level, levelName, message}', { skip, timeout: 180000 }, async () => {
  const logs = [];
  let offMain = 0;
  const onLog = (m) => {
    if (!isMainThread) offMain++;
    logs.push(m);
  };
  const rt = new dx.Runtime(new dx.Agent(), { workers: 0, leaseMs: 200, onLog });
  try {
    const sid = await rt.startSession({ sessionId: 's-log' });
    await rt.send(sid, 'hello');
    const task = await rt.poll({ timeoutMs: WAIT_MS });
    assert.ok(task, 'a ready task');
    rt.abandon(task); // as if its worker died: the lease runs out
    const deadline = Date.now() + WAIT_MS;
    while (!logs.some((m) => LOST.test(m.message)) && Date.now() < deadline) {
      await rt.runReady();
      await sleep(50);
    }
    const lost = logs.find((m) => LOST.test(m.message));
    assert.ok(lost, JSON.stringify(logs));
    assert.deepEqual(Object.keys(lost).sort(), ['level', 'levelName', 'message']);
    assert.equal(lost.level, 3); // DEXA_LOG_INFO
    assert.equal(lost.levelName, 'info');
    assert.equal(typeof lost.message, 'string');
    assert.ok(lost.message.includes(sid), lost.message);
    assert.equal(offMain, 0);
    await rt.waitIdle(sid, { timeoutMs: WAIT_MS });
    assert.equal((await rt.snapshot(sid)).turn.status, 'idle');
  } finally {
    await rt.close();
  }
  for (const m of logs) {
    assert.ok([1, 2, 3, 4].includes(m.level), JSON.stringify(m));
    assert.equal(m.levelName, ['error', 'warning', 'info', 'debug'][m.level - 1]);
  }
});

test('a runtime closed with onLog lets the process exit (so does an open one without workers); a throwing onLog is ignored', { skip, timeout: 180000 }, () => {
  // The lost worker is seen by a worker thread (start(1) after the task is
  // given up); onLog throws, which must not crash the process; after close()
  // nothing is left to keep the event loop alive, nor by an open runtime's
  // onLog.
  const script = `const dx = require(${JSON.stringify(PKG)});
(async () => {
  let heard;
  const seen = new Promise((r) => { heard = r; });
  const onLog = (m) => {
    if (/worker lost 1 time/.test(m.message)) heard(m);
    throw new Error('ignored');
  };
  const rt = new dx.Runtime(new dx.Agent(), { workers: 0, leaseMs: 200, onLog });
  const sid = await rt.startSession({ sessionId: 's-exit' });
  await rt.send(sid, 'hello');
  const task = await rt.poll({ timeoutMs: ${WAIT_MS} });
  rt.abandon(task);
  rt.start(1);
  let timer;
  const m = await Promise.race([seen,
    new Promise((r) => { timer = setTimeout(r, ${WAIT_MS}, null); })]);
  clearTimeout(timer);
  console.log(JSON.stringify(m));
  await rt.waitIdle(sid, { timeoutMs: ${WAIT_MS} });
  await rt.close();
  // Another one, never closed and with no worker thread: its onLog holds
  // nothing either (the process's exit frees it).
  const open = new dx.Runtime(new dx.Agent(), { workers: 0, onLog });
  await open.startSession();
  console.log('closed');
})().catch((e) => { console.error(e); process.exitCode = 1; });`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 150000 });
  assert.equal(r.signal, null, `the process did not exit: ${r.stdout}${r.stderr}`);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines[lines.length - 1], 'closed', r.stdout);
  const m = JSON.parse(lines[0]);
  assert.ok(m, `no log message: ${r.stdout}${r.stderr}`);
  assert.equal(m.level, 3);
  assert.equal(m.levelName, 'info');
  assert.match(m.message, /s-exit/);
});
