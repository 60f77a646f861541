"""Finding and loading libdexagents.so.1 (cffi in ABI mode, or the ctypes
fallback of :mod:`dexagents._ctffi` on a Python without cffi), and the small
conversions every module shares.

The library is opened on first use, not at import, so ``import dexagents``
and ``help(dexagents)`` work without it. It is looked for, in this order:

1. ``$DEXAGENTS_LIBRARY`` (a path; when set, nothing else is tried);
2. ``lib/libdexagents.so.1`` of the source tree this package sits in (after
   ``make``), so the package runs from a checkout with no install;
3. the system loader (``libdexagents.so.1``: ``LD_LIBRARY_PATH``, the
   ``ldconfig`` cache, the default directories);
4. the ``libdir`` of ``pkg-config dexagents``, then ``<sys.prefix>/lib``,
   ``/usr/local/lib`` and ``/usr/local/lib64``: an installed library whose
   directory the loader does not know yet (``ldconfig`` not run).

When all of them fail, :class:`LibraryNotFoundError` says what was tried and
how to fix it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from typing import Any, List, Optional

#: Which foreign-function backend is in use: "cffi" (the primary one, when
#: the cffi package can be imported) or "ctypes" (the standard library's,
#: through dexagents._ctffi: no dependency at all). DEXAGENTS_FFI=ctypes
#: forces the fallback; DEXAGENTS_FFI=cffi insists on cffi.
BACKEND = ""
_want = os.environ.get("DEXAGENTS_FFI", "").strip().lower()
if _want not in ("", "cffi", "ctypes"):
    raise ImportError("DEXAGENTS_FFI=%s: expected cffi or ctypes" % _want)
if _want != "ctypes":
    try:
        from cffi import FFI  # type: ignore[import]
        BACKEND = "cffi"
    except ImportError as _e:  # pragma: no cover - depends on the interpreter
        if _want == "cffi":
            raise ImportError(
                "DEXAGENTS_FFI=cffi, but this Python (%s) has no cffi package (>= 1.15). "
                "Install it with `python -m pip install cffi` (or `pip install dexagents[cffi]`), "
                "on Debian/Ubuntu `apt install python3-cffi`, or unset DEXAGENTS_FFI to use "
                "the ctypes backend." % sys.executable) from _e
if not BACKEND:
    from ._ctffi import FFI  # type: ignore[assignment]
    BACKEND = "ctypes"

from ._cdef import CDEF

SONAME = "libdexagents.so.1"
#: The oldest library this package can drive (DEXA_VERSION_NUM of 1.1.0).
REQUIRED_VERSION_NUM = 0x010100

ffi = FFI()
ffi.cdef(CDEF)


class LibraryNotFoundError(ImportError):
    """libdexagents.so.1 could not be loaded. The message lists every place
    tried and the ways to fix it: install the library (``make install``, which
    runs ``ldconfig`` as root), add its directory to ``LD_LIBRARY_PATH``, or
    set ``DEXAGENTS_LIBRARY`` to the file's path."""


def _tree_library() -> Optional[str]:
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", "..", ".."))
    lib = os.path.join(root, "lib", SONAME)
    header = os.path.join(root, "include", "dexagents", "dexagents.h")
    return lib if os.path.exists(lib) and os.path.exists(header) else None


