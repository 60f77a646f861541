#!/usr/bin/env python3
"""Fake MCP servers for the client's tests (test/integration/test_mcp_fake.c).

  _fake_server.py stdio [legacy|modern]   newline-delimited JSON-RPC on stdin/stdout
  _fake_server.py http PORT_FILE          Streamable HTTP on 127.0.0.1 (port written to PORT_FILE)

Tools (both transports):
  echo {text}       readOnlyHint: answers the text
  write {text}      no annotations (a write): appends the idempotency key to $FAKE_LOG
  slow {ms}         answers after ms, sending progress every 100 ms
  never {}          never answers
  garbage {}        writes a garbage line and a response with an unknown id first
  huge {}           answers with a line over 8 MiB
  die {}            exits at once
  ping_first {}     pings the client and answers after the pong
  files.read {}     readOnlyHint: a name with a dot (MCP 2025-11-25), answers "read"
The tool list comes in 3 pages (cursor), and notifications/tools/list_changed is
sent before the initialize response. Everything received is appended as one
line to $FAKE_LOG ("recv <method> <id>", with the tool's name for tools/call) so
tests can check what the client sent.
HTTP: legacy era with sessions; tools/call of never keeps an SSE stream open
without answering (until the client closes it); tools/call of slow is answered on a stream
that closes after a priming event with retry: 300, resumed by GET with
Last-Event-ID; a request with MCP-Protocol-Version 2026-07-28 (modern era) must
carry Mcp-Method and, for tools/call, Mcp-Name equal to the body.
"""
import json
import os
import sys
import threading
import time

LOG = os.environ.get("FAKE_LOG")
log_lock = threading.Lock()


def log(line):
    if LOG:
        with log_lock:
            with open(LOG, "a") as f:
                f.write(line + "\n")


