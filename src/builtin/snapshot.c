/* snapshot.c: `rbscope snapshot`, the stacks of every Ruby thread of a process, now. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../builtin.h"
#include "../lib/err.h"
#include "../lib/json.h"
#include "../proc/core.h"
#include "../proc/task.h"
#include "../ruby/jit.h"
#include "../ruby/layout.h"
#include "../ruby/locals.h"
#include "../ruby/target.h"
#include "../ruby/walk.h"

#define SNAPSHOT_ATTEMPTS 50

static const char *kind_name(uint32_t kind)
{
	return kind == FRAME_CFUNC ? "cfunc" : kind == FRAME_TRUNCATED ? "truncated" : kind == FRAME_WAIT ? "wait"
		: kind == FRAME_GC ? "gc" : kind == FRAME_NATIVE ? "native" : "ruby";
}

/* " in read", " without the GVL" (on a CPU or ready for one), or "" when the system call is unknown. */
static const char *syscall_text(const struct ruby_thread_sample *th, char *buf, size_t cap)
{
	const char *name = th->syscall >= 0 ? task_syscall_name(th->syscall) : NULL;
	if (th->syscall == TASK_ON_CPU || th->syscall == TASK_NO_SYSCALL)
		return " without the GVL";
	if (name)
		snprintf(buf, cap, " in %s", name);
	else if (th->syscall >= 0)
		snprintf(buf, cap, " in system call %d", th->syscall);
	else
		return "";
	return buf;
}

/* --locals, text: `name = value` lines under a frame or thread (indent), or why they could not be read. */
static void text_locals(struct ruby_target *t, const struct ruby_locals *l, int err, const char *indent,
			const char *before, const char *after)
{
	if (err) {
		printf("%s(variables unreadable: %s)\n", indent, err_message(err));
		return;
	}
	for (int i = 0; i < l->n; i++)
		printf("%s%s%s%s = %s\n", indent, before, strtab_get(&t->strs, l->v[i].name), after, l->v[i].value.text);
	if (l->more)
		printf("%s(%d more not shown)\n", indent, l->more);
}

static void text_frame_locals(struct ruby_target *t, const struct ruby_frame *f, const struct ruby_frame_at *at)
{
	if (f->kind != FRAME_RUBY && f->kind != FRAME_CFUNC && f->kind != FRAME_WAIT)
		return;
	struct ruby_shown self;
	if (!ruby_value_show(t, at->self, &self))
		printf("        self = %s\n", self.text);
	ruby_shown_free(&self);
	struct ruby_locals l;
	int err = ruby_frame_locals(t, at, &l);
	text_locals(t, &l, err, "        ", "", "");
	ruby_locals_free(&l);
}

static void print_text(struct ruby_target *t, const struct ruby_sample *s)
{
	printf("%s %d: ruby %s\n", t->core ? "Core of process" : "Process", (int)t->pid,
	       t->description[0] ? t->description : t->version);
	const char *jit = ruby_jit_on(t);
	if (jit)
		printf("%s on: a frame running JIT code shows its line as ?\n", jit);
	if (s->at && !ruby_thread_variables_read(t))
		printf("Thread variables (thread_variable_get) are not read on this Ruby: its table of them is not known\n");
	for (int i = 0; i < s->nthreads; i++) {
		const struct ruby_thread_sample *th = &s->threads[i];
		const char *name = th->name ? strtab_get(&t->strs, th->name) : th->main ? "main" : "";
		char call[64];
		char tid[48];
		if (th->shared && th->tid) /* an M:N thread: on the native thread it runs on now, or none */
			snprintf(tid, sizeof(tid), "tid=%d M:N", th->tid);
		else if (th->shared)
			snprintf(tid, sizeof(tid), "tid=- M:N on no native thread");
		else
			snprintf(tid, sizeof(tid), "tid=%d", th->tid);
		char ractor[160] = "";
		if (th->ractor) /* a thread of another Ractor than the main one */
			snprintf(ractor, sizeof(ractor), " (Ractor %u%s%s%s)", th->ractor, th->ractor_name ? " \"" : "",
				 th->ractor_name ? strtab_get(&t->strs, th->ractor_name) : "", th->ractor_name ? "\"" : "");
		printf("\nThread %d%s%s%s%s %s %s%s (kernel: %c)\n", i + 1, *name ? " \"" : "", name, *name ? "\"" : "",
		       ractor, tid, ruby_thread_state_name(th->state), syscall_text(th, call, sizeof(call)), th->kstate);
		if (th->unreadable)
			printf("    (its frames read as zeros: %s)\n", t->core ? "the core does not hold them" : "unreadable");
		if (th->unstarted)
			printf("    (not started yet: no frames)\n");
		else if (!th->nframes && !th->unreadable)
			printf("    (no Ruby frames)\n");
		if (s->at) {
			struct ruby_locals l;
			int err = ruby_fiber_locals(t, th->th, &l);
			text_locals(t, &l, err, "    ", "Thread.current[:", "]");
			ruby_locals_free(&l);
			if (ruby_thread_variables_read(t)) {
				err = ruby_thread_variables(t, th->th, &l);
				text_locals(t, &l, err, "    ", "thread_variable_get(:", ")");
				ruby_locals_free(&l);
			}
		}
		for (int j = 0; j < th->nframes; j++) {
			const struct ruby_frame *f = &th->frames[j];
			if (f->kind == FRAME_TRUNCATED) {
				printf("    (older frames not shown)\n");
				continue;
			}
			if (f->kind == FRAME_NATIVE)
				printf("    %s [native, %s]\n", strtab_get(&t->strs, f->name), strtab_get(&t->strs, f->path));
			else if (f->kind == FRAME_GC || !f->path) /* the GC has no place in the source */
				printf("    %s\n", strtab_get(&t->strs, f->name));
			else if (f->line == FRAME_LINE_UNKNOWN)
				printf("    %s (%s:?)\n", strtab_get(&t->strs, f->name), strtab_get(&t->strs, f->path));
			else
				printf("    %s (%s:%d)\n", strtab_get(&t->strs, f->name), strtab_get(&t->strs, f->path),
				       f->line);
			if (s->at)
				text_frame_locals(t, f, &s->at[&th->frames[j] - s->frames]);
		}
	}
	if (s->torn)
		printf("\n(%u thread(s) changed too fast to read consistently)\n", s->torn);
}

