"""Python bindings of libdexagents (durable AI-agent sessions).

cffi in ABI mode over libdexagents.so.1: nothing is compiled at install time.
The library is found, in this order, at $DEXAGENTS_LIBRARY, in the lib/
directory of the source tree this package sits in, then by the system's loader
("libdexagents.so.1", LD_LIBRARY_PATH included).

    import dexagents as dx

    @dx.tool(effect=dx.WRITE, approval=True,
             parameters={"type": "object", "properties": {"path": {"type": "string"}}})
    def save(args, call):
        "Saves a file."
        return "saved " + args["path"]

    agent = dx.Agent("You are helpful.", models=["mock/dex"], tools=[save])
    with dx.Runtime(agent, store=":memory:", workers=2) as rt:
        sid = rt.start_session()
        rt.send(sid, "hello")
        rt.wait_idle(sid)
        for ev in rt.events(sid):
            print(ev.token, ev["type"])
"""
import atexit
import json
import os
import threading
import weakref

from cffi import FFI

from ._cdef import CDEF

__all__ = [
    "DexaError", "Model", "Tool", "tool", "Agent", "Runtime", "Event",
    "READ", "IDEMPOTENT_WRITE", "WRITE", "BUILTIN_ASK_USER", "BUILTIN_DURABLE_WAIT",
    "BUILTIN_WRITE_TODOS", "BUILTIN_ALL", "version", "strerror", "error_name",
    "error_class", "ffi", "lib",
]

ffi = FFI()
ffi.cdef(CDEF)


def _load():
    env = os.environ.get("DEXAGENTS_LIBRARY")
    if env:
        return ffi.dlopen(env)
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.normpath(os.path.join(here, "..", "..", "..", "lib", "libdexagents.so.1"))
    if os.path.exists(tree):
        return ffi.dlopen(tree)
    return ffi.dlopen("libdexagents.so.1")


lib = _load()

# Error codes (include/dexagents/errors.h); the numbers never change.
OK = 0
_CODES = {
    "DEXA_E_INVALID_ARG": -101, "DEXA_E_STRUCT_SIZE": -102, "DEXA_E_INVALID_JSON": -103,
    "DEXA_E_UNKNOWN_STEP": -104, "DEXA_E_UNKNOWN_RPC": -105, "DEXA_E_NOT_FOUND": -106,
    "DEXA_E_EMPTY_MESSAGE": -107, "DEXA_E_BAD_STATE": -108, "DEXA_E_UNKNOWN_KEY": -109,
    "DEXA_E_INVALID_RESUME_TOKEN": -110, "DEXA_E_STALE_REVISION": -111,
    "DEXA_E_TOO_LARGE": -112, "DEXA_E_REENTRANT": -113, "DEXA_E_ALREADY_EXISTS": -114,
    "DEXA_E_UNSUPPORTED": -115, "DEXA_E_NOT_PENDING": -116, "DEXA_E_TRANSIENT": -201,
    "DEXA_E_TIMEOUT": -202, "DEXA_E_BUSY": -203, "DEXA_E_IO": -204,
    "DEXA_E_RATE_LIMITED": -205, "DEXA_E_PERMANENT": -301, "DEXA_E_MODEL": -302,
    "DEXA_E_TOOL": -303, "DEXA_E_STATE_LIMIT": -304, "DEXA_E_CALLBACK_FAILED": -305,
    "DEXA_E_CORRUPT": -306, "DEXA_E_AUTH": -307, "DEXA_E_NOMEM": -901,
    "DEXA_E_INTERNAL": -902,
}
globals().update(_CODES)
__all__ += list(_CODES)

# Tool effects and approval policy (tools.h), built-in tools (agent.h).
READ, IDEMPOTENT_WRITE, WRITE = 1, 2, 3
_EFFECTS = {"read": READ, "idempotent_write": IDEMPOTENT_WRITE, "write": WRITE}
BUILTIN_ASK_USER, BUILTIN_DURABLE_WAIT, BUILTIN_WRITE_TODOS, BUILTIN_ALL = 1, 2, 4, 7


def _s(p):
    return ffi.string(p).decode("utf-8") if p != ffi.NULL else ""


def version():
    """The version of the loaded library ("1.1.0")."""
    return _s(lib.dexa_version())