TOOLS = [
    {"name": "echo", "description": "Echo", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": True}},
    {"name": "write", "description": "A write", "inputSchema": {"type": "object"}},
    {"name": "slow", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "never", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "garbage", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "huge", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "die", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "ping_first", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "a tool with spaces and a very long name that does not fit in sixty-four bytes",
     "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True, "idempotentHint": True}},
    {"name": "idem", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": False, "idempotentHint": True}},
    {"name": "files.read", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
]
PAGE = 4


def result(mid, res):
    return {"jsonrpc": "2.0", "id": mid, "result": res}


def text_result(mid, text):
    return result(mid, {"content": [{"type": "text", "text": text}]})


def list_page(mid, params):
    start = int((params or {}).get("cursor") or 0)
    page = {"tools": TOOLS[start:start + PAGE]}
    if start + PAGE < len(TOOLS):
        page["nextCursor"] = str(start + PAGE)
    return result(mid, page)


# ---------------------------------------------------------------- stdio

class Stdio:
    def __init__(self, era):
        self.era = era
        self.out_lock = threading.Lock()
        self.pongs = {}

    def send(self, msg):
        self.send_raw(json.dumps(msg))

    def send_raw(self, text):
        with self.out_lock:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    def call(self, mid, params):
        name = params.get("name")
        args = params.get("arguments") or {}
        meta = params.get("_meta") or {}
        if name == "echo":
            self.send(text_result(mid, "echo: " + str(args.get("text", ""))))
        elif name == "write":
            log("write " + str(meta.get("org.dexagents/idempotency-key")))
            self.send(text_result(mid, "written"))
        elif name == "idem":
            self.send(text_result(mid, "idem"))
        elif name == "files.read":
            self.send(text_result(mid, "read"))
        elif name == "slow":
            def run():
                ms = int(args.get("ms", 500))
                token = meta.get("progressToken")
                t0 = time.time()
                step = 0
                while (time.time() - t0) * 1000 < ms:
                    time.sleep(0.1)
                    step += 1
                    if token is not None:
                        self.send({"jsonrpc": "2.0", "method": "notifications/progress",
                                   "params": {"progressToken": token, "progress": step}})
                self.send(text_result(mid, "slow done"))
            threading.Thread(target=run, daemon=True).start()
        elif name == "never":
            pass
        elif name == "garbage":
            self.send_raw("this is not json {{{")
            self.send_raw("[1,2,3]")
            self.send(text_result(987654, "for nobody"))
            self.send(text_result(mid, "after garbage"))
        elif name == "huge":
            self.send(text_result(mid, "x" * (9 * 1024 * 1024)))
        elif name == "die":
            os._exit(3)
        elif name == "ping_first":
            self.send({"jsonrpc": "2.0", "id": "srv-ping-1", "method": "ping"})
            self.pongs[mid] = True
        else:
            self.send(result(mid, {"content": [{"type": "text", "text": "no such tool"}],
                                   "isError": True}))

    def handle(self, msg):
        method = msg.get("method")
        mid = msg.get("id")
        params = msg.get("params") or {}
        called = " " + str(params.get("name")) if method == "tools/call" else ""
        log("recv %s %s%s" % (method or "response", mid, called))
        if method is None:  # a response (our ping's pong)
            if mid == "srv-ping-1" and "result" in msg:
                for k in list(self.pongs):
                    self.send(text_result(k, "pong received"))
                    del self.pongs[k]
            return
        if self.era == "modern":
            if method == "initialize":
                self.send({"jsonrpc": "2.0", "id": mid,
                           "error": {"code": -32022, "message": "unsupported",
                                     "data": {"supported": ["2026-07-28"]}}})
                return
            pv = (params.get("_meta") or {}).get("io.modelcontextprotocol/protocolVersion")
            if mid is not None and pv != "2026-07-28":
                self.send({"jsonrpc": "2.0", "id": mid,
                           "error": {"code": -32022, "message": "missing protocol version"}})
                return
        if method == "server/discover":
            if self.era == "modern":
                self.send(result(mid, {"supportedVersions": ["2026-07-28"],
                                       "capabilities": {"tools": {}}, "resultType": "complete",
                                       "_meta": {"io.modelcontextprotocol/serverInfo":
                                                 {"name": "fake", "version": "1"}}}))
            else:
                self.send({"jsonrpc": "2.0", "id": mid,
                           "error": {"code": -32601, "message": "Method not found"}})
        elif method == "initialize":
            self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            self.send(result(mid, {"protocolVersion": "2025-06-18",
                                   "capabilities": {"tools": {"listChanged": True}},
                                   "serverInfo": {"name": "fake", "version": "1"}}))
        elif method == "tools/list":
            self.send(list_page(mid, params))
        elif method == "tools/call":
            self.call(mid, params)
        elif method == "ping":
            self.send(result(mid, {}))
        elif mid is not None:
            self.send({"jsonrpc": "2.0", "id": mid,
                       "error": {"code": -32601, "message": "Method not found"}})

    def run(self):
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            self.handle(msg)


# ---------------------------------------------------------------- http

def serve_http(port_file):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    sessions = set()
    pending = {}  # event id -> message held for a GET resume
    lock = threading.Lock()

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def reply(self, code, body=None, headers=None, ctype="application/json"):
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            if body is not None:
                self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def sse_start(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()

        def sse(self, text):
            self.wfile.write(text.encode())
            self.wfile.flush()

        def do_DELETE(self):
            sid = self.headers.get("Mcp-Session-Id")
            log("http DELETE %s" % ("known" if sid in sessions else "unknown"))
            sessions.discard(sid)
            self.reply(200)

        def do_GET(self):
            last = self.headers.get("Last-Event-ID")
            log("http GET %s" % last)
            with lock:
                msg = pending.pop(last, None)
            if msg is None:
                self.reply(405)
                return
            self.sse_start()
            self.sse("event: message\nid: %s-2\ndata: %s\n\n" % (last, json.dumps(msg)))
            self.close_connection = True

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            msg = json.loads(self.rfile.read(n) or b"{}")
            method = msg.get("method")
            mid = msg.get("id")
            params = msg.get("params") or {}
            version = self.headers.get("MCP-Protocol-Version")
            log("http POST %s %s version=%s" % (method, mid, version))
            if version == "2026-07-28":
                if self.headers.get("Mcp-Method") != method:
                    self.reply(400, {"jsonrpc": "2.0", "id": mid,
                                     "error": {"code": -32020, "message": "header mismatch"}})
                    return
                if method == "tools/call" and self.headers.get("Mcp-Name") != params.get("name"):
                    self.reply(400, {"jsonrpc": "2.0", "id": mid,
                                     "error": {"code": -32020, "message": "Mcp-Name mismatch"}})
                    return
                if method == "server/discover":
                    self.reply(200, result(mid, {"supportedVersions": ["2026-07-28"],
                                                 "capabilities": {"tools": {}},
                                                 "resultType": "complete"}))
                elif method == "tools/list":
                    self.reply(200, result(mid, {"tools": TOOLS[:2], "ttlMs": 1000}))
                elif method == "tools/call":
                    self.reply(200, text_result(mid, "modern echo: " +
                                                str((params.get("arguments") or {}).get("text"))))
                else:
                    self.reply(404, {"jsonrpc": "2.0", "id": mid,
                                     "error": {"code": -32601, "message": "Method not found"}})
                return
            if method == "server/discover":  # the legacy mode answers like the v1 SDK
                self.reply(400, {"jsonrpc": "2.0", "id": None,
                                 "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}})
                return
            sid = self.headers.get("Mcp-Session-Id")
            if method == "initialize":
                sid = "sess-%d" % (len(sessions) + 1)
                sessions.add(sid)
                self.reply(200, result(mid, {"protocolVersion": "2025-11-25",
                                             "capabilities": {"tools": {}},
                                             "serverInfo": {"name": "fake-http", "version": "1"}}),
                           {"Mcp-Session-Id": sid})
                return
            if sid not in sessions:
                self.reply(404 if sid else 400, {"jsonrpc": "2.0", "id": None,
                                                  "error": {"code": -32000, "message": "No valid session ID provided"}})
                return
            if mid is None:
                self.reply(202)
                return
            if method == "tools/list":
                self.sse_start()
                self.sse("id: p0\ndata: \n\n")
                self.sse("event: message\nid: p1\ndata: %s\n\n" % json.dumps(list_page(mid, params)))
                self.close_connection = True
            elif method == "tools/call" and params.get("name") == "slow":
                eid = "ev-%s" % mid
                with lock:
                    pending[eid] = text_result(mid, "resumed result")
                self.sse_start()
                self.sse("id: %s\nretry: 300\ndata: \n\n" % eid)
                self.close_connection = True  # closes before the response
            elif method == "tools/call" and params.get("name") == "never":
                # An open stream that never answers: kept alive until the client goes.
                self.sse_start()
                self.sse("id: nv-%s\ndata: \n\n" % mid)
                try:
                    for _ in range(1200):
                        time.sleep(0.1)
                        self.sse(": waiting\n\n")
                except OSError:
                    log("http stream of %s closed by the client" % mid)
                self.close_connection = True
            elif method == "tools/call":
                args = params.get("arguments") or {}
                self.reply(200, text_result(mid, "http echo: " + str(args.get("text"))))
            else:
                self.reply(200, {"jsonrpc": "2.0", "id": mid,
                                 "error": {"code": -32601, "message": "Method not found"}})

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    srv.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        Stdio(sys.argv[2] if len(sys.argv) > 2 else "legacy").run()
    else:
        serve_http(sys.argv[2])
