# rbscope: a non-recursive Makefile. `make`, `make test`, `make asan`, `make bench`, `make demo`.
CC ?= cc
PREFIX ?= /usr/local
BUILD ?= build
CFLAGS ?= -O2 -g
# Always on, whatever CFLAGS is given (make asan overrides CFLAGS on the command line).
WARN_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -MMD -MP
LDLIBS = -ldw -lelf -lz

# The library (everything but the command line) is what unit tests link against.
LIB_SRC := $(wildcard src/lib/*.c src/proc/*.c src/elf/*.c src/ruby/*.c src/ruby/layouts/*.c \
	src/profile/*.c src/output/*.c src/heap/*.c)
CMD_SRC := $(wildcard src/builtin/*.c) src/rbscope.c
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CMD_OBJ := $(CMD_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all deps test unit integration asan bench demo install clean
all: deps $(BUILD)/rbscope

# Install missing Debian packages (a no-op when all are there). RBSCOPE_NO_DEPS=1 skips it.
deps:
	@[ -n "$(RBSCOPE_NO_DEPS)" ] || scripts/deps

$(BUILD)/rbscope: $(LIB_OBJ) $(CMD_OBJ)
	$(CC) $(CFLAGS) $(WARN_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN_CFLAGS) $(CPPFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN_CFLAGS) -Isrc -o $@ $< $(LIB_OBJ) $(LDLIBS) -lcmocka

unit: all $(UNIT_BIN)
	@tests/run-unit $(UNIT_BIN)

integration: all
	@RBSCOPE=$(abspath $(BUILD)/rbscope) tests/integration/run

test: all $(UNIT_BIN)
	@tests/run-unit $(UNIT_BIN)
	@RBSCOPE=$(abspath $(BUILD)/rbscope) tests/integration/run

# The same tests against an ASan+UBSan build.
asan: deps
	$(MAKE) RBSCOPE_NO_DEPS=1 BUILD=build/asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" test

bench: all
	bench/run

demo: all
	@scripts/demo $(BUILD)/rbscope

install: all
	install -D -m 0755 $(BUILD)/rbscope $(DESTDIR)$(PREFIX)/bin/rbscope

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d) $(UNIT_BIN:=.d)
