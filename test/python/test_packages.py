#!/usr/bin/env python3
# test-needs: sqlite
"""The Python package installs like any other, with no network: its wheel
and sdist (built by bindings/python/build_backend/dexagents_build.py) go
into a fresh plain venv (no --system-site-packages, so no cffi) of every
Python >= 3.9 this machine has (Debian's /usr/bin/python3, python3.X on PATH,
every pyenv version), with `pip install --no-index`, and a session runs from
there, on the ctypes backend, against a library installed by `make install`
into a temporary prefix. Debian's python3 also installs `dexagents[cffi]`
in a venv that sees its python3-cffi and runs on cffi. A missing library,
and DEXAGENTS_FFI=cffi without cffi, give errors that say how to fix them. Prints "N passed, N failed[, N skipped]"."""
import glob
import hashlib
import base64
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PKG = os.path.join(ROOT, "bindings", "python")
BUILD = os.environ.get("BUILD", "build")
LIBOUT = os.environ.get("LIBOUT", "lib")
CI = bool(os.environ.get("CI"))

passed = failed = skipped = 0


def ok(name):
    global passed
    passed += 1
    print("ok   " + name, flush=True)


def fail(name, detail=""):
    global failed
    failed += 1
    print("FAIL " + name, flush=True)
    for line in str(detail).strip().splitlines()[-30:]:
        print("    " + line)


def skip(name, why):
    global skipped, failed
    if CI:
        fail(name, "cannot run (CI is set): " + why)
        return
    skipped += 1
    print("skip %s\n    skipped: %s" % (name, why), flush=True)


def check(name, cond, detail=""):
    (ok if cond else lambda n: fail(n, detail))(name)
    return cond


def run(cmd, env=None, cwd=None, timeout=600):
    r = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


# A session through the installed package: approval of a WRITE tool.
SESSION = r'''
import os, sys, dexagents as dx
@dx.tool(effect=dx.ToolEffect.WRITE, approval=True)
def save(args, call):
    "Saves."
    return "saved " + args["path"]
agent = dx.Agent(dx.AgentDefinition(models=["mock/dex"], tools=[save]))
with dx.Runtime(agent, store="session.db", workers=2) as rt:
    sid = rt.start_session()
    rt.send(sid, '/tool save {"path": "a.txt"}')
    rt.wait_idle(sid, 60)
    rt.approve(sid, rt.snapshot(sid).pending[0].call_id)
    rt.wait_idle(sid, 60)
    print(dx._native.BACKEND)
    print(os.path.dirname(dx.__file__))
    print(rt.snapshot(sid).messages[-1].text)
'''


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "DEXAGENTS_LIBRARY", "LD_LIBRARY_PATH", "PKG_CONFIG_PATH",
                        "PYTHONHOME", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


def pythons():
    """(path, version) of every Python >= 3.9 found, Debian's first."""
    found = []
    names = ["/usr/bin/python3"] + ["python3.%d" % m for m in range(9, 15)]
    paths = [shutil.which(n) for n in names]
    roots = [os.environ.get("PYENV_ROOT", ""), os.path.expanduser("~/.pyenv"), "/root/.pyenv"]
    pyenv = shutil.which("pyenv")
    if pyenv:
        rc, out = run([pyenv, "root"])
        if rc == 0:
            roots.insert(0, out.strip())
    for r in roots:
        if r:
            paths += sorted(glob.glob(os.path.join(r, "versions", "*", "bin", "python3")))
    seen = set()
    for p in paths:
        if not p or not os.path.exists(p):
            continue
        rc, out = run([p, "-c", "import sys, os; print('%d.%d' % sys.version_info[:2]); "
                       "print(os.path.realpath(sys.executable))"])
        if rc != 0:
            continue
        version, real = out.split()[:2]
        if tuple(map(int, version.split("."))) < (3, 9) or real in seen:
            continue
        seen.add(real)
        found.append((p, version))
    return found


def check_wheel(whl):
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        record = z.read([n for n in names if n.endswith("/RECORD")][0]).decode()
        bad = []
        for line in record.splitlines():
            path, digest, size = line.rsplit(",", 2)
            if not digest:
                continue
            data = z.read(path)
            want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
                b"=").decode()
            if digest != want or int(size) != len(data):
                bad.append(path)
        meta = z.read([n for n in names if n.endswith("/METADATA")][0]).decode()
    check("wheel: RECORD hashes and sizes match", not bad, bad)
    check("wheel: py.typed, the package and no tests",
          "dexagents/py.typed" in names and "dexagents/runtime.py" in names
          and not any("test" in n for n in names), names)
    reqs = [l for l in meta.splitlines() if l.startswith("Requires-Dist:")]
    check("wheel: METADATA needs Python >= 3.9 and nothing else; cffi is the extra [cffi]",
          "Requires-Python: >=3.9" in meta and "Provides-Extra: cffi" in meta
          and reqs == ['Requires-Dist: cffi>=1.15; extra == "cffi"'], meta[:600])


