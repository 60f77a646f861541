"""A ctypes stand-in for the part of cffi's ABI mode that the package uses,
so that ``dexagents`` runs on a Python without cffi (a plain venv of any
Python >= 3.9, with no network to download cffi from).

cffi stays the primary backend: :mod:`dexagents._native` uses cffi when it
can be imported and this module otherwise, or when ``DEXAGENTS_FFI=ctypes``
asks for it (``DEXAGENTS_FFI=cffi`` insists on cffi). Only what the package
needs is here: :meth:`FFI.cdef` parses the declarations of
:mod:`dexagents._cdef` (opaque and complete structs, function-pointer
typedefs and fields, functions), and ``new``, ``cast``, ``callback``,
``new_handle``/``from_handle``, ``gc``/``release``, ``string``, ``unpack``,
``sizeof``, ``typeof(...).fields``, ``offsetof``, ``memmove``, ``NULL`` and
``dlopen`` behave as the package relies on them behaving under cffi.

Differences a reader should know: ``new("T *")`` of a struct returns the
struct itself (ctypes passes it by reference and reads its fields), a
function returning a pointer to a complete struct returns that struct (or
NULL), and ``void *`` arguments of callbacks arrive as ints.
"""
from __future__ import annotations

import ctypes
import itertools
import re
import sys
import threading
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

__all__ = ["FFI"]

_PRIMITIVES: Dict[str, Any] = {
    "void": None, "char": ctypes.c_char, "int": ctypes.c_int, "unsigned": ctypes.c_uint,
    "long": ctypes.c_long, "short": ctypes.c_short, "float": ctypes.c_float,
    "double": ctypes.c_double, "size_t": ctypes.c_size_t, "ssize_t": ctypes.c_ssize_t,
    "int8_t": ctypes.c_int8, "uint8_t": ctypes.c_uint8, "int16_t": ctypes.c_int16,
    "uint16_t": ctypes.c_uint16, "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32,
    "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64, "_Bool": ctypes.c_bool,
}


class _Null:
    """ffi.NULL: passes as a NULL pointer, compares equal to any NULL
    pointer (and to None and 0), and is false."""

    _as_parameter_ = None

    def __eq__(self, other: Any) -> bool:
        if other is self or other is None:
            return True
        if isinstance(other, int) and not isinstance(other, bool):
            return other == 0
        if isinstance(other, (ctypes._Pointer, ctypes._SimpleCData, ctypes._CFuncPtr)):  # type: ignore[attr-defined]
            return not other
        return False

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "<ctypes NULL>"


NULL = _Null()
_LP_char = ctypes.POINTER(ctypes.c_char)


class _CharP(_LP_char):  # type: ignore[misc, valid-type]
    """``char *``: a pointer (read with string/unpack) that also takes bytes
    and NULL as an argument, like cffi's ``char *``."""

    _type_ = ctypes.c_char

    @classmethod
    def from_param(cls, value: Any) -> Any:
        if value is None or value is NULL:
            return None
        if isinstance(value, bytes):
            return ctypes.c_char_p(value)
        return _LP_char.from_param(value)


class _Struct(ctypes.Structure):
    """A struct of the cdef: NULL assigned to a field stores a NULL pointer."""

    def __setattr__(self, name: str, value: Any) -> None:
        if value is NULL:
            value = None
        super().__setattr__(name, value)


class _Handle(ctypes.c_void_p):
    """ffi.new_handle's ``void *``: keeps its object reachable through
    from_handle while the handle lives."""

    def __del__(self) -> None:
        try:
            if self.value is not None:
                _handles.pop(self.value, None)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


_handles: Dict[int, Any] = {}
_handle_ids = itertools.count(16, 16)
_handle_lock = threading.Lock()

_gc_classes: Dict[Any, Any] = {}


def _gc_class(ptype: Any) -> Any:
    """A subclass of the pointer type whose instances call their destructor
    when collected (ffi.gc)."""
    cls = _gc_classes.get(ptype)
    if cls is None:
        def __del__(self: Any) -> None:
            d = self.__dict__.pop("_destructor", None)
            if d is not None:
                try:
                    d(self)
                except Exception:  # noqa: BLE001 - as cffi, a destructor's error is printed
                    if sys is not None and traceback is not None:
                        traceback.print_exc()
        cls = type("gc_" + ptype.__name__, (ptype,), {"_type_": ptype._type_,
                                                       "__del__": __del__})
        _gc_classes[ptype] = cls
    return cls


