#!/usr/bin/env bash
# Installed-package test: `make install DESTDIR=<tmp> PREFIX=/usr` stages the
# package; a program built with `pkg-config --cflags --libs dexagents` links
# and runs against it (shared, then static with --static); uninstall removes
# every file again.
source "$(dirname "$0")/_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stage="$tmp/stage"
ver=$(sed -n 's/^#define DEXA_VERSION_STRING "\(.*\)"/\1/p' include/dexagents/version.h)
# The build options of this build dir (WITH_HTTP=0 ...), so that install
# stages this variant and does not rebuild another.
read -r -a opts <<<"$(cat "$BUILD/build-options" 2>/dev/null)"
mk=(make -s --no-print-directory BUILD="$BUILD" LIBOUT="$LIBOUT" DESTDIR="$stage" PREFIX=/usr "${opts[@]}")

if ! "${mk[@]}" install >"$tmp/log" 2>&1; then
  fail "make install DESTDIR=... PREFIX=/usr" "$(tail -n 20 "$tmp/log")"
  summary
fi
pass "make install DESTDIR=... PREFIX=/usr"

missing=""
for f in usr/include/dexagents/dexagents.h usr/lib/libdexagents.so.$ver usr/lib/libdexagents.a \
  usr/lib/pkgconfig/dexagents.pc; do
  [[ -f $stage/$f ]] || missing="$missing $f"
done
for f in usr/lib/libdexagents.so.${ver%%.*} usr/lib/libdexagents.so; do
  [[ -L $stage/$f ]] || missing="$missing $f"
