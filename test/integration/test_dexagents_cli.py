#!/usr/bin/env python3
# test-needs: sqlite http
"""The dexagents command end to end, on temporary stores: every subcommand
(--json output parsed and checked), exit codes, the configuration file and
DEX_AGENT_* over it, the terminal chat from a pipe and on a pseudo-terminal
(input read while a timer is waited for: Stop and Steer), a worker that
drains on SIGTERM while a Slack post is in flight (a local server speaking
the Slack Web API on a free port), serve with its routes and its Slack tool
(waits for Approve, posts once; not offered without the connector file),
the graph, store check/copy/vacuum. Prints "N passed, N failed" for test/run.

The program is $BUILD/bin/dexagents (BUILD defaults to build)."""
import http.server
import json
import os
import pty
import select
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.environ.get("BUILD", "build")
DEX = os.path.join(ROOT, BUILD, "bin", "dexagents")
TOKEN = "xoxb-cli-test-SECRET-0042"
LONG = 120  # seconds: generous, the machine may be loaded


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DEX_AGENT_") and k != "DEX_CONNECTOR_CONFIG_FILE"}
    env.update(extra)
    return env


def run(*args, env=None, input=None, timeout=LONG):
    return subprocess.run([DEX] + list(args), env=env or clean_env(), input=input,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def run_json(testcase, *args, code=0, **kw):
    r = run(*args, "--json", **kw)
    testcase.assertEqual(r.returncode, code, "%s\nstdout: %s\nstderr: %s" % (args, r.stdout, r.stderr))
    return json.loads(r.stdout)


def wait_until(what, cond, timeout=LONG):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dexagents-cli-")
        self.store = os.path.join(self.tmp, "s.db")
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            for stream in (p.stdout, p.stderr):
                if stream:
                    stream.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def dj(self, *args, code=0, **kw):
        return run_json(self, *args, "--store", self.store, code=code, **kw)

    def start(self, model=None):
        args = ["sessions", "start"] + (["--model", model] if model else [])
        return self.dj(*args)["session_id"]

    def show(self, sid):
        return self.dj("sessions", "show", sid)

    def last_model_text(self, sid):
        msgs = [m for m in self.show(sid)["messages"] if m.get("role") == "model" and m.get("text")]
        return msgs[-1]["text"] if msgs else None


class CommandTest(Base):
    def test_version_help_and_usage_errors(self):
        r = run("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^dexagents 1\.\d+\.\d+ \(libdexagents 1\.\d+\.\d+\)")
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        subs = ["chat", "sessions", "send", "approve", "reject", "answer", "steer", "delete",
                "stop", "end", "execute-plan", "serve", "worker", "graph", "store"]
        for s in subs:
            self.assertIn("dexagents " + s, r.stdout)
            h = run(s, "--help")
            self.assertEqual(h.returncode, 0, s)
            self.assertIn("usage: dexagents " + s, h.stdout)
            self.assertIn("--config FILE", h.stdout)
        self.assertEqual(run().returncode, 2)
        self.assertEqual(run("frobnicate").returncode, 2)
        r = run("sessions", "list", "--bogus")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown option --bogus", r.stderr)
        self.assertEqual(run("send").returncode, 2)
        self.assertEqual(run("graph", "--format", "svg").returncode, 2)
        self.assertEqual(run("worker", "--threads", "0").returncode, 2)

    def test_man_page_documents_every_subcommand(self):
        with open(os.path.join(ROOT, "man", "man1", "dexagents.1")) as f:
            page = f.read()
        for s in ["chat", "sessions list", "sessions show", "sessions events", "send", "approve",
                  "reject", "answer", "steer", "delete", "stop", "end", "execute\\-plan", "serve",
                  "worker", "graph", "store check", "store vacuum", "store copy"]:
            self.assertIn(s, page)
        for code in range(8):
            self.assertIn(".B %d\n" % code, page)
        if shutil.which("groff"):
            r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", "man/man1/dexagents.1"],
                               cwd=ROOT, capture_output=True, text=True)
            self.assertEqual((r.returncode, r.stderr), (0, ""))

    def test_sessions_and_operations_as_json(self):
        sid = self.start()
        listed = self.dj("sessions", "list")["sessions"]
        self.assertIn(sid, [s["session_id"] for s in listed])
        # send, with --wait running the turn here
        r = self.dj("send", sid, "hello", "there", "--wait")
        self.assertEqual(r["message_id"], "m1")
        self.assertEqual(self.last_model_text(sid), "Local demo response: hello there")
        # a write waits for approval; approve runs it once
        self.dj("send", sid, '/tool send_note {"text":"hi"}', "--wait")
        pending = self.show(sid)["pending"]
        self.assertEqual([(p["kind"], p["name"]) for p in pending], [("approval", "send_note")])
        r = self.dj("approve", sid, "--wait")
        self.assertEqual(self.show(sid)["pending"], [])
        self.assertTrue(self.last_model_text(sid).startswith("Tool send_note (ok): note sent"))
        # reject with a note
        self.dj("send", sid, '/tool send_note {"text":"no"}', "--wait")
        call = self.show(sid)["pending"][0]["call_id"]
        self.dj("reject", sid, "--call", call, "--note", "not now", "--wait")
        self.assertIn("Tool send_note (rejected)", self.last_model_text(sid))
        # nothing pending any more: refused, with the error document
        e = self.dj("approve", sid, code=5)
        self.assertEqual(e["error"]["name"], "DEXA_E_NOT_PENDING")
        # a question and its answer
        self.dj("send", sid, "/ask", "Your", "name?", "--wait")
        self.assertEqual(self.show(sid)["pending"][0]["kind"], "question")
        self.dj("answer", sid, "Ada", "Lovelace", "--wait")
        self.assertEqual(self.last_model_text(sid), "Tool ask_user (ok): Ada Lovelace")
        # a wait: a message queued behind it, deleted; another one steered in
        self.dj("send", sid, "/wait 600 tea", "--wait")
        q = self.dj("send", sid, "later")
        self.assertTrue(q["queued"])
        self.dj("delete", sid, q["message_id"])
        self.assertEqual(self.show(sid)["queue"], [])
        self.dj("send", sid, "steered in")
        r = self.dj("steer", sid, "--wait")
        self.assertEqual(r, {"steered": True, "turn_running": True})
        self.assertEqual(self.last_model_text(sid), "Local demo response: steered in")
        # stop a wait
        self.dj("send", sid, "/wait 600 tea", "--wait")
        r = self.dj("stop", sid, "--wait")
        self.assertTrue(r["cancelled"])
        self.assertEqual(self.show(sid)["turn"]["status"], "cancelled")
        e = self.dj("stop", sid, code=5)
        self.assertEqual(e["error"]["name"], "DEXA_E_BAD_STATE")
        # a plan, executed at its current revision; a stale one is refused
        self.dj("send", sid, "plan", "it", "--plan", "--wait")
        rev = self.show(sid)["plan"]["revision"]
        e = self.dj("execute-plan", sid, "--revision", str(rev + 5), code=5)
        self.assertEqual(e["error"]["name"], "DEXA_E_STALE_REVISION")
        r = self.dj("execute-plan", sid, "--wait")
        self.assertEqual(r["revision"], rev)
        # errors: no such session, a blank message
        e = self.dj("sessions", "show", "s-missing", code=4)
        self.assertEqual(e["error"]["name"], "DEXA_E_NOT_FOUND")
        e = self.dj("send", sid, " ", code=5)
        self.assertEqual(e["error"]["name"], "DEXA_E_EMPTY_MESSAGE")
        # text output says what was done
        r = run("send", sid, "once more", "--store", self.store)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^sent \(message m\d+\)\n$")
        # the end: later changes are refused, the session stays readable
        r = self.dj("end", sid, "--reason", "cli test")
        self.assertEqual((r["ended"], r["reason"]), (True, "cli test"))
        e = self.dj("send", sid, "too late", code=5)
        self.assertEqual(e["error"]["name"], "DEXA_E_SESSION_ENDED")
        self.assertEqual(self.show(sid)["ended"]["reason"], "cli test")
        listed = self.dj("sessions", "list")["sessions"]
        self.assertEqual([s["status"] for s in listed if s["session_id"] == sid], ["ended"])

    def test_events_from_a_token_and_followed(self):
        sid = self.start()
        self.dj("send", sid, "hello", "--wait")
        doc = self.dj("sessions", "events", sid)
        types = [e["event"]["type"] for e in doc["events"]]
        self.assertEqual(types[0], "session_started")
        self.assertIn("turn_finished", types)
        self.assertEqual(doc["token"], doc["events"][-1]["token"])
        mid = doc["events"][2]["token"]
        rest = self.dj("sessions", "events", sid, "--from", mid)
        self.assertEqual([e["token"] for e in rest["events"]], [e["token"] for e in doc["events"][3:]])
        e = self.dj("sessions", "events", sid, "--from", "nonsense", code=5)
        self.assertEqual(e["error"]["name"], "DEXA_E_INVALID_RESUME_TOKEN")
        text = run("sessions", "events", sid, "--store", self.store)
        self.assertIn("  turn_finished  turn 1", text.stdout)
        self.assertIn("token " + doc["token"], text.stdout)
        # --follow: one event per line as they come, until SIGTERM
        f = subprocess.Popen([DEX, "sessions", "events", sid, "--follow", "--json", "--from",
                              doc["token"], "--store", self.store], cwd=ROOT, env=clean_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(f)
        lines = []
        threading.Thread(target=lambda: [lines.append(json.loads(x)) for x in f.stdout],
                         daemon=True).start()
        self.dj("send", sid, "again", "--wait")
        wait_until("the followed turn_finished",
                   lambda: any(x["event"]["type"] == "turn_finished" for x in list(lines)))
        self.assertEqual(lines[0]["event"]["type"], "queue_changed")
        f.send_signal(signal.SIGTERM)
        self.assertEqual(f.wait(timeout=LONG), 0)

    def test_graph(self):
        g = run_json(self, "graph")
        kinds = {}
        for n in g["nodes"]:
            kinds[n["kind"]] = kinds.get(n["kind"], 0) + 1
        self.assertEqual(kinds, {"step": 13, "rpc": 10, "channel": 3})
        self.assertEqual(g["flow_type"], "AIAgentSession")
        self.assertIn({"from": "AwaitToolApproval", "to": "CallSingleAttemptTool", "kind": "next"},
                      g["edges"])
        self.assertTrue(run("graph").stdout.startswith('digraph "AIAgentSession" {'))
        self.assertTrue(run("graph", "--format", "mermaid").stdout.startswith("flowchart TD\n"))
        sid = self.start()
        self.dj("send", sid, "/ask Who?", "--wait")
        g = self.dj("graph", "--session", sid)
        now = [(x["step"], x["state"]) for x in g["session"]["now"]]
        self.assertIn(("AwaitQuestionAnswer", "waiting"), now)
        self.assertEqual(g["session"]["visits"]["RunModel"], 1)
        e = self.dj("graph", "--session", "s-missing", code=4)
        self.assertEqual(e["error"]["name"], "DEXA_E_NOT_FOUND")

    def test_store_check_copy_vacuum(self):
        sid = self.start()
        self.dj("send", sid, "hello", "--wait")
        self.dj("send", sid, "/wait 600 tea", "--wait")
        r = run_json(self, "store", "check", self.store)
        self.assertTrue(r["ok"])
        self.assertEqual(r["sessions"], 1)
        dst = os.path.join(self.tmp, "copy.db")
        r = run_json(self, "store", "copy", self.store, dst)
        self.assertEqual(r["sessions"], 1)
        self.assertGreater(r["events"], 5)
        a = self.dj("sessions", "show", sid)
        b = run_json(self, "sessions", "show", sid, "--store", dst)
        self.assertEqual(a, b)
        e = run_json(self, "store", "copy", self.store, dst, code=5)
        self.assertEqual(e["error"]["name"], "DEXA_E_ALREADY_EXISTS")
        r = run_json(self, "store", "vacuum", dst)
        self.assertGreater(r["bytes_before"], 0)
        # the configured store is the default
        r = run_json(self, "store", "check", env=clean_env(DEX_AGENT_STORE=dst))
        self.assertEqual(r["sessions"], 1)
        # damage: an attribute that is not JSON
        db = sqlite3.connect(dst)
        db.execute("UPDATE session_data SET value = 'broken' WHERE kind = 0 AND key = CAST('AgentTurn' AS BLOB)")
        db.commit()
        db.close()
        r = run("store", "check", dst, "--json")
        self.assertEqual(r.returncode, 6, r.stderr)
        rep = json.loads(r.stdout)
        self.assertFalse(rep["ok"])
        self.assertEqual(rep["problems"][0]["problem"], "attribute AgentTurn is not JSON")
        r = run("store", "check", dst)
        self.assertEqual(r.returncode, 6)
        self.assertIn("problem in %s: attribute AgentTurn is not JSON" % sid, r.stdout)

    def test_a_store_password_is_never_printed(self):
        # An unreachable PostgreSQL store: the error names it, never its password.
        for uri in ("postgresql://app:pw-secret-1@/agents?host=/nonexistent-dir",
                    "host=/nonexistent-dir dbname=agents user=app password=pw-secret-1"):
            for args in (("sessions", "list"), ("store", "check")):
                r = run(*args, "--store", uri)
                self.assertNotEqual(r.returncode, 0, args)
                self.assertIn("cannot connect to PostgreSQL", r.stderr, r.stderr)
                self.assertNotIn("pw-secret-1", r.stdout + r.stderr)

    def test_configuration_file_and_environment(self):
        cfg = os.path.join(self.tmp, "dexagents.json")
        with open(cfg, "w") as f:
            json.dump({"model": "mock/dex-mini", "models": ["mock/dex"], "systemPrompt": "Be brief.",
                       "store": self.store, "threads": 2, "contextTokens": 0}, f)
        env = clean_env(DEX_AGENT_CONFIG=cfg)
        sid = run_json(self, "sessions", "start", env=env)["session_id"]
        self.assertEqual(run_json(self, "sessions", "show", sid, env=env)["session"]["model"], "mock/dex-mini")
        # --config names the file too; DEX_AGENT_MODEL goes over it
        env2 = clean_env(DEX_AGENT_MODEL="mock/dex")
        sid2 = run_json(self, "sessions", "start", "--config", cfg, env=env2)["session_id"]
        self.assertEqual(run_json(self, "sessions", "show", sid2, "--config", cfg, env=env2)["session"]["model"], "mock/dex")
        # the file's store was used by both
        ids = [s["session_id"] for s in self.dj("sessions", "list")["sessions"]]
        self.assertEqual(sorted(ids), sorted([sid, sid2]))
        # an unknown key, a bad variable: configuration errors (3)
        with open(cfg, "w") as f:
            json.dump({"modle": "x"}, f)
        r = run("sessions", "list", "--config", cfg)
        self.assertEqual(r.returncode, 3)
        self.assertIn("modle: unknown key", r.stderr)
        r = run("sessions", "list", "--store", self.store, env=clean_env(DEX_AGENT_THREADS="lots"))
        self.assertEqual(r.returncode, 3)
        r = run("sessions", "list", "--config", os.path.join(self.tmp, "missing.json"))
        self.assertEqual(r.returncode, 3)
        r = run("sessions", "list", "--store", self.store, env=clean_env(DEX_AGENT_MODEL="nope/x"))
        self.assertEqual(r.returncode, 3)
        self.assertIn("model nope/x", r.stderr)


class ChatTest(Base):
    SCRIPT = ('hello\n/tool send_note {"text":"hi"}\n:approve\n/ask Your name?\n:answer Ada\n'
              '/wait 600 tea\n:stop\n/wait 600 tea\nsteered in\n:steer\n:graph\n')

    def test_piped_chat_every_feature(self):
        r = run("chat", "--store", self.store, input=self.SCRIPT)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertNotIn("\x1b[", out)  # no colours into a pipe
        for want in ["dex> Local demo response: hello",
                     '  -> tool call send_note {"text":"hi"} (demo-t2r1c1) [write]',
                     '  ? approve send_note {"text":"hi"}',
                     "  <- tool send_note: ok",
                     "  ? Your name?  (:answer TEXT)",
                     "dex> Tool ask_user (ok): Ada",
                     "  (waiting 600 s: tea;",
                     "(turn stopped)",
                     "  (queued as m6:",
                     "(turn steered)",
                     "dex> Local demo response: steered in",
                     "  now: AwaitUserMessage (waiting)"]:
            self.assertIn(want, out)
        # each answer once: streamed deltas are not printed again
        self.assertEqual(out.count("Local demo response: hello"), 1)
        self.assertLess(out.index("  ? approve send_note"), out.index("you> :approve"))
        self.assertLess(out.index("(waiting 600 s: tea"), out.index("you> :stop"))
        sid = out.split()[1]
        r = run("chat", "--store", self.store, "--resume", sid, input="/model\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("resumed " + sid, r.stdout)
        self.assertIn("dex> Local demo response: steered in", r.stdout)
        self.assertIn("dex> mock/dex", r.stdout)
        r = run("chat", "--store", self.store, "--resume", "s-missing", input="")
        self.assertEqual(r.returncode, 4)
        self.assertIn("DEXA_E_NOT_FOUND", r.stderr)

    def test_chat_on_a_terminal_reads_input_while_a_timer_runs(self):
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(ROOT)
            os.execve(DEX, [DEX, "chat", "--store", self.store], clean_env(TERM="xterm"))
        out = bytearray()

        def read_for(what, since=0):
            def got():
                r, _, _ = select.select([fd], [], [], 0.2)
                if r:
                    try:
                        out.extend(os.read(fd, 65536))
                    except OSError:
                        pass
                return what.encode() in out[since:]
            wait_until(repr(what), got)

        def type_line(text):
            os.write(fd, text.encode() + b"\n")

        try:
            read_for("you>")
            type_line("/wait 600 tea")
            read_for("(waiting 600 s: tea")
            # while the timer is waited for: a message is queued, :steer takes it
            type_line("next one")
            read_for("(queued as m2")
            type_line(":steer")
            read_for("Local demo response: next one")
            mark = len(out)
            type_line("/wait 600 tea")
            read_for("(waiting 600 s: tea", mark)
            type_line(":stop")
            read_for("(turn stopped)", mark)
            self.assertIn(b"\x1b[", out)  # colours on a terminal
            type_line(":quit")
            _, status = os.waitpid(pid, 0)
            pid = 0
            self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        finally:
            if pid:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            os.close(fd)


    def test_chat_with_an_mcp_server(self):
        # --mcp-config: the server's tools are the session's; a read runs at once
        # through the MCP client, and the server saw the call.
        log = os.path.join(self.tmp, "fake.log")
        cfg = os.path.join(self.tmp, "mcp.json")
        with open(cfg, "w") as f:
            json.dump({"mcpServers": {"fake": {
                "command": "python3",
                "args": [os.path.join(ROOT, "test", "mcp", "_fake_server.py"), "stdio", "modern"],
                "env": {"FAKE_LOG": log}, "trustAnnotations": True}}}, f)
        r = run("chat", "--store", self.store, "--mcp-config", cfg,
                input='/tool fake__echo {"text":"over MCP"}\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("  <- tool fake__echo: ok", r.stdout)
        self.assertIn("echo: over MCP", r.stdout)
        with open(log) as f:
            self.assertIn("recv tools/call", f.read())
        r = run("chat", "--store", self.store, "--mcp-config", os.path.join(self.tmp, "none.json"),
                input="")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)


class FakeSlack:
    """chat.postMessage on 127.0.0.1, a free port. Each post is held until
    release() so a test can act while it is in flight."""

    def __init__(self):
        self.posts = []
        self.received = threading.Event()
        self.released = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.posts.append((self.path, self.headers.get("Authorization"), body))
                outer.received.set()
                outer.released.wait(LONG)
                if self.headers.get("Authorization") != "Bearer " + TOKEN:
                    reply = {"ok": False, "error": "invalid_auth"}
                else:
                    reply = {"ok": True, "channel": body["channel"], "ts": "1710000000.000200"}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


class WorkerTest(Base):
    def connectors(self, port):
        path = os.path.join(self.tmp, "connectors.json")
        with open(path, "w") as f:
            json.dump({"connections": {"support-slack": {
                "type": "slack", "tokenEnv": "TEST_SLACK_TOKEN",
                "baseUrl": "http://127.0.0.1:%d/api" % port}}}, f)
        return path

    def worker(self, env):
        """A worker, once it runs (its signals are taken from then on);
        w.log holds what it said so far."""
        w = subprocess.Popen([DEX, "worker", "--threads", "2", "--store", self.store], cwd=ROOT,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(w)
        w.log = []
        threading.Thread(target=lambda: [w.log.append(x) for x in w.stderr], daemon=True).start()
        wait_until("the worker", lambda: any("threads on" in x for x in list(w.log)) or w.poll() is not None)
        return w

    def test_worker_drains_a_slack_post_in_flight(self):
        slack = FakeSlack()
        try:
            env = clean_env(DEX_CONNECTOR_CONFIG_FILE=self.connectors(slack.port),
                            TEST_SLACK_TOKEN=TOKEN)
            w = self.worker(env)
            sid = self.start()
            args = {"channelId": "C0123456789", "threadTimestamp": "1710000000.000100",
                    "text": "Hello from Dex"}
            self.dj("send", sid, "/tool slack_post_thread_reply " + json.dumps(args))
            wait_until("the approval", lambda: self.show(sid)["pending"])
            p = self.show(sid)["pending"][0]
            self.assertEqual((p["kind"], p["name"], p["effect"]), ("approval", "slack_post_thread_reply", "write"))
            self.assertEqual(slack.posts, [])  # waits for Approve
            self.dj("approve", sid)
            self.assertTrue(slack.received.wait(LONG))
            w.send_signal(signal.SIGTERM)  # while the post is in flight
            time.sleep(0.3)
            self.assertIsNone(w.poll())  # draining: it waits for the running Step
            slack.released.set()
            self.assertEqual(w.wait(timeout=LONG), 0)
            wait_until("its last words", lambda: any("drained" in x for x in list(w.log)))
            err = "".join(w.log)
            self.assertIn("Slack connection support-slack", err)
            self.assertIn("draining", err)
            self.assertIn("drained", err)
            self.assertNotIn("SECRET", err)
            # the post ran once, its result is recorded; a new worker finishes the turn
            self.assertEqual(len(slack.posts), 1)
            path, auth, body = slack.posts[0]
            self.assertEqual((path, auth), ("/api/chat.postMessage", "Bearer " + TOKEN))
            self.assertEqual((body["channel"], body["thread_ts"], body["text"]),
                             ("C0123456789", "1710000000.000100", "Hello from Dex"))
            w2 = self.worker(env)
            wait_until("the answer", lambda: (self.last_model_text(sid) or "").startswith(
                "Tool slack_post_thread_reply (ok): Posted the reply"))
            w2.send_signal(signal.SIGTERM)
            self.assertEqual(w2.wait(timeout=LONG), 0)
            for out in (json.dumps(self.show(sid)), json.dumps(self.dj("sessions", "events", sid))):
                self.assertNotIn("SECRET", out)
            self.assertEqual(len(slack.posts), 1)
        finally:
            slack.close()

    def test_connector_configuration_at_start(self):
        # no variable, no file: no Slack tools, said once
        r = run("send", self.start(), "hi", "--wait", "--store", self.store)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr.count("no Slack tools"), 1)
        env = clean_env(DEX_CONNECTOR_CONFIG_FILE=os.path.join(self.tmp, "none.json"))
        r = run("graph", "--session", "x", "--store", self.store, env=env)  # runs no Step: not opened
        self.assertNotIn("Slack", r.stderr)
        w = self.worker(env)
        w.send_signal(signal.SIGTERM)
        self.assertEqual(w.wait(timeout=LONG), 0)
        self.assertIn("no Slack tools: the connector configuration file", "".join(w.log))
        # an incomplete file stops the start with a clear error
        bad = os.path.join(self.tmp, "bad.json")
        for doc, why in [({"connections": {"support-slack": {"type": "slack"}}}, "needs token or tokenEnv"),
                         ({"connections": {"other": {"type": "slack", "token": TOKEN}}},
                          'no connection "support-slack"'),
                         ({"connections": {"support-slack": {"type": "slack", "tokenEnv": "UNSET_VAR_X"}}},
                          "UNSET_VAR_X is not set")]:
            with open(bad, "w") as f:
                json.dump(doc, f)
            r = run("worker", "--store", self.store, env=clean_env(DEX_CONNECTOR_CONFIG_FILE=bad))
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertIn(why, r.stderr)
            self.assertNotIn("SECRET", r.stderr)
            # the AI Agent example opens the same connection the same way
            example = os.path.join(ROOT, "examples", "ai-agent", "ai-agent")
            if os.access(example, os.X_OK):
                r = subprocess.run([example], env=clean_env(DEX_CONNECTOR_CONFIG_FILE=bad,
                                                            DEX_AGENT_STORE=self.store,
                                                            DEX_AGENT_LISTEN="127.0.0.1:0"),
                                   capture_output=True, text=True, timeout=LONG, cwd=ROOT)
                self.assertEqual(r.returncode, 1, r.stdout)
                self.assertIn(why, r.stderr)


class ServeTest(Base):
    def test_serve_the_page_and_the_routes(self):
        s = subprocess.Popen([DEX, "serve", "--listen", "127.0.0.1:0", "--store", self.store,
                              "--ui", "examples/ai-agent/ui"], cwd=ROOT,
                             env=clean_env(DEX_AGENT_SESSION_KEY="test-key"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(s)
        line = wait_until("the address", lambda: (lambda l: l if "open http" in l else None)(s.stdout.readline()))
        base = line.split("open ")[1].strip().rstrip("/")
        page = urllib.request.urlopen(base + "/", timeout=LONG)
        self.assertEqual(page.status, 200)
        self.assertIn("text/html", page.headers["Content-Type"])
        settings = json.load(urllib.request.urlopen(base + "/settings", timeout=LONG))
        self.assertEqual(settings["models"], ["mock/dex", "mock/dex-mini"])

        def call(method, path, body=None, token=None):
            req = urllib.request.Request(base + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json",
                                                  **({"X-Agent-Session-Token": token} if token else {})})
            return json.load(urllib.request.urlopen(req, timeout=LONG))
        started = call("POST", "/sessions", {})
        sid, token = started["session_id"], started["session_token"]
        call("POST", "/sessions/%s/messages" % sid, {"text": "hello"}, token)
        wait_until("the answer", lambda: any(m.get("text") == "Local demo response: hello"
                                             for m in call("GET", "/sessions/" + sid, token=token)["messages"]))
        g = call("GET", "/sessions/%s/graph" % sid, token=token)
        self.assertEqual(g["session"]["session_id"], sid)
        # the same session, from the command
        self.assertEqual(self.show(sid)["session_id"], sid)
        s.send_signal(signal.SIGTERM)
        self.assertEqual(s.wait(timeout=LONG), 0)

    def serve(self, *args, env=None, config=None):
        """Starts serve on a free port; returns (process, base URL, port)."""
        extra = ["--config", config] if config else []
        s = subprocess.Popen([DEX, "serve", "--listen", "127.0.0.1:0", "--store", self.store,
                              "--ui", "examples/ai-agent/ui"] + extra + list(args), cwd=ROOT,
                             env=env or clean_env(DEX_AGENT_SESSION_KEY="test-key"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(s)
        line = wait_until("the address", lambda: (lambda l: l if "open http" in l or not l else None)(s.stdout.readline()))
        self.assertIn("open http", line, s.stderr.read() if s.poll() is not None else "")
        base = line.split("open ")[1].strip().rstrip("/")
        return s, base, int(base.split(":")[2].split("/")[0])

    def raw(self, port, src="127.0.0.1"):
        c = socket.socket()
        c.bind((src, 0))
        c.connect(("127.0.0.1", port))
        return c

    def get(self, port, path, host=None):
        """GET with the given Host header: (status, headers, body)."""
        import http.client
        h = http.client.HTTPConnection("127.0.0.1", port, timeout=LONG)
        h.putrequest("GET", path, skip_host=True)
        h.putheader("Host", host or "127.0.0.1:%d" % port)
        h.endheaders()
        r = h.getresponse()
        out = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        h.close()
        return out

    @staticmethod
    def closed_within(c, seconds):
        c.settimeout(seconds)
        try:
            while c.recv(4096):
                pass
            return True
        except (socket.timeout, TimeoutError):
            return False
        except OSError:
            return True

    def test_serve_is_hardened(self):
        cfg = os.path.join(self.tmp, "serve.json")
        with open(cfg, "w") as f:
            json.dump({"requestTimeoutMs": 1500, "maxConnections": 200}, f)
        s, base, port = self.serve("--max-connections-per-client", "8", "--idle-timeout", "60",
                                   "--allowed-hosts", "agent.example", config=cfg)
        P = "/products/ai-agent"
        # the page's files: the security headers, every one
        for path in [P + "/", P + "/app.js", P + "/style.css", P + "/missing.js"]:
            st, h, _ = self.get(port, path)
            self.assertEqual(st, 404 if "missing" in path else 200, path)
            csp = h.get("content-security-policy", "")
            self.assertIn("frame-ancestors 'none'", csp, path)
            self.assertIn("default-src 'none'", csp, path)
            self.assertIn("script-src 'self'", csp, path)
            self.assertEqual(h.get("x-content-type-options"), "nosniff", path)
            self.assertEqual(h.get("x-frame-options"), "DENY", path)
        # a foreign Host (DNS rebinding) gets 421 on the page and the routes; an allowed one works
        for path in [P + "/", P + "/app.js", P + "/settings", "/"]:
            self.assertEqual(self.get(port, path, host="evil.example:%d" % port)[0], 421, path)
        self.assertEqual(self.get(port, P + "/settings", host="agent.example:%d" % port)[0], 200)
        self.assertEqual(self.get(port, P + "/settings", host="localhost:%d" % port)[0], 200)
        # 60 silent connections of one client: it keeps 8, the rest are closed at
        # once, and another client is answered meanwhile
        idle = [self.raw(port, "127.0.0.2") for _ in range(60)]
        refused = sum(1 for c in idle[8:] if self.closed_within(c, 10))
        self.assertGreaterEqual(refused, 52 - 1)
        t0 = time.monotonic()
        self.assertEqual(self.get(port, P + "/settings")[0], 200)
        self.assertLess(time.monotonic() - t0, 30)
        # headers that trickle in are cut off after requestTimeoutMs (the idle
        # timeout, 60 s, would never end them: each byte resets it)
        slow = self.raw(port, "127.0.0.3")
        slow.sendall(b"GET " + P.encode() + b"/settings HTTP/1.1\r\nX-Slow: ")
        t0 = time.monotonic()
        cut = None
        while time.monotonic() - t0 < 30:
            try:
                slow.sendall(b"a")
            except OSError:
                cut = time.monotonic() - t0
                break
            if self.closed_within(slow, 0.1):
                cut = time.monotonic() - t0
                break
        self.assertIsNotNone(cut, "trickling headers were not cut off")
        self.assertGreater(cut, 1.0)
        # the held silent ones are closed by the header timeout too
        self.assertEqual(sum(1 for c in idle[:8] if self.closed_within(c, LONG)), 8)
        for c in idle + [slow]:
            c.close()
        s.send_signal(signal.SIGTERM)
        self.assertEqual(s.wait(timeout=LONG), 0)

    def test_serve_options_are_checked(self):
        r = run("serve", "--store", self.store, "--max-connections", "0")
        self.assertEqual(r.returncode, 2)
        cfg = os.path.join(self.tmp, "bad.json")
        with open(cfg, "w") as f:
            json.dump({"idleTimeout": "soon"}, f)
        r = run("serve", "--store", self.store, "--config", cfg)
        self.assertEqual(r.returncode, 3)
        self.assertIn("idleTimeout", r.stderr)


class ServeSlackTest(Base):
    """serve offers slack_post_thread_reply when DEX_CONNECTOR_CONFIG_FILE
    names a support-slack connection (FakeSlack on 127.0.0.1), through the
    HTTP routes: the call waits for Approve, then posts once; without the
    variable the tool is not offered."""

    P = "/products/ai-agent"
    ARGS = {"channelId": "C1", "threadTimestamp": "1.2", "text": "hi"}

    def serve(self, env):
        s = subprocess.Popen([DEX, "serve", "--listen", "127.0.0.1:0", "--store", self.store,
                              "--ui", "examples/ai-agent/ui"], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(s)  # killed in tearDown, whatever happens here
        s.log = []
        threading.Thread(target=lambda: [s.log.append(x) for x in s.stderr], daemon=True).start()
        line = wait_until("the address", lambda: (lambda l: l if "open http" in l or not l else None)(
            s.stdout.readline()))
        self.assertIn("open http://127.0.0.1:", line, "".join(s.log))
        threading.Thread(target=lambda: [None for _ in s.stdout], daemon=True).start()  # never blocks
        self.port = int(line.split("open http://127.0.0.1:")[1].split("/")[0])
        return s

    def call(self, method, path, body=None, token=None):
        """A route under P, its Host header the listen address (urllib's)."""
        req = urllib.request.Request("http://127.0.0.1:%d%s%s" % (self.port, self.P, path), method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json",
                                              **({"X-Agent-Session-Token": token} if token else {})})
        with urllib.request.urlopen(req, timeout=LONG) as r:
            self.assertEqual(r.status, 200, path)
            return json.load(r)

    def start_and_send(self):
        started = self.call("POST", "/sessions", {})
        sid, tok = started["session_id"], started["session_token"]
        self.call("POST", "/sessions/%s/messages" % sid,
                  {"text": "/tool slack_post_thread_reply " + json.dumps(self.ARGS)}, tok)
        return sid, tok

    def snapshot(self, sid, tok):
        return self.call("GET", "/sessions/" + sid, token=tok)

    def tool_results(self, snap):
        return [m for m in snap["messages"] if m.get("role") == "tool"
                and m.get("name") == "slack_post_thread_reply"]

    def events_text(self, sid, tok):
        """The route's event stream (Server-Sent Events) from the oldest
        event up to the first turn_finished."""
        import http.client
        h = http.client.HTTPConnection("127.0.0.1", self.port, timeout=LONG)
        h.request("GET", "%s/sessions/%s/events" % (self.P, sid),
                  headers={"X-Agent-Session-Token": tok})
        r = h.getresponse()
        self.assertEqual(r.status, 200)
        got = []
        end = time.monotonic() + LONG
        while time.monotonic() < end:
            line = r.fp.readline().decode("utf-8", "replace")
            if not line:
                break
            got.append(line)
            if line.startswith("data:") and '"turn_finished"' in line:
                break
        h.close()
        text = "".join(got)
        self.assertIn('"turn_finished"', text)
        return text

    def test_serve_offers_the_slack_tool_when_configured(self):
        slack = FakeSlack()
        self.addCleanup(slack.close)  # after tearDown has killed serve
        cfg = os.path.join(self.tmp, "connectors.json")
        with open(cfg, "w") as f:
            json.dump({"connections": {"support-slack": {
                "type": "slack", "tokenEnv": "TEST_SLACK_TOKEN",
                "baseUrl": "http://127.0.0.1:%d/api" % slack.port}}}, f)
        s = self.serve(clean_env(DEX_AGENT_SESSION_KEY="test-key", DEX_CONNECTOR_CONFIG_FILE=cfg,
                                 TEST_SLACK_TOKEN=TOKEN))
        sid, tok = self.start_and_send()
        # the call waits for Approve: pending, and nothing posted
        pending = wait_until("the approval", lambda: self.snapshot(sid, tok)["pending"])
        self.assertEqual(len(pending), 1)
        p = pending[0]
        self.assertEqual((p["kind"], p["name"], p["effect"], p["source"]),
                         ("approval", "slack_post_thread_reply", "write", "support-slack"))
        self.assertEqual(p["arguments"], self.ARGS)
        time.sleep(0.5)
        self.assertEqual(slack.posts, [])
        self.assertFalse(self.tool_results(self.snapshot(sid, tok)))
        self.assertEqual(self.call("POST", "/sessions/%s/approvals" % sid,
                                   {"call_id": p["call_id"], "decision": "approve"}, tok),
                         {"accepted": True})
        self.assertTrue(slack.received.wait(LONG), "FakeSlack got no post")
        slack.released.set()
        done = wait_until("the tool result", lambda: (lambda snap: snap if self.tool_results(snap)
                                                      and snap["turn"]["status"] == "idle" else None)(
            self.snapshot(sid, tok)))
        [result] = self.tool_results(done)
        self.assertEqual((result["call_id"], result["status"]), (p["call_id"], "ok"), result)
        self.assertIn("Posted the reply in thread 1.2 of C1", result["output"])
        self.assertEqual(done["pending"], [])
        self.assertTrue(done["messages"][-1]["text"].startswith(
            "Tool slack_post_thread_reply (ok): Posted the reply"), done["messages"][-1])
        # exactly one chat.postMessage, in the thread, with the bearer token
        self.assertEqual(len(slack.posts), 1, slack.posts)
        path, auth, body = slack.posts[0]
        self.assertEqual((path, auth), ("/api/chat.postMessage", "Bearer " + TOKEN))
        self.assertEqual((body["channel"], body["thread_ts"], body["text"]), ("C1", "1.2", "hi"))
        # the token is never shown: not in the snapshot, the events, serve's output
        for out in (json.dumps(done), self.events_text(sid, tok),
                    json.dumps(self.dj("sessions", "events", sid))):
            self.assertNotIn(TOKEN, out)
            self.assertNotIn("SECRET", out)
        self.assertIn("Slack connection support-slack", "".join(s.log))
        s.send_signal(signal.SIGTERM)
        self.assertEqual(s.wait(timeout=LONG), 0)
        self.assertNotIn("SECRET", "".join(s.log))
        self.assertEqual(len(slack.posts), 1)

    def test_serve_without_a_connector_file_offers_no_slack_tool(self):
        slack = FakeSlack()  # listening, never called
        self.addCleanup(slack.close)
        slack.released.set()
        s = self.serve(clean_env(DEX_AGENT_SESSION_KEY="test-key", TEST_SLACK_TOKEN=TOKEN))
        sid, tok = self.start_and_send()
        done = wait_until("the tool result", lambda: (lambda snap: snap if self.tool_results(snap)
                                                      and snap["turn"]["status"] == "idle" else None)(
            self.snapshot(sid, tok)))
        [result] = self.tool_results(done)
        self.assertEqual(result["status"], "error", result)
        self.assertIn('unknown tool "slack_post_thread_reply": it is not offered', result["output"])
        self.assertEqual(done["pending"], [])  # no approval asked for
        self.assertEqual(slack.posts, [])
        self.assertIn("no Slack tools: DEX_CONNECTOR_CONFIG_FILE is not set", "".join(s.log))
        s.send_signal(signal.SIGTERM)
        self.assertEqual(s.wait(timeout=LONG), 0)


def main():
    if not os.access(DEX, os.X_OK):
        print("FAIL dexagents built: %s is missing (make cli)" % DEX)
        print("0 passed, 1 failed")
        return 1
    result = unittest.main(exit=False, verbosity=2).result
    p = result.testsRun - len(result.failures) - len(result.errors) - len(result.skipped)
    f, s = len(result.failures) + len(result.errors), len(result.skipped)
    sys.stdout.flush()
    print("%d passed, %d failed%s" % (p, f, ", %d skipped" % s if s else ""))
    return 1 if f else 0


if __name__ == "__main__":
    sys.exit(main())
