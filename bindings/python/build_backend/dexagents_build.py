"""The PEP 517 build backend of the dexagents package, and the script that
builds its wheel and sdist.

The package is pure Python (cffi in ABI mode opens libdexagents.so.1 at run
time, or the standard library's ctypes where cffi is missing), so a wheel is only a zip of the package with its metadata. This
backend writes it with the standard library alone: pyproject.toml names it
with ``backend-path`` and ``requires = []``, so ``pip install`` of the sdist
or of the source directory needs nothing from the network, on any Python
>= 3.9 with pip. The package metadata lives here (below); the version in
``dexagents/_version.py``.

As a script::

    python3 build_backend/dexagents_build.py [--outdir DIR] [wheel|sdist|all]

writes ``dexagents-<version>-py3-none-any.whl`` and/or
``dexagents-<version>.tar.gz`` to DIR (default ``dist``) and prints their
paths. Archives are reproducible: fixed timestamps (``SOURCE_DATE_EPOCH``
when set), sorted entries, no user names.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import re
import sys
import tarfile
import time
import zipfile
from typing import Dict, List, Optional, Tuple

NAME = "dexagents"
SUMMARY = ("Durable AI-agent sessions: Python bindings of libdexagents "
           "(cffi in ABI mode or ctypes, nothing compiled)")
REQUIRES_PYTHON = ">=3.9"
# cffi is optional: the package runs on ctypes without it (dexagents._ctffi),
# so a plain venv installs it with no network. `pip install dexagents[cffi]`
# asks for cffi, the primary backend, when an index can provide it.
EXTRAS = ["cffi"]
REQUIRES_DIST = ['cffi>=1.15; extra == "cffi"']
CLASSIFIERS = [
    "Programming Language :: Python :: 3",
    "Operating System :: POSIX :: Linux",
    "Typing :: Typed",
]
TAG = "py3-none-any"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, NAME)
# What an sdist holds besides the package.
SDIST_FILES = ["pyproject.toml", "README.md", "build_backend/dexagents_build.py"]


def version() -> str:
    """The package version, from dexagents/_version.py."""
    with open(os.path.join(PACKAGE, "_version.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("no __version__ in dexagents/_version.py")
    return m.group(1)


def _epoch() -> int:
    return max(315532800, int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")))  # >= 1980


def _package_files() -> List[str]:
    """The package's files, relative to ROOT, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(PACKAGE):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for f in filenames:
            if f.endswith((".py", ".typed")):
                out.append(os.path.relpath(os.path.join(dirpath, f), ROOT))
    return sorted(p.replace(os.sep, "/") for p in out)


def _readme() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return f.read()


def metadata() -> str:
    """The core metadata (METADATA of a wheel, PKG-INFO of an sdist)."""
    lines = ["Metadata-Version: 2.1", "Name: " + NAME, "Version: " + version(),
             "Summary: " + SUMMARY, "Requires-Python: " + REQUIRES_PYTHON]
    lines += ["Classifier: " + c for c in CLASSIFIERS]
    lines += ["Provides-Extra: " + e for e in EXTRAS]
    lines += ["Requires-Dist: " + r for r in REQUIRES_DIST]
    lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + _readme()


def _dist_info() -> str:
    return "%s-%s.dist-info" % (NAME, version())


def _wheel_text() -> str:
    return ("Wheel-Version: 1.0\nGenerator: dexagents_build\nRoot-Is-Purelib: true\n"
            "Tag: %s\n" % TAG)


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def _write_wheel(path: str, entries: List[Tuple[str, bytes]]) -> None:
    """A wheel of entries (archive path, bytes) plus the dist-info files."""
    info = _dist_info()
    entries = sorted(entries) + [(info + "/METADATA", metadata().encode()),
                                 (info + "/WHEEL", _wheel_text().encode()),
                                 (info + "/top_level.txt", (NAME + "\n").encode())]
    record = [_record_line(n, d) for n, d in entries] + [info + "/RECORD,,"]
    entries.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    stamp = time.gmtime(_epoch())[:6]
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            zi = zipfile.ZipInfo(name, date_time=stamp)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    os.replace(tmp, path)


def _read(rel: str) -> bytes:
    with open(os.path.join(ROOT, rel), "rb") as f:
        return f.read()


def _wheel_name() -> str:
    return "%s-%s-%s.whl" % (NAME, version(), TAG)


# ---- PEP 517 / PEP 660 hooks ------------------------------------------------

def get_requires_for_build_wheel(config_settings: Optional[Dict[str, str]] = None) -> List[str]:
    """Nothing: the wheel is built with the standard library."""
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, str]] = None) -> List[str]:
    """Nothing: the sdist is built with the standard library."""
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, str]] = None
                                    ) -> List[str]:
    """Nothing."""
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: Optional[Dict[str, str]] = None) -> str:
    """Writes the dist-info directory (METADATA, WHEEL) and returns its name."""
    info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(metadata())
    with open(os.path.join(info, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_text())
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, str]] = None,
                metadata_directory: Optional[str] = None) -> str:
    """Writes the pure-Python wheel and returns its file name."""
    os.makedirs(wheel_directory, exist_ok=True)
    _write_wheel(os.path.join(wheel_directory, _wheel_name()),
                 [(rel, _read(rel)) for rel in _package_files()])
    return _wheel_name()


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, str]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """An editable wheel: a .pth file that puts this source directory on
    sys.path (``pip install -e bindings/python``)."""
    os.makedirs(wheel_directory, exist_ok=True)
    _write_wheel(os.path.join(wheel_directory, _wheel_name()),
                 [("__editable__.%s.pth" % NAME, (ROOT + "\n").encode())])
    return _wheel_name()


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, str]] = None) -> str:
    """Writes dexagents-<version>.tar.gz (the package, this backend,
    pyproject.toml, README.md and PKG-INFO) and returns its file name."""
    os.makedirs(sdist_directory, exist_ok=True)
    base = "%s-%s" % (NAME, version())
    name = base + ".tar.gz"
    files = [(rel, _read(rel)) for rel in SDIST_FILES + _package_files()]
    files.append(("PKG-INFO", metadata().encode()))
    path = os.path.join(sdist_directory, name)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel, data in sorted(files):
            ti = tarfile.TarInfo(base + "/" + rel)
            ti.size, ti.mtime, ti.mode = len(data), _epoch(), 0o644
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = ""
            tar.addfile(ti, io.BytesIO(data))
    tmp = path + ".tmp"
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                               mtime=_epoch()) as gz:
        gz.write(buf.getvalue())
    os.replace(tmp, path)
    return name


def main(argv: List[str]) -> int:
    """The script: builds the wheel, the sdist or both into --outdir."""
    outdir, what = "dist", "all"
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--outdir" and args:
            outdir = args.pop(0)
        elif a in ("wheel", "sdist", "all"):
            what = a
        else:
            print("usage: dexagents_build.py [--outdir DIR] [wheel|sdist|all]", file=sys.stderr)
            return 2
    if what in ("wheel", "all"):
        print(os.path.join(outdir, build_wheel(outdir)))
    if what in ("sdist", "all"):
        print(os.path.join(outdir, build_sdist(outdir)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