static void json_shown(struct ruby_target *t, const struct ruby_shown *v)
{
	printf("\"value\":");
	json_write_string(stdout, v->text);
	printf(",\"class\":");
	json_write_string(stdout, v->cls ? strtab_get(&t->strs, v->cls) : "");
	if (v->encoding) {
		printf(",\"encoding\":");
		json_write_string(stdout, v->encoding);
	}
	printf(",\"simple\":%s%s", v->simple ? "true" : "false", v->torn ? ",\"torn\":true" : "");
}

/* --locals, JSON: "key":[{"name":..,"value":..,"class":..},...] (and key_more, or key_error), after sep. */
static void json_locals(struct ruby_target *t, const char *sep, const char *key, const struct ruby_locals *l, int err)
{
	if (err) {
		printf("%s\"%s_error\":", sep, key);
		json_write_string(stdout, err_message(err));
		return;
	}
	printf("%s\"%s\":[", sep, key);
	for (int i = 0; i < l->n; i++) {
		printf("%s{\"name\":", i ? "," : "");
		json_write_string(stdout, strtab_get(&t->strs, l->v[i].name));
		printf(",%s", l->v[i].arg ? "\"arg\":true," : "");
		json_shown(t, &l->v[i].value);
		printf("}");
	}
	printf("]");
	if (l->more)
		printf(",\"%s_more\":%d", key, l->more);
}

static void json_frame_locals(struct ruby_target *t, const struct ruby_frame *f, const struct ruby_frame_at *at)
{
	if (f->kind != FRAME_RUBY && f->kind != FRAME_CFUNC && f->kind != FRAME_WAIT)
		return;
	struct ruby_shown self;
	if (!ruby_value_show(t, at->self, &self)) {
		printf(",\"self\":{");
		json_shown(t, &self);
		printf("}");
	}
	ruby_shown_free(&self);
	struct ruby_locals l;
	int err = ruby_frame_locals(t, at, &l);
	json_locals(t, ",", "locals", &l, err);
	ruby_locals_free(&l);
}

static void print_json(struct ruby_target *t, const struct ruby_sample *s)
{
	printf("{\"pid\":%d,\"ruby_version\":", (int)t->pid);
	json_write_string(stdout, t->version);
	const char *jit = ruby_jit_on(t);
	printf(",\"jit\":");
	if (jit) /* (a name from our own table) */
		printf("\"%s\"", jit);
	else
		printf("null");
	printf(",\"torn\":%u,\"threads\":[", s->torn);
	for (int i = 0; i < s->nthreads; i++) {
		const struct ruby_thread_sample *th = &s->threads[i];
		printf("%s{\"name\":", i ? "," : "");
		json_write_string(stdout, th->name ? strtab_get(&t->strs, th->name) : th->main ? "main" : "");
		const char *call = th->syscall >= 0 ? task_syscall_name(th->syscall) : NULL;
		if (th->shared && !th->tid)
			printf(",\"tid\":null");
		else
			printf(",\"tid\":%d", th->tid);
		if (th->shared)
			printf(",\"mn\":true");
		if (th->ractor) {
			printf(",\"ractor\":%u,\"ractor_name\":", th->ractor);
			json_write_string(stdout, th->ractor_name ? strtab_get(&t->strs, th->ractor_name) : "");
		}
		printf(",\"main\":%s,\"state\":\"%s\",\"kernel_state\":\"%c\",", th->main ? "true" : "false",
		       ruby_thread_state_name(th->state), th->kstate);
		if (call) /* a name from our own table: nothing to escape */
			printf("\"syscall\":\"%s\",", call);
		if (s->at) {
			struct ruby_locals l;
			int err = ruby_fiber_locals(t, th->th, &l);
			json_locals(t, "", "fiber_locals", &l, err);
			ruby_locals_free(&l);
			err = ruby_thread_variables(t, th->th, &l);
			json_locals(t, ",", "thread_variables", &l, err);
			ruby_locals_free(&l);
			printf(",");
		}
		printf("%s%s\"frames\":[", th->unreadable ? "\"unreadable\":true," : "", th->unstarted ? "\"unstarted\":true," : "");
		for (int j = 0; j < th->nframes; j++) {
			const struct ruby_frame *f = &th->frames[j];
			printf("%s{\"name\":", j ? "," : "");
			json_write_string(stdout, strtab_get(&t->strs, f->name));
			printf(",\"path\":");
			json_write_string(stdout, strtab_get(&t->strs, f->path));
			if (f->line == FRAME_LINE_UNKNOWN) /* (running JIT code: the line is not known) */
				printf(",\"line\":null,\"kind\":\"%s\"", kind_name(f->kind));
			else
				printf(",\"line\":%d,\"kind\":\"%s\"", f->line, kind_name(f->kind));
			if (s->at)
				json_frame_locals(t, f, &s->at[f - s->frames]);
			printf("}");
		}
		printf("]}");
	}
	printf("]}\n");
}