def _address(obj: Any) -> int:
    if isinstance(obj, (ctypes.Structure, ctypes.Array, ctypes._SimpleCData)):  # type: ignore[attr-defined]
        return ctypes.addressof(obj)
    if isinstance(obj, int):
        return obj
    return ctypes.cast(obj, ctypes.c_void_p).value or 0


class _FieldInfo:
    def __init__(self, offset: int, ctype: Any) -> None:
        self.offset = offset
        self.type = ctype


class _TypeInfo:
    """ffi.typeof: ``kind``, ``cname`` and, for a struct, ``fields``."""

    def __init__(self, cname: str, ctype: Any) -> None:
        self.cname = cname
        self.ctype = ctype
        if isinstance(ctype, type) and issubclass(ctype, ctypes.Structure):
            self.kind = "struct"
            self.fields: Optional[List[Tuple[str, _FieldInfo]]] = [
                (f[0], _FieldInfo(getattr(ctype, f[0]).offset, f[1]))
                for f in getattr(ctype, "_fields_", [])]
        else:
            self.kind = "primitive" if ctype in _PRIMITIVES.values() else "pointer"
            self.fields = None


_WORD = re.compile(r"[A-Za-z_]\w*|\*|\[\s*\d*\s*\]")


class FFI:
    """The subset of ``cffi.FFI`` that dexagents uses, on ctypes."""

    NULL = NULL

    def __init__(self) -> None:
        self._types: Dict[str, Any] = dict(_PRIMITIVES)
        self._complete: Dict[str, bool] = {}
        self._functions: Dict[str, Tuple[Any, List[Any], str]] = {}

    # ---- declarations ------------------------------------------------------

    def cdef(self, text: str) -> None:
        """Parses struct, typedef and function declarations."""
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
        pos = 0
        decl = re.compile(r"\s*(typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;"
                          r"|typedef\s+struct\s+(\w+)\s+(\w+)\s*;"
                          r"|([^;{}]+);)", re.S)
        while True:
            m = decl.match(text, pos)
            if not m:
                if text[pos:].strip():
                    raise ValueError("cannot parse the cdef near %r" % text[pos:pos + 80])
                break
            pos = m.end()
            if m.group(2):
                self._struct(m.group(4), m.group(3))
            elif m.group(5):
                self._opaque(m.group(6))
            else:
                self._declaration(" ".join(m.group(7).split()))

    def _opaque(self, name: str) -> Any:
        if name not in self._types:
            self._types[name] = type(name, (_Struct,), {})
            self._complete[name] = False
        return self._types[name]

    def _struct(self, name: str, body: str) -> None:
        cls = self._opaque(name)
        fields = []
        for f in body.split(";"):
            f = " ".join(f.split())
            if not f:
                continue
            fp = re.match(r"(.+?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)$", f)
            if fp:
                fields.append((fp.group(2), self._fnptr(fp.group(1), fp.group(3))))
            else:
                ctype, fname = self._parse(f, want_name=True)
                fields.append((fname, ctype))
        cls._fields_ = fields
        self._complete[name] = True

    def _declaration(self, d: str) -> None:
        fp = re.match(r"typedef\s+(.+?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)$", d)
        if fp:
            self._types[fp.group(2)] = self._fnptr(fp.group(1), fp.group(3))
            return
        fn = re.match(r"(.+?)\b(\w+)\s*\((.*)\)$", d)
        if not fn:
            raise ValueError("cannot parse the declaration %r" % d)
        ret, name, args = fn.group(1), fn.group(2), fn.group(3)
        # The pointer stars of the result sit between its type and the name.
        rtype = self._parse(ret + " " + "")[0] if ret.strip() else None
        self._functions[name] = (rtype, self._params(args), ret)

    def _params(self, args: str) -> List[Any]:
        args = args.strip()
        if not args or args == "void":
            return []
        out = []
        for a in _split_args(args):
            fp = re.match(r"(.+?)\(\s*\*\s*(\w*)\s*\)\s*\((.*)\)$", a.strip())
            if fp:
                out.append(self._fnptr(fp.group(1), fp.group(3)))
            else:
                out.append(self._parse(a, want_name=None)[0])
        return out

    def _fnptr(self, ret: str, args: str) -> Any:
        rtype = self._parse(ret)[0]
        return ctypes.CFUNCTYPE(rtype, *self._params(args))

    def _parse(self, decl: str, want_name: Optional[bool] = False) -> Tuple[Any, Optional[str]]:
        """A C type (with an optional declarator name) as a ctypes type.
        want_name: True, the last word is the name; None, maybe."""
        words = [w for w in _WORD.findall(decl) if w not in ("const", "struct", "volatile")]
        stars = 0
        idents: List[str] = []
        dims: List[str] = []
        for w in words:
            if w == "*":
                stars += 1
            elif w.startswith("["):
                dims.append(w[1:-1].strip())
            else:
                idents.append(w)
        name = None
        if want_name is True or (want_name is None and len(idents) > 1):
            name = idents.pop()
        if not idents:
            raise ValueError("no type in %r" % decl)
        base_name = " ".join(idents)
        if base_name in ("unsigned int",):
            base_name = "unsigned"
        if base_name not in self._types:
            raise ValueError("unknown type %r" % base_name)
        t = self._types[base_name]
        for _ in range(stars):
            t = self._pointer(t)
        for dim in reversed(dims):
            t = t * int(dim) if dim else t * 0
        return t, name

    @staticmethod
    def _pointer(t: Any) -> Any:
        if t is None:
            return ctypes.c_void_p
        if t is ctypes.c_char:
            return _CharP
        return ctypes.POINTER(t)

    def _type(self, cdecl: Any) -> Any:
        if not isinstance(cdecl, str):
            return cdecl
        fn = re.match(r"(.+?)\((.*)\)$", cdecl.strip())
        if fn and "(*" not in cdecl:
            return self._fnptr(fn.group(1), fn.group(2))
        return self._parse(cdecl)[0]

    # ---- the operations ----------------------------------------------------

    def dlopen(self, path: str) -> "_Lib":
        """Opens a shared library (raises OSError when it cannot)."""
        return _Lib(ctypes.CDLL(path), self)

    def new(self, cdecl: str, init: Any = None) -> Any:
        """New zeroed memory, owned by the returned object: ``T *`` (a
        struct itself for a complete struct), ``T[N]``, ``T[]`` of an init
        list, bytes or length."""
        cdecl = cdecl.strip()
        arr = re.match(r"(.*?)\[\s*(\d*)\s*\]$", cdecl)
        if arr:
            elem = self._type(arr.group(1))
            if arr.group(2):
                n = int(arr.group(2))
            elif isinstance(init, int):
                n, init = init, None
            else:
                n = len(init) + (1 if isinstance(init, bytes) and elem is ctypes.c_char else 0)
            if elem is ctypes.c_char and isinstance(init, bytes):
                return ctypes.create_string_buffer(init, n)
            a = (elem * n)()
            if init is not None:
                for i, v in enumerate(init):
                    a[i] = None if v is NULL else v
            return a
        if not cdecl.endswith("*"):
            raise TypeError("expected a pointer or array type, not %r" % cdecl)
        target = self._type(cdecl[:-1])
        if isinstance(target, type) and issubclass(target, ctypes.Structure):
            if not getattr(target, "_fields_", None) and not self._complete.get(
                    target.__name__, True):
                raise TypeError("%r is an opaque struct" % cdecl)
            s = target()
            if init is not None:
                for k, v in (init.items() if isinstance(init, dict) else zip(
                        [f[0] for f in target._fields_], init)):
                    setattr(s, k, v)
            return s
        if target is None:
            raise TypeError("cannot new a void *")
        ctype: Any = target
        cell = ctype() if init is None else ctype(init)
        return ctypes.pointer(cell)

    def cast(self, cdecl: str, value: Any) -> Any:
        """A value seen as another C type (pointers and integers)."""
        t = self._type(cdecl)
        if t in _PRIMITIVES.values() and t is not None:
            return t(_address(value) if not isinstance(value, int) else value).value
        if value is NULL or value is None:
            return t()
        if isinstance(value, int):
            return ctypes.cast(ctypes.c_void_p(value), t)
        if isinstance(value, ctypes.Structure):
            value = ctypes.pointer(value)
        return ctypes.cast(value, t)

    def callback(self, cdecl: str, python_callable: Optional[Callable[..., Any]] = None,
                 error: Any = None, onerror: Optional[Callable[..., Any]] = None) -> Any:
        """A C function pointer of the signature ``cdecl`` ("int(void *)")
        calling the Python function; used as a decorator when no function is
        given. An exception in it returns ``error`` (after ``onerror``, or
        a printed traceback, as cffi does)."""
        ftype = self._type(cdecl)
        restype = ftype._restype_

        def wrap(fn: Callable[..., Any]) -> Any:
            def call(*args: Any) -> Any:
                try:
                    return fn(*args)
                except BaseException:  # noqa: BLE001 - C cannot take an exception
                    info = sys.exc_info()
                    if onerror is not None:
                        try:
                            r = onerror(*info)
                            if r is not None:
                                return r
                        except BaseException:  # noqa: BLE001
                            traceback.print_exc()
                    else:
                        sys.stderr.write("From ctypes callback %r:\n" % (fn,))
                        traceback.print_exception(*info)
                    return (error if error is not None else 0) if restype is not None else None
            cb = ftype(call)
            cb.__wrapped__ = fn
            return cb
        return wrap if python_callable is None else wrap(python_callable)

    def new_handle(self, obj: Any) -> Any:
        """A ``void *`` that from_handle turns back into obj while it lives."""
        with _handle_lock:
            key = next(_handle_ids)
            _handles[key] = obj
        return _Handle(key)

    def from_handle(self, handle: Any) -> Any:
        """The object of a handle (a ``void *`` as int or pointer)."""
        if isinstance(handle, ctypes.c_void_p):
            handle = handle.value
        elif not isinstance(handle, int):
            handle = _address(handle)
        return _handles[handle]

    def gc(self, ptr: Any, destructor: Optional[Callable[[Any], Any]]) -> Any:
        """ptr, as an object that calls destructor(ptr) when collected."""
        if destructor is None:
            return ptr
        g = ctypes.cast(ptr, _gc_class(type(ptr)))
        g._destructor = destructor
        return g

    def release(self, obj: Any) -> None:
        """Calls a gc object's destructor now (once)."""
        d = getattr(obj, "__dict__", {}).pop("_destructor", None)
        if d is not None:
            d(obj)

    def string(self, p: Any, maxlen: int = -1) -> bytes:
        """The NUL-terminated bytes at p (a char pointer or array)."""
        if isinstance(p, ctypes.Array):
            raw = bytes(p) if maxlen < 0 else bytes(p)[:maxlen]
            return raw.split(b"\0", 1)[0]
        if isinstance(p, bytes):
            return p.split(b"\0", 1)[0]
        if not p:
            raise RuntimeError("cannot use string() on a NULL pointer")
        s = ctypes.string_at(p)
        return s if maxlen < 0 else s[:maxlen]

    def unpack(self, p: Any, length: int) -> bytes:
        """The length bytes at p."""
        if length <= 0:
            return b""
        return ctypes.string_at(p, length)

    def sizeof(self, cdecl: Any) -> int:
        """The size of a type (by name) or of an object."""
        return ctypes.sizeof(self._type(cdecl))

    def typeof(self, cdecl: Any) -> _TypeInfo:
        """The type of a name: ``kind`` and, for a struct, ``fields``."""
        t = self._type(cdecl) if isinstance(cdecl, str) else type(cdecl)
        return _TypeInfo(cdecl if isinstance(cdecl, str) else t.__name__, t)

    def offsetof(self, cdecl: str, field: str) -> int:
        """The offset of a struct's field."""
        return int(getattr(self._type(cdecl), field).offset)

    def memmove(self, dest: Any, src: Any, n: int) -> None:
        """Copies n bytes from src to dest (structs, arrays, pointers, bytes)."""
        if isinstance(src, (bytes, bytearray)):
            ctypes.memmove(_address(dest), bytes(src), n)
        else:
            ctypes.memmove(_address(dest), _address(src), n)


def _split_args(args: str) -> List[str]:
    out, depth, cur = [], 0, ""
    for ch in args:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


class _Lib:
    """The functions of a library declared in the cdef, by attribute."""

    def __init__(self, dll: Any, ffi: FFI) -> None:
        self._dll = dll
        self._ffi = ffi

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name not in self._ffi._functions:
            raise AttributeError("function %r is not declared in the cdef" % name)
        restype, argtypes, _ = self._ffi._functions[name]
        f = getattr(self._dll, name)  # AttributeError when the library lacks it
        f.argtypes = argtypes
        f.restype = restype
        target = getattr(restype, "_type_", None)
        if isinstance(target, type) and issubclass(target, ctypes.Structure) and \
                getattr(target, "_fields_", None):
            # As cffi reads the fields of a returned struct pointer.
            f.errcheck = lambda r, fn, args: r.contents if r else NULL
        setattr(self, name, f)
        return f
