/* call.c: calling the agent's Ruby half (Rbscope::Agent) from C, never letting an exception reach the program. */
#include "agent.h"

VALUE agent_module;

struct call_args {
	ID meth;
	int argc;
	const VALUE *argv;
};

static VALUE call_body(VALUE p)
{
	struct call_args *a = (struct call_args *)p;
	return rb_funcallv(agent_module, a->meth, a->argc, a->argv);
}

VALUE agent_call(int *ok, const char *meth, int argc, const VALUE *argv)
{
	struct call_args a = { rb_intern(meth), argc, argv };
	int state = 0;
	VALUE r = rb_protect(call_body, (VALUE)&a, &state);
	*ok = !state;
	if (state)
		rb_set_errinfo(Qnil); /* reported to the client as a failure, never raised into the program */
	return r;
}
