/* 4.0.h: what Ruby 4.0's internal headers need from public headers that Ruby 3.4's (the donor's) lack. */
/*
 * None of these is a struct the walker reads (RBasic, RString, RArray and
 * the special constants are the same in 3.4 and 4.0; tools/check-cores
 * reads a real 4.0 process's strings, arrays and classes through them).
 * - atomics: 4.0 gave rbimpl_atomic_load a memory order argument (used in
 *   inline function bodies only);
 * - RObject: 4.0 renamed the heap ivar pointer 'fields' and its flag
 *   ROBJECT_HEAP (used in static assertions only).
 */
#include "ruby/ruby.h"
#include "ruby/atomic.h"
#define RBIMPL_ATOMIC_RELAXED 0
#define rbimpl_atomic_load(ptr, ...) rbimpl_atomic_load(ptr)
#define ROBJECT_HEAP RUBY_FL_USER4 /* as internal/imemo.h asserts: IMEMO_FL_USER0 */
#define fields ivptr
