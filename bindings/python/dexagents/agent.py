"""The agent definition, shaped like the Dex Agents SDK's: models, tools
written in Python (plain or ``async def``), built-in tools, MCP tool sources,
compaction policy and limits; and :class:`Agent`, the immutable library
agent made from it."""
from __future__ import annotations

import asyncio
import enum
import inspect
import json
import os
from dataclasses import dataclass, field
from typing import (Any, Awaitable, Callable, Dict, Iterable, List, Mapping, Optional, Sequence,
                    Union)

from . import _lifecycle
from ._native import enc, ffi, lib, s, span, take
from .errors import OK, check

# ---- models -----------------------------------------------------------------


class Model:
    """A model client. :meth:`demo` makes a demo model ("mock/dex",
    "mock/dex-mini": no key, no network, slash commands); :meth:`client` a
    provider client ("openai/gpt-4.1", "anthropic/claude-sonnet-4", ...)
    configured by an options object (dexa_model_client_new(3)). In an agent's
    ``models`` a plain string is turned into one of them: "mock/..." a demo
    model, any other name a provider client with default options."""

    def __init__(self, handle: Any) -> None:
        """Wraps a ``dexa_model *`` the caller owns (freed with the object)."""
        self._h = ffi.gc(handle, lib.dexa_model_free)
        #: A model written in Python: its host object and what keeps it alive.
        self._host: Any = None
        self._keep: Any = None

    @classmethod
    def demo(cls, name: str = "mock/dex") -> "Model":
        """The demo model ``name`` (mock/dex or mock/dex-mini)."""
        out = ffi.new("dexa_model **")
        check(lib.dexa_model_demo_new(out, enc(name)), "demo model %r" % name)
        return cls(out[0])

    @classmethod
    def client(cls, name: str, options: Union[Mapping[str, Any], str, None] = None) -> "Model":
        """A provider client; ``options`` is a mapping (or JSON text) such as
        {"api_key": ..., "base_url": ..., "timeout_ms": ...}. An unknown key
        raises :class:`~dexagents.UnknownKeyError`."""
        out = ffi.new("dexa_model **")
        opts = enc(json.dumps(options) if isinstance(options, Mapping) else (options or "{}"))
        err = ffi.new("char[512]")
        check(lib.dexa_model_client_new(out, enc(name), opts, len(opts), err, 512), s(err))
        return cls(out[0])

    @classmethod
    def claude_code(cls, name: str = "claude-code",
                    options: Union[Mapping[str, Any], str, None] = None) -> "Model":
        """The Claude Code harness (dexa_harness_claude_code_new(3)): turns
        run in the Claude Code CLI as durable segments; ``options`` such as
        {"cli_path": ..., "model": ..., "allowed_tools": [...], "cwd": ...,
        "env": {...}, "timeout_ms": ...}; the API key comes from the
        environment only."""
        out = ffi.new("dexa_model **")
        opts = enc(json.dumps(options) if isinstance(options, Mapping) else (options or "{}"))
        err = ffi.new("char[512]")
        check(lib.dexa_harness_claude_code_new(out, enc(name), opts, len(opts), err, 512), s(err))
        return cls(out[0])

    @classmethod
    def named(cls, name: str) -> "Model":
        """:meth:`demo` for "mock/..." names, else :meth:`client` with default
        options."""
        return cls.demo(name) if name.startswith("mock/") else cls.client(name)

    @classmethod
    def from_function(cls, name: str, generate: Callable[..., Any]) -> "Model":
        """A model written in Python: ``generate(request)`` gets a
        :class:`~dexagents.ModelRequest` and returns a
        :class:`~dexagents.ModelReply` (or a mapping of its fields), or an
        awaitable of one (``async def``). An exception is an error that
        retries (transient: a DexaError of that class, an HTTP 429 or 5xx, a
        connection error) or fails the turn (anything else); see
        :func:`dexagents.model.error_code`."""
        from .model import _Host, _new_model
        host = _Host(generate, None, harness=False)
        handle, keep = _new_model(name, host)
        m = cls(handle)
        m._host, m._keep = host, keep
        return m

    @property
    def name(self) -> str:
        """The model's name."""
        return s(lib.dexa_model_name(self._h))

    def __repr__(self) -> str:
        return "Model(%r)" % self.name


