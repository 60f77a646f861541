// test-needs: sqlite
'use strict';
// examples/restate on a real durable engine: a Restate server (the binary of
// the pinned npm package @restatedev/restate-server) on 127.0.0.1 with a
// temporary data directory and free ports, the example's Node service, its
// deployment registered through the admin API, one session driven through
// Restate's ingress: a plain turn, a RunModel attempt that fails and runs
// again after its backoff. Then the Node service is killed with kill -9:
//   - while a durable timer (/wait) is pending: the Restate timer fires
//     after the restart and the turn completes;
//   - while an ask_user question waits for its answer (a waitStep
//     invocation suspended on its awakeable): after the restart an /answer
//     call (the answer_question RPC) resolves the awakeable and the turn
//     goes on with the answer;
//   - inside an approved WRITE tool (it has counted its run and blocks): the
//     replay finds the journaled claim without a result, the library records
//     an unknown outcome, the turn completes, the write ran once;
//   - after the write finished and its result was journaled, before it was
//     applied: the replay applies the journaled result, the write is not run
//     again.
// The tool counts its runs in a file; test hooks (DEXA_RESTATE_HOLD_DIR) stop
// the service at a named point so the kill lands there, never by timing.
// Every process is stopped at the end, also on failure. npm packages go to
// $BUILD/npm-restate (test/restate/_npm_setup.sh); when they cannot be
// installed the test is skipped, and fails under CI.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const net = require('node:net');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { once } = require('node:events');

const ROOT = path.resolve(__dirname, '..', '..');
const EXAMPLE = path.join(ROOT, 'examples', 'restate');
const WAIT_MS = 60000; // for one condition; generous for a loaded machine
const SID = 'restate-test-session';

function setup() {
  if (process.env.SAN_FLAGS) return { skip: 'sanitizer build: the library cannot load into node' };
  const r = spawnSync('bash', [path.join(__dirname, '_npm_setup.sh')], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) {
    const why = `cannot install the npm packages of examples/restate: ${(r.stderr || '').trim()}`;
    return process.env.CI ? { error: why } : { skip: why };
  }
  const mods = r.stdout.trim().split('\n').pop();
  const bin = path.join(mods, '@restatedev', `restate-server-${process.platform}-${process.arch}`,
    'bin', 'restate-server');
  if (!fs.existsSync(bin)) {
    const why = `no Restate server binary for ${process.platform}-${process.arch} (${bin})`;
    return process.env.CI ? { error: why } : { skip: why };
  }
  return { mods, bin };
}

const env = setup();
const skip = env.skip || false;
const after = skip || (env.error && 'the setup failed'); // the tests after setup
const tmp = skip ? null : fs.mkdtempSync(path.join(os.tmpdir(), 'dexa-restate-'));
const procs = new Set();

// ---- processes ------------------------------------------------------------------

function start(cmd, args, opts, log) {
  const fd = fs.openSync(log, 'a');
  const child = spawn(cmd, args, { ...opts, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  procs.add(child);
  child.exited = once(child, 'exit');
  child.exited.then(() => procs.delete(child));
  return child;
}

async function stop(child, signal = 'SIGTERM') {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
  await child.exited;
  clearTimeout(timer);
}

// Whatever ends this process (test/run's time limit sends SIGTERM), nothing
// it started stays behind.
process.on('exit', () => {
  for (const p of procs) p.kill('SIGKILL');
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
});
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => process.exit(1));

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function until(what, fn, timeoutMs = WAIT_MS) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${last})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const tail = (file) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').slice(-40).join('\n') : '');

// ---- the Restate server ----------------------------------------------------------

const server = { proc: null, admin: '', ingress: '', log: skip ? '' : path.join(tmp, 'restate.log') };

