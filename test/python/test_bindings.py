#!/usr/bin/env python3
# test-needs: sqlite
"""The Python bindings (bindings/python, cffi ABI mode) end to end: an agent
with Python tools on the demo model in the embedded runtime with worker
threads, every client operation, errors as DexaError, events with resume
tokens. Runs under pytest when installed, else unittest; as a script it prints
"N passed, N failed[, N skipped]" for test/run. The library is
$DEXAGENTS_LIBRARY, else $LIBOUT/libdexagents.so.1 (default lib/)."""
import json
import os
import re
import sys
import threading
import time
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
if "DEXAGENTS_LIBRARY" not in os.environ:
    os.environ["DEXAGENTS_LIBRARY"] = os.path.join(
        ROOT, os.environ.get("LIBOUT", "lib"), "libdexagents.so.1")
# A sanitizer build of the library cannot be loaded into python3 (no ASan runtime).
SANITIZED = bool(os.environ.get("SAN_FLAGS"))
import dexagents as dx  # loads the library on first use only

WAIT = 20.0  # seconds


def make_tools(log):
    """A WRITE tool that needs approval, a READ tool that raises, a READ tool
    that records its thread."""

    @dx.tool(effect=dx.WRITE, approval=True,
             parameters={"type": "object", "properties": {"path": {"type": "string"}},
                         "required": ["path"]})
    def save_file(args, call):
        "Saves a file (a write that needs approval)."
        log.append(("save_file", args, call.call_id, call.idempotency_key, call.attempt,
                    threading.get_ident()))
        return "saved " + args["path"]

    @dx.tool(description="Always fails.")
    def explode(args, call):
        log.append(("explode", args, call.call_id, None, call.attempt, threading.get_ident()))
        raise ValueError("kaboom " + json.dumps(args))

    @dx.tool(effect="read")
    def lookup(args, call):
        "Looks a key up; returns structured content."
        log.append(("lookup", args, call.call_id, None, call.attempt, threading.get_ident()))
        time.sleep(0.05)
        return {"key": args.get("key"), "value": 42}

    return [save_file, explode, lookup]


