'use strict';
// dexagents: durable AI-agent sessions for Node, the bindings of
// libdexagents. The JavaScript half over the N-API addon build/dexagents.node
// (src/*.c), which opens libdexagents.so.1 on first use (lib/native.js says
// where it looks). Types and documentation: index.d.ts.
const errors = require('./lib/errors');
const { native, LibraryNotFoundError } = require('./lib/native');
const { Model, Harness, Tool, tool, ToolResult, ToolEffect, BuiltInTool, McpToolSource, Agent } = require('./lib/agent');
const { Runtime, Event, runtimeOptions } = require('./lib/runtime');
const { errorCode } = require('./lib/model');
const { CallKind, MemoryAttributes, Result, Task, RawJSON, WaitEvaluation, dispatch, evaluateWait } =
  require('./lib/host');

/** The version of the loaded C library ("1.1.0"). */
const version = () => native().version();
/**
 * What the loaded C library contains (dexa_build_info(3)): {version,
 * features: ["core", ..., "sqlite"], options: {WITH_HTTP: true, ...},
 * libraries: [...]}. A library built with make MINIMAL=1 has neither
 * provider clients nor stores.
 */
const buildInfo = () => JSON.parse(native().buildInfo());
/** True when the loaded C library has feature ("http", "providers", "sqlite", ...). */
const buildHas = (feature) => buildInfo().features.includes(feature);
/** Loads the C library now (it is otherwise loaded on first use). */
const loadLibrary = () => { native(); };

const { CODES, ErrorClass, errorName, errorClass, exceptionClass, errorFor, classes } = errors;

/** The library's static description of an error code. */
const strerror = (code) => native().errorInfo(code).message;

module.exports = {
  version, buildInfo, buildHas, loadLibrary, LibraryNotFoundError,
  Model, Harness, Tool, tool, ToolResult, ToolEffect, BuiltInTool, McpToolSource, Agent,
  Runtime, Event, runtimeOptions,
  CallKind, MemoryAttributes, Result, Task, RawJSON, WaitEvaluation, dispatch, evaluateWait,
  CODES, ErrorClass, errorName, errorClass, exceptionClass, errorFor, strerror, errorCode,
  ...classes,
  // Earlier names: tool effects and built-in tool flags as numbers.
  READ: ToolEffect.READ, IDEMPOTENT_WRITE: ToolEffect.IDEMPOTENT_WRITE, WRITE: ToolEffect.WRITE,
  BUILTIN_ASK_USER: 1, BUILTIN_DURABLE_WAIT: 2, BUILTIN_WRITE_TODOS: 4, BUILTIN_ALL: 7,
  ...CODES,
};