async function startServer() {
  for (let tries = 1; ; tries++) {
    const [fabric, admin, ingress] = [await freePort(), await freePort(), await freePort()];
    const conf = path.join(tmp, 'restate.toml');
    fs.writeFileSync(conf, [
      'disable-telemetry = true', // no usage reports; the release check fails quietly offline
      'default-num-partitions = 1',
      'rocksdb-total-memory-size = "256 MiB"',
      'shutdown-timeout = "5s"',
      `bind-address = "127.0.0.1:${fabric}"`,
      `advertised-address = "http://127.0.0.1:${fabric}/"`,
      // a killed service is retried soon (the default waits up to a minute)
      '[default-retry-policy]', 'initial-interval = "100ms"', 'max-interval = "1s"',
      '[admin]', `bind-address = "127.0.0.1:${admin}"`, 'disable-web-ui = true',
      '[ingress]', `bind-address = "127.0.0.1:${ingress}"`, ''].join('\n'));
    const cleanEnv = Object.fromEntries(Object.entries(process.env)
      .filter(([k]) => !k.startsWith('RESTATE_') && k !== 'RUST_LOG'));
    server.proc = start(env.bin, ['--config-file', conf, '--base-dir', path.join(tmp, 'data'),
      '--node-name', 'dexa-test', '--listen-mode', 'tcp', '--no-logo'],
    { env: cleanEnv }, server.log);
    server.admin = `http://127.0.0.1:${admin}`;
    server.ingress = `http://127.0.0.1:${ingress}`;
    try {
      await until('the Restate server', async () => {
        if (server.proc.exitCode !== null) throw new Error(`exited: ${tail(server.log)}`);
        const [a, i] = await Promise.all([fetch(`${server.admin}/health`), fetch(`${server.ingress}/restate/health`)]);
        return a.ok && i.ok;
      });
      return;
    } catch (e) {
      await stop(server.proc, 'SIGKILL');
      if (tries === 3) throw e; // a port was taken in between: try new ones
    }
  }
}

// ---- the example's Node service ----------------------------------------------------

const service = { proc: null, port: 0, log: skip ? '' : path.join(tmp, 'service.log'),
  stamps: skip ? '' : path.join(tmp, 'stamps'), holdDir: skip ? '' : path.join(tmp, 'hold') };

async function startService() {
  const mark = fs.existsSync(service.log) ? fs.statSync(service.log).size : 0;
  service.proc = start(process.execPath, ['service.js'], {
    cwd: EXAMPLE,
    env: { ...process.env, NODE_PATH: env.mods, PORT: String(service.port), HOST: '127.0.0.1',
      STAMP_FILE: service.stamps, DEXA_RESTATE_HOLD_DIR: service.holdDir,
      DEXAGENTS_LIBRARY: path.join(ROOT, process.env.LIBOUT || 'lib', 'libdexagents.so.1') },
  }, service.log);
  service.port = await until('the service to listen', () => {
    if (service.proc.exitCode !== null) throw new Error(`exited: ${tail(service.log)}`);
    const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(fs.readFileSync(service.log, 'utf8').slice(mark));
    return m && Number(m[1]); // a restart listens on the same port: the registered deployment
  });
}

async function killService() {
  service.proc.kill('SIGKILL');
  await service.proc.exited;
}

// ---- the session ------------------------------------------------------------------

async function call(handler, body = {}) {
  const res = await fetch(`${server.ingress}/AgentSession/${SID}/${handler}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${handler}: HTTP ${res.status}: ${text}`);
  return text ? JSON.parse(text) : null;
}

const stampRuns = () => (fs.existsSync(service.stamps)
  ? fs.readFileSync(service.stamps, 'utf8').split('\n').filter(Boolean) : []);
const reached = (point) => fs.existsSync(path.join(service.holdDir, `${point}.reached`));
const holdAt = (point) => fs.writeFileSync(path.join(service.holdDir, point), '');
const release = () => { for (const f of fs.readdirSync(service.holdDir)) fs.rmSync(path.join(service.holdDir, f)); };

let turns = 0;
/** Sends a message; returns the number of the turn it starts. */
async function send(text) {
  await call('send_message', { text });
  return ++turns;
}

/** Waits until that turn completed. */
async function turnDone(turn) {
  return until(`turn ${turn} to complete`, async () => {
    const s = await call('snapshot');
    return s.turn.turn === turn && s.turn.status === 'idle' && s;
  });
}

function lastToolOutput(snap) {
  const tools = snap.messages.filter((m) => m.role === 'tool');
  return tools.length ? tools[tools.length - 1].output : null;
}

async function approvalPending() {
  return until('a pending approval', async () => {
    const p = (await call('snapshot')).pending;
    return p.length === 1 && p[0].kind === 'approval' && p[0];
  });
}

// ---- the tests --------------------------------------------------------------------

test.after(async () => { // stopped in order; the exit handler removes tmp
  await stop(service.proc);
  await stop(server.proc);
});

test('setup: npm packages of examples/restate', { skip }, () => {
  assert.equal(env.error, undefined, env.error);
});