@unittest.skipIf(SANITIZED, "sanitizer build: the library cannot load into python3")
class BindingsTest(unittest.TestCase):
    def setUp(self):
        self.log = []
        self.agent = dx.Agent("You are a test agent.", models=["mock/dex", "mock/dex-mini"],
                              tools=make_tools(self.log), builtin_tools=dx.BUILTIN_ALL,
                              plan_mode=True, tool_max_attempts=2)
        self.rt = dx.Runtime(self.agent, store=":memory:", workers=3)

    def tearDown(self):
        self.rt.close()

    def idle(self, sid):
        self.rt.wait_idle(sid, WAIT)
        return self.rt.snapshot(sid)

    def last_model_text(self, snap):
        msgs = [m for m in snap["messages"] if m["role"] == "model" and "text" in m]
        return msgs[-1]["text"] if msgs else None

    def types(self, sid, token=""):
        return [e["type"] for e in self.rt.events(sid, token) if not e.live]

    def test_library_and_errors(self):
        self.assertEqual(dx.version(), "1.1.0")
        self.assertEqual(dx.error_name(dx.DEXA_E_NOT_FOUND), "DEXA_E_NOT_FOUND")
        self.assertEqual(dx.error_class(dx.DEXA_E_TIMEOUT), 2)
        with self.assertRaises(dx.DexaError) as cm:
            self.rt.snapshot("no-such-session")
        e = cm.exception
        self.assertEqual((e.code, e.name), (-106, "DEXA_E_NOT_FOUND"))
        self.assertIn("no such session", e.message)
        self.assertEqual(e.document["error"]["code"], -106)
        with self.assertRaises(dx.DexaError) as cm:
            self.rt.call(self.rt.start_session("s-err"), "no_such_rpc")
        self.assertEqual(cm.exception.name, "DEXA_E_UNKNOWN_RPC")
        with self.assertRaises(dx.DexaError) as cm:
            self.rt.send("s-err", "   ")
        self.assertEqual(cm.exception.code, dx.DEXA_E_EMPTY_MESSAGE)
        with self.assertRaises(dx.DexaError) as cm:
            self.rt.start_session("s-err")
        self.assertEqual(cm.exception.name, "DEXA_E_ALREADY_EXISTS")
        with self.assertRaises(dx.DexaError) as cm:
            self.rt.approve("s-err", "no-call")
        self.assertEqual(cm.exception.name, "DEXA_E_NOT_PENDING")
        self.assertIsNone(self.rt.snapshot("s-err").ended)
        self.assertEqual(self.rt.end_session("s-err", "test over")["reason"], "test over")
        with self.assertRaises(dx.SessionEndedError) as cm:
            self.rt.send("s-err", "late")
        self.assertEqual(cm.exception.code, dx.DEXA_E_SESSION_ENDED)
        self.assertEqual(self.rt.snapshot("s-err").ended["reason"], "test over")
        with self.assertRaises(dx.DexaError) as cm:
            dx.Agent("x", models=[])
        self.assertEqual(cm.exception.name, "DEXA_E_INVALID_ARG")
        self.assertTrue(cm.exception.message)

    def test_build_info_and_build_has(self):
        info = dx.build_info()
        self.assertEqual(info["version"], dx.version())
        for f in ("core", "runtime", "demo-models", "mcp-stdio"):
            self.assertIn(f, info["features"])
            self.assertTrue(dx.build_has(f))
        for f in info["features"]:
            self.assertTrue(dx.build_has(f))
        self.assertFalse(dx.build_has("no-such-feature"))
        self.assertEqual(info["options"]["WITH_SQLITE"], dx.build_has("sqlite"))
        self.assertIn("libcjson", info["libraries"])

    def test_cdef_matches_the_headers(self):
        """The hand-written cdef has the layout of the C headers (a C program
        compiled against include/ prints sizeof and every offsetof); a header
        struct may have grown at its end since."""
        import shutil
        import subprocess
        import tempfile
        cc = shutil.which(os.environ.get("CC", "cc"))
        if not cc:
            self.skipTest("no C compiler")
        structs = {
            "dexa_agent_def": "", "dexa_runtime_options": "", "dexa_model_vtable": "",
            "dexa_tool_source_vtable": "", "dexa_call": "", "dexa_harness_vtable": "",
            "dexa_model_usage": "", "dexa_wait_state": "",
        }
        lines = ["#include <dexagents/dexagents.h>", "#include <stdio.h>", "#include <stddef.h>",
                 "int main(void) {"]
        expected = []
        for name in structs:
            lines.append('printf("%%s %%zu\\n", "%s", sizeof(%s));' % (name, name))
            expected.append("%s %d" % (name, dx.ffi.sizeof(name)))
            for field, _ in dx.ffi.typeof(name).fields:
                lines.append('printf("%%s.%%s %%zu\\n", "%s", "%s", offsetof(%s, %s));'
                             % (name, field, name, field))
                expected.append("%s.%s %d" % (name, field, dx.ffi.offsetof(name, field)))
        lines.append("return 0; }")
        with tempfile.TemporaryDirectory() as d:
            src, exe = os.path.join(d, "layout.c"), os.path.join(d, "layout")
            with open(src, "w") as f:
                f.write("\n".join(lines))
            subprocess.run([cc, "-std=c11", "-I", os.path.join(ROOT, "include"), src, "-o", exe],
                           check=True)
            got = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
        # Every declared field sits where the header has it. A struct of the
        # headers may be longer (fields appended in a later release): the
        # library takes the shorter struct_size, so the sizes may differ
        # that way only.
        got_lines = got.split("\n")[:-1]
        self.assertEqual([l for l in got_lines if "." in l.split()[0]],
                         [l for l in expected if "." in l.split()[0]])
        for g, e in zip([l for l in got_lines if "." not in l.split()[0]],
                        [l for l in expected if "." not in l.split()[0]]):
            name, header_size = g.split()
            self.assertLessEqual(int(e.split()[1]), int(header_size), name)

    def test_ffi_backend(self):
        """The backend is the one asked for by DEXAGENTS_FFI (make check runs
        this suite under both), cffi by default where it can be imported; every
        function of the cdef resolves in the library through it."""
        want = os.environ.get("DEXAGENTS_FFI", "")
        try:
            import cffi  # noqa: F401
            have_cffi = True
        except ImportError:
            have_cffi = False
        self.assertEqual(dx._native.BACKEND, want or ("cffi" if have_cffi else "ctypes"))
        names = re.findall(r"\b(dexa_\w+)\s*\(", dx._cdef.CDEF)
        self.assertGreater(len(names), 90)
        for name in names:
            self.assertTrue(callable(getattr(dx.lib, name)), name)

    def test_ctypes_backend_matches_cffi(self):
        """The ctypes fallback parses the same cdef into the same layouts as
        cffi (when cffi is here), and its NULL, handles, gc and strings
        behave as the package relies on."""
        from dexagents import _ctffi
        ct = _ctffi.FFI()
        ct.cdef(dx._cdef.CDEF)
        try:
            import cffi
        except ImportError:
            cffi = None
        if cffi is not None:
            cf = cffi.FFI()
            cf.cdef(dx._cdef.CDEF)
            for name in ("dexa_agent_def", "dexa_runtime_options", "dexa_model_vtable",
                         "dexa_tool_source_vtable", "dexa_call", "dexa_harness_vtable",
                         "dexa_model_usage", "dexa_wait_state"):
                self.assertEqual(ct.sizeof(name), cf.sizeof(name), name)
                self.assertEqual([(f, ct.offsetof(name, f)) for f, _ in ct.typeof(name).fields],
                                 [(f, cf.offsetof(name, f)) for f, _ in cf.typeof(name).fields])
        self.assertTrue(ct.NULL == None and not ct.NULL)  # noqa: E711
        p = ct.new("char **")
        self.assertTrue(p[0] == ct.NULL)
        buf = ct.new("char[]", b"ab\0cd")
        self.assertEqual(ct.string(buf), b"ab")
        self.assertEqual(ct.unpack(buf, 5), b"ab\0cd")
        p[0] = buf
        self.assertTrue(p[0] != ct.NULL)
        self.assertEqual(ct.unpack(p[0], 5), b"ab\0cd")
        obj = object()
        h = ct.new_handle(obj)
        self.assertIs(ct.from_handle(h), obj)
        self.assertIs(ct.from_handle(h.value), obj)
        freed = []
        g = ct.gc(ct.new("size_t *"), freed.append)
        ct.release(g)
        ct.release(g)
        self.assertEqual(len(freed), 1)
        n = ct.new("size_t *", 7)
        self.assertEqual(n[0], 7)
        seen = []

        @ct.callback("int(void *, const char *, size_t, int64_t *)", error=-9)
        def cb(user, text, length, out):
            seen.append(ct.unpack(text, length))
            if length == 0:
                raise ValueError("no text")
            out[0] = length
            return 0
        cnt = ct.new("int64_t *")
        self.assertEqual(cb(None, b"xyz", 3, cnt), 0)
        self.assertEqual((seen, cnt[0]), ([b"xyz"], 3))
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(cb(None, b"", 0, cnt), -9)
        self.assertIn("no text", err.getvalue())
        s = ct.new("dexa_wait_state *")
        s.fired = ct.NULL
        s.now_ms = 5
        copy = ct.new("dexa_wait_state *")
        ct.memmove(copy, s, ct.sizeof("dexa_wait_state"))
        self.assertEqual(copy.now_ms, 5)

    def test_models(self):
        m = dx.Model.client("openai/gpt-4.1-mini", {"api_key": "sk-test", "timeout_ms": 1000})
        self.assertEqual(m.name, "openai/gpt-4.1-mini")
        with self.assertRaises(dx.DexaError) as cm:
            dx.Model.client("openai/x", {"no_such_option": 1})
        self.assertEqual(cm.exception.name, "DEXA_E_UNKNOWN_KEY")
        self.assertIn("no_such_option", cm.exception.message)
        with self.assertRaises(dx.DexaError) as cm:
            dx.Model.client("nosuchprovider/x")
        self.assertEqual(cm.exception.code, dx.DEXA_E_INVALID_ARG)
        cc = dx.Model.claude_code("claude-code/x", {"model": "sonnet", "allowed_tools": ["Read"]})
        self.assertEqual(cc.name, "claude-code/x")
        with self.assertRaises(dx.DexaError) as cm:
            dx.Model.claude_code("claude-code/x", {"env": {"ANTHROPIC_API_KEY": "sk"}})
        self.assertEqual(cm.exception.code, dx.DEXA_E_INVALID_ARG)
        sid = self.rt.start_session(model="mock/dex-mini")
        self.assertTrue(sid.startswith("s-"))
        self.rt.send(sid, "/model")
        self.assertIn("mock/dex-mini", self.last_model_text(self.idle(sid)))
        self.assertEqual(self.agent.describe()["flow_type"], "AgentSession")
        self.assertIn(sid, [s["session_id"] for s in self.rt.list_sessions()["sessions"]])

    def test_approved_write_tool_runs_once_on_a_worker(self):
        sid = self.rt.start_session("s-approve")
        self.rt.send(sid, '/tool save_file {"path": "notes.txt"}')
        snap = self.idle(sid)
        self.assertEqual(len(snap["pending"]), 1)
        p = snap["pending"][0]
        self.assertEqual((p["kind"], p["name"], p["effect"]), ("approval", "save_file", "write"))
        self.assertEqual(p["arguments"], {"path": "notes.txt"})
        self.assertEqual(self.log, [])  # nothing runs before the approval
        self.rt.approve(sid, p["call_id"], note="fine")
        snap = self.idle(sid)
        runs = [entry for entry in self.log if entry[0] == "save_file"]
        self.assertEqual(len(runs), 1)
        self.assertEqual(runs[0][1], {"path": "notes.txt"})
        self.assertEqual(runs[0][3], sid + ":" + p["call_id"])
        self.assertNotEqual(runs[0][5], threading.get_ident())  # a runtime worker thread
        self.assertEqual(snap["pending"], [])
        self.assertEqual(snap["turn"]["status"], "idle")
        tool_msgs = [m for m in snap["messages"] if m["role"] == "tool"]
        self.assertEqual((tool_msgs[-1]["status"], tool_msgs[-1]["output"]),
                         ("ok", "saved notes.txt"))
        self.assertEqual(self.last_model_text(snap), "Tool save_file (ok): saved notes.txt")
        with self.assertRaises(dx.DexaError) as cm:  # a second decision
            self.rt.reject(sid, p["call_id"])
        self.assertEqual(cm.exception.code, dx.DEXA_E_NOT_PENDING)
        self.assertEqual(len([e for e in self.log if e[0] == "save_file"]), 1)

    def test_rejected_write_tool_never_runs(self):
        sid = self.rt.start_session("s-reject")
        self.rt.send(sid, '/tool save_file {"path": "x"}')
        call_id = self.idle(sid)["pending"][0]["call_id"]
        self.rt.reject(sid, call_id, note="not now")
        snap = self.idle(sid)
        self.assertEqual(self.log, [])
        tool_msgs = [m for m in snap["messages"] if m["role"] == "tool"]
        self.assertEqual(tool_msgs[-1]["status"], "rejected")
        self.assertIn("not now", tool_msgs[-1]["output"])

    def test_raising_tool_is_a_tool_error(self):
        sid = self.rt.start_session("s-raise")
        self.rt.send(sid, '/tool explode {"a": 1}\n/tool lookup {"key": "k"}')
        snap = self.idle(sid)
        by_name = {m["name"]: m for m in snap["messages"] if m["role"] == "tool"}
        self.assertEqual(by_name["explode"]["status"], "error")
        self.assertIn("ValueError: kaboom", by_name["explode"]["output"])
        self.assertEqual(by_name["lookup"]["status"], "ok")
        self.assertEqual(json.loads(by_name["lookup"]["output"]), {"key": "k", "value": 42})
        self.assertEqual(snap["turn"]["status"], "idle")
        # a tool-level error is a result, not a failed attempt: it is not retried
        self.assertEqual(len([e for e in self.log if e[0] == "explode"]), 1)

    def test_parallel_tool_calls_from_several_workers(self):
        sid = self.rt.start_session("s-par")
        self.rt.send(sid, "\n".join('/tool lookup {"key": "k%d"}' % i for i in range(6)))
        snap = self.idle(sid)
        keys = sorted(e[1]["key"] for e in self.log if e[0] == "lookup")
        self.assertEqual(keys, ["k%d" % i for i in range(6)])
        self.assertEqual(len([m for m in snap["messages"] if m["role"] == "tool"]), 6)

    def test_question_and_answer(self):
        sid = self.rt.start_session("s-ask")
        self.rt.send(sid, "/ask What colour?")
        p = self.idle(sid)["pending"][0]
        self.assertEqual((p["kind"], p["prompt"]), ("question", "What colour?"))
        with self.assertRaises(dx.DexaError) as cm:
            self.rt.answer(sid, p["call_id"], "  ")
        self.assertEqual(cm.exception.name, "DEXA_E_EMPTY_MESSAGE")
        self.rt.answer(sid, p["call_id"], "blue")
        snap = self.idle(sid)
        self.assertEqual(snap["pending"], [])
        self.assertIn("blue", self.last_model_text(snap))

    def test_steer_stop_and_delete(self):
        sid = self.rt.start_session("s-steer")
        self.rt.send(sid, "/wait 600 coffee")
        snap = self.idle(sid)
        self.assertEqual(snap["turn"]["status"], "running")
        self.assertEqual(snap["pending"][0]["kind"], "timer")
        # stop
        self.rt.stop_turn(sid)
        snap = self.idle(sid)
        self.assertEqual(snap["turn"]["status"], "cancelled")
        with self.assertRaises(dx.DexaError) as cm:
            self.rt.stop_turn(sid)
        self.assertEqual(cm.exception.name, "DEXA_E_BAD_STATE")
        # steer: a queued message interrupts the waiting turn
        self.rt.send(sid, "/wait 600 tea")
        self.idle(sid)
        queued = self.rt.send(sid, "steered hello")
        extra = self.rt.send(sid, "to be deleted")
        self.assertTrue(queued["queued"])
        self.assertEqual([q["id"] for q in self.rt.snapshot(sid)["queue"]],
                         [queued["message_id"], extra["message_id"]])
        self.rt.delete(sid, extra["message_id"])
        with self.assertRaises(dx.DexaError) as cm:
            self.rt.delete(sid, extra["message_id"])
        self.assertEqual(cm.exception.code, dx.DEXA_E_NOT_FOUND)
        self.rt.steer(sid, queued["message_id"])
        snap = self.idle(sid)
        self.assertEqual(snap["turn"]["status"], "idle")
        self.assertIn("steered hello", self.last_model_text(snap))
        self.assertEqual(snap["queue"], [])
        types = self.types(sid)
        self.assertIn("turn_cancelled", types)
        self.assertEqual(types.count("turn_control"), 2)

    def test_plan_and_execute(self):
        sid = self.rt.start_session("s-plan")
        self.rt.send(sid, "Plan a picnic", plan_mode=True)
        plan = self.idle(sid)["plan"]
        self.assertEqual(plan["status"], "draft")
        self.assertEqual(len(plan["todos"]), 2)
        with self.assertRaises(dx.DexaError) as cm:
            self.rt.execute_plan(sid, plan["revision"] + 5)
        self.assertEqual(cm.exception.name, "DEXA_E_STALE_REVISION")
        r = self.rt.execute_plan(sid, plan["revision"])
        self.assertEqual(r["revision"], plan["revision"])
        snap = self.idle(sid)
        self.assertEqual(snap["turn"]["mode"], "executing")
        self.assertIn("plan_updated", self.types(sid))

    def test_events_resume_and_older_messages(self):
        sid = self.rt.start_session("s-events")
        for i in range(3):
            self.rt.send(sid, "message %d" % i)
            self.idle(sid)
        evs = list(self.rt.events(sid))
        self.assertEqual(evs[0]["type"], "session_started")
        self.assertEqual([e["type"] for e in evs if not e.live].count("turn_finished"), 3)
        self.assertTrue(all(e.token for e in evs))
        # resume after the fifth event: exactly the rest
        rest = list(self.rt.events(sid, evs[4].token))
        self.assertEqual([e.token for e in rest], [e.token for e in evs[5:]])
        # the snapshot's resume token is the newest event: nothing after it
        snap = self.rt.snapshot(sid)
        self.assertEqual([e for e in self.rt.events(sid, snap["resume_token"])
                          if not e.live], [])
        # a follower sees an event that arrives later
        got = []

        def follow():
            for ev in self.rt.events(sid, snap["resume_token"], follow=True, timeout=WAIT):
                got.append(ev["type"])
                if ev["type"] == "turn_finished":
                    return
        t = threading.Thread(target=follow)
        t.start()
        self.rt.send(sid, "later")
        t.join(WAIT)
        self.assertFalse(t.is_alive())
        self.assertIn("turn_started", got)
        with self.assertRaises(dx.DexaError) as cm:
            self.rt.read_events(sid, "not-a-token")
        self.assertEqual(cm.exception.name, "DEXA_E_INVALID_RESUME_TOKEN")
        # older messages, paged back
        page = self.rt.messages(sid, limit=2)
        self.assertEqual(len(page["messages"]), 2)
        self.assertTrue(page["has_more"])
        older = self.rt.messages(sid, before_seq=page["messages"][0]["seq"], limit=200)
        self.assertFalse(older["has_more"])
        seqs = [m["seq"] for m in older["messages"] + page["messages"]]
        self.assertEqual(seqs, sorted(seqs))
        self.assertEqual(older["messages"][0]["text"], "message 0")

    def test_host_driven_without_workers(self):
        with dx.Runtime(self.agent, store=":memory:", workers=0) as rt:
            sid = rt.start_session("s-host")
            rt.send(sid, '/tool lookup {"key": "main"}')
            ran = 0
            while True:
                n = rt.run_ready()
                if not n:
                    break
                ran += n
            self.assertGreater(ran, 2)
            self.assertEqual([e[5] for e in self.log], [threading.get_ident()])
            self.assertEqual(rt.snapshot(sid)["turn"]["status"], "idle")
        with self.assertRaises(dx.DexaError):
            rt.snapshot("s-host")  # closed


