#!/usr/bin/env python3
# test-needs: sqlite
"""Host-driven mode in Python with the library's wait helper:
evaluate_wait() / Wait.evaluate() (dexa_wait_evaluate(3)) answer "is this
stored wait satisfied, what does Execute consume, when to look again" from
the host's channel counts and timers; WaitEvaluation.take() hands the
consumed messages to Execute. A small in-memory host in Python then runs
whole turns with nothing but describe(), dispatch() and evaluate_wait(): a
write that waits for approval, a durable timer on a simulated clock, and a
claimed single-attempt write whose result is lost (an unknown outcome, never
a second run). As a script it prints "N passed, N failed[, N skipped]"."""
import json
import os
import sys
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
if "DEXAGENTS_LIBRARY" not in os.environ:
    os.environ["DEXAGENTS_LIBRARY"] = os.path.join(
        ROOT, os.environ.get("LIBOUT", "lib"), "libdexagents.so.1")
SANITIZED = bool(os.environ.get("SAN_FLAGS"))  # an ASan library cannot load into python3
import dexagents as dx  # noqa: E402  (loads the library on first use only)

ANSWER_OR_TIMER = {"mode": "any", "conditions": [
    {"id": "answer", "channel": "ToolDecisions/c1", "min": 1, "max": 1},
    {"id": "timer", "timer_ms": 60000}]}


@unittest.skipIf(SANITIZED, "sanitizer build: the library cannot load into python3")
class EvaluateWaitTest(unittest.TestCase):
    def test_channels_and_timers(self):
        e = dx.evaluate_wait(ANSWER_OR_TIMER, now_ms=1000, started_ms=0, channel_counts={})
        self.assertIsInstance(e, dx.WaitEvaluation)
        self.assertFalse(e.ready)
        self.assertEqual(e.channels, ["ToolDecisions/c1"])
        self.assertEqual(e.timers, [dx.TimerDue("timer", 60000, 60000)])
        self.assertEqual((e.next_due_ms, e.consume), (60000, []))
        # a message arrived: the channel wins and alone consumes
        e = dx.evaluate_wait(ANSWER_OR_TIMER, now_ms=1000, started_ms=0,
                             channel_counts={"ToolDecisions/c1": 2})
        self.assertTrue(e.ready)
        self.assertEqual(e.consume, [dx.Consume("answer", "ToolDecisions/c1", 1)])
        self.assertIsNone(e.next_due_ms)
        # the clock passed the timer: timers are tried first
        e = dx.evaluate_wait(ANSWER_OR_TIMER, now_ms=60000, started_ms=0,
                             channel_counts=lambda ch: 1)
        self.assertEqual((e.ready, e.fired, e.consume), (True, ["timer"], []))
        # the host's own durable timer fired (the clock is not used then)
        w = dx.Wait.from_json(ANSWER_OR_TIMER)
        self.assertEqual(w.evaluate(now_ms=0, started_ms=0, fired=["timer"]).fired, ["timer"])
        self.assertFalse(w.evaluate(now_ms=10 ** 12, started_ms=0, fired=[]).ready)
        # "all" needs every condition; the wait's text is accepted too
        both = json.dumps({"mode": "all", "conditions": [{"id": "a", "channel": "x", "min": 2},
                                                         {"id": "b", "channel": "y", "min": 1,
                                                          "max": 1}]})
        self.assertFalse(dx.evaluate_wait(both, channel_counts={"x": 2}).ready)
        e = dx.evaluate_wait(dx.RawJSON(both), channel_counts={"x": 3, "y": 1})
        self.assertEqual(e.consume, [dx.Consume("a", "x", 3), dx.Consume("b", "y", 1)])
        self.assertTrue(dx.evaluate_wait(None).ready)  # no wait: ready at once
        self.assertIsNone(e.raw["next_due_ms"])

    def test_bad_waits_and_state(self):
        with self.assertRaises(dx.InvalidJSONError):
            dx.evaluate_wait({"mode": "sometimes", "conditions": []})
        with self.assertRaises(dx.InvalidJSONError):
            dx.evaluate_wait({"mode": "any", "conditions": [{"channel": "x"}]})
        with self.assertRaises(dx.InvalidJSONError):
            dx.evaluate_wait(ANSWER_OR_TIMER, channel_counts={"ToolDecisions/c1": -1})
        with self.assertRaises(TypeError):
            dx.evaluate_wait(ANSWER_OR_TIMER, fired="timer")
        boom = ZeroDivisionError("no count")

        def count(channel):
            raise boom
        with self.assertRaises(dx.CallbackFailedError) as cm:
            dx.evaluate_wait(ANSWER_OR_TIMER, channel_counts=count)
        self.assertIs(cm.exception.__cause__, boom)
        with self.assertRaises(dx.CallbackFailedError):
            dx.evaluate_wait(ANSWER_OR_TIMER, channel_counts=lambda ch: -1)

    def test_take(self):
        channels = {"ToolDecisions/c1": [{"d": 1}, {"d": 2}]}
        e = dx.evaluate_wait(ANSWER_OR_TIMER, channel_counts={"ToolDecisions/c1": 2})
        self.assertEqual(e.take(channels), {"fired": [], "channels": {"answer": [{"d": 1}]}})
        self.assertEqual(channels["ToolDecisions/c1"], [{"d": 2}])
        with self.assertRaises(ValueError):
            dx.evaluate_wait(ANSWER_OR_TIMER, channel_counts={}).take(channels)


