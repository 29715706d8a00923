/* 3.2.h: what Ruby 3.2's internal headers need from public headers that Ruby 3.3's (the donor's) dropped. */
/*
 * Symbol export markers for the old MJIT, which 3.3 removed from
 * include/ruby/internal/dllexport.h: they decide visibility, not layout.
 */
#define MJIT_FUNC_EXPORTED RUBY_FUNC_EXPORTED
#define MJIT_SYMBOL_EXPORT_BEGIN RUBY_SYMBOL_EXPORT_BEGIN
#define MJIT_SYMBOL_EXPORT_END RUBY_SYMBOL_EXPORT_END
#define MJIT_STATIC
/* The transient heap, which 3.3 removed: 3.2's internal/array.h reads arrays through it (same RArray layout). */
#define RARRAY_CONST_PTR_TRANSIENT RARRAY_CONST_PTR
#define USE_RVARGC 1 /* 3.2 turned variable width allocation on by default (include/ruby/internal/config.h); 3.3 dropped the switch */