@unittest.skipIf(SANITIZED, "sanitizer build: the library cannot load into python3")
class ExitTest(unittest.TestCase):
    def test_exit_while_a_tool_runs(self):
        """The interpreter exits with an open runtime whose worker runs a
        Python tool: the atexit hook closes it; no crash, no hang."""
        import subprocess
        script = (
            "import time, dexagents as dx\n"
            "@dx.tool\n"
            "def slow(args, call):\n"
            "    time.sleep(0.3)\n"
            "    return 'done'\n"
            "rt = dx.Runtime(dx.Agent('x', tools=[slow]), workers=2)\n"
            "sid = rt.start_session()\n"
            "rt.send(sid, '/tool slow {}')\n"
            "time.sleep(0.1)\n"
            "print('exiting')\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "bindings", "python"))
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=30)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "exiting"), r.stderr)


def child(script, env_extra=None, **kw):
    """Runs script in a new python3 with the tree's package on its path."""
    import subprocess
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "bindings", "python"))
    env.update(env_extra or {})
    return subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


@unittest.skipIf(SANITIZED, "sanitizer build: the library cannot load into python3")
class TypedApiTest(unittest.TestCase):
    """Typed snapshots and events, one exception class per error, the
    agent definition shaped like the Dex Agents SDK, async tools."""

    def test_typed_snapshot_and_events(self):
        agent = dx.Agent(dx.AgentDefinition(models=["mock/dex"], tools=make_tools([]),
                                            built_in_tools=frozenset(dx.BuiltInTool)))
        with dx.Runtime(agent, workers=2) as rt:
            sid = rt.start_session("s-typed")
            sent = rt.send(sid, '/tool save_file {"path": "t.txt"}')
            self.assertIsInstance(sent, dx.SendResult)
            self.assertEqual((sent.message_id, sent.queued), ("m1", False))
            rt.wait_idle(sid, WAIT)
            snap = rt.snapshot(sid)
            self.assertIsInstance(snap, dx.Snapshot)
            self.assertIsInstance(snap.turn, dx.Turn)
            self.assertEqual((snap.turn.status, snap.session.model), ("running", "mock/dex"))
            p = snap.pending[0]
            self.assertIsInstance(p, dx.PendingItem)
            self.assertEqual((p.kind, p.name, p.effect, p.arguments),
                             ("approval", "save_file", "write", {"path": "t.txt"}))
            self.assertEqual(p["call_id"], p.call_id)  # item access reads the raw JSON
            model_msg = [m for m in snap.messages if m.role == "model"][0]
            self.assertIsInstance(model_msg.tool_calls[0], dx.ToolCallRequest)
            self.assertEqual(model_msg.tool_calls[0].name, "save_file")
            rt.approve(sid, p.call_id)
            rt.wait_idle(sid, WAIT)
            evs = list(rt.events(sid))
            by_type = {e.type: e for e in evs}
            self.assertIsInstance(by_type["session_started"], dx.types.SessionStartedEvent)
            self.assertEqual(by_type["session_started"].model, "mock/dex")
            fin = by_type["tool_call_finished"]
            self.assertIsInstance(fin, dx.types.ToolCallFinishedEvent)
            self.assertEqual((fin.name, fin.status), ("save_file", "ok"))
            self.assertEqual(by_type["approval_resolved"].decision["decision"], "approve")
            self.assertTrue(all(isinstance(e, dx.Event) and e.token for e in evs))
            self.assertTrue(by_type["text_delta"].live)
            page = rt.messages(sid, limit=1)
            self.assertIsInstance(page, dx.MessagePage)
            self.assertIsInstance(page.messages[0], dx.Message)
            listing = rt.list_sessions()
            self.assertIsInstance(listing.sessions[0], dx.SessionInfo)
            self.assertEqual(listing.sessions[0].session_id, sid)

    def test_error_classes(self):
        self.assertTrue(issubclass(dx.NotFoundError, (dx.UsageError, LookupError)))
        self.assertTrue(issubclass(dx.EmptyMessageError, ValueError))
        self.assertTrue(issubclass(dx.TimedOutError, (dx.TransientError, TimeoutError)))
        self.assertTrue(issubclass(dx.ModelError, dx.PermanentError))
        self.assertTrue(issubclass(dx.OutOfMemoryError, (dx.FatalError, MemoryError)))
        for name, code in dx.CODES.items():
            e = dx.error_for(code, "m")
            self.assertIsInstance(e, dx.DexaError)
            self.assertEqual((e.code, e.name, e.message), (code, name, "m"))
            self.assertEqual(int(e.error_class), dx.error_class(code))
        with dx.Runtime(dx.Agent(), workers=1) as rt:
            with self.assertRaises(LookupError) as cm:
                rt.snapshot("nope")
            self.assertIsInstance(cm.exception, dx.NotFoundError)
            sid = rt.start_session()
            with self.assertRaises(ValueError) as cm:
                rt.send(sid, " ")
            self.assertIsInstance(cm.exception, dx.EmptyMessageError)
            with self.assertRaises(dx.AlreadyExistsError):
                rt.start_session(sid)
            with self.assertRaises(dx.InvalidResumeTokenError):
                rt.read_events(sid, "bad")
            with self.assertRaises(dx.UnsupportedError):  # plan mode is not enabled
                rt.send(sid, "plan", plan_mode=True)
        with self.assertRaises(dx.RuntimeClosedError):
            rt.snapshot(sid)
        with self.assertRaises(dx.UnknownKeyError):
            dx.McpToolSource({"x": {"command": "true", "evn": {}}})

    def test_wait_timeout_is_a_timeout_error(self):
        release = threading.Event()

        @dx.tool
        def block(args, call):
            "Blocks until released."
            release.wait(WAIT)
            return "released"
        with dx.Runtime(dx.Agent("x", tools=[block]), workers=1) as rt:
            sid = rt.start_session()
            rt.send(sid, "/tool block {}")
            with self.assertRaises(TimeoutError) as cm:
                rt.wait_idle(sid, timeout=0.3)
            self.assertIsInstance(cm.exception, dx.TimedOutError)
            release.set()
            rt.wait_idle(sid, WAIT)

    def test_definition_reaches_the_library(self):
        d = dx.AgentDefinition(
            instructions="Be brief.", models=["mock/dex-mini", "mock/dex"],
            built_in_tools={dx.BuiltInTool.ASK_USER}, plan_mode_enabled=True,
            compaction=dx.CompactionPolicy(context_window_tokens=4000, threshold_pct=70),
            run_model_max_attempts=4, tool_max_attempts=7, flow_type="MyAgent")
        agent = dx.Agent(d)
        self.assertEqual(agent.flow_type, "MyAgent")
        steps = {st["name"]: st["options"] for st in agent.describe()["steps"]}
        self.assertEqual(steps["RunModel"]["max_attempts"], 4)
        self.assertEqual(steps["CallTool"]["max_attempts"], 7)
        with dx.Runtime(agent, workers=2) as rt:
            sid = rt.start_session()
            rt.send(sid, "/model")
            rt.wait_idle(sid, WAIT)
            self.assertIn("mock/dex-mini", rt.snapshot(sid).messages[-1].text)
            rt.send(sid, "/wait 5 tea")  # durable_wait was not selected
            rt.wait_idle(sid, WAIT)
            tool = [m for m in rt.snapshot(sid).messages if m.role == "tool"][-1]
            self.assertEqual(tool.status, "error")
        with self.assertRaises(TypeError):
            dx.Agent("x", no_such_limit=1)
        with self.assertRaises(ValueError):
            dx.Tool(lambda a, c: "", name="t", effect="delete")

    def test_async_def_tool_under_the_sync_runtime(self):
        import asyncio

        @dx.tool
        async def fetch(args, call):
            "Fetches asynchronously."
            await asyncio.sleep(0.01)
            return {"k": args["k"], "attempt": call.attempt}
        with dx.Runtime(dx.Agent("x", tools=[fetch]), workers=1) as rt:
            sid = rt.start_session()
            rt.send(sid, '/tool fetch {"k": 5}')
            rt.wait_idle(sid, WAIT)
            tool = [m for m in rt.snapshot(sid).messages if m.role == "tool"][-1]
            self.assertEqual((tool.status, json.loads(tool.output)), ("ok", {"k": 5, "attempt": 1}))
            self.assertEqual(tool.content, {"k": 5, "attempt": 1})

    def test_tool_result_and_effect_names(self):
        @dx.tool(effect="idempotent_write")
        def put(args, call):
            "Puts."
            return dx.ToolResult("not stored", content={"why": "full"}, is_error=True)
        self.assertEqual(put.effect, dx.ToolEffect.IDEMPOTENT_WRITE)
        with dx.Runtime(dx.Agent("x", tools=[put]), workers=1) as rt:
            sid = rt.start_session()
            rt.send(sid, "/tool put {}")
            rt.wait_idle(sid, WAIT)
            tool = [m for m in rt.snapshot(sid).messages if m.role == "tool"][-1]
            self.assertEqual((tool.status, tool.output, tool.content),
                             ("error", "not stored", {"why": "full"}))

    def test_events_without_follow_do_not_wait(self):
        with dx.Runtime(dx.Agent(), workers=1) as rt:
            sid = rt.start_session()
            start = time.monotonic()
            evs = list(rt.events(sid, timeout=30))  # the timeout is for following
            self.assertEqual([e.type for e in evs], ["session_started"])
            self.assertLess(time.monotonic() - start, 20)

    def test_close_with_a_timeout_while_a_tool_blocks(self):
        release = threading.Event()
        started = threading.Event()

        @dx.tool
        def block(args, call):
            "Blocks until released."
            started.set()
            release.wait(60)
            return "released"
        rt = dx.Runtime(dx.Agent("x", tools=[block]), workers=1)
        sid = rt.start_session()
        rt.send(sid, "/tool block {}")
        self.assertTrue(started.wait(WAIT))
        with self.assertRaises(dx.TimedOutError):
            rt.close(timeout=0.2)
        self.assertTrue(rt.closed)
        with self.assertRaises(dx.RuntimeClosedError):
            rt.snapshot(sid)
        release.set()
        rt.close()  # waits for the close in progress