int cmd_snapshot(int argc, char **argv)
{
	int pid = 0, json = 0, native = 0, locals = 0, first, rc;
	const char *core_path = NULL, *sysroot = NULL;
	const struct opt opts[] = {
		OPT_PID(&pid, "the Ruby process"),
		OPT_STRING(0, "core", &core_path, "CORE", "read the process from a core file instead"),
		OPT_STRING(0, "sysroot", &sysroot, "DIR",
			   "where the core's mapped files are (default /; a container's or\n"
			   "chroot's root): what the core left out is read from them"),
		OPT_FLAG(0, "json", &json, "one JSON object instead of text"),
		OPT_FLAG(0, "locals", &locals,
			 "also each frame's self, arguments and local variables (`name = value`,\n"
			 "read as they are now) and each thread's fiber-locals (Thread#[])"),
		OPT_FLAG(0, "native", &native,
			 "also the native functions the innermost C method called (libc, libz,\n"
			 "extensions), unwound with their call-frame information; a thread on a CPU\n"
			 "is stopped (ptrace) while it is unwound"),
		BUILTIN_OPT_RUBY_VERSION,
		OPT_END(),
	};
	const struct opt_cmd cmd = {
		.usage = "rbscope snapshot (-p PID | --core CORE [--sysroot DIR]) [--json] [--locals] [--native]",
		.about = "Print the stack of every Ruby thread of PID without stopping it: thread name, kernel tid,\n"
			 "state, and each frame as `label (path:line)` with the line executing now. With --core, the\n"
			 "same from an ELF core file (gdb's gcore, the kernel, `coredumpctl dump`).",
		.opts = opts,
	};
	if (builtin_parse(&cmd, argc, argv, &first, &rc))
		return rc;
	if ((rc = builtin_no_args(argc, argv, first)))
		return rc;
	if (native && core_path)
		return error("--native reads a live thread's registers: not from a core"), EXIT_USAGE;
	if (!pid == !core_path)
		return error("give either -p PID or --core CORE"), EXIT_USAGE;
	if (sysroot && !core_path)
		return error("--sysroot goes with --core CORE"), EXIT_USAGE;
	struct ruby_target t;
	struct core core;
	if ((rc = core_path ? builtin_open_core(&core, &t, core_path, sysroot) : builtin_attach(&t, pid)))
		return rc;
	struct ruby_sample *s = malloc(sizeof(*s));
	if (s)
		s->at = locals ? calloc(WALK_MAX_TOTAL, sizeof(*s->at)) : NULL;
	if (s && locals && !s->at) {
		free(s);
		s = NULL;
	}
	/* A busy thread's stack moves under the read now and then: try again until every thread reads cleanly. */
	int err = s ? ERR_TORN : -ENOMEM;
	/* Again while a thread changed under the read (or, with --native, during its unwind: the first read, with
	   every cache cold, is the slowest), up to SNAPSHOT_ATTEMPTS times. */
	for (int attempt = 0;
	     attempt < SNAPSHOT_ATTEMPTS && (err == ERR_TORN || (!err && (s->torn || s->salvaged || s->native_moved)));
	     attempt++)
		err = ruby_sample_take(&t, s, (core_path ? 0 : WALK_KSTATE | WALK_SYSCALL | (native ? WALK_NATIVE : 0)) |
						      (locals ? WALK_LOCALS : 0));
	if (err) {
		rc = core_path ? err_report(err, "cannot read the threads in core '%s'", core_path)
			       : err_report(err, "cannot read the threads of process %d", pid);
	} else {
		if (json)
			print_json(&t, s);
		else
			print_text(&t, s);
		rc = fflush(stdout) ? err_report(-errno, "cannot write the snapshot") : EXIT_OK;
		if (!core_path)
			builtin_hint_children(pid, "`rbscope snapshot -p CHILD` reads each");
	}
	if (s)
		free(s->at);
	free(s);
	ruby_target_detach(&t);
	if (core_path)
		core_close(&core);
	return rc;
}
