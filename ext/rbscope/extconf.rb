# extconf.rb: builds the rbscope agent extension with mkmf; the protocol sources are shared with the CLI (src/agent).
require "mkmf"

shared = File.expand_path("../../src/agent", __dir__)
abort "rbscope: #{shared} is missing" unless File.exist?(File.join(shared, "proto.c"))
$INCFLAGS << " -I#{shared}"
$VPATH << shared
$srcs = %w[rbscope.c call.c channel.c serve.c trace.c alloc.c window.c usdt.c usdt_elf.c proto.c]
$CFLAGS << " -std=gnu11 -Wall -Wextra -Wno-unused-parameter"
# Only Init_rbscope is Ruby's business: hidden symbols are reached directly, not through the GOT (the C-call hook's globals).
$CFLAGS << " -fvisibility=hidden"
$defs << "-D_GNU_SOURCE"
# 3.3+: a postponed job registered once, triggered from the allocation hook (rb_postponed_job_register_one is deprecated there)
have_func("rb_postponed_job_preregister", "ruby/debug.h")
have_library("m", "log")
have_func("memfd_create", "sys/mman.h") or abort "rbscope: memfd_create is needed (Linux 3.17, glibc 2.27)"
have_func("dlinfo", "dlfcn.h") or have_library("dl", "dlinfo", "dlfcn.h") or abort "rbscope: dlopen/dlinfo are needed"
create_makefile("rbscope/rbscope")