done
for h in include/dexagents/*.h; do [[ -f $stage/usr/$h ]] || missing="$missing usr/$h"; done
for f in usr/bin/dexagents usr/share/dexagents/ui/index.html; do
  [[ -f $stage/$f ]] || missing="$missing $f"
done
for m in man/man1/*.1 man/man3/*.3 man/man7/*.7; do
  [[ -e $m ]] || continue
  [[ -f $stage/usr/share/$m ]] || missing="$missing usr/share/$m"
done
if [[ -z $missing ]]; then pass "headers, libraries, symlinks, dexagents, its page, man pages and dexagents.pc installed"; else
  fail "headers, libraries, symlinks, dexagents, its page, man pages and dexagents.pc installed" "missing:$missing"; fi
out=$("$stage/usr/bin/dexagents" --version 2>&1)
check "the installed dexagents runs: ${out%%$'\n'*}" test "${out%%$'\n'*}" = "dexagents $ver (libdexagents $ver)"
check "dexagents --version lists the build's features" grep -qx "features: $(tr '\n' ' ' <"$BUILD/features" | sed 's/ $//')" <<<"$out"
if has http && has sqlite; then
  # serve finds the installed page next to the program (BINDIR/../share/dexagents/ui)
  port_log="$tmp/serve.log"
  "$stage/usr/bin/dexagents" serve --listen 127.0.0.1:0 --store "$tmp/serve.db" >"$port_log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 600); do grep -q "open http" "$port_log" && break; kill -0 $serve_pid 2>/dev/null || break; sleep 0.1; done
  port=$(sed -n 's|.*open http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$port_log")
  page=""
  if [[ -n $port ]] && exec 3<>"/dev/tcp/127.0.0.1/$port"; then # no curl on a fresh machine
    printf 'GET /products/ai-agent/ HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "$port" >&3 # the Host check
    page=$(timeout 60 cat <&3)
    exec 3<&-
  fi
  if grep -q "<html" <<<"$page"; then pass "the installed dexagents serve shows the installed page"; else
    fail "the installed dexagents serve shows the installed page" "$(cat "$port_log")"; fi
  kill $serve_pid 2>/dev/null
  wait $serve_pid 2>/dev/null
else
  skip "the installed dexagents serve shows the installed page" "this build has no HTTP helpers or no SQLite store"
fi

# A shared page (a link in the tree) installs as a ".so" page that man follows.
bad=""
for m in man/man3/*.3; do
  [[ -L $m ]] || continue
  f="$stage/usr/share/$m"
  [[ -f $f && ! -L $f && $(cat "$f") == ".so man3/$(readlink "$m")" ]] || bad="$bad $m"
done
if [[ -z $bad ]]; then pass "shared man pages install as .so pages"; else
  fail "shared man pages install as .so pages" "wrong:$bad"; fi
if command -v man >/dev/null; then
  out=$(MANWIDTH=80 man -M "$stage/usr/share/man" -P cat 3 dexa_result_errmsg 2>&1)
  if [[ $out == *DEXA_RESULT_STATUS* ]]; then pass "man renders an installed .so page"; else
    fail "man renders an installed .so page" "$out"; fi
fi

if ! command -v pkg-config >/dev/null; then
  skip "pkg-config builds a program" "pkg-config not installed"
  summary
fi
export PKG_CONFIG_PATH="$stage/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$stage"
export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
check "pkg-config --modversion dexagents is $ver" test "$(pkg-config --modversion dexagents)" = "$ver"

cat >"$tmp/prog.c" <<'C'
#include <dexagents/dexagents.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  printf("%s %s\n", dexa_version(), dexa_strerror(DEXA_E_NOT_FOUND));
  return strcmp(dexa_version(), DEXA_VERSION_STRING) != 0 || dexa_version_num() != DEXA_VERSION_NUM;
}
C
read -r -a flags <<<"$(pkg-config --cflags --libs dexagents)"
if cc $SAN_FLAGS -std=c11 -Wall -Werror -o "$tmp/prog" "$tmp/prog.c" "${flags[@]}" >"$tmp/log" 2>&1; then
  pass "program builds with pkg-config --cflags --libs dexagents"
  out=$(LD_LIBRARY_PATH="$stage/usr/lib" "$tmp/prog" 2>&1)
  if [[ $? == 0 && $out == "$ver not found" ]]; then pass "program runs: dexa_version() is $ver"; else
    fail "program runs: dexa_version() is $ver" "$out"; fi
  needed=$(readelf -d "$tmp/prog" | grep -c 'NEEDED.*libdexagents.so.1\]')
  check "program depends on the SONAME libdexagents.so.1" test "$needed" = 1
else
  fail "program builds with pkg-config --cflags --libs dexagents" "$(cat "$tmp/log")"
fi

# Static libdexagents.a with shared dependencies: Requires.private and
# Libs.private must name every library it calls. (A fully static link would
# need the static closure of libcurl, which Debian's -dev packages lack.)
pc="$stage/usr/lib/pkgconfig/dexagents.pc"
read -r -a privmods <<<"$(pkg-config --print-requires-private dexagents | awk '{ print $1 }' | tr '\n' ' ')"
read -r -a sflags <<<"$(pkg-config --cflags dexagents) $(pkg-config --libs "${privmods[@]}") $(sed -n 's/^Libs.private: //p' "$pc")"
if cc $SAN_FLAGS -std=c11 -o "$tmp/sprog" "$tmp/prog.c" -L"$stage/usr/lib" -Wl,-Bstatic -ldexagents \
  -Wl,-Bdynamic "${sflags[@]}" >"$tmp/log" 2>&1; then
  pass "program links libdexagents.a with the private dependencies of dexagents.pc"
  check "static program runs" "$tmp/sprog"
else
  fail "program links libdexagents.a with the private dependencies of dexagents.pc" "$(cat "$tmp/log")"
fi

# Only the modules of the parts this build has (make MINIMAL=1: libcjson alone).
want="libcjson"
has http && want="$want libmicrohttpd"
has providers && want="$want libcurl"
has sqlite && want="$want sqlite3"
has postgresql && want="$want libpq"
check "dexagents.pc: Requires.private names the Debian .pc modules of this build ($want)" \
  grep -qx "Requires.private: $want" "$stage/usr/lib/pkgconfig/dexagents.pc"
# pkg-config --static --libs gives exactly what libdexagents.a needs.
# (libcurl's own static closure is not in Debian's -dev packages: with
# WITH_CURL=1 the link above, with its shared dependencies, is the test.)
if has providers; then
  skip "program links libdexagents.a with pkg-config --static --libs dexagents" \
    "libcurl's static dependencies are not installed (build without WITH_CURL=1 to run it)"
else
  cat >"$tmp/prog2.c" <<'C'
#include <dexagents/dexagents.h>
#include <stdio.h>
/* Takes the address of an entry of every part, so that the static link pulls
 * in (nearly) the whole archive: the model clients, MCP, the stores, HTTP. */
