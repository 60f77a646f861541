'use strict';
// Loads the addon (build/dexagents.node) and, on first use, the C library
// libdexagents.so.1, which the addon opens with dlopen. The library is
// looked for, in this order:
//   1. $DEXAGENTS_LIBRARY (a path; when set, nothing else is tried);
//   2. lib/libdexagents.so.1 of the source tree this package sits in;
//   3. the system loader (LD_LIBRARY_PATH, the ldconfig cache, the default
//      directories);
//   4. the library directory found when the addon was built (pkg-config's
//      libdir, recorded in build/config.json), /usr/local/lib, /usr/local/lib64.
// When all fail, LibraryNotFoundError says what was tried and how to fix it.
const fs = require('node:fs');
const path = require('node:path');

const SONAME = 'libdexagents.so.1';
const root = path.resolve(__dirname, '..');

/** The C library could not be loaded (or the addon is not built); the
 * message lists what was tried and how to fix it. */
class LibraryNotFoundError extends Error {
  constructor(message) {
    super(message);
    this.name = 'LibraryNotFoundError';
    this.code = 'ERR_DEXAGENTS_LIBRARY_NOT_FOUND';
  }
}

let addon = null;
function getAddon() {
  if (addon) return addon;
  const file = process.env.DEXAGENTS_NODE_ADDON || path.join(root, 'build', 'dexagents.node');
  try {
    addon = require(file);
  } catch (e) {
    throw new LibraryNotFoundError(`the dexagents addon ${file} cannot be loaded (${e.message}). ` +
      'Build it: `npm rebuild dexagents` (or `make bindings` in the source tree); it needs a C ' +
      "compiler, Node's headers and libdexagents' headers (see the package README).");
  }
  return addon;
}

function candidates() {
  const list = [];
  const tree = path.resolve(root, '..', '..');
  if (fs.existsSync(path.join(tree, 'include', 'dexagents', 'dexagents.h'))) {
    list.push([path.join(tree, 'lib', SONAME), 'source tree']);
  }
  list.push([SONAME, 'system loader (LD_LIBRARY_PATH, ldconfig cache)']);
  let libdir = null;
  try {
    libdir = JSON.parse(fs.readFileSync(path.join(root, 'build', 'config.json'), 'utf8')).libdir;
  } catch { /* built without a recorded directory */ }
  for (const d of [libdir, '/usr/local/lib', '/usr/local/lib64']) {
    if (d) list.push([path.join(d, SONAME), d === libdir ? 'found at build time' : 'standard path']);
  }
  return list;
}

let loaded = null;
/** The addon with the library loaded (loads both on first call). */
function native() {
  if (loaded) return loaded;
  const a = getAddon();
  const tried = [];
  const env = process.env.DEXAGENTS_LIBRARY;
  const list = env ? [[env, '$DEXAGENTS_LIBRARY']] : candidates();
  if (!env) tried.push('$DEXAGENTS_LIBRARY: not set');
  for (const [file, what] of list) {
    if (file.includes('/') && !fs.existsSync(file)) {
      tried.push(`${file} (${what}): no such file`);
      continue;
    }
    try {
      a.load(file);
      loaded = a;
      return a;
    } catch (e) {
      tried.push(`${file} (${what}): ${e.message}`);
    }
  }
  throw new LibraryNotFoundError('cannot load the C library libdexagents.so.1, which the ' +
    `dexagents package drives.\nTried:\n  ${tried.join('\n  ')}\nTo fix it, do one of:\n` +
    '  - install the library: `make install` in the libdexagents source tree (as root it runs ' +
    'ldconfig; otherwise run `ldconfig` as root or use LD_LIBRARY_PATH);\n' +
    '  - add the directory that holds libdexagents.so.1 to LD_LIBRARY_PATH;\n' +
    '  - set DEXAGENTS_LIBRARY to the library\'s path, e.g. ' +
    'DEXAGENTS_LIBRARY=/usr/local/lib/libdexagents.so.1.');
}

module.exports = { native, LibraryNotFoundError };