def strerror(code):
    return _s(lib.dexa_strerror(code))


def error_name(code):
    return _s(lib.dexa_error_name(code))


def error_class(code):
    return lib.dexa_error_class(code)


class DexaError(Exception):
    """A failed libdexagents call: .code (the negative DEXA_E_* number), .name
    ("DEXA_E_NOT_FOUND"), .message (the handle's or error document's message),
    .document (the error document, when the call returned one)."""

    def __init__(self, code, message="", document=None):
        self.code = int(code)
        self.name = error_name(self.code)
        self.message = message or strerror(self.code)
        self.document = document
        super().__init__("%s (%d): %s" % (self.name, self.code, self.message))

    @property
    def error_class(self):
        return error_class(self.code)


def _check(rc, message=""):
    if rc != OK:
        raise DexaError(rc, message)


def _enc(text):
    return text.encode("utf-8") if isinstance(text, str) else bytes(text)


def _take(pp, plen):
    """Returns the library-allocated text *pp (freed with dexa_free)."""
    if pp[0] == ffi.NULL:
        return None
    try:
        return ffi.unpack(pp[0], plen[0]).decode("utf-8")
    finally:
        lib.dexa_free(pp[0])


# ---- models --------------------------------------------------------------

class Model:
    """A model client handle. Model.demo("mock/dex") is the demo model (no key,
    no network); Model.client("openai/gpt-4.1", {...}) a real provider through
    dexa_model_client_new. A plain string in Agent(models=...) is turned into
    one of those: "mock/..." a demo model, any other name a provider client."""

    def __init__(self, handle):
        self._h = ffi.gc(handle, lib.dexa_model_free)

    @classmethod
    def demo(cls, name="mock/dex"):
        out = ffi.new("dexa_model **")
        _check(lib.dexa_model_demo_new(out, _enc(name)), "demo model %r" % name)
        return cls(out[0])

    @classmethod
    def client(cls, name, options=None):
        out = ffi.new("dexa_model **")
        opts = _enc(json.dumps(options) if isinstance(options, dict) else (options or "{}"))
        err = ffi.new("char[512]")
        rc = lib.dexa_model_client_new(out, _enc(name), opts, len(opts), err, 512)
        _check(rc, _s(err))
        return cls(out[0])

    @classmethod
    def claude_code(cls, name="claude-code", options=None):
        """The Claude Code harness (dexa_harness_claude_code_new): turns run
        in the Claude Code CLI as durable segments; options: cli_path, model,
        allowed_tools, cwd, env, timeout_ms (the key from the environment)."""
        out = ffi.new("dexa_model **")
        opts = _enc(json.dumps(options) if isinstance(options, dict) else (options or "{}"))
        err = ffi.new("char[512]")
        rc = lib.dexa_harness_claude_code_new(out, _enc(name), opts, len(opts), err, 512)
        _check(rc, _s(err))
        return cls(out[0])

    @property
    def name(self):
        return _s(lib.dexa_model_name(self._h))


# ---- tools ---------------------------------------------------------------

class Call:
    """What a tool function gets next to its arguments: the call's name, call
    id, session id, idempotency key ("<session>:<call>") and attempt."""

    __slots__ = ("name", "call_id", "session_id", "idempotency_key", "attempt")

    def __init__(self, inv):
        self.name = _s(lib.dexa_tool_invocation_name(inv))
        self.call_id = _s(lib.dexa_tool_invocation_call_id(inv))
        self.session_id = _s(lib.dexa_tool_invocation_session_id(inv))
        self.idempotency_key = _s(lib.dexa_tool_invocation_idempotency_key(inv))
        self.attempt = lib.dexa_tool_invocation_attempt(inv)


class Tool:
    """A tool written in Python: fn(args: dict, call: Call) returns the text
    the model sees (a str), or any JSON value (sent as JSON text and kept as
    the structured content too). An exception becomes a tool error result
    with its message; it never reaches the library. fn runs on a runtime
    worker thread (with the GIL), several calls possibly at once."""

    def __init__(self, fn, name=None, description=None, parameters=None,
                 effect=READ, approval=False):
        self.fn = fn
        self.name = name or fn.__name__
        self.description = description if description is not None else (fn.__doc__ or "").strip()
        self.parameters = parameters if parameters is not None else {"type": "object"}
        self.effect = _EFFECTS[effect] if isinstance(effect, str) else int(effect)
        self.approval = 1 if approval else 0

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


