'use strict';
// The agent of the example: the demo model mock/dex (no credential; its
// commands /tool NAME {json}, /wait SECONDS REASON, /ask ... drive every
// feature) with two tools and the durable_wait and ask_user built-ins.
//
//   clock  READ: runs at once, retried if it fails (CallTool).
//   stamp  WRITE that needs approval: runs at most once
//          (CallSingleAttemptTool). With STAMP_FILE set, each run appends one
//          line (its idempotency key) to that file, so a test counts the runs.
const fs = require('node:fs');
const path = require('node:path');
const dx = require('dexagents');

/** The crash test's hook (test/restate): with DEXA_RESTATE_HOLD_DIR set and
 * a file named `point` in it, writes `<point>.reached` there and waits until
 * the process is killed. Otherwise returns at once. */
async function hold(point) {
  const dir = process.env.DEXA_RESTATE_HOLD_DIR;
  if (!dir || !fs.existsSync(path.join(dir, point))) return;
  fs.writeFileSync(path.join(dir, `${point}.reached`), `${process.pid}\n`);
  await new Promise(() => {}); // never settles: kill -9 ends it
}

function makeAgent() {
  const clock = dx.tool(() => new Date().toISOString(), {
    name: 'clock', description: 'Returns the current UTC time.', effect: 'read' });
  const stamp = dx.tool(async (args, call) => {
    if (process.env.STAMP_FILE) fs.appendFileSync(process.env.STAMP_FILE, `${call.idempotencyKey}\n`);
    await hold('tool-stamp');
    return `stamped ${args.document || 'the document'}`;
  }, {
    name: 'stamp', description: 'Stamps a document (a write that must not run twice).',
    effect: 'write', approval: true,
    parameters: { type: 'object', properties: { document: { type: 'string' } } },
  });
  return new dx.Agent({ models: ['mock/dex'], tools: [clock, stamp],
    builtInTools: ['durable_wait', 'ask_user'] });
}

module.exports = { makeAgent, hold };