def main():
    tmp = tempfile.mkdtemp(prefix="dexa-pkg-")
    try:
        body(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if skipped:
        print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    else:
        print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def body(tmp):
    if os.environ.get("SAN_FLAGS"):
        skip("install the Python package", "sanitizer build: the library cannot load into python")
        return
    dist = os.path.join(tmp, "dist")
    backend = os.path.join(PKG, "build_backend", "dexagents_build.py")
    rc, out = run([sys.executable, backend, "--outdir", dist, "all"])
    if not check("the backend script builds the wheel and the sdist", rc == 0, out):
        return
    whl, sdist = sorted(glob.glob(os.path.join(dist, "*.whl")))[0], \
        sorted(glob.glob(os.path.join(dist, "*.tar.gz")))[0]
    check_wheel(whl)
    with tarfile.open(sdist) as t:
        names = t.getnames()
    check("sdist: pyproject.toml, the in-tree backend, PKG-INFO and the package",
          all(any(n.endswith(x) for n in names) for x in
              ("/pyproject.toml", "/build_backend/dexagents_build.py", "/PKG-INFO",
               "/dexagents/__init__.py")), names)
    again = os.path.join(tmp, "again")
    run([sys.executable, backend, "--outdir", again, "all"])
    same = all(open(p, "rb").read() == open(os.path.join(again, os.path.basename(p)), "rb").read()
               for p in (whl, sdist))
    check("the wheel and the sdist are reproducible (same bytes twice)", same)

    prefix = os.path.join(tmp, "prefix")
    rc, out = run(["make", "-s", "--no-print-directory", "-C", ROOT, "BUILD=" + BUILD,
                   "LIBOUT=" + LIBOUT, "PREFIX=" + prefix, "LDCONFIG=true", "install"])
    if not check("make install PREFIX=<tmp> installs the library", rc == 0, out):
        return
    check("make install says how to make an unknown LIBDIR loadable",
          "the loader does not know" in out and "LD_LIBRARY_PATH" in out, out)
    libdir = os.path.join(prefix, "lib")
    work = os.path.join(tmp, "work")
    os.makedirs(work)

    found = pythons()
    print("pythons: " + ", ".join("%s (%s)" % f for f in found))
    check("Debian's /usr/bin/python3 and at least one other Python >= 3.9 are here",
          any(p == "/usr/bin/python3" for p, _ in found) and len(found) >= 2, found)
    usable = []
    for py, version in found:
        rc, out = run([py, "-c", "import venv, ensurepip, pip"])
        if rc != 0:
            # The issue asks for every Python >= 3.9 *that has pip*.
            print("note %s (%s) has no pip/venv, so nothing to install with: %s"
                  % (py, version, out.strip().splitlines()[-1:]))
            continue
        usable.append((py, version))
    for i, (py, version) in enumerate(usable):
        full(tmp, work, py, version, whl, sdist if i < 3 else None, libdir, prefix)
    debian = [f for f in usable if f[0] == "/usr/bin/python3"]
    if debian:
        with_cffi(tmp, work, debian[0][0], debian[0][1], whl, libdir)
    source_dir(tmp, work, usable)


def venv(tmp, py, name, system_site=False):
    """A new plain venv (system_site: one that sees the system's
    site-packages) and the pip command that installs into it: the Python's
    own pip run with --python (pip >= 22.3), which spares seeding pip into
    every venv."""
    path = os.path.join(tmp, name)
    vpy = os.path.join(path, "bin", "python")
    site = ["--system-site-packages"] if system_site else []
    rc, out = run([py, "-m", "pip", "--python", sys.executable, "--version"])
    if rc == 0:
        rc, out = run([py, "-m", "venv"] + site + ["--without-pip", path])
        return (vpy if rc == 0 else None), [py, "-m", "pip", "--python", vpy], out
    rc, out = run([py, "-m", "venv"] + site + [path])
    return (vpy if rc == 0 else None), [vpy, "-m", "pip"], out


def full(tmp, work, py, version, whl, sdist, libdir, prefix):
    tag = "Python %s (%s)" % (version, py)
    vpy, pip, out = venv(tmp, py, "venv-wheel-%s-%s" % (version, _slug(py)))
    if not check(tag + ": python -m venv", vpy, out):
        return
    rc, out = run(pip + ["install", "--no-index", whl], env=clean_env())
    if not check(tag + ": pip install --no-index <wheel>", rc == 0, out):
        return
    rc, out = run([vpy, "-c", SESSION], env=clean_env(), cwd=work)
    check(tag + ": without the library, the error says how to fix it",
          rc != 0 and "LibraryNotFoundError" in out and "make install" in out
          and "DEXAGENTS_LIBRARY" in out and "LD_LIBRARY_PATH" in out, out)
    for how, env in (("LD_LIBRARY_PATH", clean_env(LD_LIBRARY_PATH=libdir)),
                     ("PKG_CONFIG_PATH (pkg-config's libdir)",
                      clean_env(PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"))),
                     ("DEXAGENTS_LIBRARY", clean_env(DEXAGENTS_LIBRARY=os.path.join(
                         libdir, "libdexagents.so.1")))):
        rc, out = run([vpy, "-c", SESSION], env=env, cwd=work)
        lines = out.strip().splitlines()
        check("%s: the installed wheel runs a session in a plain venv, on ctypes "
              "(library through %s)" % (tag, how),
              rc == 0 and lines[-1] == "Tool save (ok): saved a.txt"
              and lines[-2].startswith(os.path.join(tmp, "venv-wheel-"))
              and lines[-3] == "ctypes", out)
    if not sdist:
        return
    vpy, pip, out = venv(tmp, py, "venv-sdist-%s-%s" % (version, _slug(py)))
    rc, out = run(pip + ["install", "--no-index", sdist], env=clean_env(), cwd=work)
    if not check(tag + ": pip install --no-index <sdist> (in-tree backend, no download)",
                 rc == 0, out):
        return
    rc, out = run([vpy, "-c", SESSION], cwd=work,
                  env=clean_env(DEXAGENTS_LIBRARY=os.path.join(libdir, "libdexagents.so.1")))
    check(tag + ": the installed sdist runs a session",
          rc == 0 and out.strip().splitlines()[-1] == "Tool save (ok): saved a.txt", out)


def _slug(py):
    return re.sub(r"[^A-Za-z0-9]+", "-", py).strip("-")


def with_cffi(tmp, work, py, version, whl, libdir):
    """Debian's python3 with python3-cffi: the [cffi] extra is satisfied from
    the system's site-packages (no download) and the session runs on cffi;
    DEXAGENTS_FFI=cffi in a venv without cffi says how to get it."""
    tag = "Python %s (%s)" % (version, py)
    lib = os.path.join(libdir, "libdexagents.so.1")
    rc, _ = run([py, "-c", "import cffi"])
    if rc != 0:
        skip(tag + ": dexagents[cffi] runs on cffi", "no python3-cffi (make deps-check)")
        return
    vpy, pip, out = venv(tmp, py, "venv-cffi", system_site=True)
    rc, out = run(pip + ["install", "--no-index", whl + "[cffi]"], env=clean_env())
    if check(tag + ": pip install --no-index '<wheel>[cffi]' takes the system's cffi",
             rc == 0, out):
        rc, out = run([vpy, "-c", SESSION], env=clean_env(DEXAGENTS_LIBRARY=lib), cwd=work)
        lines = out.strip().splitlines()
        check(tag + ": the installed wheel runs a session on cffi",
              rc == 0 and lines[-1] == "Tool save (ok): saved a.txt" and lines[-3] == "cffi", out)
    plain = os.path.join(tmp, "venv-wheel-%s-%s" % (version, _slug(py)), "bin", "python")
    rc, out = run([plain, "-c", "import dexagents"], cwd=work,
                  env=clean_env(DEXAGENTS_FFI="cffi", DEXAGENTS_LIBRARY=lib))
    check(tag + ": DEXAGENTS_FFI=cffi without cffi says how to get it",
          rc != 0 and "pip install cffi" in out and "python3-cffi" in out, out)


def source_dir(tmp, work, usable):
    if not usable:
        return
    py, version = usable[-1]
    vpy, pip, out = venv(tmp, py, "venv-source")
    before = set(os.listdir(PKG))
    rc, out = run(pip + ["install", "--no-index", PKG], env=clean_env(), cwd=work)
    check("pip install --no-index bindings/python (the source directory)", rc == 0, out)
    rc, out = run(pip + ["install", "--no-index", "-e", PKG], env=clean_env(), cwd=work)
    rc2, out2 = run([vpy, "-c", "import dexagents; print(dexagents.__file__)"], env=clean_env(),
                    cwd=work)
    check("pip install -e bindings/python imports the source tree's package",
          rc == 0 and rc2 == 0 and out2.strip() == os.path.join(PKG, "dexagents", "__init__.py"),
          out + out2)
    left = sorted(set(os.listdir(PKG)) - before)
    check("the installs leave nothing in bindings/python (no build/, no egg-info)",
          not left and not glob.glob(os.path.join(PKG, "*.egg-info")), left)


if __name__ == "__main__":
    sys.exit(main())
