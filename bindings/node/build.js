#!/usr/bin/env node
'use strict';
// Builds the N-API addon build/dexagents.node with the system C compiler:
// no node-gyp, nothing downloaded. npm runs it on install (package.json's
// "install" script); `make bindings` runs it in the source tree.
//
// Needs:
//  - Node's headers (node_api.h): $NODE_INCLUDE, else those of the npm
//    package node-api-headers (a pinned dependency, bundled in the packed
//    tarball: `npm install --offline ./dexagents-x.tgz` needs no network and
//    no system headers), else the include/node directory of this Node's
//    installation prefix ($DEXAGENTS_NODEDIR when set, which replaces the
//    system directories; a nonexistent one hides them), /usr/include/node or
//    /usr/local/include/node;
//  - libdexagents' headers (dexagents/dexagents.h): $DEXAGENTS_INCLUDE, else
//    the source tree's include/ (when the package sits in one), else
//    `pkg-config --cflags dexagents`, /usr/local/include or /usr/include.
//
// The addon does not link libdexagents: it opens libdexagents.so.1 when
// loaded (see index.js), so it carries no RUNPATH. The library directory
// that pkg-config names (or $DEXAGENTS_LIBDIR) is written to
// build/config.json, where index.js looks when the system loader does not
// find the library. Rebuilds only when a source, a header or this script is
// newer than the addon.
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync, spawnSync } = require('node:child_process');

const here = __dirname;
const tree = path.resolve(here, '..', '..');
const out = path.join(here, 'build', 'dexagents.node');
const configFile = path.join(here, 'build', 'config.json');

function fail(lines) {
  process.stderr.write(`dexagents: cannot build the Node addon:\n  ${lines.join('\n  ')}\n`);
  process.exit(1);
}

function has(dir, file) {
  return !!dir && fs.existsSync(path.join(dir, file));
}

function pkgConfig(args) {
  try {
    return execFileSync('pkg-config', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

// The include directory of the node-api-headers package next to this one
// (bundled: node_modules/dexagents/node_modules/node-api-headers), if any.
function bundledNodeInclude() {
  try {
    const pkg = require.resolve('node-api-headers/package.json', { paths: [here] });
    return path.join(path.dirname(pkg), 'include');
  } catch {
    return null;
  }
}

function nodeIncludeCandidates() {
  const nodedir = process.env.DEXAGENTS_NODEDIR;
  const system = nodedir ? [path.join(nodedir, 'include', 'node')]
    : [path.join(path.resolve(path.dirname(process.execPath), '..'), 'include', 'node'),
      '/usr/include/node', '/usr/local/include/node'];
  return [process.env.NODE_INCLUDE, bundledNodeInclude(), ...system];
}

function nodeInclude() {
  const candidates = nodeIncludeCandidates();
  const found = candidates.find((d) => has(d, 'node_api.h'));
  if (!found) {
    fail([`Node's headers (node_api.h) are not in: ${candidates.filter(Boolean).join(', ')}.`,
      'Install them (Debian: apt install libnode-dev, or the nodejs package of NodeSource;',
      'official Node tarballs have include/node), or set NODE_INCLUDE to their directory.']);
  }
  return found;
}

function dexagentsInclude() {
  const inTree = path.join(tree, 'include');
  const fromPc = (pkgConfig(['--cflags-only-I', 'dexagents']) || '').split(/\s+/)
    .filter((f) => f.startsWith('-I')).map((f) => f.slice(2));
  const candidates = [process.env.DEXAGENTS_INCLUDE, inTree, ...fromPc, '/usr/local/include',
    '/usr/include'];
  const found = candidates.find((d) => has(d, path.join('dexagents', 'dexagents.h')));
  if (!found) {
    fail([`libdexagents' headers (dexagents/dexagents.h) are not in: ${candidates.filter(Boolean).join(', ')}.`,
      'Install the library first (`make install` in the libdexagents source tree), point',
      'PKG_CONFIG_PATH at its dexagents.pc, or set DEXAGENTS_INCLUDE to its include directory.']);
  }
  return found;
}

function libraryDir(include) {
  if (process.env.DEXAGENTS_LIBDIR) return process.env.DEXAGENTS_LIBDIR;
  // index.js finds the tree's lib/ once `make` built it; a fresh clone has
  // none, and its library is the installed one (pkg-config's libdir).
  if (include === path.join(tree, 'include') && fs.existsSync(path.join(tree, 'lib', 'libdexagents.so.1'))) {
    return null;
  }
  return pkgConfig(['--variable=libdir', 'dexagents']);
}

function newest(files) {
  return Math.max(...files.map((f) => fs.statSync(f).mtimeMs));
}

function main() {
  const nodeInc = nodeInclude();
  const dexaInc = dexagentsInclude();
  const libdir = libraryDir(dexaInc);
  const srcDir = path.join(here, 'src');
  const sources = fs.readdirSync(srcDir).filter((f) => f.endsWith('.c')).sort()
    .map((f) => path.join(srcDir, f));
  const inputs = [__filename, ...sources,
    ...fs.readdirSync(srcDir).filter((f) => f.endsWith('.h')).map((f) => path.join(srcDir, f)),
    ...fs.readdirSync(path.join(dexaInc, 'dexagents')).map((f) => path.join(dexaInc, 'dexagents', f))];
  const config = JSON.stringify({ libdir, include: dexaInc, nodeInclude: nodeInc }, null, 2) + '\n';
  const sameConfig = fs.existsSync(configFile) && fs.readFileSync(configFile, 'utf8') === config;
  if (sameConfig && fs.existsSync(out) && fs.statSync(out).mtimeMs >= newest(inputs)) return;

  fs.mkdirSync(path.dirname(out), { recursive: true });
  const cc = (process.env.CC || 'cc').split(/\s+/).filter(Boolean);
  const args = [...cc.slice(1), '-std=c11', '-D_GNU_SOURCE', '-O2', '-g', '-fPIC', '-shared',
    '-fvisibility=hidden', '-Wall', '-Wextra', '-Wno-unused-parameter',
    '-Wno-missing-field-initializers', '-DNODE_GYP_MODULE_NAME=dexagents', `-I${nodeInc}`,
    `-I${dexaInc}`, '-o', `${out}.tmp`, ...sources, '-lpthread', '-ldl'];
  process.stdout.write(`node: ${path.relative(process.cwd(), out) || out} (Node's headers: ${nodeInc})\n`);
  const r = spawnSync(cc[0], args, { stdio: 'inherit' });
  if (r.error) fail([`cannot run the C compiler ${cc[0]}: ${r.error.message}`, 'Install one (apt install gcc) or set CC.']);
  if (r.status !== 0) fail([`${cc[0]} failed (exit status ${r.status})`]);
  fs.renameSync(`${out}.tmp`, out);
  fs.writeFileSync(configFile, config);
}

// `node build.js --has-node-headers`: exit status 0 when Node's headers are
// found (the Makefile then needs no fallback), 1 otherwise.
if (process.argv[2] === '--has-node-headers') {
  process.exit(nodeIncludeCandidates().some((d) => has(d, 'node_api.h')) ? 0 : 1);
}
main();