def tool(fn=None, **kwargs):
    """Decorator: @tool or @tool(name=, description=, parameters=, effect=, approval=)."""
    if fn is not None and callable(fn):
        return Tool(fn, **kwargs)
    return lambda f: Tool(f, **kwargs)


def _tool_result(t, inv, out):
    try:
        p = ffi.new("const char **")
        n = ffi.new("size_t *")
        lib.dexa_tool_invocation_arguments(inv, p, n)
        raw = ffi.unpack(p[0], n[0]).decode("utf-8") if p[0] != ffi.NULL else "{}"
        args = json.loads(raw) if raw else {}
        result = t.fn(args, Call(inv))
        if isinstance(result, (bytes, str)):
            text, content = _enc(result), None
        else:
            text = content = _enc(json.dumps(result))
        lib.dexa_tool_output_set_text(out, text, len(text), 0)
        if content is not None:
            lib.dexa_tool_output_set_content(out, content, len(content))
    except BaseException as e:  # the library never sees a Python exception
        msg = _enc("%s: %s" % (type(e).__name__, e))
        lib.dexa_tool_output_set_text(out, msg, len(msg), 1)
    return OK


def _tool_onerror(exc, value, tb):  # only if _tool_result itself failed
    return None


@ffi.callback("int(void *, const dexa_tool_invocation *, dexa_tool_output *)",
              error=-305, onerror=_tool_onerror)
def _tool_trampoline(user_data, inv, out):
    return _tool_result(ffi.from_handle(user_data), inv, out)


# ---- agent ---------------------------------------------------------------

class Agent:
    """An immutable agent: instructions, allowed models (the first is the
    default), Python tools, built-in tools and limits (any dexa_agent_def
    field by name, e.g. tool_max_attempts=2). Keeps every object the library
    calls back into alive as long as the agent lives."""

    def __init__(self, instructions="", models=("mock/dex",), tools=(), builtin_tools=0,
                 plan_mode=False, flow_type=None, tool_source_name="python", **limits):
        self.models = [m if isinstance(m, Model) else
                       (Model.demo(m) if m.startswith("mock/") else Model.client(m))
                       for m in models]
        self.tools = [t if isinstance(t, Tool) else Tool(t) for t in tools]
        self._keep = []
        sources = []
        if self.tools:
            out = ffi.new("dexa_tool_source **")
            _check(lib.dexa_function_tools_new(out, _enc(tool_source_name)))
            src = ffi.gc(out[0], lib.dexa_tool_source_free)
            for t in self.tools:
                handle = ffi.new_handle(t)
                self._keep.append(handle)
                rc = lib.dexa_function_tools_add(
                    src, _enc(t.name), _enc(t.description), _enc(json.dumps(t.parameters)),
                    t.effect, t.approval, _tool_trampoline, handle)
                _check(rc, "tool %r" % t.name)
            sources.append(src)
        self._sources = sources
        d = ffi.new("dexa_agent_def *")
        _check(lib.dexa_agent_def_init(d, ffi.sizeof("dexa_agent_def")))
        strings = [_enc(instructions)]
        d.instructions = ffi.new("char[]", strings[0])
        self._keep.append(d.instructions)
        if flow_type:
            d.flow_type = ffi.new("char[]", _enc(flow_type))
            self._keep.append(d.flow_type)
        models_arr = ffi.new("dexa_model *[]", [m._h for m in self.models])
        d.models, d.model_count = models_arr, len(self.models)
        src_arr = ffi.new("dexa_tool_source *[]", sources) if sources else ffi.NULL
        d.tool_sources, d.tool_source_count = src_arr, len(sources)
        d.builtin_tools = builtin_tools
        d.plan_mode_enabled = 1 if plan_mode else 0
        for k, v in limits.items():
            if k.startswith("reserved") or not hasattr(d, k):
                raise TypeError("unknown agent field %r" % k)
            setattr(d, k, v)
        out = ffi.new("dexa_agent **")
        err = ffi.new("char[512]")
        _check(lib.dexa_agent_new(out, d, err, 512), _s(err))
        self._h = ffi.gc(out[0], lib.dexa_agent_free)

    @property
    def flow_type(self):
        return _s(lib.dexa_agent_flow_type(self._h))

    def describe(self):
        """The flow description (dexa_flow_describe) as a dict."""
        p = ffi.new("char **")
        n = ffi.new("size_t *")
        _check(lib.dexa_flow_describe(p, n, self._h))
        return json.loads(_take(p, n))