class Harness(Model):
    """A harness written in Python (dexagents-harness(7)): an agent
    framework that runs the model part of a turn, one segment per RunModel
    Step. ``run_segment(request)`` reads the framework's state
    (``request.state``, ``request.state_entries``) and the new messages
    (``request.new_messages``) and returns a :class:`~dexagents.ModelReply`
    with its items, its tool calls (each then runs in its own Step, with the
    effect and approval the framework's metadata gives) and its new
    ``state`` / ``state_entries``; ``summarize(request)`` (optional) writes
    Dex compaction's summary. ``owns_transcript``: the framework keeps and
    compacts its own transcript (Dex compaction off; requests carry only new
    messages); ``runs_reads``: it runs read tools inside the segment
    (``request.call_tool``). Put it in the agent's ``models``."""

    def __init__(self, name: str, run_segment: Callable[..., Any], *,
                 summarize: Optional[Callable[..., Any]] = None,
                 owns_transcript: bool = False, runs_reads: bool = False) -> None:
        from .model import _Host, _new_model
        host = _Host(run_segment, summarize, harness=True)
        flags = (1 if owns_transcript else 0) | (2 if runs_reads else 0)
        handle, keep = _new_model(name, host, flags)
        super().__init__(handle)
        self._host, self._keep = host, keep
        self.owns_transcript = owns_transcript
        self.runs_reads = runs_reads

    def __repr__(self) -> str:
        return "Harness(%r)" % self.name


# ---- tools --------------------------------------------------------------------


class ToolEffect(enum.IntEnum):
    """What a tool does outside the session. READ and IDEMPOTENT_WRITE run in
    CallTool (retried with backoff); WRITE runs in CallSingleAttemptTool (one
    attempt; a crash during it is recorded as an unknown outcome and never
    repeated)."""

    READ = 1
    IDEMPOTENT_WRITE = 2
    WRITE = 3


_EFFECT_NAMES = {"read": ToolEffect.READ, "idempotent_write": ToolEffect.IDEMPOTENT_WRITE,
                 "write": ToolEffect.WRITE}


class ToolCall:
    """What a tool function gets next to its arguments: the tool's name, the
    call id, the session id, the idempotency key ("<session>:<call>", stable
    across retries and workers: pass it to the service you call) and the
    attempt (1-based)."""

    __slots__ = ("name", "call_id", "session_id", "idempotency_key", "attempt")

    def __init__(self, name: str, call_id: str, session_id: str, idempotency_key: str,
                 attempt: int) -> None:
        self.name = name
        self.call_id = call_id
        self.session_id = session_id
        self.idempotency_key = idempotency_key
        self.attempt = attempt

    @classmethod
    def _of(cls, inv: Any) -> "ToolCall":
        return cls(s(lib.dexa_tool_invocation_name(inv)),
                   s(lib.dexa_tool_invocation_call_id(inv)),
                   s(lib.dexa_tool_invocation_session_id(inv)),
                   s(lib.dexa_tool_invocation_idempotency_key(inv)),
                   lib.dexa_tool_invocation_attempt(inv))

    def __repr__(self) -> str:
        return "ToolCall(name=%r, call_id=%r, session_id=%r, attempt=%d)" % (
            self.name, self.call_id, self.session_id, self.attempt)


#: Earlier name of :class:`ToolCall`.
Call = ToolCall


@dataclass(frozen=True)
class ToolResult:
    """A tool's result spelled out: the text the model sees, optional
    structured content (any JSON value, kept next to the text), and whether
    it is a tool-level error (recorded as the result, not retried). A tool
    may also return a str (the text), None (empty text) or any JSON value
    (sent as JSON text and kept as the content)."""

    text: str
    content: Any = None
    is_error: bool = False