@unittest.skipIf(SANITIZED, "sanitizer build: the library cannot load into python3")
class AsyncRuntimeTest(unittest.TestCase):
    def test_async_runtime(self):
        import asyncio
        seen = []

        @dx.tool
        async def fetch(args, call):
            "Fetches on the event loop."
            seen.append(threading.get_ident())
            await asyncio.sleep(0.01)
            return "got %s" % args.get("k")

        async def main():
            loop_thread = threading.get_ident()
            async with dx.AsyncRuntime(dx.Agent("x", tools=[fetch]), workers=2) as rt:
                sid = await rt.start_session()
                sent = await rt.send(sid, '/tool fetch {"k": 1}')
                self.assertFalse(sent.queued)
                await rt.wait_idle(sid, timeout=WAIT)
                snap = await rt.snapshot(sid)
                self.assertEqual(snap.messages[-1].text, "Tool fetch (ok): got 1")
                types = [ev.type async for ev in rt.events(sid)]
                self.assertEqual(types.count("turn_finished"), 1)

                # eight followers, more than the default executor's threads
                async def follow(token):
                    async for ev in rt.events(sid, token, follow=True):
                        if ev.type == "turn_finished":
                            return True
                followers = [asyncio.ensure_future(follow(snap.resume_token)) for _ in range(8)]
                await asyncio.sleep(0)
                self.assertEqual(await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(
                    None, lambda: 42), WAIT), 42)
                await rt.send(sid, "again")
                self.assertEqual(await asyncio.wait_for(asyncio.gather(*followers), WAIT),
                                 [True] * 8)
                # a cancelled follower returns at once
                waiting = asyncio.ensure_future(follow((await rt.snapshot(sid)).resume_token))
                await asyncio.sleep(0.05)
                waiting.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await waiting
                with self.assertRaises(dx.NotFoundError):
                    await rt.snapshot("nope")
            self.assertTrue(rt.closed)
            return loop_thread
        loop_thread = asyncio.run(main())
        self.assertEqual(seen, [loop_thread])


