#!/usr/bin/env python3
"""Writes the reference of the dexagents Python API (Markdown) to stdout,
generated from the package's docstrings and signatures:

    python3 bindings/python/tools/gen_reference.py > bindings/python/REFERENCE.md

(``make python-reference``). test/python/test_bindings.py checks that the
committed REFERENCE.md is what this prints, and that every public name has a
docstring (:func:`missing_docstrings`). Importing the package does not load
the C library, so this runs without it.
"""
from __future__ import annotations

import inspect
import os
import re
import sys
from typing import Any, Iterator, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import dexagents  # noqa: E402
from dexagents import host  # noqa: E402

SECTIONS = [
    ("Agents and tools", "dexagents.agent"),
    ("Models and harnesses in Python", "dexagents.model"),
    ("Runtimes", "dexagents.runtime"),
    ("asyncio", "dexagents.aio"),
    ("Host-driven mode", "dexagents.host"),
    ("Typed documents", "dexagents.types"),
    ("Errors", "dexagents.errors"),
    ("Loading the library", "dexagents._native"),
]


def public_names() -> List[str]:
    """The documented names: dexagents.__all__ without plain constants."""
    out = []
    for name in dexagents.__all__:
        obj = getattr(dexagents, name)
        if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismodule(obj):
            out.append(name)
    return out


def members(cls: type) -> Iterator[Tuple[str, Any]]:
    """The public methods and properties a class defines itself."""
    for name, value in cls.__dict__.items():
        if name.startswith("_") and name not in ("__init__",):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value) or isinstance(value, property):
            yield name, value


def missing_docstrings() -> List[str]:
    """Public names (and their public members) without a docstring."""
    missing = []
    for name in public_names():
        obj = getattr(dexagents, name)
        if not inspect.getdoc(obj):
            missing.append(name)
        if inspect.isclass(obj) and obj.__module__.startswith("dexagents"):
            for m, v in members(obj):
                if m == "__init__":
                    continue
                if not (v.__doc__ or "").strip():
                    missing.append("%s.%s" % (name, m))
    for name in ("dispatch",):
        if not inspect.getdoc(getattr(host, name)):
            missing.append("host." + name)
    return missing


def _signature(obj: Any) -> str:
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"
    # Annotations are strings (from __future__ import annotations): unquote them.
    return re.sub(r"(: |-> )'([^']*)'", r"\1\2", sig)


def _doc(obj: Any) -> str:
    return inspect.cleandoc(obj.__doc__ or "").strip()


def render() -> str:
    """The whole reference."""
    lines = ["# dexagents (Python): reference", "",
             "Generated from the docstrings by `bindings/python/tools/gen_reference.py` "
             "(`make python-reference`); do not edit.", "",
             inspect.cleandoc(dexagents.__doc__ or ""), ""]
    names = public_names()
    done = set()
    for title, module in SECTIONS:
        in_section = [n for n in names if getattr(getattr(dexagents, n), "__module__", "") == module]
        if module == "dexagents.host":
            in_section.append("host.dispatch")
        if not in_section:
            continue
        lines += ["## %s" % title, ""]
        for name in in_section:
            obj = getattr(host, "dispatch") if name == "host.dispatch" else getattr(dexagents, name)
            if id(obj) in done:
                continue
            done.add(id(obj))
            if inspect.isclass(obj):
                bases = [b.__name__ for b in obj.__bases__ if b is not object]
                lines += ["### class `%s`%s" % (name, "(%s)" % ", ".join(bases) if bases else ""), ""]
                lines += ["`%s%s`" % (name, _signature(obj)), ""] if "__init__" in obj.__dict__ \
                    or inspect.isclass(obj) and hasattr(obj, "__dataclass_fields__") else []
                lines += [_doc(obj), ""]
                for m, v in members(obj):
                    if m == "__init__":
                        continue
                    if isinstance(v, property):
                        lines += ["- `%s` (property): %s" % (m, " ".join(_doc(v).split()))]
                    else:
                        lines += ["- `%s%s`: %s" % (m, _signature(v), " ".join(_doc(v).split()))]
                lines.append("")
            else:
                lines += ["### `%s%s`" % (name, _signature(obj)), "", _doc(obj), ""]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
