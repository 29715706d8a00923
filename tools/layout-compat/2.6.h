/* 2.6.h: what Ruby 2.6's internal headers need from public headers and config.h that Ruby 2.7's (the donor's) changed. */
/*
 * RUBY_JMP_BUF: 2.6's vm_core.h types rb_jmpbuf_t (rb_thread_t.root_jmpbuf,
 * just before Thread#name) as RUBY_JMP_BUF, which 2.6's configure defined
 * on Linux with gcc as jmp_buf (it used _setjmp there). 2.7's configure
 * defines it no more (it picks __builtin_setjmp, and vm_core.h falls back
 * to void *[5]). This one does change the layout: th_name follows it.
 */
#include <setjmp.h>
#define RUBY_JMP_BUF jmp_buf
/*
 * 2.7's ruby/st.h declares rb_st_copy(st_table *) where 2.6's internal.h
 * declares rb_st_copy(VALUE, st_table *): take st.h's under another name.
 */
#define rb_st_copy rbscope_compat_public_rb_st_copy
#include "ruby/ruby.h"
#include "ruby/st.h"
#undef rb_st_copy