def _pkg_config_libdir() -> Optional[str]:
    exe = shutil.which("pkg-config")
    if not exe:
        return None
    try:
        r = subprocess.run([exe, "--variable=libdir", "dexagents"], capture_output=True,
                           text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    libdir = r.stdout.strip()
    return libdir if r.returncode == 0 and libdir else None


def _fallback_dirs() -> List[str]:
    dirs = []
    libdir = _pkg_config_libdir()
    if libdir:
        dirs.append(libdir)
    dirs += [os.path.join(sys.prefix, "lib"), "/usr/local/lib", "/usr/local/lib64"]
    seen, out = set(), []
    for d in dirs:
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def _not_found(tried: List[str]) -> LibraryNotFoundError:
    return LibraryNotFoundError(
        "cannot load the C library libdexagents.so.1, which the dexagents package drives.\n"
        "Tried:\n  " + "\n  ".join(tried) + "\n"
        "To fix it, do one of:\n"
        "  - install the library: `make install` in the libdexagents source tree (as root "
        "it runs ldconfig; otherwise run `ldconfig` as root or use LD_LIBRARY_PATH);\n"
        "  - add the directory that holds libdexagents.so.1 to LD_LIBRARY_PATH;\n"
        "  - set DEXAGENTS_LIBRARY to the library's path, e.g. "
        "DEXAGENTS_LIBRARY=/usr/local/lib/libdexagents.so.1.")


def _open() -> Any:
    tried = []
    env = os.environ.get("DEXAGENTS_LIBRARY")
    if env:
        try:
            return ffi.dlopen(env)
        except OSError as e:
            raise _not_found(["$DEXAGENTS_LIBRARY=%s: %s" % (env, e)]) from None
    tried.append("$DEXAGENTS_LIBRARY: not set")
    tree = _tree_library()
    if tree:
        try:
            return ffi.dlopen(tree)
        except OSError as e:
            tried.append("%s (source tree): %s" % (tree, e))
    try:
        return ffi.dlopen(SONAME)
    except OSError as e:
        tried.append("%s through the system loader (LD_LIBRARY_PATH, ldconfig cache): %s"
                     % (SONAME, e))
    for d in _fallback_dirs():
        path = os.path.join(d, SONAME)
        if not os.path.exists(path):
            tried.append("%s: no such file" % path)
            continue
        try:
            return ffi.dlopen(path)
        except OSError as e:
            tried.append("%s: %s" % (path, e))
    raise _not_found(tried)


def _load() -> Any:
    real = _open()
    num = real.dexa_version_num()
    if num >> 16 != REQUIRED_VERSION_NUM >> 16 or num < REQUIRED_VERSION_NUM:
        raise LibraryNotFoundError(
            "the loaded libdexagents is version %s; this package needs 1.x >= %d.%d "
            "(install a newer library or set DEXAGENTS_LIBRARY)"
            % (ffi.string(real.dexa_version()).decode(), REQUIRED_VERSION_NUM >> 16,
               (REQUIRED_VERSION_NUM >> 8) & 0xFF))
    return real


class _LazyLib:
    """The library's functions (``lib.dexa_version()``), loaded on first use.
    Each function found is cached on the instance, so later calls skip this
    class's __getattr__."""

    _lock = threading.Lock()
    _real: Any = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        real = type(self)._real
        if real is None:
            with type(self)._lock:
                if type(self)._real is None:
                    type(self)._real = _load()
                real = type(self)._real
        value = getattr(real, name)
        setattr(self, name, value)
        return value


#: The C library (a cffi ABI-mode or ctypes handle), opened on first attribute access.
lib: Any = _LazyLib()


def load_library() -> None:
    """Loads the C library now (it is otherwise loaded on first use);
    raises :class:`LibraryNotFoundError` when it cannot be found."""
    lib.dexa_version  # noqa: B018 - the attribute access loads it


# ---- conversions ---------------------------------------------------------

def s(p: Any) -> str:
    """A borrowed NUL-terminated C string as str ("" for NULL)."""
    return ffi.string(p).decode("utf-8") if p != ffi.NULL else ""


def enc(text: Any) -> bytes:
    """str (UTF-8) or bytes-like as bytes."""
    return text.encode("utf-8") if isinstance(text, str) else bytes(text)


def span(p: Any, n: int) -> Optional[str]:
    """A borrowed (pointer, length) text as str, None for NULL."""
    if p == ffi.NULL:
        return None
    return ffi.unpack(p, n).decode("utf-8")


def take(pp: Any, plen: Any) -> Optional[str]:
    """The library-allocated text *pp as str, freed with dexa_free."""
    if pp[0] == ffi.NULL:
        return None
    try:
        return ffi.unpack(pp[0], plen[0]).decode("utf-8")
    finally:
        lib.dexa_free(pp[0])