ToolFunction = Callable[[Dict[str, Any], ToolCall], Any]


class Tool:
    """A tool written in Python: ``fn(args, call)`` gets the arguments (a
    dict) and a :class:`ToolCall`, and returns a str, a JSON value, a
    :class:`ToolResult`, or an awaitable of one of those (an ``async def``
    function). An exception becomes a tool error result with its message; it
    never reaches the library. The function runs on a runtime worker thread
    (with the GIL), several calls possibly at once; an ``async def`` function
    runs on the event loop of the :class:`~dexagents.AsyncRuntime` that uses
    the agent, else in a private event loop on that worker thread."""

    def __init__(self, fn: ToolFunction, name: Optional[str] = None,
                 description: Optional[str] = None,
                 parameters: Optional[Mapping[str, Any]] = None,
                 effect: Union[ToolEffect, int, str] = ToolEffect.READ,
                 approval: bool = False, *, requires_approval: Optional[bool] = None) -> None:
        """``name`` defaults to the function's name, ``description`` to its
        docstring, ``parameters`` (a JSON Schema object) to {"type":
        "object"}. ``effect`` is a :class:`ToolEffect` (or "read",
        "idempotent_write", "write"); ``approval`` (or ``requires_approval``)
        makes each call wait for a person's approval first."""
        if not callable(fn):
            raise TypeError("a tool needs a callable, not %r" % (fn,))
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "")
        self.description = description if description is not None else \
            inspect.cleandoc(fn.__doc__ or "")
        self.parameters: Mapping[str, Any] = parameters if parameters is not None \
            else {"type": "object"}
        if isinstance(effect, str):
            if effect not in _EFFECT_NAMES:
                raise ValueError("unknown tool effect %r (read, idempotent_write, write)" % effect)
            self.effect = _EFFECT_NAMES[effect]
        else:
            self.effect = ToolEffect(int(effect))
        self.approval = bool(approval if requires_approval is None else requires_approval)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return "Tool(%r, effect=%s, approval=%s)" % (self.name, self.effect.name, self.approval)


def tool(fn: Optional[ToolFunction] = None, **options: Any) -> Any:
    """Decorator making a :class:`Tool`: ``@tool`` or ``@tool(name=...,
    description=..., parameters=..., effect=..., approval=...)``."""
    if fn is not None:
        return Tool(fn, **options)
    return lambda f: Tool(f, **options)


class _ToolSlot:
    """What the library calls back with: the tool and its agent."""

    __slots__ = ("tool", "agent")

    def __init__(self, tool: Tool, agent: "Agent") -> None:
        self.tool = tool
        self.agent = agent


