"""Typed views of the library's documents: the session snapshot and its
parts, message pages, session lists, and the AgentEvents events (one class
per event type). The shapes are those of dexagents-flow(7) and
dexagents-events(7).

Every object is a frozen dataclass built from the JSON object the library
returned; that object stays available as ``.raw`` and through item access
(``snapshot["pending"][0]["call_id"]``), so code written for the plain
dictionaries of earlier versions keeps working. A field the library did not
send is None (or an empty list).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Iterator, List, Mapping, Optional, Tuple, Type, TypeVar

R = TypeVar("R", bound="Record")


@dataclass(frozen=True)
class Record(Mapping[str, Any]):
    """Base of every typed view: a read-only mapping over ``raw`` (the JSON
    object as the library returned it) with typed attributes besides."""

    raw: Mapping[str, Any] = field(repr=False, compare=True)

    #: field name -> (type of its items, whether the field is a list)
    _nested: ClassVar[Dict[str, Tuple[Type["Record"], bool]]] = {}

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record):
            return type(self) is type(other) and self.raw == other.raw
        if isinstance(other, Mapping):
            return dict(self.raw) == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> Dict[str, Any]:
        """The raw JSON object (a new shallow copy)."""
        return dict(self.raw)

    @classmethod
    def from_json(cls: Type[R], raw: Mapping[str, Any], **extra: Any) -> R:
        """Builds the view of ``raw``; ``extra`` sets fields that are not in
        the object (an event's token)."""
        kwargs: Dict[str, Any] = {"raw": raw}
        for f in dataclasses.fields(cls):
            if f.name == "raw":
                continue
            if f.name in extra:
                kwargs[f.name] = extra[f.name]
                continue
            value = raw.get(f.name)
            nested = cls._nested.get(f.name)
            if nested is not None:
                typ, many = nested
                if many:
                    value = [typ.from_json(v) for v in (value or []) if isinstance(v, Mapping)]
                elif isinstance(value, Mapping):
                    value = typ.from_json(value)
                else:
                    value = None
            elif value is None and f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                value = f.default_factory()  # type: ignore[misc]
            kwargs[f.name] = value
        return cls(**kwargs)


def _many(typ: Type[Record]) -> Tuple[Type[Record], bool]:
    return (typ, True)


def _one(typ: Type[Record]) -> Tuple[Type[Record], bool]:
    return (typ, False)


# ---- snapshot parts --------------------------------------------------------

@dataclass(frozen=True, eq=False)
class SessionSettings(Record):
    """The session's settings (attribute AgentSession): its model and when it
    was created (ms since the Unix epoch)."""

    model: Optional[str] = None
    created_ms: Optional[int] = None


@dataclass(frozen=True, eq=False)
class Turn(Record):
    """The current turn (attribute AgentTurn): number, status (idle, running,
    failed, cancelled, steered), mode (chat, planning, executing), since when,
    and the error of a failed turn ({code, message})."""

    turn: int = 0
    status: str = "idle"
    mode: str = "chat"
    since_ms: Optional[int] = None
    error: Optional[Mapping[str, Any]] = None


@dataclass(frozen=True, eq=False)
class Transcript(Record):
    """The message sequence (attribute AgentTranscript): next and first
    sequence numbers, the newest turn and the bytes of the active state."""

    next_seq: int = 0
    first_seq: int = 0
    turn: int = 0
    bytes: int = 0


@dataclass(frozen=True, eq=False)
class Todo(Record):
    """One task of a plan: its text and status (pending, in_progress,
    completed)."""

    content: str = ""
    status: str = "pending"


@dataclass(frozen=True, eq=False)
class Plan(Record):
    """The session's plan (attribute AgentPlan): revision, status (draft,
    active, completed) and its todos."""

    revision: int = 0
    status: str = "draft"
    todos: List[Todo] = field(default_factory=list)
    turn: Optional[int] = None
    updated_ms: Optional[int] = None
    _nested = {"todos": _many(Todo)}


@dataclass(frozen=True, eq=False)
class ToolCallRequest(Record):
    """A tool call the model asked for: call id, tool name, arguments."""

    call_id: str = ""
    name: str = ""
    arguments: Any = None


@dataclass(frozen=True, eq=False)
class Message(Record):
    """A stored message (dexagents-flow(7), STORED MESSAGES). ``role`` is
    user, model or tool. User messages have ``id`` and ``text``; model
    messages ``model``, ``text``, ``reasoning``, ``tool_calls``, ``usage``
    and ``item`` (the provider's output item, byte for byte); tool messages
    ``call_id``, ``name``, ``status`` (ok, error, unknown_outcome, rejected,
    cancelled), ``output`` (the text the model sees) and ``content``. The
    compact view of a message_appended event has ``has_tool_calls``."""

    seq: int = 0
    turn: Optional[int] = None
    role: str = ""
    at: Optional[int] = None
    round: Optional[int] = None
    id: Optional[str] = None
    text: Optional[str] = None
    model: Optional[str] = None
    reasoning: Optional[str] = None
    tool_calls: List[ToolCallRequest] = field(default_factory=list)
    usage: Optional[Mapping[str, Any]] = None
    item: Any = None
    call_id: Optional[str] = None
    name: Optional[str] = None
    status: Optional[str] = None
    output: Optional[str] = None
    content: Any = None
    has_tool_calls: Optional[bool] = None
    _nested = {"tool_calls": _many(ToolCallRequest)}


@dataclass(frozen=True, eq=False)
class QueuedMessage(Record):
    """A user message waiting in QueuedUserMessages: id ("m3"), text, whether
    it is for plan mode and whether it was steered."""

    id: str = ""
    text: str = ""
    plan_mode: bool = False
    steered: bool = False
    at: Optional[int] = None
    execute_plan: Optional[int] = None


@dataclass(frozen=True, eq=False)
class PendingItem(Record):
    """A call waiting for a person or a timer (attribute PendingToolCalls):
    ``kind`` is approval, question or timer. Questions have ``prompt`` and
    ``choices``; timers ``seconds``, ``fires_at_ms`` and ``reason``."""

    kind: str = ""
    call_id: str = ""
    name: str = ""
    turn: Optional[int] = None
    round: Optional[int] = None
    seq: Optional[int] = None
    source: Optional[str] = None
    effect: Optional[str] = None
    arguments: Any = None
    at: Optional[int] = None
    prompt: Optional[str] = None
    choices: Optional[List[str]] = None
    seconds: Optional[int] = None
    fires_at_ms: Optional[int] = None
    reason: Optional[str] = None


@dataclass(frozen=True, eq=False)
class TurnControl(Record):
    """A steer or stop waiting for the turn's next safe Step boundary."""

    turn: Optional[int] = None
    action: str = ""
    at: Optional[int] = None


@dataclass(frozen=True, eq=False)
class ContextSummary(Record):
    """The cumulative summary of compacted messages and the exact range it
    covers (attribute AgentContextSummary)."""

    from_seq: Optional[int] = None
    through_seq: Optional[int] = None
    generation: Optional[int] = None
    text: str = ""
    at: Optional[int] = None


@dataclass(frozen=True, eq=False)
class Snapshot(Record):
    """The durable view of a session (the snapshot RPC): settings, turn,
    transcript counters, plan, the newest 200 messages, the queue, the
    pending approvals, questions and timers, a pending steer or stop, the
    compaction summary, the session's end (``{"at", "reason"}`` once
    end_session or the idle timeout ended it, else None), and the resume
    token of the newest event (read the events after it to follow the
    session from this snapshot on)."""

    session_id: str = ""
    session: Optional[SessionSettings] = None
    turn: Optional[Turn] = None
    transcript: Optional[Transcript] = None
    plan: Optional[Plan] = None
    messages: List[Message] = field(default_factory=list)
    queue: List[QueuedMessage] = field(default_factory=list)
    pending: List[PendingItem] = field(default_factory=list)
    control: Optional[TurnControl] = None
    summary: Optional[ContextSummary] = None
    ended: Optional[Dict[str, Any]] = None
    resume_token: str = ""
    _nested = {"session": _one(SessionSettings), "turn": _one(Turn),
                "transcript": _one(Transcript), "plan": _one(Plan),
                "messages": _many(Message), "queue": _many(QueuedMessage),
                "pending": _many(PendingItem), "control": _one(TurnControl),
                "summary": _one(ContextSummary)}


@dataclass(frozen=True, eq=False)
class MessagePage(Record):
    """A page of older messages (list_agent_messages), oldest first, and
    whether older ones remain."""

    messages: List[Message] = field(default_factory=list)
    has_more: bool = False
    _nested = {"messages": _many(Message)}


@dataclass(frozen=True, eq=False)
class SendResult(Record):
    """What send_message did: the new message's id and whether it waits in
    the queue (a turn was running) rather than starting a turn."""

    message_id: str = ""
    queued: bool = False


@dataclass(frozen=True, eq=False)
class PlanExecution(Record):
    """What execute_plan did: the message that runs the plan and the plan's
    revision."""

    message_id: str = ""
    revision: int = 0


@dataclass(frozen=True, eq=False)
class SessionInfo(Record):
    """One session of a listing: id, creation time, flow type, status."""

    session_id: str = ""
    created_ms: Optional[int] = None
    flow_type: Optional[str] = None
    status: Optional[str] = None


@dataclass(frozen=True, eq=False)
class SessionPage(Record):
    """A page of sessions, newest first; ``next`` continues the listing (None
    at the end)."""

    sessions: List[SessionInfo] = field(default_factory=list)
    next: Optional[str] = None
    _nested = {"sessions": _many(SessionInfo)}


# ---- events ----------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Event(Record):
    """One AgentEvents event. ``type`` and ``at`` (ms since the Unix epoch)
    are in every event; ``token`` resumes the stream after this event;
    ``live`` is True for a live delta (best effort, not durable). Known types
    have their own subclass with typed fields (:data:`EVENT_TYPES`); an event
    type newer than this package is a plain :class:`Event`."""

    type: str = ""
    at: Optional[int] = None
    token: str = ""
    live: bool = False

    @staticmethod
    def parse(token: str, event: Mapping[str, Any], live: bool = False) -> "Event":
        """The typed event of one ``{"token", "event", "live"}`` entry of
        dexa_runtime_read_events."""
        cls = EVENT_TYPES.get(str(event.get("type", "")), Event)
        return cls.from_json(event, token=token, live=bool(live))


@dataclass(frozen=True, eq=False)
class SessionStartedEvent(Event):
    """session_started: the session's model."""

    model: Optional[str] = None


@dataclass(frozen=True, eq=False)
class QueueChangedEvent(Event):
    """queue_changed: ``action`` "added" with ``message``, or "deleted" with
    ``id``."""

    action: str = ""
    message: Optional[QueuedMessage] = None
    id: Optional[str] = None
    _nested = {"message": _one(QueuedMessage)}


@dataclass(frozen=True, eq=False)
class TurnStartedEvent(Event):
    """turn_started: the turn, its mode and the queued messages it took."""

    turn: Optional[int] = None
    mode: Optional[str] = None
    message_ids: List[str] = field(default_factory=list)


@dataclass(frozen=True, eq=False)
class MessageAppendedEvent(Event):
    """message_appended: a compact view of a stored message that has text."""

    message: Optional[Message] = None
    _nested = {"message": _one(Message)}


@dataclass(frozen=True, eq=False)
class ToolCallProposedEvent(Event):
    """tool_call_proposed: the model asked for a call."""

    turn: Optional[int] = None
    call_id: str = ""
    name: str = ""
    arguments: Any = None


@dataclass(frozen=True, eq=False)
class ToolCallAwaitingApprovalEvent(Event):
    """tool_call_awaiting_approval: the call waits in AwaitToolApproval."""

    turn: Optional[int] = None
    call_id: str = ""
    name: str = ""
    arguments: Any = None
    kind: Optional[str] = None


@dataclass(frozen=True, eq=False)
class QuestionAskedEvent(Event):
    """question_asked: ask_user waits for an answer (text, or one of
    ``choices``)."""

    turn: Optional[int] = None
    call_id: str = ""
    prompt: str = ""
    choices: Optional[List[str]] = None


@dataclass(frozen=True, eq=False)
class TimerSetEvent(Event):
    """timer_set: durable_wait waits until ``fires_at_ms``."""

    turn: Optional[int] = None
    call_id: str = ""
    seconds: Optional[int] = None
    fires_at_ms: Optional[int] = None
    reason: Optional[str] = None


@dataclass(frozen=True, eq=False)
class ToolCallFinishedEvent(Event):
    """tool_call_finished: the result is recorded at ``seq``; status ok,
    error, unknown_outcome, rejected or cancelled."""

    call_id: str = ""
    name: str = ""
    status: str = ""
    seq: Optional[int] = None


@dataclass(frozen=True, eq=False)
class ApprovalResolvedEvent(Event):
    """approval_resolved: ``decision`` is {decision: approve|reject, note?}."""

    call_id: str = ""
    decision: Optional[Mapping[str, Any]] = None


@dataclass(frozen=True, eq=False)
class QuestionAnsweredEvent(Event):
    """question_answered: ``decision`` is {decision: answer, answer}."""

    call_id: str = ""
    decision: Optional[Mapping[str, Any]] = None


@dataclass(frozen=True, eq=False)
class TimerFiredEvent(Event):
    """timer_fired: a durable_wait timer fired."""

    turn: Optional[int] = None
    call_id: str = ""


@dataclass(frozen=True, eq=False)
class PlanUpdatedEvent(Event):
    """plan_updated: the whole plan, or None when it was cleared."""

    plan: Optional[Plan] = None
    _nested = {"plan": _one(Plan)}


@dataclass(frozen=True, eq=False)
class TurnControlEvent(Event):
    """turn_control: a steer or stop (``action``) waits for the next safe
    Step boundary."""

    turn: Optional[int] = None
    action: str = ""


@dataclass(frozen=True, eq=False)
class TurnCancelledEvent(Event):
    """turn_cancelled: the turn ended by a steer or a stop."""

    turn: Optional[int] = None
    action: str = ""


@dataclass(frozen=True, eq=False)
class TurnFinishedEvent(Event):
    """turn_finished: the final answer is recorded."""

    turn: Optional[int] = None


@dataclass(frozen=True, eq=False)
class TurnFailedEvent(Event):
    """turn_failed: the model call failed for good; ``error`` is {code,
    message}."""

    turn: Optional[int] = None
    error: Optional[Mapping[str, Any]] = None


@dataclass(frozen=True, eq=False)
class CompactionEvent(Event):
    """compaction: older messages were summarized into chunks and retention
    ran."""

    through_seq: Optional[int] = None
    moved: Optional[int] = None
    deleted_chunks: Optional[int] = None


@dataclass(frozen=True, eq=False)
class TextDeltaEvent(Event):
    """text_delta (live): a piece of the answer being generated."""

    turn: Optional[int] = None
    text: str = ""


@dataclass(frozen=True, eq=False)
class ReasoningDeltaEvent(Event):
    """reasoning_delta (live): a piece of a reasoning summary."""

    turn: Optional[int] = None
    text: str = ""


@dataclass(frozen=True, eq=False)
class ToolCallStartedEvent(Event):
    """tool_call_started (live): a tool Step began its attempt."""

    call_id: str = ""
    name: str = ""
    attempt: Optional[int] = None


#: Event type name -> its class.
EVENT_TYPES: Dict[str, Type[Event]] = {
    "session_started": SessionStartedEvent, "queue_changed": QueueChangedEvent,
    "turn_started": TurnStartedEvent, "message_appended": MessageAppendedEvent,
    "tool_call_proposed": ToolCallProposedEvent,
    "tool_call_awaiting_approval": ToolCallAwaitingApprovalEvent,
    "question_asked": QuestionAskedEvent, "timer_set": TimerSetEvent,
    "tool_call_finished": ToolCallFinishedEvent, "approval_resolved": ApprovalResolvedEvent,
    "question_answered": QuestionAnsweredEvent, "timer_fired": TimerFiredEvent,
    "plan_updated": PlanUpdatedEvent, "turn_control": TurnControlEvent,
    "turn_cancelled": TurnCancelledEvent, "turn_finished": TurnFinishedEvent,
    "turn_failed": TurnFailedEvent, "compaction": CompactionEvent,
    "text_delta": TextDeltaEvent, "reasoning_delta": ReasoningDeltaEvent,
    "tool_call_started": ToolCallStartedEvent,
}