int main(void) {
  const void *parts[] = {(const void *)dexa_dispatch, (const void *)dexa_runtime_new,
                         (const void *)dexa_model_client_new, (const void *)dexa_mcp_tool_sources_new,
                         (const void *)dexa_connector_tool_source_new, (const void *)dexa_store_copy,
                         (const void *)dexa_http_agent_routes_new, (const void *)dexa_http_token_sign};
  printf("%s %zu\n", dexa_build_info(), sizeof parts / sizeof *parts);
  return parts[0] == NULL || dexa_build_has("core") != 1;
}
C
  read -r -a stlibs <<<"$(pkg-config --static --libs dexagents | sed 's/-ldexagents/-Wl,-Bstatic -ldexagents -Wl,-Bdynamic/')"
  if cc $SAN_FLAGS -std=c11 -o "$tmp/sprog2" "$tmp/prog2.c" $(pkg-config --cflags dexagents) "${stlibs[@]}" \
    >"$tmp/log" 2>&1; then
    pass "program links libdexagents.a with pkg-config --static --libs dexagents"
    check "that program runs" "$tmp/sprog2"
    extra=$(readelf -d "$tmp/sprog2" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' |
      grep -Ev '^(libc|libm|libpthread|libdl|librt|ld-linux.*|libgcc_s|libasan|libubsan|libtsan|libstdc\+\+)\.so' |
      sed 's/\.so.*//' | sort | tr '\n' ' ')
    if [[ $want == libcjson ]]; then
      check "it needs no third-party library but libcjson (it needs: $extra)" test "$extra" = "libcjson "
    fi
  else
    fail "program links libdexagents.a with pkg-config --static --libs dexagents" "$(cat "$tmp/log")"
  fi
fi

"${mk[@]}" uninstall >"$tmp/log" 2>&1
left=$(find "$stage" -type f -o -type l)
if [[ -z $left ]]; then pass "make uninstall removes every installed file"; else
  fail "make uninstall removes every installed file" "$left"; fi

# Custom directories are honoured.
"${mk[@]}" PREFIX=/opt/dx LIBDIR=/opt/dx/lib64 INCLUDEDIR=/opt/dx/inc MANDIR=/opt/dx/man \
  PKGCONFIGDIR=/opt/dx/pc BINDIR=/opt/dx/sbin DATADIR=/opt/dx/data install >"$tmp/log" 2>&1
if [[ -f $stage/opt/dx/lib64/libdexagents.a && -f $stage/opt/dx/inc/dexagents/dexagents.h &&
  -f $stage/opt/dx/pc/dexagents.pc && -f $stage/opt/dx/sbin/dexagents &&
  -f $stage/opt/dx/data/dexagents/ui/index.html && -f $stage/opt/dx/man/man1/dexagents.1 ]] &&
  grep -qx 'libdir=/opt/dx/lib64' "$stage/opt/dx/pc/dexagents.pc"; then
  pass "install honours LIBDIR, INCLUDEDIR, MANDIR, PKGCONFIGDIR, BINDIR and DATADIR"
else
  fail "install honours LIBDIR, INCLUDEDIR, MANDIR, PKGCONFIGDIR, BINDIR and DATADIR" "$(tail -n 20 "$tmp/log")"
fi

summary
