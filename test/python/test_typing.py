#!/usr/bin/env python3
"""The Python package's type hints: mypy (Debian's python3-mypy, which
`make deps-check` installs; PyPI is not reachable here) checks the package
itself and typed/consumer.py, a program that uses it as a user would,
against the hints the package ships (py.typed), for Python 3.9; and a
consumer with a type error is reported, so the check is not vacuous.
Without mypy the test is skipped (it fails under CI). Prints "N passed,
N failed[, N skipped]"."""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PKG = os.path.join(ROOT, "bindings", "python")
CONSUMER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "typed", "consumer.py")
passed = failed = skipped = 0


def result(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + name)
    else:
        failed += 1
        print("FAIL " + name)
        for line in str(detail).strip().splitlines()[-30:]:
            print("    " + line)


def mypy_python():
    """A Python whose mypy imports: this one, else Debian's python3."""
    for py in (sys.executable, "/usr/bin/python3"):
        if py and os.path.exists(py) and subprocess.run(
                [py, "-c", "import mypy"], capture_output=True).returncode == 0:
            return py
    return None


def mypy(py, cache, *args):
    env = dict(os.environ, MYPYPATH=PKG)
    r = subprocess.run([py, "-m", "mypy", "--python-version", "3.9", "--cache-dir", cache,
                        "--no-error-summary", "--show-error-codes"] + list(args),
                       capture_output=True, text=True, env=env, cwd=PKG, timeout=600)
    return r.returncode, r.stdout + r.stderr


def main():
    global skipped, failed
    py = mypy_python()
    if py is None:
        why = "no mypy (Debian: apt install python3-mypy, or make deps-check)"
        if os.environ.get("CI"):
            result("mypy is installed", False, why)
        else:
            skipped += 1
            print("skip mypy\n    skipped: " + why)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            rc, out = mypy(py, os.path.join(tmp, "cache"), "-p", "dexagents")
            result("mypy: the package (%s)" % py, rc == 0, out)
            rc, out = mypy(py, os.path.join(tmp, "cache"), "--disallow-untyped-defs",
                           CONSUMER)
            result("mypy: a consumer typed against the package's hints", rc == 0, out)
            bad = os.path.join(tmp, "bad.py")
            shutil.copy(CONSUMER, bad)
            with open(bad, "a") as f:
                f.write("\n\ndef wrong(rt: dx.Runtime) -> int:\n    return rt.start_session()\n")
            rc, out = mypy(py, os.path.join(tmp, "cache"), bad)
            result("mypy: a consumer with a type error is refused",
                   rc != 0 and "Incompatible return value type" in out, out)
    if skipped:
        print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    else:
        print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