async def _as_coroutine(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _await(awaitable: Awaitable[Any], agent: Optional["Agent"]) -> Any:
    """Waits for an async tool's awaitable on a worker thread."""
    loop = agent._async_loop if agent is not None else None
    if loop is not None and loop.is_running() and not loop.is_closed():
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if current is loop:
            raise RuntimeError("an async tool cannot run while its event loop's thread waits "
                               "for it: use AsyncRuntime or Agent.dispatch_async")
        return asyncio.run_coroutine_threadsafe(_as_coroutine(awaitable), loop).result()
    return asyncio.run(_as_coroutine(awaitable))


def _tool_output(result: Any) -> ToolResult:
    if isinstance(result, ToolResult):
        return result
    if result is None:
        return ToolResult("")
    if isinstance(result, str):
        return ToolResult(result)
    if isinstance(result, (bytes, bytearray)):
        return ToolResult(bytes(result).decode("utf-8"))
    text = json.dumps(result)
    return ToolResult(text, result)


def _set_output(out: Any, r: ToolResult) -> None:
    text = enc(r.text)
    lib.dexa_tool_output_set_text(out, text, len(text), 1 if r.is_error else 0)
    if r.content is not None:
        content = enc(r.content if isinstance(r.content, str) else json.dumps(r.content))
        lib.dexa_tool_output_set_content(out, content, len(content))


def _run_tool(slot: _ToolSlot, inv: Any, out: Any) -> int:
    if _lifecycle.exiting():
        _set_output(out, ToolResult("the Python interpreter is exiting: the tool did not run",
                                    is_error=True))
        return OK
    try:
        p = ffi.new("const char **")
        n = ffi.new("size_t *")
        lib.dexa_tool_invocation_arguments(inv, p, n)
        raw = span(p[0], n[0])
        args = json.loads(raw) if raw else {}
        result = slot.tool.fn(args, ToolCall._of(inv))
        if inspect.isawaitable(result):
            result = _await(result, slot.agent)
        r = _tool_output(result)
    except BaseException as e:  # noqa: BLE001 - the library never sees a Python exception
        r = ToolResult("%s: %s" % (type(e).__name__, e), is_error=True)
    _set_output(out, r)
    return OK


def _tool_onerror(exc: Any, value: Any, tb: Any) -> None:  # only if _run_tool itself failed
    return None


@ffi.callback("int(void *, const dexa_tool_invocation *, dexa_tool_output *)",
              error=-305, onerror=_tool_onerror)
def _tool_trampoline(user_data: Any, inv: Any, out: Any) -> int:
    return _run_tool(ffi.from_handle(user_data), inv, out)


# ---- built-in tools, compaction, MCP ------------------------------------------


class BuiltInTool(str, enum.Enum):
    """The built-in tools: ask_user (a question, waits in
    AwaitQuestionAnswer), durable_wait (a durable timer, AwaitTimer) and
    write_todos (the plan). ``frozenset(BuiltInTool)`` selects all of them."""

    ASK_USER = "ask_user"
    DURABLE_WAIT = "durable_wait"
    WRITE_TODOS = "write_todos"


_BUILTIN_BITS = {BuiltInTool.ASK_USER: 1, BuiltInTool.DURABLE_WAIT: 2,
                 BuiltInTool.WRITE_TODOS: 4}
BUILTIN_ASK_USER, BUILTIN_DURABLE_WAIT, BUILTIN_WRITE_TODOS, BUILTIN_ALL = 1, 2, 4, 7


def _builtin_bits(value: Union[Iterable[Union[BuiltInTool, str]], int]) -> int:
    if isinstance(value, int):
        return value
    bits = 0
    for t in value:
        bits |= _BUILTIN_BITS[BuiltInTool(t)]
    return bits


@dataclass(frozen=True)
class CompactionPolicy:
    """When and how older messages are summarized (CompactContext).
    ``context_window_tokens`` turns compaction on (0: off); it runs when the
    next model input nears ``threshold_pct`` of the window (default 85) and
    keeps ``keep_pct`` of the window unsummarized (default 10). Retention then
    keeps at most ``retention_messages`` summarized messages (default 2000)
    unless ``keep_full_transcript``."""

    context_window_tokens: int = 0
    threshold_pct: Optional[int] = None
    keep_pct: Optional[int] = None
    retention_messages: Optional[int] = None
    keep_full_transcript: bool = False


class McpToolSource:
    """MCP servers as tool sources, from the worker's configuration: a
    mapping in the common ``{"mcpServers": {...}}`` shape (or just its inner
    object), or the path of such a JSON file. Unknown keys raise
    :class:`~dexagents.UnknownKeyError`. Each server becomes one tool source
    (tools named "<server>__<tool>"), started when first listed; secrets stay
    out of ``repr`` and :meth:`redacted`. See dexa_mcp_tool_sources_new(3)
    for effects taken from annotations (``trustAnnotations``)."""

    def __init__(self, servers: Union[Mapping[str, Any], str, "os.PathLike[str]"]) -> None:
        """Loads and checks the configuration; no server starts here."""
        out = ffi.new("dexa_mcp_config **")
        err = ffi.new("char[512]")
        if isinstance(servers, Mapping):
            doc = servers if "mcpServers" in servers else {"mcpServers": dict(servers)}
            text = enc(json.dumps(doc))
            rc = lib.dexa_mcp_config_load(out, ffi.NULL, text, len(text), err, 512)
        else:
            rc = lib.dexa_mcp_config_load(out, enc(os.fspath(servers)), ffi.NULL, 0, err, 512)
        check(rc, s(err))
        self._config = ffi.gc(out[0], lib.dexa_mcp_config_free)
        arr = ffi.new("dexa_tool_source ***")
        count = ffi.new("size_t *")
        check(lib.dexa_mcp_tool_sources_new(arr, count, self._config), "MCP tool sources")
        n = count[0]
        self._sources = ffi.gc(arr[0], lambda p: lib.dexa_mcp_tool_sources_free(p, n))
        self._count = n

    @classmethod
    def from_file(cls, path: Union[str, "os.PathLike[str]"]) -> "McpToolSource":
        """The configuration in the JSON file at ``path``."""
        return cls(path)

    def redacted(self) -> Dict[str, Any]:
        """The configuration with every env and header value replaced by
        "<redacted>": the only form to print or log."""
        p, n = ffi.new("char **"), ffi.new("size_t *")
        check(lib.dexa_mcp_config_redacted_json(self._config, p, n))
        return json.loads(take(p, n) or "{}")

    @property
    def server_names(self) -> List[str]:
        """The configured servers' names, in order."""
        return list(self.redacted().get("mcpServers", {}))

    def list_tools(self) -> List[Dict[str, Any]]:
        """Lists every server's tools now (starting or connecting to each):
        [{"name", "description", "parameters", "effect", "approval"}]. A
        server that cannot be listed raises its error."""
        tools: List[Dict[str, Any]] = []
        for i in range(self._count):
            p, n = ffi.new("char **"), ffi.new("size_t *")
            check(lib.dexa_tool_source_list_json(p, n, self._sources[i]),
                  "listing %s" % s(lib.dexa_tool_source_name(self._sources[i])))
            tools += json.loads(take(p, n) or "[]")
        return tools

    def _handles(self) -> List[Any]:
        return [self._sources[i] for i in range(self._count)]

    def __repr__(self) -> str:
        return "McpToolSource(servers=%r)" % (self.server_names,)


# ---- the definition and the agent ---------------------------------------------


@dataclass
class AgentDefinition:
    """Everything that makes an agent (the Dex Agents SDK's shape).

    ``models`` is the allow-list, the first being the default; each session
    picks one by name when it starts (an unknown name gets the default).
    ``tools`` are Python functions (:class:`Tool`, or plain callables);
    ``tool_sources`` are :class:`McpToolSource` objects. ``built_in_tools`` is
    a set of :class:`BuiltInTool` (``frozenset(BuiltInTool)`` for all).
    ``compaction`` is a :class:`CompactionPolicy`. The other fields are the
    limits of dexa_agent_def (None keeps the library's default): RunModel
    attempts (3) and timeout (15 min), CallTool attempts (5) and tool timeout
    (10 min), active state per session (64 MiB) and one user message
    (1 MiB). ``extra`` sets dexa_agent_def fields newer than this class by
    their C names."""

    instructions: str = ""
    models: Sequence[Union[str, Model]] = ("mock/dex",)
    tools: Sequence[Union[Tool, ToolFunction]] = ()
    tool_sources: Sequence[McpToolSource] = ()
    built_in_tools: Union[Iterable[Union[BuiltInTool, str]], int] = frozenset()
    plan_mode_enabled: bool = False
    compaction: Optional[CompactionPolicy] = None
    flow_type: Optional[str] = None
    tool_source_name: str = "python"
    run_model_max_attempts: Optional[int] = None
    run_model_timeout_ms: Optional[int] = None
    tool_max_attempts: Optional[int] = None
    tool_timeout_ms: Optional[int] = None
    max_state_bytes: Optional[int] = None
    max_message_bytes: Optional[int] = None
    extra: Dict[str, Any] = field(default_factory=dict, repr=False)


_LIMITS = ("run_model_max_attempts", "run_model_timeout_ms", "tool_max_attempts",
           "tool_timeout_ms", "max_state_bytes", "max_message_bytes")
# Earlier keyword names of Agent(...) -> CompactionPolicy fields.
_COMPACTION_KEYS = {"context_window_tokens": "context_window_tokens",
                    "compaction_threshold_pct": "threshold_pct",
                    "compaction_keep_pct": "keep_pct",
                    "retention_messages": "retention_messages",
                    "keep_full_transcript": "keep_full_transcript"}


def _legacy_definition(instructions: str, models: Sequence[Union[str, Model]],
                       tools: Sequence[Any], builtin_tools: Any, plan_mode: bool,
                       flow_type: Optional[str], tool_source_name: str,
                       tool_sources: Sequence[McpToolSource],
                       limits: Dict[str, Any]) -> AgentDefinition:
    compaction: Dict[str, Any] = {}
    d = AgentDefinition(instructions=instructions, models=models, tools=tools,
                        tool_sources=tool_sources, built_in_tools=builtin_tools,
                        plan_mode_enabled=plan_mode, flow_type=flow_type,
                        tool_source_name=tool_source_name)
    for k, v in limits.items():
        if k in _COMPACTION_KEYS:
            compaction[_COMPACTION_KEYS[k]] = v
        elif k in _LIMITS:
            setattr(d, k, v)
        else:
            raise TypeError("unknown agent field %r" % k)
    if compaction:
        d.compaction = CompactionPolicy(**compaction)
    return d


class Agent:
    """An immutable library agent made from an :class:`AgentDefinition`
    (``Agent(AgentDefinition(...))``), or from keyword arguments as in
    earlier versions (``Agent("You are helpful.", models=[...],
    tools=[...], builtin_tools=BUILTIN_ALL, plan_mode=True,
    tool_max_attempts=2)``). It keeps every object the library calls back
    into alive as long as it lives, and may be shared by several runtimes."""

    def __init__(self, definition: Union[AgentDefinition, str] = "",
                 models: Sequence[Union[str, Model]] = ("mock/dex",),
                 tools: Sequence[Any] = (), builtin_tools: Any = 0, plan_mode: bool = False,
                 flow_type: Optional[str] = None, tool_source_name: str = "python",
                 tool_sources: Sequence[McpToolSource] = (), **limits: Any) -> None:
        """See the class docstring. Raises :class:`~dexagents.DexaError`
        subclasses for what the library refuses (no model, duplicate tool
        names, bad limits) and TypeError for an unknown keyword."""
        if isinstance(definition, AgentDefinition):
            d = definition
        else:
            d = _legacy_definition(definition, models, tools, builtin_tools, plan_mode,
                                   flow_type, tool_source_name, tool_sources, limits)
        self.definition = d
        #: The event loop async tools run on (set by AsyncRuntime).
        self._async_loop: Optional[asyncio.AbstractEventLoop] = None
        self._keep: List[Any] = []
        self.models = [m if isinstance(m, Model) else Model.named(m) for m in d.models]
        for m in self.models:  # async models and harnesses run on this agent's loop
            if getattr(m, "_host", None) is not None:
                m._host.agent = self
        self.tools = [t if isinstance(t, Tool) else Tool(t) for t in d.tools]
        self.tool_sources = list(d.tool_sources)
        handles = self._function_source() + [h for src in self.tool_sources
                                             for h in src._handles()]
        self._h = self._new(d, handles)

    def _function_source(self) -> List[Any]:
        if not self.tools:
            return []
        out = ffi.new("dexa_tool_source **")
        check(lib.dexa_function_tools_new(out, enc(self.definition.tool_source_name)))
        src = ffi.gc(out[0], lib.dexa_tool_source_free)
        self._keep.append(src)
        for t in self.tools:
            handle = ffi.new_handle(_ToolSlot(t, self))
            self._keep.append(handle)
            rc = lib.dexa_function_tools_add(
                src, enc(t.name), enc(t.description), enc(json.dumps(t.parameters)),
                int(t.effect), 1 if t.approval else 0, _tool_trampoline, handle)
            check(rc, "tool %r" % t.name)
        return [src]

    def _cstr(self, text: str) -> Any:
        c = ffi.new("char[]", enc(text))
        self._keep.append(c)
        return c

    def _new(self, d: AgentDefinition, sources: List[Any]) -> Any:
        c = ffi.new("dexa_agent_def *")
        check(lib.dexa_agent_def_init(c, ffi.sizeof("dexa_agent_def")))
        c.instructions = self._cstr(d.instructions)
        if d.flow_type:
            c.flow_type = self._cstr(d.flow_type)
        models = ffi.new("dexa_model *[]", [m._h for m in self.models])
        c.models, c.model_count = models, len(self.models)
        srcs = ffi.new("dexa_tool_source *[]", sources) if sources else ffi.NULL
        c.tool_sources, c.tool_source_count = srcs, len(sources)
        c.builtin_tools = _builtin_bits(d.built_in_tools)
        c.plan_mode_enabled = 1 if d.plan_mode_enabled else 0
        if d.compaction is not None:
            p = d.compaction
            c.context_window_tokens = p.context_window_tokens
            if p.threshold_pct is not None:
                c.compaction_threshold_pct = p.threshold_pct
            if p.keep_pct is not None:
                c.compaction_keep_pct = p.keep_pct
            if p.retention_messages is not None:
                c.retention_messages = p.retention_messages
            c.keep_full_transcript = 1 if p.keep_full_transcript else 0
        for k in _LIMITS:
            v = getattr(d, k)
            if v is not None:
                setattr(c, k, v)
        for k, v in d.extra.items():  # dexa_agent_def fields newer than this class
            if k.startswith("reserved") or not hasattr(c, k):
                raise TypeError("unknown agent field %r" % k)
            setattr(c, k, v)
        out = ffi.new("dexa_agent **")
        err = ffi.new("char[512]")
        check(lib.dexa_agent_new(out, c, err, 512), s(err))
        return ffi.gc(out[0], lib.dexa_agent_free)

    @property
    def flow_type(self) -> str:
        """The flow type ("AgentSession" unless the definition names one)."""
        return s(lib.dexa_agent_flow_type(self._h))

    def describe(self) -> Dict[str, Any]:
        """The flow description (dexa_flow_describe(3)): flow type, start
        Step, every Step type with its default options, the attributes,
        channels, streams and RPCs. A host registers the flow with its engine
        from it. The JSON is returned as the library wrote it."""
        p, n = ffi.new("char **"), ffi.new("size_t *")
        check(lib.dexa_flow_describe(p, n, self._h))
        return json.loads(take(p, n) or "{}")

    def dispatch(self, call: Any, attributes: Any, *,
                 on_event: Optional[Callable[[Dict[str, Any]], None]] = None) -> Any:
        """Runs one Step method or RPC (host-driven mode): see
        :func:`dexagents.host.dispatch`."""
        from .host import dispatch
        return dispatch(self, call, attributes, on_event=on_event)

    async def dispatch_async(self, call: Any, attributes: Any, *,
                             on_event: Optional[Callable[[Dict[str, Any]], None]] = None) -> Any:
        """:meth:`dispatch` on a thread of its own, so that the event loop
        keeps running (async tools of this agent run on it)."""
        from .aio import run_blocking
        self._async_loop = asyncio.get_running_loop()
        return await run_blocking(self.dispatch, call, attributes, on_event=on_event)

    def __repr__(self) -> str:
        return "Agent(flow_type=%r, models=%r, tools=%r)" % (
            self.flow_type, [m.name for m in self.models], [t.name for t in self.tools])


