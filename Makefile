# rbscope: a non-recursive Makefile. `make`, `make test`, `make asan`, `make bench`, `make demo`.
CC ?= cc
PREFIX ?= /usr/local
BUILD ?= build
CFLAGS ?= -O2 -g
# One version for the CLI and the gem.
VERSION := $(shell sed -n 's/.*VERSION = "\(.*\)"/\1/p' lib/rbscope/version.rb)
# Always on, whatever CFLAGS is given (make asan overrides CFLAGS on the command line).
WARN_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -MMD -MP -DRBSCOPE_VERSION='"$(VERSION)"'
LDLIBS = -lbpf -ldw -lelf -lz -lm -pthread

# The library (everything but the command line) is what unit tests link against.
LIB_SRC := $(wildcard src/lib/*.c src/proc/*.c src/elf/*.c src/ruby/*.c src/ruby/layouts/*.c \
	src/profile/*.c src/output/*.c src/alloc/*.c src/serve/*.c src/heap/*.c src/agent/*.c src/inject/*.c)
CMD_SRC := $(wildcard src/builtin/*.c) src/rbscope.c
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/src/ruby/capture_obj.o $(BUILD)/src/inject/agents_obj.o
CMD_OBJ := $(CMD_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

# The integration tests run without this make's flags in their environment: they build the gem
# with `gem install`, whose make must not take an ASan build's CFLAGS.
TEST_ENV = env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL SUITE="$(SUITE)" RBSCOPE=$(abspath $(BUILD)/rbscope) RBSCOPE_EXT=$(abspath $(BUILD)/ext)

# One self-contained binary for any x86-64 Linux (`make static`): glibc, libbpf, libdw, libelf, zlib, liblzma and
# libbz2 linked in from their Debian -dev packages' archives; src/static/glibc.c keeps it from loading shared libraries.
# It carries the agent for every Ruby ABI scripts/agents --debian builds (Debian's 2.7, 3.1, 3.3 and 3.4, each in a
# chroot of its release), which --inject places in a process that has no gem.
STATIC_LDLIBS = -lbpf -ldw -lelf -lz -llzma -lbz2 -lm -pthread
STATIC_BIN := $(BUILD)/static/rbscope
AGENT_FILES = $(EXT_DEPS) lib/rbscope.rb $(wildcard lib/rbscope/*.rb) scripts/agents

# The gem's extension, built with mkmf for the host's Ruby; tests load it with -I lib -I $(BUILD)/ext.
EXT_DEPS := $(wildcard ext/rbscope/*.c ext/rbscope/*.h) ext/rbscope/extconf.rb src/agent/proto.c src/agent/proto.h \
	src/agent/ring.h src/agent/hist.h
EXT_SO := $(BUILD)/ext/rbscope/rbscope.so

# The code --inject places in a Ruby process (src/inject/boot/boot.c): freestanding, position-independent, one .text
# with no relocations (scripts/blob-header checks), as bytes in a header. Never built with the sanitizers.
BOOT_CFLAGS := -O2 -fPIC -ffreestanding -fno-builtin -nostdlib -fno-stack-protector -fno-asynchronous-unwind-tables \
	-fno-unwind-tables -fno-jump-tables -fno-reorder-blocks-and-partition -fno-reorder-functions -fcf-protection=none \
	-std=c11 -Wall -Wextra

.PHONY: all build-deps deps test unit integration asan fuzz bench demo install gem clean check-cores static deb
all: build-deps $(BUILD)/rbscope $(EXT_SO)

# Install missing Debian packages (a no-op when all are there). RBSCOPE_NO_DEPS=1 skips it.
# Building needs a compiler and the libraries it links (build-deps); tests, benchmarks and the demo the
# tools they check with (deps).
build-deps:
	@[ -n "$(RBSCOPE_NO_DEPS)" ] || scripts/deps build
deps:
	@[ -n "$(RBSCOPE_NO_DEPS)" ] || scripts/deps

$(BUILD)/rbscope: $(LIB_OBJ) $(CMD_OBJ)
	$(CC) $(CFLAGS) $(WARN_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

static: $(STATIC_BIN)
$(STATIC_BIN): $(filter-out %/agents_obj.o,$(LIB_OBJ)) $(CMD_OBJ) $(BUILD)/static/agents_obj.o $(BUILD)/src/static/glibc.o
	@mkdir -p $(dir $@)
	@for a in libbpf.a libdw.a libelf.a libz.a liblzma.a libbz2.a libc.a; do \
		[ "$$($(CC) -print-file-name=$$a)" != $$a ] || { echo "make static: no $$a: it links the static archives of" \
		"libbpf-dev libdw-dev libelf-dev zlib1g-dev liblzma-dev libbz2-dev libc6-dev (scripts/deps static installs them)" >&2; exit 1; }; done
	$(CC) -static $(CFLAGS) $(LDFLAGS) -o $@ $^ $(STATIC_LDLIBS) 2>$@.log || { cat $@.log >&2; exit 1; }
	@# glibc warns that getaddrinfo would load NSS modules: names in /etc/hosts and DNS resolve without them
	@grep -v "getaddrinfo\|requires at runtime the shared libraries\|in function" $@.log >&2 || true

# The Debian package: the static binary, the manual pages, the tracers (scripts/deb).
DEB := $(BUILD)/rbscope_$(VERSION)_amd64.deb
deb: $(DEB)
$(DEB): $(STATIC_BIN) $(wildcard docs/man/*.1 tracers/*.tracer) lib/rbscope/preload.rb LICENSE scripts/deb
	scripts/deb $(STATIC_BIN) $(VERSION) $@

$(EXT_SO): $(EXT_DEPS)
	@mkdir -p $(BUILD)/ext/rbscope
	@# mkmf's own flags: not the ones given to this make (an ASan build must not reach an extension Ruby loads)
	cd $(BUILD)/ext && ruby $(abspath ext/rbscope/extconf.rb) >/dev/null && \
		env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s >/dev/null && cp rbscope.so rbscope/

# The gem itself (offline: nothing but Debian's ruby and ruby-dev).
gem: all
	gem build rbscope.gemspec --output $(BUILD)/rbscope-$(VERSION).gem

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN_CFLAGS) $(CPPFLAGS) -c -o $@ $<

$(BUILD)/boot_blob.h: src/inject/boot/boot.c src/inject/boot.h scripts/blob-header
	@mkdir -p $(BUILD)/boot
	$(CC) $(BOOT_CFLAGS) -c -o $(BUILD)/boot/boot.o src/inject/boot/boot.c
	scripts/blob-header $(BUILD)/boot/boot.o boot_entry >$@.tmp && mv $@.tmp $@

$(BUILD)/src/inject/inject.o: $(BUILD)/boot_blob.h
$(BUILD)/src/inject/inject.o: CPPFLAGS += -I$(BUILD)

# The BPF program that samples a thread on its own CPU (src/ruby/capture.c), compiled by clang and placed in the
# binary as bytes (capture_obj.S). -g: libbpf reads its maps from the BTF.
BPF_CC ?= clang
$(BUILD)/capture.bpf.o: src/ruby/bpf/capture.bpf.c src/ruby/bpf/capture_rec.h
	@mkdir -p $(BUILD)
	$(BPF_CC) -O2 -g -target bpf -I/usr/include/$(shell $(CC) -dumpmachine) -Wall -Wextra -c -o $@ $<

$(BUILD)/src/ruby/capture_obj.o: src/ruby/capture_obj.S $(BUILD)/capture.bpf.o
	@mkdir -p $(dir $@)
	$(CC) -c -DCAPTURE_OBJ='"$(BUILD)/capture.bpf.o"' -o $@ $<

# The agents --inject places where no gem is installed (src/inject/agents.c): none in the plain build (`make install`
# puts them beside the binary instead), every Debian Ruby's in the static one.
$(BUILD)/agents.bundle: scripts/agent-bundle
	@mkdir -p $(BUILD)
	scripts/agent-bundle "" $@
$(BUILD)/agents/.built: $(AGENT_FILES)
	rm -rf $(BUILD)/agents && scripts/agents $(BUILD)/agents && touch $@
$(BUILD)/static/agents.bundle: $(BUILD)/agents/.built scripts/agent-bundle
	@[ -n "$(RBSCOPE_NO_DEPS)" ] || scripts/deps static
	@mkdir -p $(BUILD)/static
	scripts/agents --debian $(BUILD)/agents
	scripts/agent-bundle $(BUILD)/agents $@
$(BUILD)/src/inject/agents_obj.o: src/inject/agents_obj.S $(BUILD)/agents.bundle
	@mkdir -p $(dir $@)
	$(CC) -c -DAGENTS_BUNDLE='"$(BUILD)/agents.bundle"' -o $@ $<
$(BUILD)/static/agents_obj.o: src/inject/agents_obj.S $(BUILD)/static/agents.bundle
	$(CC) -c -DAGENTS_BUNDLE='"$(BUILD)/static/agents.bundle"' -o $@ $<

$(BUILD)/syscall_names.h: scripts/syscall-names
	@mkdir -p $(BUILD)
	scripts/syscall-names "$(CC)" >$@.tmp && mv $@.tmp $@

$(BUILD)/src/proc/task.o: $(BUILD)/syscall_names.h
$(BUILD)/src/proc/task.o: CPPFLAGS += -I$(BUILD)

$(BUILD)/tests/%: tests/unit/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN_CFLAGS) -Isrc -o $@ $< $(LIB_OBJ) $(LDLIBS) -lcmocka

# The USDT object writer lives in the gem's extension (pure C): its test compiles it in.
$(BUILD)/tests/test_usdt: tests/unit/test_usdt.c ext/rbscope/usdt_elf.c ext/rbscope/usdt_elf.h $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN_CFLAGS) -Isrc -Iext/rbscope -o $@ $< ext/rbscope/usdt_elf.c $(LIB_OBJ) $(LDLIBS) -lcmocka

unit: deps all $(UNIT_BIN)
	@tests/run-unit $(UNIT_BIN)

integration: deps all
	@$(TEST_ENV) tests/integration/run

# Everything; SUITE=functional|accuracy, or docs|spy|heap|agent|usdt|formats|serve (or record, states, native, cores,
# locals, diff, apps, labels) runs that integration suite alone.
test: deps all $(UNIT_BIN)
	@if [ -z "$(SUITE)" ]; then tests/check-includes && tests/run-unit $(UNIT_BIN) && \
		if command -v $(FUZZ_CC) >/dev/null; then $(MAKE) --no-print-directory -s fuzz && \
		tests/fuzz/run $(BUILD)/fuzz/fuzz_heap $(FUZZ_SECONDS); else echo "fuzz: skipped, no $(FUZZ_CC)"; fi; fi
	@$(TEST_ENV) tests/integration/run

# The same tests against an ASan+UBSan build.
asan: deps
	@# build/asan/rbscope does not sit beside tracers/ as build/rbscope does: say where they are
	RBSCOPE_TRACERS=$(abspath tracers) $(MAKE) RBSCOPE_NO_DEPS=1 BUILD=build/asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" test

# libFuzzer on the heap-dump reader and analyses (Debian: clang, libclang-rt-dev); make test runs it briefly.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 20
FUZZ_SRC := tests/fuzz/fuzz_heap.c $(wildcard src/heap/*.c src/lib/*.c)
fuzz: $(BUILD)/fuzz/fuzz_heap
$(BUILD)/fuzz/fuzz_heap: $(FUZZ_SRC) $(wildcard src/heap/*.h src/lib/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -std=c11 -D_GNU_SOURCE \
		-Wall -Wextra -Isrc -o $@ $(FUZZ_SRC) -lz

# The binary by its absolute path too, as scripts name it.
$(abspath $(BUILD))/rbscope: $(BUILD)/rbscope

bench: deps all
	bench/run

# Public core dumps of Rubies no binary here runs (tests/cores/README.md): CORES=rbspy-testdata's data/ folder.
check-cores: all
	@[ -n "$(CORES)" ] || { echo "usage: make check-cores CORES=DIR (rbspy-testdata's data/)" >&2; exit 2; }
	tools/check-cores $(CORES)

demo: deps all
	@scripts/demo $(BUILD)/rbscope

# With the agent for every Ruby on this machine scripts/agents can build one for (--inject's, where no gem is).
install: all $(BUILD)/agents/.built
	install -D -m 0755 $(BUILD)/rbscope $(DESTDIR)$(PREFIX)/bin/rbscope
	rm -rf $(DESTDIR)$(PREFIX)/lib/rbscope/agents && install -d $(DESTDIR)$(PREFIX)/lib/rbscope/agents
	cp -r $(BUILD)/agents/[0-9]* $(DESTDIR)$(PREFIX)/lib/rbscope/agents/
	install -d $(DESTDIR)$(PREFIX)/share/rbscope/tracers
	install -m 0644 tracers/*.tracer $(DESTDIR)$(PREFIX)/share/rbscope/tracers/
	install -m 0644 lib/rbscope/preload.rb $(DESTDIR)$(PREFIX)/share/rbscope/preload.rb
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 docs/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d) $(UNIT_BIN:=.d)
