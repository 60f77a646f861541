# test-needs: sqlite
"""Models and harnesses written in Python (dexagents.Model.from_function,
dexagents.Harness): the contract of dexagents-harness(7) from Python. A
plain model with live deltas, usage and a finish reason; errors that retry
(transient) or fail the turn at once (permanent); a harness keeping its
state (set and appended), seeing only its new messages, running a read
inside the segment, setting a call's approval from its own metadata, with
a write it tried to run inside refused; an ``async def`` harness on an
AsyncRuntime's loop whose reads and deltas are handed to the worker thread;
a Stop reaching a running segment (host-driven, with the host's stop flag
on dexa_call, and through the embedded runtime's own workers) as
request.cancelled and as asyncio cancellation; tools the framework ran
itself (framework_tool_calls) kept as segment_tool_call events."""
import asyncio
import json
import os
import sys
import threading
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
os.environ.setdefault("DEXAGENTS_LIBRARY", os.path.join(
    ROOT, os.environ.get("LIBOUT", "lib"), "libdexagents.so.1"))

import dexagents as dx  # noqa: E402
from dexagents import ModelReply, ProposedToolCall, ReplyItem, Usage  # noqa: E402


def turn(rt, sid, text):
    rt.send(sid, text)
    rt.wait_idle(sid, timeout=30)
    return rt.snapshot(sid)


def events(rt, sid):
    return [e.raw for e in rt.events(sid)]