@unittest.skipIf(SANITIZED, "sanitizer build: the library cannot load into python3")
class HostModeTest(unittest.TestCase):
    def test_dispatch_with_a_python_reader(self):
        agent = dx.Agent("x", models=["mock/dex"])
        state = dx.DictAttributes()
        C = dx.CallKind
        r = agent.dispatch(dx.StepCall(C.EXECUTE, "h1", "StartAgentSession", "StartAgentSession-1",
                                       input={"settings": {}}, now_ms=1000), state)
        self.assertTrue(r.ok, r.error)
        state.apply(r)
        self.assertIn("AgentSession", state)
        self.assertEqual([n["step"] for n in r.decision["next"]], ["AwaitUserMessage"])
        self.assertEqual(json.loads(r.events[0])["type"], "session_started")
        w = agent.dispatch(dx.StepCall(C.WAIT_FOR, "h1", "AwaitUserMessage", "AwaitUserMessage-2"),
                           state)
        self.assertIsInstance(w.wait, dx.Wait)
        self.assertEqual(w.wait.conditions[0].channel, "UserMessageSignals")
        sent = agent.dispatch(dx.StepCall(C.RPC, "h1", "send_message", input={"text": "hello"}),
                              state)
        self.assertEqual(sent.response["message_id"], "m1")
        self.assertEqual([p.channel for p in sent.publishes], ["UserMessageSignals"])
        state.apply(sent)
        snap = agent.dispatch(dx.StepCall(C.RPC, "h1", "snapshot", input={}), state).response
        self.assertEqual(snap["queue"][0]["text"], "hello")
        self.assertEqual(sent.to_json()["status"], 0)
        bad = agent.dispatch(dx.StepCall(C.RPC, "h1", "no_such_rpc", input={}), state)
        self.assertFalse(bad.ok)
        with self.assertRaises(dx.UnknownRPCError):
            bad.raise_for_status()

        class Broken:
            def get(self, key):
                raise KeyError("boom " + key)

            def scan(self, prefix):
                return []
        with self.assertRaises(dx.CallbackFailedError) as cm:
            agent.dispatch(dx.StepCall(C.RPC, "h1", "snapshot", input={}), Broken())
        self.assertIsInstance(cm.exception.__cause__, KeyError)

    def test_poll_dispatch_complete(self):
        log = []
        agent = dx.Agent("x", tools=make_tools(log))
        with dx.Runtime(agent, workers=0) as rt:
            sid = rt.start_session("s-poll")
            rt.send(sid, '/tool lookup {"key": "k"}')
            live, names = [], []
            while True:
                task = rt.poll(timeout=0)
                if task is None:
                    break
                self.assertEqual(task.call.session_id, sid)
                names.append(task.call.name)
                res = task.dispatch(on_event=live.append)
                rt.complete(task, res)
                self.assertTrue(task.done)
            self.assertIn("RunModel", names)
            self.assertIn("CallTool", names)
            self.assertTrue(any(e["type"] == "text_delta" for e in live))
            self.assertEqual(rt.snapshot(sid).turn.status, "idle")
            self.assertEqual([e[0] for e in log], ["lookup"])
            # a task given back runs again later
            rt.send(sid, "again")
            task = rt.poll(timeout=WAIT)
            rt.abandon(task)
            with self.assertRaises(ValueError):
                task.dispatch()

    def test_log_callback_hears_of_a_lost_worker(self):
        logs, lock = [], threading.Lock()

        def log(level, message):
            with lock:
                logs.append((level, message))
        agent = dx.Agent("x", tools=make_tools([]))
        with dx.Runtime(agent, workers=0, lease_ms=200, log=log) as rt:
            sid = rt.start_session("s-log")
            rt.send(sid, "hello")
            task = rt.poll(timeout=WAIT)
            self.assertEqual(task.call.attempt, 1)
            rt.abandon(task)  # as if its worker died: the lease runs out
            deadline = time.monotonic() + WAIT
            while time.monotonic() < deadline:
                rt.run_ready()
                with lock:
                    if any("worker lost 1 time" in m for _, m in logs):
                        break
                time.sleep(0.05)
            with lock:
                lost = [(lv, m) for lv, m in logs if "worker lost 1 time" in m]
            self.assertTrue(lost, logs)
            self.assertEqual(lost[0][0], 3)  # DEXA_LOG_INFO
            self.assertIn(sid, lost[0][1])
            rt.wait_idle(sid, WAIT)
            self.assertEqual(rt.snapshot(sid).turn.status, "idle")
        with self.assertRaises(TypeError):
            dx.Runtime(agent, workers=0, log="not callable")