class MemoryHost:
    """The smallest host: attributes, channels and Steps in memory, one
    thread; time is simulated (now_ms jumps to the next timer when nothing
    runs). lose_claimed_write plays a crash right after a single-attempt
    Step's claim."""

    SID = "s-py-host"

    def __init__(self, agent, lose_claimed_write=False):
        self.agent = agent
        flow = agent.describe()
        self.start_step = flow["start_step"]
        self.options = {s["name"]: s["options"] for s in flow["steps"]}
        self.attrs = dx.DictAttributes()
        self.channels = {}
        self.steps = []
        self.events = []
        self.log = []
        self.now_ms = 1_700_000_000_000
        self.counter = 0
        self.lose_claimed_write = lose_claimed_write

    def add_step(self, step_type, step_input, recovery_error=None):
        self.counter += 1
        self.steps.append({"type": step_type, "input": step_input, "recovery": recovery_error,
                           "id": "%s-%d" % (step_type, self.counter), "attempt": 0,
                           "wait_for": self.options[step_type]["has_wait_for"], "wait": None,
                           "since": 0, "conditions": None, "claimed": False})

    def apply(self, r):
        self.attrs.apply(r)
        for p in r.publishes:
            self.channels.setdefault(p.channel, []).append(json.loads(p.value))
        self.events += [json.loads(e)["type"] for e in r.events]
        d = r.decision or {}
        self.steps = [s for s in self.steps if s["type"] not in d.get("cancel", [])]
        for n in d.get("next", []):
            self.add_step(n["step"], n.get("input"))

    def run_step(self, s):
        opts = self.options[s["type"]]
        kind = dx.CallKind.WAIT_FOR if s["wait_for"] else dx.CallKind.EXECUTE
        single = kind == dx.CallKind.EXECUTE and opts["max_attempts"] == 1
        if single and s["claimed"]:  # claimed before and no result: it may have run
            self.log.append("%s lost: unknown outcome" % s["id"])
            self.steps.remove(s)
            self.add_step(opts["recovery"], s["input"],
                          {"code": dx.CODES["DEXA_E_TIMEOUT"], "message": "the worker was lost"})
            return
        s["claimed"] = single  # a real host commits this claim durably first
        s["attempt"] += 1
        r = self.agent.dispatch(dx.StepCall(kind, self.SID, s["type"], s["id"], s["attempt"],
                                            input=s["input"], conditions=s["conditions"],
                                            recovery_error=s["recovery"], now_ms=self.now_ms),
                                self.attrs)
        if single and self.lose_claimed_write:
            self.lose_claimed_write = False
            self.log.append("%s result lost" % s["id"])
            return
        assert r.ok, "%s: %s" % (s["id"], r.error)
        if kind == dx.CallKind.WAIT_FOR:
            self.apply(r)
            s.update(wait_for=False, attempt=0, wait=r.wait, since=self.now_ms)
        else:
            self.steps.remove(s)
            self.apply(r)

    def ready_step(self):
        """A Step that can run (a waiting one takes its messages), or the
        next due time."""
        due = None
        for s in self.steps:
            if s["wait"] is None:
                return s, None
            e = s["wait"].evaluate(now_ms=self.now_ms, started_ms=s["since"],
                                   channel_counts=lambda ch: len(self.channels.get(ch, [])))
            if e.ready:
                s["conditions"], s["wait"] = e.take(self.channels), None
                if e.fired:
                    self.log.append("%s timer fired" % s["id"])
                return s, None
            if e.next_due_ms is not None and (due is None or e.next_due_ms < due):
                due = e.next_due_ms
        return None, due

    def run_until_idle(self):
        for _ in range(500):
            step, due = self.ready_step()
            if step is not None:
                self.run_step(step)
            elif due is not None:
                self.now_ms = due  # sleep until the timer (simulated)
            else:
                return
        raise AssertionError("the host did not become idle")

    def start(self):
        self.add_step(self.start_step, {"settings": {}})
        self.run_until_idle()

    def rpc(self, name, rpc_input):
        r = self.agent.dispatch(dx.StepCall(dx.CallKind.RPC, self.SID, name, input=rpc_input,
                                            now_ms=self.now_ms), self.attrs)
        r.raise_for_status()
        self.apply(r)
        self.run_until_idle()
        return r.response

    def pending(self):
        return [json.loads(v) for _, v in self.attrs.scan("PendingToolCalls/")]

    def tool_messages(self):
        msgs = [json.loads(v) for _, v in self.attrs.scan("AgentMessages/")]
        return [m for m in msgs if m.get("role") == "tool"]


