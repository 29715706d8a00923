/* rbscope_native_test.c: a C method whose time is in two named native functions, for the --native tests. */
#include <ruby.h>

/* Exported and never inlined: the unwinder must find each by name, the callee above its caller. */
__attribute__((noinline, visibility("default"))) unsigned long rbscope_test_leaf(unsigned long n)
{
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		x += i * i;
	return x;
}

__attribute__((noinline, visibility("default"))) unsigned long rbscope_test_hot(unsigned long n)
{
	unsigned long x = 0;
	for (int k = 0; k < 4; k++)
		x += rbscope_test_leaf(n);
	return x;
}

/* depth frames of itself over rbscope_test_leaf (bench/run's --native cost: a native stack of a known depth). */
__attribute__((noinline, visibility("default"))) unsigned long rbscope_test_deep(int depth, unsigned long n)
{
	if (depth <= 1)
		return rbscope_test_leaf(n);
	unsigned long r = rbscope_test_deep(depth - 1, n);
	__asm__ volatile("" : "+r"(r)); /* opaque: the compiler cannot turn the recursion into a loop */
	return r + (unsigned long)depth;
}

static VALUE deep(VALUE self, VALUE depth, VALUE n)
{
	(void)self;
	return ULONG2NUM(rbscope_test_deep(NUM2INT(depth), NUM2ULONG(n)));
}

/* RbscopeNativeTest.hot(n): the work, holding the GVL. */
static VALUE hot(VALUE self, VALUE n)
{
	(void)self;
	return ULONG2NUM(rbscope_test_hot(NUM2ULONG(n)));
}

void Init_rbscope_native_test(void)
{
	VALUE m = rb_define_module("RbscopeNativeTest");
	rb_define_module_function(m, "hot", hot, 1);
	rb_define_module_function(m, "deep", deep, 2);
}