class ModelTest(unittest.TestCase):
    def test_plain_model(self):
        def generate(req):
            last = req.messages[-1]
            if last["role"] == "user" and last["text"] == "weather":
                return ModelReply(tool_calls=[ProposedToolCall("w1", "get_weather", {"city": "Paris"})])
            if last["role"] == "tool":
                return {"text": "It is %s." % last["output"], "finish_reason": "stop"}
            req.emit_delta("Hel")
            req.emit_delta("lo")
            req.emit_delta("hmm", "reasoning")
            return ModelReply(items=[ReplyItem({"kind": "answer"}, "Hello", "hmm")],
                              usage=Usage(12, 5, cached_input_tokens=2, cost_usd=0.25),
                              finish_reason="length", provider_finish_reason="max_tokens")

        model = dx.Model.from_function("py/echo", generate)
        weather = dx.Tool(lambda a, c: "sunny in " + a["city"], name="get_weather")
        agent = dx.Agent(dx.AgentDefinition(models=[model], tools=[weather]))
        with dx.Runtime(agent) as rt:
            sid = rt.start_session()
            snap = turn(rt, sid, "hi")
            m = snap.raw["messages"][-1]
            self.assertEqual(m["text"], "Hello")
            self.assertEqual(m["reasoning"], "hmm")
            self.assertEqual(m["item"], {"kind": "answer"})
            self.assertEqual(m["finish_reason"], "length")
            self.assertEqual(m["provider_finish_reason"], "max_tokens")
            self.assertEqual(m["usage"]["input_tokens"], 12)
            evs = events(rt, sid)
            self.assertEqual([e["text"] for e in evs if e["type"] == "text_delta"], ["Hel", "lo"])
            self.assertEqual([e["text"] for e in evs if e["type"] == "reasoning_delta"], ["hmm"])
            snap = turn(rt, sid, "weather")
            self.assertEqual(snap.raw["messages"][-1]["text"], "It is sunny in Paris.")

    def test_errors_retry_or_fail(self):
        attempts = {"flaky": [], "broken": []}

        class Upstream(Exception):
            status_code = 503

        def generate(req):
            text = req.messages[-1]["text"]
            attempts[text].append(req.attempt)
            if text == "flaky" and req.attempt == 1:
                raise Upstream("upstream down")
            if text == "broken":
                raise KeyError("a bug")
            return ModelReply(text="ok after %d" % req.attempt)

        agent = dx.Agent(dx.AgentDefinition(models=[dx.Model.from_function("py/err", generate)]))
        with dx.Runtime(agent) as rt:
            sid = rt.start_session()
            self.assertEqual(turn(rt, sid, "flaky").raw["messages"][-1]["text"], "ok after 2")
            turn(rt, sid, "broken")
            self.assertEqual(attempts["broken"], [1])
            failed = [e for e in events(rt, sid) if e["type"] == "turn_failed"]
            self.assertEqual(len(failed), 1)
            self.assertIn("a bug", json.dumps(failed[0]))

    def test_harness_state_new_messages_reads_policy(self):
        seen = []
        runs = {"lookup": 0, "cancel_order": 0}

        def segment(req):
            fresh = req.new_messages
            seen.append((req.state, len(req.state_entries),
                         ["%s:%s" % (m["role"], m.get("text") or m.get("status")) for m in fresh]))
            last = fresh[-1]
            if last["role"] == "user" and last["text"] == "look up 7":
                r = req.call_tool("lookup", {"id": 7}, call_id="inner-1")
                with self.assertRaises(dx.BadStateError):
                    req.call_tool("refund", {"id": 7})  # a write never runs inside
                return ModelReply(text="order 7: " + r["output"], state_entries=[{"n": 1}])
            if last["role"] == "user":
                return ModelReply(tool_calls=[ProposedToolCall(
                    "c-1", "cancel_order", {"id": 7}, effect="write", approval=True)],
                    state={"calls": 1})
            return ModelReply(text="%s: %s" % (last["status"], last["output"]),
                              state_entries=[{"n": 2}])

        def lookup(a, c):
            runs["lookup"] += 1
            return "shipped"

        def cancel(a, c):
            runs["cancel_order"] += 1
            return "cancelled"

        h = dx.Harness("py/toy", segment, owns_transcript=True, runs_reads=True)
        agent = dx.Agent(dx.AgentDefinition(models=[h], tools=[
            dx.Tool(lookup, name="lookup"), dx.Tool(cancel, name="cancel_order"),
            dx.Tool(lambda a, c: "refunded", name="refund", effect=dx.ToolEffect.WRITE)]))
        with dx.Runtime(agent) as rt:
            sid = rt.start_session()
            self.assertEqual(turn(rt, sid, "look up 7").raw["messages"][-1]["text"],
                             "order 7: shipped")
            inner = [e for e in events(rt, sid) if e["type"] == "segment_tool_call"]
            self.assertEqual([(e["call_id"], e["status"]) for e in inner], [("inner-1", "ok")])
            snap = turn(rt, sid, "cancel 7")
            self.assertEqual(len(snap.pending), 1, "the framework said it needs approval")
            self.assertEqual(runs["cancel_order"], 0)
            rt.approve(sid, snap.pending[0].call_id)
            rt.wait_idle(sid, timeout=30)
            self.assertEqual(rt.snapshot(sid).raw["messages"][-1]["text"], "ok: cancelled")
            self.assertEqual(runs, {"lookup": 1, "cancel_order": 1})
        self.assertEqual(seen, [(None, 0, ["user:look up 7"]), (None, 1, ["user:cancel 7"]),
                                ({"calls": 1}, 0, ["tool:ok"])])

    def test_async_harness_on_the_runtime_loop(self):
        threads = set()

        async def segment(req):
            threads.add(threading.get_ident())
            req.emit_delta("from the loop")
            last = req.new_messages[-1]
            r = await req.acall_tool("lookup", {"id": 1})
            await asyncio.sleep(0)
            return ModelReply(text="%s / %s" % (last["text"], r["output"]))

        async def lookup(a, c):
            await asyncio.sleep(0)
            return "found %d" % a["id"]

        h = dx.Harness("py/async", segment, runs_reads=True)
        agent = dx.Agent(dx.AgentDefinition(models=[h], tools=[dx.Tool(lookup, name="lookup")]))

        async def main():
            async with dx.AsyncRuntime(agent) as rt:
                sid = await rt.start_session()
                await rt.send(sid, "go")
                await rt.wait_idle(sid, timeout=30)
                snap = await rt.snapshot(sid)
                return snap.raw["messages"][-1]["text"], threading.get_ident()

        text, loop_thread = asyncio.run(main())
        self.assertEqual(text, "go / found 1")
        self.assertEqual(threads, {loop_thread}, "the coroutine ran on the runtime's loop")