# ---- runtime -------------------------------------------------------------

class Event(dict):
    """One AgentEvents event (a dict: "type", "at", ...) with its resume token
    (.token) and .live (True for a live delta, which is not durable)."""

    def __init__(self, token, event, live=False):
        super().__init__(event)
        self.token = token
        self.live = bool(live)


_open_runtimes = weakref.WeakSet()


@atexit.register
def _close_open_runtimes():
    # Workers call Python tools: stop them while the interpreter still works.
    for rt in list(_open_runtimes):
        rt.close()


class Runtime:
    """The embedded runtime of an agent on a store (":memory:", a SQLite path,
    "sqlite:PATH" ...), with `workers` worker threads (0: none; drive it with
    run_ready). Every client operation of the session flow is a method; a
    failure raises DexaError with the error document's code and message.
    Blocking calls release the GIL, so worker threads can run Python tools
    meanwhile. Close it (or use `with`) before the agent goes away."""

    def __init__(self, agent, store=":memory:", workers=2, lease_ms=None, worker_id=None,
                 events_retained=None, sqlite_synchronous=None, session_cache_bytes=None):
        self.agent = agent  # the agent (and its tools) outlive the runtime
        o = ffi.new("dexa_runtime_options *")
        _check(lib.dexa_runtime_options_init(o, ffi.sizeof("dexa_runtime_options")))
        keep = []

        def cstr(v):
            c = ffi.new("char[]", _enc(v))
            keep.append(c)
            return c
        o.store = cstr(store)
        if sqlite_synchronous:
            o.sqlite_synchronous = cstr(sqlite_synchronous)
        if worker_id:
            o.worker_id = cstr(worker_id)
        if lease_ms is not None:
            o.lease_ms = lease_ms
        if events_retained is not None:
            o.events_retained = events_retained
        if session_cache_bytes is not None:
            o.session_cache_bytes = session_cache_bytes
        out = ffi.new("dexa_runtime **")
        err = ffi.new("char[512]")
        _check(lib.dexa_runtime_new(out, agent._h, o, err, 512), _s(err))
        self._h = out[0]
        self._lock = threading.Lock()
        _open_runtimes.add(self)
        if workers:
            self.start(workers)

    # lifecycle
    def start(self, workers=2):
        self._call_rc(lib.dexa_runtime_start(self._handle(), workers))

    def stop(self):
        self._call_rc(lib.dexa_runtime_stop(self._handle()))

    def close(self):
        with self._lock:
            h, self._h = self._h, None
        if h is not None:
            lib.dexa_runtime_free(h)  # joins the workers; the GIL is released meanwhile

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _handle(self):
        h = self._h
        if h is None:
            raise DexaError(DEXA_E_INVALID_ARG, "the runtime is closed")
        return h

    def _call_rc(self, rc):
        if rc != OK:
            raise DexaError(rc, _s(lib.dexa_runtime_errmsg(self._h)) if self._h else "")

    def _doc(self, rc, p, n):
        text = _take(p, n)
        doc = json.loads(text) if text else None
        if rc != OK:
            msg = ""
            if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
                msg = doc["error"].get("message", "")
            if not msg and self._h is not None:
                msg = _s(lib.dexa_runtime_errmsg(self._h))
            raise DexaError(rc, msg, doc)
        return doc

    # client operations
    def start_session(self, session_id=None, model=None, settings=None):
        """Starts a session; returns its id (chosen by the runtime when None)."""
        s = dict(settings or {})
        if model:
            s["model"] = model
        sj = _enc(json.dumps(s)) if s else ffi.NULL
        p, n = ffi.new("char **"), ffi.new("size_t *")
        rc = lib.dexa_runtime_start_session(self._handle(),
                                            _enc(session_id) if session_id else ffi.NULL,
                                            sj, len(sj) if s else 0, p, n)
        doc = self._doc(rc, p, n)
        return doc["session_id"] if doc else session_id

    def call(self, session_id, rpc, payload=None):
        """Runs the session RPC rpc with payload (a dict) and returns its response."""
        inp = _enc(json.dumps(payload if payload is not None else {}))
        p, n = ffi.new("char **"), ffi.new("size_t *")
        rc = lib.dexa_runtime_call(self._handle(), _enc(session_id), _enc(rpc), inp, len(inp),
                                   p, n)
        return self._doc(rc, p, n)

    def send(self, session_id, text, plan_mode=False):
        payload = {"text": text}
        if plan_mode:
            payload["plan_mode"] = True
        return self.call(session_id, "send_message", payload)

    def snapshot(self, session_id):
        return self.call(session_id, "snapshot")

    def messages(self, session_id, before_seq=None, limit=None):
        """Older messages (list_agent_messages): {"messages":[...],"has_more"}."""
        payload = {}
        if before_seq is not None:
            payload["before_seq"] = before_seq
        if limit is not None:
            payload["limit"] = limit
        return self.call(session_id, "list_agent_messages", payload)

    def delete(self, session_id, message_id):
        return self.call(session_id, "delete_message", {"message_id": message_id})

    def steer(self, session_id, message_id):
        return self.call(session_id, "steer", {"message_id": message_id})

    def stop_turn(self, session_id):
        """Stop: cancels the running turn (cancel_turn)."""
        return self.call(session_id, "cancel_turn")

    def approve(self, session_id, call_id, note=None):
        return self._resolve(session_id, call_id, "approve", note)

    def reject(self, session_id, call_id, note=None):
        return self._resolve(session_id, call_id, "reject", note)

    def _resolve(self, session_id, call_id, decision, note):
        payload = {"call_id": call_id, "decision": decision}
        if note is not None:
            payload["note"] = note
        return self.call(session_id, "resolve_approval", payload)

    def answer(self, session_id, call_id, answer):
        return self.call(session_id, "answer_question", {"call_id": call_id, "answer": answer})

    def execute_plan(self, session_id, revision):
        return self.call(session_id, "execute_plan", {"revision": revision})

    def list_sessions(self, after=None, limit=100):
        p, n = ffi.new("char **"), ffi.new("size_t *")
        rc = lib.dexa_runtime_list_sessions(self._handle(), _enc(after) if after else ffi.NULL,
                                            limit, p, n)
        return self._doc(rc, p, n)

    # events
    def read_events(self, session_id, resume_token="", max_events=100, timeout_ms=0):
        """One read: (list of Event, token to resume after the last one)."""
        p, n = ffi.new("char **"), ffi.new("size_t *")
        rc = lib.dexa_runtime_read_events(self._handle(), _enc(session_id),
                                          _enc(resume_token or ""), max_events, timeout_ms, p, n)
        doc = self._doc(rc, p, n)
        return ([Event(e["token"], e["event"], e.get("live")) for e in doc["events"]],
                doc["token"])

    def events(self, session_id, resume_token="", follow=False, timeout_ms=1000,
               live=True):
        """Iterates over the session's events after resume_token ("" from the
        oldest retained). Each Event has .token: pass it back to resume there.
        follow=False stops when no event arrives within timeout_ms; True waits
        for more forever (break out of the loop to end). live=False leaves out
        the live (not durable) deltas."""
        token = resume_token or ""
        while True:
            evs, nxt = self.read_events(session_id, token, 100, timeout_ms)
            for ev in evs:
                if live or not ev.live:
                    yield ev
            if nxt:
                token = nxt
            if not evs and not follow:
                return

    # driving
    def wait_idle(self, session_id, timeout_ms=10000):
        self._call_rc(lib.dexa_runtime_wait_idle(self._handle(), _enc(session_id), timeout_ms))

    def run_ready(self):
        ran = ffi.new("int32_t *")
        self._call_rc(lib.dexa_runtime_run_ready(self._handle(), ran))
        return ran[0]

    @property
    def errmsg(self):
        return _s(lib.dexa_runtime_errmsg(self._handle()))
