# libdexagents: plain GNU Make build (zstd style). The version comes from
# include/dexagents/version.h, the one place it is written.
#
#   make              the libraries: lib/libdexagents.so.1.x.y (+ symlinks), lib/libdexagents.a
#   make run          install missing packages (as root), build, start the AI Agent web
#                     app (dexagents serve) at http://127.0.0.1:8080/products/ai-agent/
#   make run-chat     the same for the terminal chat (examples/chat)
#   make check        install missing packages (as root), build, run every test
#   make check-load   the same tests beside a CPU hog on every core (test/loaded)
#   make check-asan   the same tests under ASan + UBSan (build dir build-asan)
#   make check-tsan   the same tests under ThreadSanitizer (build dir build-tsan)
#   make check-minimal  the MINIMAL=1 library (build dir build-minimal) and the tests
#                     that apply to it
#
# Build options (each 1 by default; MINIMAL=1 sets every one to 0): a part
# left out is not compiled nor linked, and its functions return
# DEXA_E_UNSUPPORTED naming the option (its stub is src/*/*_absent.c).
#   WITH_HTTP=0       no browser helpers (src/http, dexagents serve): no libmicrohttpd
#   WITH_CURL=0       no provider model clients, MCP over HTTP (and its OAuth),
#                     connectors: no libcurl
#   WITH_SQLITE=0     no SQLite store: no libsqlite3
#   WITH_POSTGRES=0   no PostgreSQL store: no libpq
# mbedTLS is linked only with WITH_HTTP or WITH_CURL; cJSON always.
#   make install      PREFIX=/usr/local DESTDIR= BINDIR= LIBDIR= INCLUDEDIR= MANDIR=
#                     PKGCONFIGDIR= DATADIR=
#   make help         every target
VERSION_H := include/dexagents/version.h
MAJOR := $(shell sed -n 's/^\#define DEXA_VERSION_MAJOR \([0-9]*\)/\1/p' $(VERSION_H))
MINOR := $(shell sed -n 's/^\#define DEXA_VERSION_MINOR \([0-9]*\)/\1/p' $(VERSION_H))
PATCH := $(shell sed -n 's/^\#define DEXA_VERSION_PATCH \([0-9]*\)/\1/p' $(VERSION_H))
VERSION := $(MAJOR).$(MINOR).$(PATCH)

# ---- tool chain and flags ------------------------------------------------
CC ?= cc
OPT ?= -O2 -g
# SAN: extra compile + link flags of a sanitizer build (set by check-asan).
SAN ?=
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
# WERROR=1 (what .ci/run passes): every warning fails the build.
ifeq ($(WERROR),1)
WARN += -Werror
endif

# ---- build options (see the top of this file) ------------------------------
MINIMAL ?= 0
ifeq ($(MINIMAL),1)
WITH_HTTP ?= 0
WITH_CURL ?= 0
WITH_SQLITE ?= 0
WITH_POSTGRES ?= 0
else
WITH_HTTP ?= 1
WITH_CURL ?= 1
WITH_SQLITE ?= 1
WITH_POSTGRES ?= 1
endif
# What each option brings: features (dexa_build_has), pkg-config modules,
# link flags. The always-present features come first.
FEATURES := core flow runtime demo-models function-tools mcp-stdio claude-code
ABSENT_FEATURES :=
PC_REQUIRES := libcjson
PC_LIBS :=
LIBS_DEPS := -lcjson
ifeq ($(WITH_HTTP),1)
FEATURES += http
PC_REQUIRES += libmicrohttpd
LIBS_DEPS += -lmicrohttpd
else
ABSENT_FEATURES += http
endif
ifeq ($(WITH_CURL),1)
FEATURES += providers mcp-http connectors
PC_REQUIRES += libcurl
LIBS_DEPS += -lcurl
else
ABSENT_FEATURES += providers mcp-http connectors
endif
ifeq ($(WITH_SQLITE),1)
FEATURES += sqlite
PC_REQUIRES += sqlite3
LIBS_DEPS += -lsqlite3
else
ABSENT_FEATURES += sqlite
endif
ifeq ($(WITH_POSTGRES),1)
FEATURES += postgresql
PC_REQUIRES += libpq
LIBS_DEPS += -lpq
else
ABSENT_FEATURES += postgresql
endif
# mbedTLS (HMAC-SHA256 session tokens and their random keys; SigV4, base64,
# PKCE and JWTs of the HTTP clients) ships no .pc file.
ifneq ($(WITH_HTTP)$(WITH_CURL),00)
LIBS_DEPS += -lmbedtls -lmbedx509 -lmbedcrypto
PC_LIBS += -lmbedtls -lmbedx509 -lmbedcrypto
endif
PC_LIBS += -lpthread -lm
BUILD_OPTIONS := WITH_HTTP=$(WITH_HTTP) WITH_CURL=$(WITH_CURL) WITH_SQLITE=$(WITH_SQLITE) \
  WITH_POSTGRES=$(WITH_POSTGRES)

