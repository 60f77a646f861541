/* libdexagents: durable AI-agent sessions. Include this header only. */
#ifndef DEXAGENTS_H
#define DEXAGENTS_H

#include "common.h"
#include "version.h"
#include "errors.h"
#include "flow.h"
#include "model.h"
#include "tools.h"
#include "harness.h"
#include "mcp.h"
#include "agent.h"
#include "trace.h"
#include "runtime.h"
#include "http.h"
#include "graph.h"
#include "store.h"
#include "connectors.h"

#endif