test('the Restate server starts on 127.0.0.1 and the service registers', { skip: after, timeout: 180000 }, async (t) => {
  fs.mkdirSync(service.holdDir);
  try {
    await startServer();
    await startService();
    const res = await fetch(`${server.admin}/deployments`, { method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ uri: `http://127.0.0.1:${service.port}` }) });
    const body = await res.json();
    assert.ok(res.ok, JSON.stringify(body));
    const names = body.services.find((s) => s.name === 'AgentSession').handlers.map((h) => h.name);
    for (const h of ['start', 'send_message', 'resolve_approval', 'answer_question', 'snapshot', 'runStep',
      'waitStep', 'approve', 'answer']) {
      assert.ok(names.includes(h), `${h} in ${names}`);
    }
    assert.deepEqual(await call('start', {}), { sessionId: SID });
    let s = await turnDone(await send('hello'));
    assert.match(s.messages[s.messages.length - 1].text, /hello/);
    // a failed RunModel attempt runs again after its backoff (a delayed call)
    s = await turnDone(await send('/fail 1'));
    assert.match(s.messages[s.messages.length - 1].text, /succeeded on attempt 2/);
  } catch (e) {
    t.diagnostic(`restate log:\n${tail(server.log)}\nservice log:\n${tail(service.log)}`);
    throw e;
  }
});

test('a durable timer survives kill -9 of the service', { skip: after, timeout: 180000 }, async () => {
  const turn = await send('/wait 2 a short pause');
  await until('the pending timer', async () => (await call('snapshot')).pending.some((p) => p.kind === 'timer'));
  await killService();
  await startService();
  const s = await turnDone(turn);
  assert.equal(lastToolOutput(s), 'Waited 2 seconds.');
});

test('ask_user: the question survives kill -9, an /answer call resolves it', { skip: after, timeout: 180000 }, async () => {
  const turn = await send('/ask What colour is the sky?');
  const q = await until('a pending question', async () => {
    const p = (await call('snapshot')).pending;
    return p.length === 1 && p[0].kind === 'question' && p[0];
  });
  assert.equal(q.prompt, 'What colour is the sky?');
  assert.equal(typeof q.callId, 'string');
  await killService(); // the waitStep invocation is suspended on its awakeable
  await startService();
  // the question is still pending after the restart: nothing answered it
  assert.deepEqual((await call('snapshot')).pending.map((p) => [p.kind, p.callId]), [['question', q.callId]]);
  await assert.rejects(call('answer', { callId: 'no-such-call', answer: 'x' }), /NOT_PENDING|400/);
  await call('answer', { callId: q.callId, answer: 'blue' });
  const s = await turnDone(turn);
  assert.deepEqual(s.pending, []);
  assert.match(s.messages.filter((m) => m.role === 'model').at(-1).text, /blue/);
  const events = (await call('events', { after: 0 })).events.map((e) => e.event.type);
  assert.ok(events.includes('turn_finished'), events.join());
});

test('kill -9 inside an approved write: an unknown outcome, the write ran once', { skip: after, timeout: 180000 }, async () => {
  const turn = await send('/tool stamp {"document": "a"}');
  const p = await approvalPending();
  assert.equal(p.name, 'stamp');
  assert.deepEqual(stampRuns(), []); // nothing runs before the approval
  holdAt('tool-stamp');
  await call('resolve_approval', { call_id: p.callId, decision: 'approve' }); // the flow's RPC document
  await until('the write to run', () => reached('tool-stamp'));
  assert.equal(stampRuns().length, 1);
  await killService(); // mid-turn, inside the write
  release();
  await startService();
  const s = await turnDone(turn);
  assert.match(lastToolOutput(s), /outcome of this call is unknown/);
  assert.deepEqual(stampRuns(), [`${SID}:${p.callId}`]); // at most once
});

test('kill -9 after the write finished: it is not run again', { skip: after, timeout: 180000 }, async () => {
  const turn = await send('/tool stamp {"document": "b"}');
  const p = await approvalPending();
  holdAt('after-CallSingleAttemptTool');
  await call('approve', { callId: p.callId }); // the example's camelCase handler
  await until('the write to finish', () => reached('after-CallSingleAttemptTool'));
  assert.equal(stampRuns().length, 2);
  await killService(); // its result is journaled, not yet applied
  release();
  await startService();
  const s = await turnDone(turn);
  assert.equal(lastToolOutput(s), 'stamped b');
  assert.deepEqual(stampRuns().slice(1), [`${SID}:${p.callId}`]); // still one run
  const events = (await call('events', { after: 0 })).events.map((e) => e.event.type);
  assert.ok(events.includes('timer_fired') && events.includes('turn_finished'), events.join());
});