class StopTest(unittest.TestCase):
    """A Stop reaching a running segment: host-driven, the RunModel Step
    dispatched with the host's stop flag (dexa_call.cancelled)."""

    def run_stopped(self, segment):
        agent = dx.Agent(dx.AgentDefinition(models=[dx.Harness("py/slow", segment)]))
        with dx.Runtime(agent, workers=0) as rt:
            sid = rt.start_session()
            rt.send(sid, "go")
            for _ in range(50):
                task = rt.poll(timeout=2)
                if task is None:
                    break
                stop = threading.Event()
                if task.call.name == "RunModel":  # stopped while the segment runs
                    threading.Timer(0.2, lambda: (rt.stop_turn(sid), stop.set())).start()
                rt.complete(task, task.dispatch(stop=stop))
            return rt.snapshot(sid)

    def test_sync_segment_sees_cancelled(self):
        saw = []

        def segment(req):
            for _ in range(500):
                if req.cancelled:
                    saw.append("cancelled")
                    break
                threading.Event().wait(0.01)
            return ModelReply(text="partial")

        snap = self.run_stopped(segment)
        self.assertEqual(saw, ["cancelled"])
        self.assertEqual(snap.raw["turn"]["status"], "cancelled")

    def test_async_segment_is_cancelled(self):
        saw = []

        async def segment(req):
            try:
                await asyncio.sleep(20)
            except asyncio.CancelledError:
                saw.append("CancelledError")
                raise
            return ModelReply(text="never")

        snap = self.run_stopped(segment)
        self.assertEqual(saw, ["CancelledError"])
        self.assertEqual(snap.raw["turn"]["status"], "cancelled")

    def test_embedded_runtime_stop_reaches_the_segment(self):
        """The runtime's own workers: a Stop sets the Step's cancel flag."""
        saw = []
        started = threading.Event()

        def segment(req):
            started.set()
            for _ in range(6000):  # a minute: only the stop ends it sooner
                if req.cancelled:
                    saw.append("cancelled")
                    break
                threading.Event().wait(0.01)
            return ModelReply(text="partial")

        agent = dx.Agent(dx.AgentDefinition(models=[dx.Harness("py/slow-embedded", segment)]))
        with dx.Runtime(agent, workers=2) as rt:
            sid = rt.start_session()
            rt.send(sid, "go")
            self.assertTrue(started.wait(60))
            rt.stop_turn(sid)
            rt.wait_idle(sid, timeout=60)
            self.assertEqual(saw, ["cancelled"])
            self.assertEqual(rt.snapshot(sid).raw["turn"]["status"], "cancelled")


class FrameworkToolCallTest(unittest.TestCase):
    def test_framework_tool_calls_are_events(self):
        def segment(req):
            return ModelReply(text="Found 3.", framework_tool_calls=[
                {"call_id": "ws_1", "name": "web_search", "arguments": {"q": "dex"},
                 "output": {"hits": 3}}])

        agent = dx.Agent(dx.AgentDefinition(models=[dx.Harness("py/hosted", segment)]))
        with dx.Runtime(agent, workers=1) as rt:
            sid = rt.start_session()
            turn(rt, sid, "search")
            ran = [e for e in events(rt, sid) if e["type"] == "segment_tool_call"]
        self.assertEqual(len(ran), 1)
        self.assertEqual(ran[0]["call_id"], "ws_1")
        self.assertEqual(ran[0]["ran_by"], "framework")
        self.assertEqual(ran[0]["output"], '{"hits": 3}')


if __name__ == "__main__":
    r = unittest.main(exit=False, verbosity=2).result
    failed = len(r.failures) + len(r.errors)
    print("%d passed, %d failed, %d skipped" % (r.testsRun - failed - len(r.skipped), failed,
                                                len(r.skipped)))
    sys.exit(1 if failed else 0)