def stamp_agent(runs):
    @dx.tool(effect=dx.WRITE, approval=True)
    def stamp(args, call):
        "Stamps the document (a write)."
        runs.append(call.call_id)
        return "stamped"
    return dx.Agent("x", models=["mock/dex"], tools=[stamp],
                    builtin_tools=dx.BUILTIN_DURABLE_WAIT)


@unittest.skipIf(SANITIZED, "sanitizer build: the library cannot load into python3")
class PythonHostTest(unittest.TestCase):
    def test_turns_with_dispatch_and_evaluate_wait(self):
        runs = []
        h = MemoryHost(stamp_agent(runs))
        h.start()
        h.rpc("send_message", {"text": "/wait 30 a short pause"})
        self.assertTrue(any(l.startswith("AwaitTimer-") and l.endswith("timer fired")
                            for l in h.log), h.log)
        self.assertIn("timer_fired", h.events)
        h.rpc("send_message", {"text": "/tool stamp {}"})
        [pending] = h.pending()
        self.assertEqual(pending["kind"], "approval")
        self.assertEqual(runs, [])  # nothing runs before the approval
        h.rpc("resolve_approval", {"call_id": pending["call_id"], "decision": "approve"})
        self.assertEqual(len(runs), 1)
        self.assertEqual(h.pending(), [])
        outputs = [m.get("output") for m in h.tool_messages()]
        self.assertTrue(any("Waited 30 seconds" in (o or "") for o in outputs), outputs)
        self.assertIn("stamped", outputs)
        self.assertEqual(h.rpc("snapshot", {})["turn"]["status"], "idle")

    def test_lost_claimed_write_is_never_run_again(self):
        runs = []
        h = MemoryHost(stamp_agent(runs), lose_claimed_write=True)
        h.start()
        h.rpc("send_message", {"text": "/tool stamp {}"})
        h.rpc("resolve_approval", {"call_id": h.pending()[0]["call_id"], "decision": "approve"})
        self.assertEqual(len(runs), 1)  # ran once, then the "crash" lost its result
        self.assertTrue(any("unknown outcome" in l for l in h.log), h.log)
        [tool] = h.tool_messages()
        self.assertIn("unknown", json.dumps(tool).lower())
        self.assertEqual(h.rpc("snapshot", {})["turn"]["status"], "idle")


def main():
    result = unittest.main(exit=False, verbosity=2).result
    p = result.testsRun - len(result.failures) - len(result.errors) - len(result.skipped)
    f, s = len(result.failures) + len(result.errors), len(result.skipped)
    sys.stdout.flush()
    print("%d passed, %d failed%s" % (p, f, ", %d skipped" % s if s else ""))
    return 1 if f else 0


if __name__ == "__main__":
    sys.exit(main())
