/* rbscope.c: the gem's extension entry point: Rbscope::Agent's native methods, the probes' classes, and the fork handling. */
#include "agent.h"

#include <pthread.h>
#include <unistd.h>

#include <ruby/version.h>

#define STR_(x) #x
#define STR(x) STR_(x)
/*
 * The Ruby this extension was built for, in a section of its own: rbscope's
 * --inject reads it before it writes anything into a process, and refuses
 * one built for another Ruby (src/inject/inject.c). A build for a static Ruby
 * links no libruby, so its DT_NEEDED cannot say.
 */
__attribute__((used, section(".rbscope.ruby"))) static const char built_for[] =
	STR(RUBY_API_VERSION_MAJOR) "." STR(RUBY_API_VERSION_MINOR);

/* Rbscope::Agent.__start(signal) -> socket path; raises with the reason when it cannot listen. */
static VALUE agent_start(VALUE self, VALUE sig)
{
	(void)self;
	if (channel_start(NUM2INT(sig)) < 0)
		rb_raise(rb_eRuntimeError, "%s", channel_error());
	return rb_str_new_cstr(channel_path());
}

static VALUE agent_stop(VALUE self)
{
	(void)self;
	channel_stop();
	return Qnil;
}

static VALUE agent_free_signal(VALUE self)
{
	(void)self;
	int s = channel_free_signal();
	return s < 0 ? Qnil : INT2NUM(s);
}

/* Called from the wake signal's trap: true when the caller must start the serving thread. */
static VALUE agent_claim(VALUE self)
{
	(void)self;
	return channel_claim_serving() ? Qtrue : Qfalse;
}

static VALUE agent_socket_path(VALUE self)
{
	(void)self;
	const char *p = channel_path();
	return p ? rb_str_new_cstr(p) : Qnil;
}

/* In a fork's child, from Ruby (Process._fork): the parent's sessions and hooks are dropped. */
static VALUE agent_after_fork(VALUE self)
{
	(void)self;
	serve_forked();
	return Qnil;
}

static void atfork_child(void)
{
	/* Only what is safe right after fork: stop writing into the parent's rings, close its sockets. */
	tracer_forked();
	allocs_forked();
	usdt_forked();
	channel_forked();
}

__attribute__((visibility("default"))) void Init_rbscope(void)
{
	VALUE mRbscope = rb_define_module("Rbscope");
	agent_module = rb_define_module_under(mRbscope, "Agent");
	rb_define_singleton_method(agent_module, "__start", agent_start, 1);
	rb_define_singleton_method(agent_module, "__stop", agent_stop, 0);
	rb_define_singleton_method(agent_module, "__free_signal", agent_free_signal, 0);
	rb_define_singleton_method(agent_module, "__claim", agent_claim, 0);
	rb_define_singleton_method(agent_module, "__serve", serve_run, 0);
	rb_define_singleton_method(agent_module, "__after_fork", agent_after_fork, 0);
	rb_define_singleton_method(agent_module, "socket_path", agent_socket_path, 0);
	tracer_init();
	allocs_init();
	usdt_init(mRbscope);
	pthread_atfork(NULL, NULL, atfork_child);
}