# libpq's header lives in /usr/include/postgresql on Debian. Recursive (=)
# so pkg-config runs only when a recipe needs it, after `make deps`.
ifeq ($(WITH_POSTGRES),1)
PQ_CFLAGS = $(shell pkg-config --cflags libpq 2>/dev/null || echo -I/usr/include/postgresql)
else
PQ_CFLAGS =
endif
CFLAGS_ALL = -std=c11 -D_GNU_SOURCE $(OPT) $(SAN) $(WARN) -fPIC -fvisibility=hidden \
  -DBUILDING_DEXAGENTS -Iinclude -Isrc -I$(BUILD)/gen $(PQ_CFLAGS) $(CPPFLAGS) $(CFLAGS)
TEST_CFLAGS = -std=c11 -D_GNU_SOURCE $(OPT) $(SAN) $(WARN) -Iinclude -Isrc -Itest \
  $(PQ_CFLAGS) $(CPPFLAGS) $(CFLAGS)
# Every dependency is a Debian package; mbedTLS ships no .pc file.
LIBS := $(LIBS_DEPS) -lpthread -lm

# ---- install locations ---------------------------------------------------
PREFIX ?= /usr/local
EXEC_PREFIX ?= $(PREFIX)
BINDIR ?= $(EXEC_PREFIX)/bin
LIBDIR ?= $(EXEC_PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DESTDIR ?=
INSTALL ?= install

# ---- outputs -------------------------------------------------------------
# BUILD holds objects and test programs; LIBOUT the libraries. A sanitizer
# build moves both (build-asan, build-asan/lib) so it never mixes objects.
BUILD ?= build
LIBOUT ?= lib
# src/cli is the dexagents command, not the library: a program of its own.
# A part left out by a build option is replaced by its stub, *_absent.c.
ABSENT_SRCS := $(wildcard src/*/*_absent.c)
HTTP_SRCS := $(wildcard src/http/*.c src/cli/serve.c src/cli/serve_static.c)
CURL_SRCS := $(filter-out src/model/demo.c src/model/client_new.c,$(wildcard src/model/*.c)) \
  $(wildcard src/tools/mcp_http.c src/tools/mcp_oauth*.c src/tools/connector_slack.c \
  src/util/curl_global.c src/trace/otlp_http.c)
SQLITE_SRCS := $(wildcard src/store/sqlite*.c)
POSTGRES_SRCS := $(wildcard src/store/pg_*.c)
LEFT_OUT := $(if $(filter 0,$(WITH_HTTP)),$(HTTP_SRCS)) $(if $(filter 0,$(WITH_CURL)),$(CURL_SRCS)) \
  $(if $(filter 0,$(WITH_SQLITE)),$(SQLITE_SRCS)) $(if $(filter 0,$(WITH_POSTGRES)),$(POSTGRES_SRCS))
STUBS := $(if $(filter 0,$(WITH_HTTP)),src/http/http_absent.c src/cli/serve_absent.c) \
  $(if $(filter 0,$(WITH_CURL)),src/model/providers_absent.c src/tools/mcp_http_absent.c \
  src/tools/connector_slack_absent.c src/trace/otlp_http_absent.c) \
  $(if $(filter 0,$(WITH_SQLITE)),src/store/sqlite_absent.c) \
  $(if $(filter 0,$(WITH_POSTGRES)),src/store/pg_absent.c)
ALL_SRCS := $(sort $(filter-out $(ABSENT_SRCS) $(LEFT_OUT),$(wildcard src/*/*.c)) $(STUBS))
SRCS := $(filter-out src/cli/%,$(ALL_SRCS))
OBJS := $(SRCS:%.c=$(BUILD)/%.o)
CLI_SRCS := $(filter src/cli/%,$(ALL_SRCS))
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/%.o)
CLI := $(BUILD)/bin/dexagents

