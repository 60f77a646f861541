// A worker process of the adapter table (_table.mjs): the adapter's agent
// on the shared SQLite store, with worker threads, until it is killed.
// Usage: node _worker.mjs ADAPTER BASE DIR STORE
import { createRequire } from 'node:module';
import { makeAgent } from './_defs.mjs';

const require = createRequire(import.meta.url);
const dx = require('dexagents');
const [adapter, base, dir, store] = process.argv.slice(2);
const agent = await makeAgent(dx, adapter, base, dir);
const rt = new dx.Runtime(agent, { store, workers: 2, leaseMs: 1000 });
process.stdout.write('ready\n');
process.on('SIGTERM', async () => { await rt.close({ timeoutMs: 1000 }); process.exit(0); });
