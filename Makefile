# allocspy - one non-recursive Makefile.
#   make            build/liballocspy.so, build/allocspy-report, build/allocspy
#   make check      the quick tier of the tests; the last line is "N passed, N failed"
#   make check-full every test, the linters and the sanitizer build
#   make demo       the seed comparison (strdup against refcount builds)
#   make bench      overhead tables against the bare programs
#   make install    PREFIX=/usr/local DESTDIR=

-include config.mak

VERSION    := 0.1.0
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCDIR     ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
PCDIR      ?= $(LIBDIR)/pkgconfig
DESTDIR    ?=

# (CC and CXX have make's own defaults, cc and g++: ?= would never apply)
ifeq ($(origin CC),default)
CC         := gcc
endif
ifeq ($(origin CXX),default)
CXX        := g++
endif
PKG_CONFIG ?= pkg-config
B          := build

CFLAGS     ?= -O2 -g
WARN       := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
ALL_CFLAGS := -std=gnu11 $(WARN) -Iinclude -DASP_VERSION='"$(VERSION)"' $(CFLAGS)

JANSSON_CFLAGS := $(shell $(PKG_CONFIG) --cflags jansson 2>/dev/null)
JANSSON_LIBS   := $(shell $(PKG_CONFIG) --libs jansson 2>/dev/null || echo -ljansson)
DW_CFLAGS      := $(shell $(PKG_CONFIG) --cflags libdw 2>/dev/null)
DW_LIBS        := $(shell $(PKG_CONFIG) --libs libdw 2>/dev/null || echo -ldw -lelf)
Z_LIBS         := $(shell $(PKG_CONFIG) --libs zlib 2>/dev/null || echo -lz)
GLIB_CFLAGS     = $(shell $(PKG_CONFIG) --cflags glib-2.0 2>/dev/null)
GLIB_LIBS       = $(shell $(PKG_CONFIG) --libs glib-2.0 2>/dev/null)

LIB     := $(B)/liballocspy.so
REPORT  := $(B)/allocspy-report
LAUNCH  := $(B)/allocspy

.PHONY: all deps test-deps check check-full demo bench soak install install-lib install-bin \
	install-headers install-man install-pc clean lint lint-man test-progs check-asan \
	node-deps

all: $(LIB) $(REPORT) $(LAUNCH) $(B)/allocspy.installed

# Installs every missing Debian package the build, the tests and the
# benches use; silent when all are present (scripts/deps.sh says which
# target needs which).
deps:
	@sh scripts/deps.sh all

# The tests' packages (valgrind, the exports' readers, ...): make check.
test-deps:
	@sh scripts/deps.sh test

# On a fresh machine they are installed before anything is built, even
# with -j: make remakes this included file first, then reads the Makefile
# again, so that pkg-config (above) answers for what was just installed.
ifeq ($(filter clean deps,$(MAKECMDGOALS)),)
-include $(B)/deps.mk
endif
$(B)/deps.mk: scripts/deps.sh
	@sh scripts/deps.sh build
	@mkdir -p $(B) && echo '# scripts/deps.sh build ran: the build dependencies are installed' >$@