SONAME := libdexagents.so.$(MAJOR)
SHLIB_NAME := libdexagents.so.$(VERSION)
SHLIB := $(LIBOUT)/$(SHLIB_NAME)
STLIB := $(LIBOUT)/libdexagents.a
MAP := lib/libdexagents.map

# Every test/unit/*.c and test/integration/*.c is its own program.
# test/pg/*.c run against a throwaway PostgreSQL cluster (test/pg/suites.sh).
# A test that needs a part names it in a "test-needs: FEATURE..." line (the
# features of dexa_build_has); one whose part is left out is not built, and
# test/run counts it as skipped.
TEST_SRCS := $(sort $(wildcard test/unit/*.c test/integration/*.c test/pg/*.c))
space := $(subst ,, )
# $(call needs_absent,FILES): those of FILES whose "test-needs:" (or
# "example-needs:") line names a feature this build leaves out.
needs_absent = $(if $(strip $(ABSENT_FEATURES)),$(shell grep -lE \
  '(test|example)-needs:( +[a-z0-9-]+)* +($(subst $(space),|,$(strip $(ABSENT_FEATURES))))( |$$)' \
  $(1) 2>/dev/null))
TEST_BINS := $(patsubst %.c,$(BUILD)/%,$(filter-out $(call needs_absent,$(TEST_SRCS)),$(TEST_SRCS)))
BENCH_SRCS := $(sort $(wildcard test/bench/*.c))
BENCH_BINS := $(BENCH_SRCS:%.c=$(BUILD)/%)
# Every examples/NAME/ with .c files builds examples/NAME/NAME (in another
# build dir than build: $(BUILD)/examples/NAME/NAME, so that a variant never
# replaces the tree's programs); one whose "example-needs:" names a part
# left out is not built.
EXAMPLE_DIRS_ALL := $(patsubst %/,%,$(sort $(dir $(wildcard examples/*/*.c))))
EXAMPLE_DIRS := $(filter-out $(patsubst %/,%,$(dir $(call needs_absent,$(wildcard examples/*/*.c)))),\
  $(EXAMPLE_DIRS_ALL))
EXAMPLE_OUT := $(if $(filter build,$(BUILD)),,$(BUILD)/)
EXAMPLES := $(foreach d,$(EXAMPLE_DIRS),$(EXAMPLE_OUT)$(d)/$(notdir $(d)))

DEPFILES = $(OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(TEST_SUPPORT_OBJS:.o=.d) $(TEST_BINS:=.d) $(BENCH_BINS:=.d) $(foreach d,$(EXAMPLE_DIRS),$(BUILD)/$(d)/$(notdir $(d)).d)

# Debian packages: to build, and what `make check` needs on top.
DEB_BUILD := gcc make binutils pkg-config libcjson-dev libcurl4-openssl-dev libmbedtls-dev \
  libmicrohttpd-dev libsqlite3-dev libpq-dev
# postgresql: test/pg/suites.sh runs the store's tests on a throwaway cluster.
# python3-*: test/python/test_packages.py installs the packages into venvs;
# python3-mypy: test/python/test_typing.py checks the package's type hints.
DEB_CHECK := g++ clang abigail-tools groff-base man-db postgresql python3-cffi python3-venv python3-pip python3-mypy
# The AI Agent page's browser tests (test/e2e) drive Debian's chromium.
DEB_E2E := chromium
DEB_VALGRIND := valgrind

MINIMAL_BUILD := build-minimal
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_BUILD := build-asan
TSAN_FLAGS := -fsanitize=thread
TSAN_BUILD := build-tsan
RUN_STORE ?= dexagents-chat.db
# make run: the AI Agent reads DEX_AGENT_* from the environment; variables set
# on the command line are exported too (make run DEX_AGENT_MODELS=mock/dex-mini).
DEX_AGENT_STORE ?= ai-agent.db
DEX_AGENT_LISTEN ?= 127.0.0.1:8080
ABI_BASELINE := abi/libdexagents.abi

.DELETE_ON_ERROR:
.PHONY: FORCE all cli lib-shared lib-static deps deps-check deps-valgrind examples tests bindings bench bench-pg run run-chat check \
  check-minimal check-load check-asan check-tsan check-valgrind check-abi abi-update fuzz install install-shared install-static \
  install-includes install-man install-pc install-bin install-ui uninstall clean help ldconfig \
  python-dist node-pack python-reference

all: lib-shared lib-static cli
lib-shared: $(SHLIB)
lib-static: $(STLIB)

# The compiler and flags of this build dir, rewritten only when they change:
# every object depends on it, so `make CC=clang` or new CFLAGS rebuild it all.
FLAGS_STAMP := $(BUILD)/gen/flags
$(FLAGS_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(CC) | $(CFLAGS_ALL) | $(CLI_CFLAGS) | $(TEST_CFLAGS) | $(LDFLAGS)' > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

# dexa_build_info's text: rewritten only when the options change, so that
# build_info.o, then the libraries (whose objects changed) are remade.
BUILD_CONFIG := $(BUILD)/gen/dexa_build_config.h
comma := ,
json_list = $(subst $(space),$(comma),$(foreach w,$(1),\"$(w)\"))
json_opt = \"$(1)\":$(if $(filter 1,$($(1))),true,false)
BI_FEATURES := \"features\":[$(call json_list,$(FEATURES))]
BI_OPTIONS := \"options\":{$(call json_opt,WITH_HTTP),$(call json_opt,WITH_CURL),$(call \
  json_opt,WITH_SQLITE),$(call json_opt,WITH_POSTGRES)}
BI_LIBRARIES := \"libraries\":[$(call json_list,$(PC_REQUIRES) $(if $(findstring \
  mbedtls,$(PC_LIBS)),mbedtls))]
BUILD_INFO_JSON := {\"version\":\"$(VERSION)\",$(BI_FEATURES),$(BI_OPTIONS),$(BI_LIBRARIES)}
$(BUILD_CONFIG): FORCE
	@mkdir -p $(dir $@)
	@{ echo '/* Written by the Makefile: $(BUILD_OPTIONS) */'; \
	  echo '#define DEXA__BUILD_FEATURES " $(FEATURES) "'; \
	  echo '#define DEXA__BUILD_INFO_JSON "$(BUILD_INFO_JSON)"'; } > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; echo "build: $(BUILD_OPTIONS)"; fi
	@echo '$(BUILD_OPTIONS)' > $(BUILD)/build-options.tmp
	@cmp -s $(BUILD)/build-options.tmp $(BUILD)/build-options && rm -f $(BUILD)/build-options.tmp || \
	  mv $(BUILD)/build-options.tmp $(BUILD)/build-options
	@printf '%s\n' $(FEATURES) > $(BUILD)/features.tmp
	@cmp -s $(BUILD)/features.tmp $(BUILD)/features && rm -f $(BUILD)/features.tmp || \
	  mv $(BUILD)/features.tmp $(BUILD)/features
$(BUILD)/src/util/build_info.o: $(BUILD_CONFIG)
FORCE:

# An uninstalled dexagents.pc of this variant (the installed one is written
# by install-pc): its Requires.private and Libs.private are what it links.
PC_IN_TREE := $(BUILD)/dexagents.pc
PC_SED = -e 's|@VERSION@|$(VERSION)|' -e 's|@REQUIRES_PRIVATE@|$(PC_REQUIRES)|' \
  -e 's|@LIBS_PRIVATE@|$(PC_LIBS)|'
$(PC_IN_TREE): pkgconfig/dexagents.pc.in $(BUILD_CONFIG)
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(abspath .)|' -e 's|@LIBDIR@|$(abspath $(LIBOUT))|' \
	  -e 's|@INCLUDEDIR@|$(abspath include)|' $(PC_SED) $< > $@
all: $(PC_IN_TREE)

# --as-needed: record only the dependencies the library really calls.
$(SHLIB): $(OBJS) $(MAP)
	@mkdir -p $(LIBOUT)
	$(CC) -shared $(SAN) -Wl,-soname,$(SONAME) -Wl,--version-script,$(MAP) -Wl,--no-undefined \
	  -Wl,--as-needed -o $@ $(OBJS) $(LIBS) $(LDFLAGS)
	ln -sf $(SHLIB_NAME) $(LIBOUT)/$(SONAME)
	ln -sf $(SONAME) $(LIBOUT)/libdexagents.so

$(STLIB): $(OBJS)
	@mkdir -p $(LIBOUT)
	rm -f $@
	ar rcs $@ $(OBJS)

# ---- the dexagents command -------------------------------------------------
# A client of the public ABI only (test/abi/layers.sh checks it), linked with
# the static library so the installed program needs no library path.
CLI_CFLAGS = -std=c11 -D_GNU_SOURCE $(OPT) $(SAN) $(WARN) -Iinclude -Isrc $(CPPFLAGS) $(CFLAGS)
cli: $(CLI)

$(BUILD)/src/cli/%.o: src/cli/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CLI_CFLAGS) -MMD -MP -c $< -o $@

$(CLI): $(CLI_OBJS) $(STLIB)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(CC) $(SAN) -o $@ $(CLI_OBJS) $(STLIB) $(LIBS) $(LDFLAGS)

# ---- programs: tests, benchmarks, examples -------------------------------
# Each links the static library (internal symbols are visible there). The old
# program is removed first so a failed build never leaves a stale one to run.
# test/support/*.c are helpers (an in-memory host, ...) in an archive, so a
# test links only the helpers it uses (and so only the library parts they need).
TEST_SUPPORT := $(filter-out $(call needs_absent,$(wildcard test/support/*.c)),$(sort $(wildcard test/support/*.c)))
TEST_SUPPORT_OBJS := $(TEST_SUPPORT:%.c=$(BUILD)/%.o)
TEST_SUPPORT_LIB := $(BUILD)/test/libtestsupport.a

$(BUILD)/test/support/%.o: test/support/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -MMD -MP -c $< -o $@

$(TEST_SUPPORT_LIB): $(TEST_SUPPORT_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $(TEST_SUPPORT_OBJS)

$(BUILD)/test/%: test/%.c $(TEST_SUPPORT_LIB) $(STLIB) $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(CC) $(TEST_CFLAGS) -MMD -MP -MF $@.d -o $@ $< $(TEST_SUPPORT_LIB) $(STLIB) $(LIBS) $(LDFLAGS)

define example_rule
$(EXAMPLE_OUT)$(1)/$(notdir $(1)): $(wildcard $(1)/*.c) $(STLIB) $(FLAGS_STAMP)
	@mkdir -p $(BUILD)/$(1)
	@rm -f $$@
	$$(CC) $$(TEST_CFLAGS) -I$(1) -MMD -MP -MF $(BUILD)/$(1)/$(notdir $(1)).d -o $$@ \
	  $(wildcard $(1)/*.c) $$(STLIB) $$(LIBS) $$(LDFLAGS)
endef
$(foreach d,$(EXAMPLE_DIRS),$(eval $(call example_rule,$(d))))

tests: $(TEST_BINS)
examples: $(EXAMPLES)

bench: $(BENCH_BINS)
	@for b in $(BENCH_BINS); do echo "== $$b"; $$b || exit 1; done

# W1 (in-process workers, then 1, 2 and 4 worker processes) and W2 on a
# throwaway PostgreSQL cluster; BENCH_ROUNDS runs of each (default 3).
BENCH_ROUNDS ?= 3
bench-pg: $(BENCH_BINS)
	@BUILD=$(BUILD) bash test/pg/_bench.sh $(BENCH_ROUNDS)

# ---- fuzzing (clang libFuzzer) ---------------------------------------------
# `make fuzz` builds every test/fuzz/fuzz_*.c as build-fuzz/test/fuzz/NAME
# (ASan + UBSan); run one on its corpus, e.g.
#   build-fuzz/test/fuzz/fuzz_model_sse test/fuzz/corpus/fuzz_model_sse
# `make check` replays the corpora without clang (test/unit/test_model_fuzz_replay.c).
FUZZ_SRCS := $(sort $(wildcard test/fuzz/fuzz_*.c))
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
fuzz:
	@$(MAKE) --no-print-directory CC=clang BUILD=build-fuzz LIBOUT=build-fuzz/lib OPT="-O1 -g" \
	  SAN="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" lib-static
	@mkdir -p build-fuzz/test/fuzz
	@for f in $(FUZZ_SRCS); do \
	  echo "fuzz: build-fuzz/test/fuzz/$$(basename $$f .c)"; \
	  clang $(TEST_CFLAGS) -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer $$f build-fuzz/lib/libdexagents.a \
	    $(LIBS) -o build-fuzz/test/fuzz/$$(basename $$f .c) || exit 1; \
	done

# ---- Debian packages -----------------------------------------------------
# Installs what is missing when root (apt-get update only then); otherwise
# says what is missing and goes on.
define apt_missing
	@command -v dpkg-query >/dev/null 2>&1 || { echo "deps: not a Debian system; need: $(1)"; exit 0; }; \
	missing=""; \
	for p in $(1); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q ' installed$$' || missing="$$missing $$p"; \
	done; \
	[ -z "$$missing" ] && exit 0; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "deps: installing$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -q && apt-get install -y -q --no-install-recommends $$missing; \
	else \
	  echo "deps: missing Debian packages:$$missing"; \
	  echo "deps: install them as root (make deps) or: apt-get install$$missing"; \
	fi
endef

deps:
	$(call apt_missing,$(DEB_BUILD))
deps-check:
	$(call apt_missing,$(DEB_BUILD) $(DEB_CHECK) $(DEB_E2E))
deps-valgrind:
	$(call apt_missing,$(DEB_BUILD) $(DEB_CHECK) $(DEB_VALGRIND))

# ---- the two set-up commands ---------------------------------------------
run-chat:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory all examples
	@test -x examples/chat/chat || { echo "run: examples/chat/chat is not built (no sources yet)"; exit 1; }
	examples/chat/chat --store $(RUN_STORE)

run:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory all examples
	@test -x $(CLI) || { echo "run: $(CLI) is not built"; exit 1; }
	DEX_AGENT_STORE='$(DEX_AGENT_STORE)' DEX_AGENT_LISTEN='$(DEX_AGENT_LISTEN)' $(CLI) serve \
	  --ui examples/ai-agent/ui

# The build runs with -k and may fail: test/run counts what did not build as
# failed, so the last line is always the total.
check:
	@$(MAKE) --no-print-directory deps-check
	@$(MAKE) --no-print-directory -k all examples tests bindings || true
	@BUILD=$(BUILD) LIBOUT=$(LIBOUT) test/run

# The MINIMAL=1 variant (no third-party library but cJSON) in its own build
# dir, and the tests that apply to it (the others are skipped: their
# test-needs name a part it leaves out). make check runs it too, as one test
# (test/build/minimal.sh).
check-minimal:
	@$(MAKE) --no-print-directory -k BUILD=$(MINIMAL_BUILD) LIBOUT=$(MINIMAL_BUILD)/lib MINIMAL=1 \
	  all tests examples || true
	@BUILD=$(MINIMAL_BUILD) LIBOUT=$(MINIMAL_BUILD)/lib test/run

# The same suite beside a CPU hog on every core (test/loaded): no test may
# depend on a timing window that a slow process start can miss.
check-load:
	@test/loaded $(MAKE) --no-print-directory check

check-asan:
	@$(MAKE) --no-print-directory deps-check
	@$(MAKE) --no-print-directory -k BUILD=$(ASAN_BUILD) LIBOUT=$(ASAN_BUILD)/lib OPT="-O1 -g" \
	  SAN="$(ASAN_FLAGS)" all tests || true
	@BUILD=$(ASAN_BUILD) LIBOUT=$(ASAN_BUILD)/lib SAN_FLAGS="$(ASAN_FLAGS)" \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 test/run

# ThreadSanitizer over the same tests: a data race fails its test (exit 66).
check-tsan:
	@$(MAKE) --no-print-directory deps-check
	@$(MAKE) --no-print-directory -k BUILD=$(TSAN_BUILD) LIBOUT=$(TSAN_BUILD)/lib OPT="-O1 -g" \
	  SAN="$(TSAN_FLAGS)" all tests || true
	@BUILD=$(TSAN_BUILD) LIBOUT=$(TSAN_BUILD)/lib SAN_FLAGS="$(TSAN_FLAGS)" \
	  TSAN_OPTIONS=halt_on_error=1:exitcode=66 test/run

# somalloc=nouserintercepts: a test's own malloc (test_core_nomem fails
# allocations on purpose) stays its own; the C library's is still checked.
check-valgrind:
	@$(MAKE) --no-print-directory deps-valgrind
	@$(MAKE) --no-print-directory -k all tests bindings || true
	@BUILD=$(BUILD) LIBOUT=$(LIBOUT) \
	  TEST_WRAPPER="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
	    --soname-synonyms=somalloc=nouserintercepts" \
	  test/run

# ---- language bindings -----------------------------------------------------
# bindings/python is pure Python (cffi ABI mode over the .so): python-dist builds
# its wheel and sdist with its own PEP 517 backend (standard library only) into
# $(BUILD)/python. bindings/node is an N-API addon in C: `bindings` builds it in
# place with $(CC) against Node's headers (bindings/node/build.js, no node-gyp,
# no download); node-pack packs the npm tarball into $(BUILD)/node, with the
# pinned node-api-headers bundled (bindings/node/tools/pack.sh), so installing
# it needs no network and no Node headers on the system.
PYTHON ?= python3
# Where Node has no headers (Debian's nodejs without libnode-dev), make check
# takes them from the npm package node-api-headers (pinned), into the build folder.
NODE_API_HEADERS := node-api-headers@1.9.0
NODE_API_DIR = $(BUILD)/npm-node-api
bindings: $(SHLIB)
	@command -v node >/dev/null 2>&1 || { echo "bindings: node is not installed; the Node addon is not built"; exit 0; }; \
	inc="$${NODE_INCLUDE:-}"; \
	if [ -z "$$inc" ] && ! node bindings/node/build.js --has-node-headers; then \
	  inc="$(abspath $(NODE_API_DIR))/node_modules/node-api-headers/include"; \
	  if [ ! -f "$$inc/node_api.h" ]; then \
	    echo "bindings: Node's headers are missing; installing $(NODE_API_HEADERS) into $(NODE_API_DIR)"; \
	    mkdir -p $(NODE_API_DIR) && (cd $(NODE_API_DIR) && \
	    npm install -E --no-save --no-audit --no-fund --loglevel=error $(NODE_API_HEADERS) >/dev/null); \
	  fi; \
	fi; \
	CC="$(CC)" NODE_INCLUDE="$$inc" node bindings/node/build.js

python-dist:
	@mkdir -p $(BUILD)/python
	$(PYTHON) bindings/python/build_backend/dexagents_build.py --outdir $(BUILD)/python all

# The reference of the Python API, generated from its docstrings.
python-reference:
	$(PYTHON) bindings/python/tools/gen_reference.py > bindings/python/REFERENCE.md

node-pack:
	@mkdir -p $(BUILD)/node
	bash bindings/node/tools/pack.sh $(BUILD)/node

# ---- ABI baseline (abigail-tools) ----------------------------------------
# abi-update writes the reviewed baseline from a -g build (the baseline is the
# 1.0 release's: an application built against it must keep working); check-abi
# accepts added symbols and members appended to size-versioned public structs,
# nothing else (test/abi/abidiff.sh).
abi-update: $(SHLIB)
	@mkdir -p $(dir $(ABI_BASELINE))
	abidw --headers-dir include/dexagents --out-file $(ABI_BASELINE) $(SHLIB)
check-abi: $(SHLIB)
	@test -f $(ABI_BASELINE) || { echo "check-abi: no $(ABI_BASELINE) yet (make abi-update)"; exit 1; }
	@LIBOUT=$(LIBOUT) bash test/abi/abidiff.sh

# ---- install -------------------------------------------------------------
install: install-shared install-static install-includes install-man install-pc install-bin install-ui
install-bin: $(CLI)
	$(INSTALL) -d $(DESTDIR)$(BINDIR)
	$(INSTALL) -m 755 $(CLI) $(DESTDIR)$(BINDIR)/dexagents
# The AI Agent page, for dexagents serve (it finds <bindir>/../share/dexagents/ui).
install-ui:
	$(INSTALL) -d $(DESTDIR)$(DATADIR)/dexagents/ui
	cp -R examples/ai-agent/ui/. $(DESTDIR)$(DATADIR)/dexagents/ui/
install-shared: $(SHLIB)
	$(INSTALL) -d $(DESTDIR)$(LIBDIR)
	$(INSTALL) -m 755 $(SHLIB) $(DESTDIR)$(LIBDIR)/$(SHLIB_NAME)
	ln -sf $(SHLIB_NAME) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libdexagents.so
	@$(MAKE) --no-print-directory ldconfig

# The loader finds a new library in LIBDIR only once ldconfig has updated its
# cache. Run it when installing for real as root; otherwise say what to do.
# A staged install (DESTDIR) leaves it to the package's own scripts.
LDCONFIG ?= $(shell command -v ldconfig 2>/dev/null || echo /sbin/ldconfig)
ldconfig:
	@if [ -n "$(DESTDIR)" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && [ -x "$(LDCONFIG)" ]; then \
	  echo "$(LDCONFIG)"; "$(LDCONFIG)"; \
	fi; \
	if [ -x "$(LDCONFIG)" ] && "$(LDCONFIG)" -p 2>/dev/null | grep -q " => $(LIBDIR)/$(SONAME)$$"; then exit 0; fi; \
	echo "install: the loader does not know $(LIBDIR) yet, so programs will not find $(SONAME):"; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "install:   add $(LIBDIR) to /etc/ld.so.conf.d/ and run ldconfig, or set LD_LIBRARY_PATH=$(LIBDIR)"; \
	else \
	  echo "install:   run ldconfig as root (when $(LIBDIR) is in /etc/ld.so.conf), or set LD_LIBRARY_PATH=$(LIBDIR);"; \
	fi; \
	echo "install:   the bindings also find it through pkg-config (PKG_CONFIG_PATH=$(PKGCONFIGDIR)) or DEXAGENTS_LIBRARY=$(LIBDIR)/$(SONAME)"
install-static: $(STLIB)
	$(INSTALL) -d $(DESTDIR)$(LIBDIR)
	$(INSTALL) -m 644 $(STLIB) $(DESTDIR)$(LIBDIR)/libdexagents.a
install-includes:
	$(INSTALL) -d $(DESTDIR)$(INCLUDEDIR)/dexagents
	$(INSTALL) -m 644 include/dexagents/*.h $(DESTDIR)$(INCLUDEDIR)/dexagents/
# A page shared by several functions is a symbolic link in the tree (so
# that man -l works from anywhere) and installs as the usual ".so" page.
install-man:
	$(INSTALL) -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man7
	$(if $(wildcard man/man1/*.1),$(INSTALL) -m 644 man/man1/*.1 $(DESTDIR)$(MANDIR)/man1/)
	for f in man/man3/*.3; do \
	  [ -e "$$f" ] || continue; \
	  if [ -L "$$f" ]; then \
	    printf '.so man3/%s\n' "$$(readlink "$$f")" > $(DESTDIR)$(MANDIR)/man3/$${f##*/} && \
	      chmod 644 $(DESTDIR)$(MANDIR)/man3/$${f##*/} || exit 1; \
	  else $(INSTALL) -m 644 "$$f" $(DESTDIR)$(MANDIR)/man3/ || exit 1; fi; \
	done
	$(if $(wildcard man/man7/*.7),$(INSTALL) -m 644 man/man7/*.7 $(DESTDIR)$(MANDIR)/man7/)
# The .pc is written at install time so it carries this PREFIX and LIBDIR.
install-pc:
	$(INSTALL) -d $(DESTDIR)$(PKGCONFIGDIR)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	  $(PC_SED) pkgconfig/dexagents.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/dexagents.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/dexagents.pc

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(SHLIB_NAME) $(DESTDIR)$(LIBDIR)/$(SONAME) \
	  $(DESTDIR)$(LIBDIR)/libdexagents.so $(DESTDIR)$(LIBDIR)/libdexagents.a \
	  $(DESTDIR)$(PKGCONFIGDIR)/dexagents.pc
	rm -rf $(DESTDIR)$(INCLUDEDIR)/dexagents $(DESTDIR)$(DATADIR)/dexagents
	rm -f $(DESTDIR)$(BINDIR)/dexagents
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(wildcard man/man1/*.1))) \
	  $(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(wildcard man/man3/*.3))) \
	  $(addprefix $(DESTDIR)$(MANDIR)/man7/,$(notdir $(wildcard man/man7/*.7)))

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(MINIMAL_BUILD) build-fuzz lib/libdexagents.so* lib/libdexagents.a $(EXAMPLES) test/out bindings/node/build bindings/node/*.tgz

help:
	@echo "targets: all cli lib-shared lib-static deps examples tests bindings check check-minimal check-asan check-tsan"
	@echo "         check-load check-valgrind"
	@echo "options: WITH_HTTP=$(WITH_HTTP) WITH_CURL=$(WITH_CURL) WITH_SQLITE=$(WITH_SQLITE) WITH_POSTGRES=$(WITH_POSTGRES) (MINIMAL=1: all 0)"
	@echo "         python-dist node-pack python-reference ldconfig"
	@echo "         bench bench-pg run run-chat install uninstall check-abi abi-update fuzz clean"
	@echo "install: PREFIX=$(PREFIX) DESTDIR= BINDIR=$(BINDIR) LIBDIR=$(LIBDIR) INCLUDEDIR=$(INCLUDEDIR)"
	@echo "         MANDIR=$(MANDIR) PKGCONFIGDIR=$(PKGCONFIGDIR) DATADIR=$(DATADIR)"
	@echo "command: $(CLI) (dexagents: chat, sessions, serve, worker, graph, store)"
	@echo "version: $(VERSION) (SONAME $(SONAME))"

-include $(DEPFILES)
