'use strict';
// Conversions shared by the modules: option checks, camelCase views of the
// library's documents, JSON text for the library.
const { CODES, errorFor } = require('./errors');

/** Throws UnknownKeyError for a key of options not in allowed. */
function checkOptions(options, allowed, where) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${where}: options must be an object`);
  }
  for (const k of Object.keys(options)) {
    if (!allowed.includes(k)) {
      throw errorFor(CODES.DEXA_E_UNKNOWN_KEY,
        `${where}: unknown option '${k}' (known: ${allowed.join(', ')})`);
    }
  }
  return options;
}

function checkInt(value, name, { min = 0, max = Number.MAX_SAFE_INTEGER } = {}) {
  if (value === undefined) return;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new TypeError(`${name} must be an integer in ${min}..${max}, not ${String(value)}`);
  }
}

function checkString(value, name) {
  if (value !== undefined && typeof value !== 'string') throw new TypeError(`${name} must be a string`);
}

const camel = (k) => k.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
const snake = (k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
// User data inside the library's documents: kept as it is.
const OPAQUE = new Set(['arguments', 'content', 'item']);

/** A deep copy of a library document with camelCase keys; tool arguments,
 * structured tool results and provider items (and the keys of `opaque`)
 * are left as they are. */
function camelize(v, opaque = OPAQUE) {
  if (Array.isArray(v)) return v.map((x) => camelize(x, opaque));
  if (v === null || typeof v !== 'object') return v;
  const o = {};
  for (const [k, x] of Object.entries(v)) o[camel(k)] = opaque.has(k) ? x : camelize(x, opaque);
  return o;
}

/** camelCase options as the library's snake_case document. spec maps each
 * known camelCase key to true (the value is kept as it is: a string, a
 * number, an array, or a map of the user's own names such as headers) or
 * to the spec of a nested object. Any other key (a snake_case one too)
 * throws UnknownKeyError, naming the known ones. */
function libraryDocument(options, spec, where) {
  const o = checkOptions(options, Object.keys(spec), where);
  const out = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === undefined) continue;
    const s = spec[k];
    out[snake(k)] = typeof s === 'object' && v !== null && typeof v === 'object' && !Array.isArray(v)
      ? libraryDocument(v, s, `${where}: ${k}`) : v;
  }
  return out;
}

/** JSON text passed to the library unchanged (no re-encoding). */
class RawJSON {
  constructor(text) {
    if (typeof text !== 'string') throw new TypeError('RawJSON needs a string');
    this.text = text;
  }
}

/** A JSON value (or RawJSON) as text; null for undefined and null. */
function jsonText(v) {
  if (v === undefined || v === null) return null;
  if (v instanceof RawJSON) return v.text;
  return JSON.stringify(v);
}

const parse = (text) => (text === null || text === undefined || text === '' ? null : JSON.parse(text));

module.exports = { checkOptions, checkInt, checkString, camelize, camel, snake, libraryDocument,
  RawJSON, jsonText, parse };