@unittest.skipIf(SANITIZED, "sanitizer build: the library cannot load into python3")
class McpSourceTest(unittest.TestCase):
    def test_mcp_tool_source(self):
        server = os.path.join(ROOT, "test", "mcp", "_fake_server.py")
        src = dx.McpToolSource({"fake": {"command": sys.executable, "args": [server, "stdio"],
                                         "env": {"SECRET": "s3cret"},
                                         "trustAnnotations": True}})
        self.assertEqual(src.server_names, ["fake"])
        self.assertNotIn("s3cret", repr(src) + json.dumps(src.redacted()))
        self.assertIn("fake__echo", [t["name"] for t in src.list_tools()])
        agent = dx.Agent(dx.AgentDefinition(tool_sources=[src]))
        with dx.Runtime(agent, workers=1) as rt:
            sid = rt.start_session()
            rt.send(sid, '/tool fake__echo {"text": "hi there"}')
            rt.wait_idle(sid, WAIT)
            tool = [m for m in rt.snapshot(sid).messages if m.role == "tool"][-1]
            self.assertEqual(tool.status, "ok")
            self.assertIn("hi there", tool.output)


@unittest.skipIf(SANITIZED, "sanitizer build: the library cannot load into python3")
class ProcessTest(unittest.TestCase):
    """Ctrl-C, the interpreter's exit and a missing library, in child
    processes."""

    def test_ctrl_c_interrupts_wait_idle(self):
        import signal
        script = (
            "import signal, threading, dexagents as dx\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "release = threading.Event()\n"
            "@dx.tool\n"
            "def block(args, call):\n"
            "    'Blocks.'\n"
            "    release.wait()\n"
            "    return 'released'\n"
            "rt = dx.Runtime(dx.Agent('x', tools=[block]), workers=1)\n"
            "sid = rt.start_session()\n"
            "rt.send(sid, '/tool block {}')\n"
            "try:\n"
            "    print('waiting', flush=True)  # the signal may come during the print\n"
            "    rt.wait_idle(sid, timeout=600)\n"
            "    print('not interrupted', flush=True)\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted', flush=True)\n"
            "release.set()\n"
            "rt.close()\n")
        with child(script) as p:
            try:
                self.assertEqual(p.stdout.readline().strip(), "waiting")
                p.send_signal(signal.SIGINT)
                out, err = p.communicate(timeout=60)
            finally:
                p.kill()
        self.assertEqual((p.returncode, out.strip()), (0, "interrupted"), err)

    def test_exit_with_a_blocked_tool(self):
        script = (
            "import threading, dexagents as dx\n"
            "started = threading.Event()\n"
            "@dx.tool\n"
            "def block(args, call):\n"
            "    'Blocks forever.'\n"
            "    started.set()\n"
            "    threading.Event().wait()\n"
            "rt = dx.Runtime(dx.Agent('x', tools=[block]), workers=1, exit_timeout=0.5)\n"
            "sid = rt.start_session()\n"
            "rt.send(sid, '/tool block {}')\n"
            "assert started.wait(60)\n"
            "print('exiting', flush=True)\n")
        with child(script) as p:
            try:
                out, err = p.communicate(timeout=60)
            finally:
                p.kill()
        self.assertEqual((p.returncode, out.strip()), (0, "exiting"), err)

    def test_missing_library_says_how_to_fix_it(self):
        script = (
            "import dexagents as dx\n"
            "print('imported', flush=True)\n"
            "try:\n"
            "    dx.version()\n"
            "except dx.LibraryNotFoundError as e:\n"
            "    print(e)\n")
        with child(script, {"DEXAGENTS_LIBRARY": "/nonexistent/libdexagents.so.1"}) as p:
            out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertTrue(out.startswith("imported"), out)
        for text in ("/nonexistent/libdexagents.so.1", "make install", "LD_LIBRARY_PATH",
                     "DEXAGENTS_LIBRARY", "ldconfig"):
            self.assertIn(text, out)


