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
}
