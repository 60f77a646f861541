"""A program that uses the dexagents package as a user would; mypy checks it
(test/python/test_typing.py) against the package's own hints (py.typed)."""
from typing import Any, Dict, List

import dexagents as dx


@dx.tool(effect=dx.ToolEffect.WRITE, approval=True)
def save(args: Dict[str, Any], call: dx.ToolCall) -> str:
    "Saves."
    return "saved %s (%s)" % (args["path"], call.idempotency_key)


def main() -> None:
    agent = dx.Agent(dx.AgentDefinition(models=["mock/dex"], tools=[save],
                                        built_in_tools=[dx.BuiltInTool.ASK_USER]))
    with dx.Runtime(agent, store=":memory:", workers=1) as rt:
        sid: str = rt.start_session()
        sent: dx.SendResult = rt.send(sid, "/ask What colour?")
        rt.wait_idle(sid, 10)
        snap: dx.Snapshot = rt.snapshot(sid)
        pending: List[dx.PendingItem] = snap.pending
        if pending:
            rt.answer(sid, pending[0].call_id, "blue")
        print(sent, len(snap.messages))
    e: dx.WaitEvaluation = dx.evaluate_wait(None)
    ready: bool = e.ready
    print(ready)
    try:
        dx.Model.client("openai/x", {"no_such_option": 1})
    except dx.UnknownKeyError as err:
        print(err.name, err.message)