class DocsTest(unittest.TestCase):
    """Every public name has a docstring; REFERENCE.md is generated from
    them and up to date; the package version is the library's."""

    def setUp(self):
        sys.path.insert(0, os.path.join(ROOT, "bindings", "python", "tools"))
        import gen_reference
        self.gen = gen_reference

    def test_docstrings(self):
        self.assertEqual(self.gen.missing_docstrings(), [])

    def test_reference_is_up_to_date(self):
        with open(os.path.join(ROOT, "bindings", "python", "REFERENCE.md"), encoding="utf-8") as f:
            committed = f.read()
        self.assertEqual(committed, self.gen.render(),
                         "REFERENCE.md is stale: run make python-reference")

    @unittest.skipIf(SANITIZED, "sanitizer build: the library cannot load into python3")
    def test_readme_example_runs(self):
        import re
        import tempfile
        with open(os.path.join(ROOT, "bindings", "python", "README.md"), encoding="utf-8") as f:
            text = f.read()
        self.assertTrue(text.startswith("# dexagents for Python\n\n```sh\npip install "))
        example = re.findall(r"```python\n(.*?)```", text, re.S)[0]
        with tempfile.TemporaryDirectory() as d:
            with child(example, cwd=d) as p:
                out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.strip().splitlines()[-1], "Tool save_file (ok): saved notes.txt")

    def test_version(self):
        import re
        with open(os.path.join(ROOT, "include", "dexagents", "version.h")) as f:
            v = re.search(r'DEXA_VERSION_STRING "([^"]+)"', f.read()).group(1)
        import dexagents
        self.assertEqual(dexagents.__version__, v)
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(dexagents.__file__),
                                                    "py.typed")))


def main():
    if SANITIZED:
        print("skip python bindings: sanitizer build")
        print("0 passed, 0 failed, 1 skipped")
        return 0
    try:
        import pytest  # noqa: F401
        have_pytest = True
    except ImportError:
        have_pytest = False
    if have_pytest:
        class Count:
            passed = failed = skipped = 0

            def pytest_runtest_logreport(self, report):
                if report.when == "call" or report.outcome != "passed":
                    if report.outcome == "passed":
                        Count.passed += 1
                    elif report.outcome == "skipped":
                        Count.skipped += 1
                    else:
                        Count.failed += 1
        rc = pytest.main(["-q", "-p", "no:cacheprovider", __file__], plugins=[Count()])
        p, f, s = Count.passed, Count.failed + (1 if rc not in (0, 5) and not Count.failed else 0), Count.skipped
    else:
        result = unittest.main(exit=False, verbosity=2).result
        p = result.testsRun - len(result.failures) - len(result.errors) - len(result.skipped)
        f, s = len(result.failures) + len(result.errors), len(result.skipped)
    sys.stdout.flush()
    print("%d passed, %d failed%s" % (p, f, ", %d skipped" % s if s else ""))
    return 1 if f else 0


if __name__ == "__main__":
    sys.exit(main())
