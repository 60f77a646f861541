#!/usr/bin/env python3
"""The Python bindings (bindings/python, cffi ABI mode) end to end: an agent
with Python tools on the demo model in the embedded runtime with worker
threads, every client operation, errors as DexaError, events with resume
tokens. Runs under pytest when installed, else unittest; as a script it prints
"N passed, N failed[, N skipped]" for test/run. The library is
$DEXAGENTS_LIBRARY, else $LIBOUT/libdexagents.so.1 (default lib/)."""
import json
import os
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
if not SANITIZED:
    import dexagents as dx

WAIT_MS = 20000


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
        self.rt.wait_idle(sid, WAIT_MS)
        return self.rt.snapshot(sid)

    def last_model_text(self, snap):
        msgs = [m for m in snap["messages"] if m["role"] == "model" and "text" in m]
        return msgs[-1]["text"] if msgs else None

    def types(self, sid, token=""):
        return [e["type"] for e in self.rt.events(sid, token, timeout_ms=0) if not e.live]

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
        with self.assertRaises(dx.DexaError) as cm:
            dx.Agent("x", models=[])
        self.assertEqual(cm.exception.name, "DEXA_E_INVALID_ARG")
        self.assertTrue(cm.exception.message)

    def test_cdef_matches_the_headers(self):
        """The hand-written cdef has the layout of the C headers (a C program
        compiled against include/ prints sizeof and every offsetof)."""
        import shutil
        import subprocess
        import tempfile
        cc = shutil.which(os.environ.get("CC", "cc"))
        if not cc:
            self.skipTest("no C compiler")
        structs = {
            "dexa_agent_def": "", "dexa_runtime_options": "", "dexa_model_vtable": "",
            "dexa_tool_source_vtable": "",
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
        self.assertEqual(got.split("\n")[:-1], expected)

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
        evs = list(self.rt.events(sid, timeout_ms=0))
        self.assertEqual(evs[0]["type"], "session_started")
        self.assertEqual([e["type"] for e in evs if not e.live].count("turn_finished"), 3)
        self.assertTrue(all(e.token for e in evs))
        # resume after the fifth event: exactly the rest
        rest = list(self.rt.events(sid, evs[4].token, timeout_ms=0))
        self.assertEqual([e.token for e in rest], [e.token for e in evs[5:]])
        # the snapshot's resume token is the newest event: nothing after it
        snap = self.rt.snapshot(sid)
        self.assertEqual([e for e in self.rt.events(sid, snap["resume_token"], timeout_ms=0)
                          if not e.live], [])
        # a follower sees an event that arrives later
        got = []

        def follow():
            for ev in self.rt.events(sid, snap["resume_token"], follow=True, timeout_ms=200):
                got.append(ev["type"])
                if ev["type"] == "turn_finished":
                    return
        t = threading.Thread(target=follow)
        t.start()
        self.rt.send(sid, "later")
        t.join(WAIT_MS / 1000)
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