# --- the shim -----------------------------------------------------------
# -fvisibility=hidden plus a version script: only the interposed symbols
# and asp_* leave the library.  -ftls-model is irrelevant: no __thread here.
SHIM_SRC := $(wildcard shim/*.c)
# common/: one source compiled into both the shim and the analyzer.
COMMON_SRC := $(wildcard common/*.c)
SHIM_OBJ := $(SHIM_SRC:%.c=$(B)/%.o) $(COMMON_SRC:common/%.c=$(B)/shim/common-%.o)
SHIM_CFLAGS := -fPIC -fvisibility=hidden -fno-builtin-malloc -fno-builtin-free \
	-fno-builtin-calloc -fno-builtin-realloc -fno-stack-protector \
	-D_GNU_SOURCE -fexceptions -fno-omit-frame-pointer $(JANSSON_CFLAGS)

$(B)/shim/%.o: shim/%.c shim/*.h common/*.h include/allocspy.h | $(B)/shim
	$(CC) $(ALL_CFLAGS) $(SHIM_CFLAGS) -Icommon $(DW_CFLAGS) -c -o $@ $<
# The wrappers: no frame of their own (override.c says why).
$(B)/shim/override.o: SHIM_CFLAGS += -fomit-frame-pointer

$(B)/shim/common-%.o: common/%.c common/*.h | $(B)/shim
	$(CC) $(ALL_CFLAGS) $(SHIM_CFLAGS) -Icommon $(DW_CFLAGS) -c -o $@ $<

# jansson is linked in, its symbols kept inside: the report's jansson takes
# its memory from the shim's arena (json_set_alloc_funcs) without touching
# a jansson the program may use itself.
JANSSON_STATIC := $(shell $(PKG_CONFIG) --variable=libdir jansson 2>/dev/null)/libjansson.a

$(LIB): $(SHIM_OBJ) shim/liballocspy.map
	$(CC) $(LDFLAGS) -shared -o $@ $(SHIM_OBJ) -Wl,--version-script=shim/liballocspy.map \
		-Wl,-z,nodelete -Wl,-soname,liballocspy.so $(JANSSON_STATIC) -Wl,--exclude-libs,ALL \
		-ldl -lpthread
	@if readelf -lW $@ | grep -q ' TLS '; then \
		echo "error: $@ has a TLS segment (it would change every thread's DTV size)"; \
		rm -f $@; exit 1; fi

# --- the analyzer ---------------------------------------------------------
ANALYZER_SRC := $(wildcard analyzer/*.c)
ANALYZER_OBJ := $(ANALYZER_SRC:%.c=$(B)/%.o) $(COMMON_SRC:common/%.c=$(B)/analyzer/common-%.o) \
	$(B)/analyzer/html-assets.o

$(B)/analyzer/%.o: analyzer/%.c analyzer/*.h common/*.h | $(B)/analyzer
	$(CC) $(ALL_CFLAGS) -D_GNU_SOURCE -Icommon $(JANSSON_CFLAGS) $(DW_CFLAGS) -c -o $@ $<

$(B)/analyzer/common-%.o: common/%.c common/*.h | $(B)/analyzer
	$(CC) $(ALL_CFLAGS) -D_GNU_SOURCE -Icommon $(DW_CFLAGS) -c -o $@ $<

# The html command's style sheet and script, embedded as C strings, each
# with its SHA-256 in base64 for the page's Content-Security-Policy.
$(B)/analyzer/html-assets.c: analyzer/html.css analyzer/html.js | $(B)/analyzer
	@{ echo '/* Generated by the Makefile from analyzer/html.css and analyzer/html.js. */'; \
	echo '#include "html-assets.h"'; \
	for f in css js; do \
		echo "const char asp__html_$${f}[] ="; \
		sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/\t"/' -e 's/$$/\\n"/' analyzer/html.$$f; \
		echo ';'; \
		sum=$$(sha256sum analyzer/html.$$f | cut -c1-64 | tr a-f A-F | basenc --base16 -d | base64 -w0) && \
		[ -n "$$sum" ] || exit 1; \
		echo "const char asp__html_$${f}_sha256[] = \"$$sum\";"; \
	done; } >$@.tmp && mv $@.tmp $@

$(B)/analyzer/html-assets.o: $(B)/analyzer/html-assets.c analyzer/html-assets.h
	$(CC) $(ALL_CFLAGS) -Ianalyzer -c -o $@ $<

# -lstdc++: __cxa_demangle names C++ symbols as valgrind shows them.
$(REPORT): $(ANALYZER_OBJ)
	$(CC) $(LDFLAGS) -o $@ $(ANALYZER_OBJ) $(JANSSON_LIBS) $(DW_LIBS) $(Z_LIBS) -lstdc++ -lm

# --- the launcher ---------------------------------------------------------
# allocspy top names addresses with common/dwsym.c through a libdw.so.1 it
# dlopens: the launcher links neither libdw nor libstdc++, so that running
# a program through it loads nothing more.
LAUNCH_SRC := launcher/allocspy.c launcher/top.c common/dwsym.c
LAUNCH_FLAGS = $(ALL_CFLAGS) -D_GNU_SOURCE -Icommon $(DW_CFLAGS) -DASP_LIBDIR='"$(LIBDIR)"'
$(LAUNCH): $(LAUNCH_SRC) launcher/*.h common/*.h | $(B)
	$(CC) $(LAUNCH_FLAGS) $(LDFLAGS) -o $@ $(LAUNCH_SRC) -ldl

# The launcher make install installs: it preloads the library from LIBDIR.
# libdir.txt changes when LIBDIR does, so that it is built again then.
$(B)/libdir.txt: FORCE | $(B)
	@echo '$(LIBDIR)' | cmp -s - $@ || echo '$(LIBDIR)' >$@
$(B)/allocspy.installed: $(LAUNCH_SRC) launcher/*.h common/*.h $(B)/libdir.txt | $(B)
	$(CC) $(LAUNCH_FLAGS) -DASP_INSTALLED $(LDFLAGS) -o $@ $(LAUNCH_SRC) -ldl
.PHONY: FORCE
FORCE:

$(B) $(B)/shim $(B)/analyzer $(B)/test $(B)/test/progs $(B)/test/unit $(B)/test/soak $(B)/benches:
	@mkdir -p $@

# --- tests ----------------------------------------------------------------
# test/progs/*.c and *.cc: programs run under valgrind and under the shim.
# Built at -O0 so that the compiler keeps every allocation the source makes.
PROG_C    := $(wildcard test/progs/*.c)
PROG_CXX  := $(wildcard test/progs/*.cc)
PROG_BIN  := $(PROG_C:test/progs/%.c=$(B)/test/progs/%) \
	$(PROG_CXX:test/progs/%.cc=$(B)/test/progs/%)
PROG_FLAGS := -O0 -g -fno-omit-frame-pointer -pthread -Iinclude

$(B)/test/progs/%: test/progs/%.c include/allocspy.h | $(B)/test/progs
	$(CC) $(PROG_FLAGS) -std=gnu11 -D_GNU_SOURCE -o $@ $< $(if $(findstring glib,$*),$(GLIB_CFLAGS) $(GLIB_LIBS))

$(B)/test/progs/%: test/progs/%.cc | $(B)/test/progs
	$(CXX) $(PROG_FLAGS) -std=gnu++17 -o $@ $<

# test/progs/lib/*.c: libraries some of the programs are linked with.
$(B)/test/progs/lib/lib%.so: test/progs/lib/%.c
	@mkdir -p $(@D)
	$(CC) $(PROG_FLAGS) -std=gnu11 -fPIC -shared -o $@ $<

$(B)/test/progs/lib/lib%.so: test/progs/lib/%.cc
	@mkdir -p $(@D)
	$(CXX) $(PROG_FLAGS) -std=gnu++17 -fPIC -shared -o $@ $<

$(B)/test/progs/par_new_plugin $(B)/test/progs/par_local_plugin: \
		$(B)/test/progs/%: test/progs/%.c $(B)/test/progs/lib/libnew_plugin.so
	$(CC) $(PROG_FLAGS) -std=gnu11 -D_GNU_SOURCE -o $@ $< -ldl

$(B)/test/progs/par_exit_many: test/progs/par_exit_many.c $(B)/test/progs/lib/libexit_many.so
	$(CC) $(PROG_FLAGS) -std=gnu11 -D_GNU_SOURCE -o $@ $< -L$(B)/test/progs/lib -lexit_many \
		-Wl,-rpath,'$$ORIGIN/lib'

# test/unit/test_*.c: unit tests linked with the shim's own objects, from
# an archive: a test takes the modules it calls and those they call, no
# more, so that stack.o's test does not need the rest of the shim (what
# stack.o calls beyond these, the options and process.c's loader, its
# test defines). Frame pointers: test_stack builds frames by hand.
UNIT_SRC := $(wildcard test/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:test/unit/%.c=$(B)/test/unit/%)
UNIT_SHIM_OBJ := $(addprefix $(B)/shim/,arena.o live.o loader.o next.o sitemap.o sort.o stack.o \
	thread.o unwmask.o)
UNIT_SHIM_LIB := $(B)/test/unit/libshim.a

$(UNIT_SHIM_LIB): $(UNIT_SHIM_OBJ) | $(B)/test/unit
	rm -f $@ && $(AR) rcs $@ $(UNIT_SHIM_OBJ)

$(B)/test/unit/%: test/unit/%.c test/unit/unit.h shim/*.h common/*.h $(UNIT_SHIM_LIB) | $(B)/test/unit
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -fno-omit-frame-pointer -D_GNU_SOURCE -Ishim -Icommon -o $@ $< \
		$(UNIT_SHIM_LIB) $(JANSSON_LIBS) -ldl -lpthread

# The tests that include the module they test.
$(B)/test/unit/test_names: shim/envcheck.c common/dwsym.c
$(B)/test/unit/test_sample: shim/sample.c

# test/soak/*.c and *.cc: the torture cases of test/soak.sh (make soak).
SOAK_C   := $(wildcard test/soak/*.c)
SOAK_CXX := $(wildcard test/soak/*.cc)
SOAK_BIN := $(SOAK_C:test/soak/%.c=$(B)/test/soak/%) $(SOAK_CXX:test/soak/%.cc=$(B)/test/soak/%)

$(B)/test/soak/%: test/soak/%.c | $(B)/test/soak
	$(CC) -O2 -g -pthread -std=gnu11 -D_GNU_SOURCE -o $@ $<

$(B)/test/soak/%: test/soak/%.cc | $(B)/test/soak
	$(CXX) -O2 -g -pthread -std=gnu++17 -o $@ $<

test-progs: $(PROG_BIN) $(UNIT_BIN) $(SOAK_BIN)

# The deadlock hunt: every torture case, every mode, one CPU and two, for
# an hour (SOAK_SECONDS). Not part of make check, which runs a short round.
SOAK_SECONDS ?= 3600
soak: all test-progs
	@sh test/soak.sh -d $(SOAK_SECONDS)

# The quick tier (test/run.sh: TIER=quick), a few minutes: every area once.
check: test-deps all test-progs node-deps
	@TIER=quick sh test/run.sh

# Everything: the linters and the sanitizer pass first, then every test
# file with all its cases; the last line is the whole suite's.
check-full: test-deps all test-progs node-deps lint check-asan
	@TIER=full sh test/run.sh

# The npm packages the export tests validate with, pinned, in build/.
node-deps: test-deps
	@sh scripts/npm-deps.sh

# The analyzer and the unit tests again, built with AddressSanitizer and
# UndefinedBehaviorSanitizer in build/asan, against the report's tests;
# t57 merges the dumps of the plain shim and test programs (SHIM_B).
# (The shim itself cannot carry ASan: it is the allocator's interposer.)
ASAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all

check-asan: $(LIB) $(LAUNCH) $(PROG_BIN)
	@$(MAKE) -s B=build/asan CFLAGS="$(ASAN_FLAGS)" LDFLAGS="$(ASAN_FLAGS)" \
		build/asan/allocspy-report $(UNIT_SRC:test/unit/%.c=build/asan/test/unit/%)
	@B=build/asan SHIM_B=$(B) TESTS="t50 t51 t52 t57" FUZZ=no ASAN_OPTIONS=detect_leaks=0 \
		sh test/run.sh

# cppcheck and clang-tidy (.clang-tidy) over every source; quiet when clean.
lint:
	cppcheck --enable=warning,performance,portability --inline-suppr --quiet --error-exitcode=1 \
		-Iinclude -Ishim -Icommon -D__x86_64__ -D__linux__ -D__GNUC__ -D__SEG_FS -D__GLIBC__=2 -D__GLIBC_MINOR__=36 \
		--suppress=missingIncludeSystem shim analyzer common launcher
	clang-tidy -quiet $(SHIM_SRC) $(ANALYZER_SRC) $(COMMON_SRC) launcher/allocspy.c launcher/top.c -- -std=gnu11 -D_GNU_SOURCE \
		-Iinclude -Ishim -Ianalyzer -Icommon -Ilauncher $(JANSSON_CFLAGS) $(DW_CFLAGS) -DASP_VERSION='"$(VERSION)"' \
		-DASP_LIBDIR='"$(LIBDIR)"' 2>/dev/null

# --- the seed comparison and the benches -------------------------------------
demo: all
	@sh benches/demo.sh

bench: all
	@sh scripts/deps.sh bench
	@sh benches/run.sh

# --- benches (benches/*: the seed workloads and the timing harness) ----------
# Built -O2 like real programs; bench.h keeps every malloc/free pair alive.
# Frame pointers stay, so that ALLOCSPY_UNWIND=fp sees the workloads' frames.
BENCH_CFLAGS := -O2 -g -fno-omit-frame-pointer -std=gnu11 -D_GNU_SOURCE \
	-pthread -Iinclude $(WARN)
BENCH_PROGS  := $(addprefix $(B)/benches/,pairtime malloc_free thread_perf \
	nullfree gitalloc strdup_free seed000-strdup seed000-refcount seed000-grefcount \
	seed000-mutex libfloor.so libfloor-ret.so churn cxxmap exitscan)

$(B)/benches/%: benches/%.c benches/bench.h | $(B)/benches
	$(CC) $(BENCH_CFLAGS) -o $@ $<

$(B)/benches/%: benches/%.cc | $(B)/benches
	$(CXX) -O2 -g -fno-omit-frame-pointer -std=gnu++17 -o $@ $<

$(B)/benches/seed000-%: benches/seed000.c benches/bench.h include/allocspy.h | $(B)/benches
	$(CC) $(BENCH_CFLAGS) -DSEED000_$(shell echo $* | tr a-z A-Z) $(GLIB_CFLAGS) \
		-o $@ $< $(GLIB_LIBS)

# The limit column: a forwarding interposer and nothing else (floor.c);
# limit-ret: the same, looking at each allocation's result.
$(B)/benches/libfloor.so: benches/floor.c | $(B)/benches
	$(CC) $(BENCH_CFLAGS) -fPIC -shared -fvisibility=hidden -o $@ $< -ldl
$(B)/benches/libfloor-ret.so: benches/floor.c | $(B)/benches
	$(CC) $(BENCH_CFLAGS) -DFLOOR_RESULT -fPIC -shared -fvisibility=hidden -o $@ $< -ldl

.PHONY: bench-progs
bench-progs: $(BENCH_PROGS)
bench demo: bench-progs

# --- install ----------------------------------------------------------------
install: install-lib install-bin install-headers install-man install-pc

install-lib: $(LIB)
	install -d $(DESTDIR)$(LIBDIR)
	install -m 755 $(LIB) $(DESTDIR)$(LIBDIR)/liballocspy.so

install-bin: $(REPORT) $(B)/allocspy.installed
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 $(B)/allocspy.installed $(DESTDIR)$(BINDIR)/allocspy
	install -m 755 $(REPORT) $(DESTDIR)$(BINDIR)/allocspy-report

install-headers:
	install -d $(DESTDIR)$(INCDIR)
	install -m 644 include/allocspy.h $(DESTDIR)$(INCDIR)/allocspy.h

# The pages name the default paths (/usr/local/lib, /usr/local/include):
# installed, they name the real ones.
MAN_PATHS := sed -e 's|/usr/local/lib/pkgconfig|$(PCDIR)|g; s|/usr/local/lib|$(LIBDIR)|g; s|/usr/local/include|$(INCDIR)|g'

install-man:
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man7
	for p in allocspy.1:man1 allocspy-report.1:man1 allocspy.h.3:man3 liballocspy.7:man7; do \
		$(MAN_PATHS) man/$${p%%:*} >$(DESTDIR)$(MANDIR)/$${p#*:}/$${p%%:*} && \
		chmod 644 $(DESTDIR)$(MANDIR)/$${p#*:}/$${p%%:*} || exit 1; done

install-pc:
	install -d $(DESTDIR)$(PCDIR)
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@INCDIR@|$(INCDIR)|; s|@LIBDIR@|$(LIBDIR)|; s|@VERSION@|$(VERSION)|' \
		allocspy.pc.in > $(DESTDIR)$(PCDIR)/allocspy.pc

lint-man:
	cd man && mandoc -Tlint -Wstyle *.1 *.3 *.7

clean:
	rm -rf $(B)
