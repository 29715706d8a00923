/* snapshot.c: `rbscope snapshot`, the stacks of every Ruby thread of a process, now. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../builtin.h"
#include "../lib/err.h"
#include "../output/json.h"
#include "../ruby/target.h"
#include "../ruby/walk.h"

const char usage_snapshot[] =
	"usage: rbscope snapshot -p PID [--json]\n"
	"\n"
	"Print the stack of every Ruby thread of PID without stopping it: thread name, kernel tid,\n"
	"state, and each frame as `label (path:line)` with the line executing now.\n"
	"\n"
	"  -p, --pid PID            the Ruby process\n"
	"      --json               one JSON object instead of text\n"
	"      --ruby-version X.Y.Z read it with that release's layout, whatever it says it runs\n";

#define SNAPSHOT_ATTEMPTS 50

static const char *kind_name(uint32_t kind)
{
	return kind == FRAME_CFUNC ? "cfunc" : kind == FRAME_TRUNCATED ? "truncated" : "ruby";
}

static void print_text(struct ruby_target *t, const struct ruby_sample *s)
{
	printf("Process %d: ruby %s\n", (int)t->pid, t->description[0] ? t->description : t->version);
	for (int i = 0; i < s->nthreads; i++) {
		const struct ruby_thread_sample *th = &s->threads[i];
		const char *name = th->name ? strtab_get(&t->strs, th->name) : th->main ? "main" : "";
		printf("\nThread %d%s%s%s tid=%d %s (kernel: %c)\n", i + 1, *name ? " \"" : "", name, *name ? "\"" : "",
		       th->tid, ruby_thread_state_name(th->state), th->kstate);
		for (int j = 0; j < th->nframes; j++) {
			const struct ruby_frame *f = &th->frames[j];
			if (f->kind == FRAME_TRUNCATED) {
				printf("    (older frames not shown)\n");
				continue;
			}
			printf("    %s (%s:%d)\n", strtab_get(&t->strs, f->name),
			       f->path ? strtab_get(&t->strs, f->path) : "?", f->line);
		}
	}
	if (s->torn)
		printf("\n(%u thread(s) changed too fast to read consistently)\n", s->torn);
}

static void print_json(struct ruby_target *t, const struct ruby_sample *s)
{
	printf("{\"pid\":%d,\"ruby_version\":", (int)t->pid);
	json_write_string(stdout, t->version);
	printf(",\"torn\":%u,\"threads\":[", s->torn);
	for (int i = 0; i < s->nthreads; i++) {
		const struct ruby_thread_sample *th = &s->threads[i];
		printf("%s{\"name\":", i ? "," : "");
		json_write_string(stdout, th->name ? strtab_get(&t->strs, th->name) : th->main ? "main" : "");
		printf(",\"tid\":%d,\"main\":%s,\"state\":\"%s\",\"kernel_state\":\"%c\",\"frames\":[", th->tid,
		       th->main ? "true" : "false", ruby_thread_state_name(th->state), th->kstate);
		for (int j = 0; j < th->nframes; j++) {
			const struct ruby_frame *f = &th->frames[j];
			printf("%s{\"name\":", j ? "," : "");
			json_write_string(stdout, strtab_get(&t->strs, f->name));
			printf(",\"path\":");
			json_write_string(stdout, strtab_get(&t->strs, f->path));
			printf(",\"line\":%d,\"kind\":\"%s\"}", f->line, kind_name(f->kind));
		}
		printf("]}");
	}
	printf("]}\n");
}

int cmd_snapshot(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "ruby-version", required_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int pid = 0, json = 0, c, rc;
	while ((c = getopt_long(argc, argv, "p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((rc = parse_pid(optarg, &pid)))
				return rc;
			break;
		case 'j': json = 1; break;
		case 'V': builtin_attach.version = optarg; break;
		case 'h': fputs(usage_snapshot, stdout); return EXIT_OK;
		default: fputs(usage_snapshot, stderr); return EXIT_USAGE;
		}
	}
	if (!pid || optind < argc) {
		fputs(usage_snapshot, stderr);
		return EXIT_USAGE;
	}
	struct ruby_target t;
	if ((rc = attach_or_report(&t, pid)))
		return rc;
	struct ruby_sample *s = malloc(sizeof(*s));
	/* A busy thread's stack moves under the read now and then: try again until every thread reads cleanly. */
	int err = s ? ERR_TORN : -ENOMEM;
	for (int attempt = 0; attempt < SNAPSHOT_ATTEMPTS && (err == ERR_TORN || (!err && (s->torn || s->salvaged))); attempt++)
		err = ruby_sample_take(&t, s, WALK_KSTATE);
	if (err) {
		rc = err_report(err, "cannot read the threads of process %d", pid);
	} else {
		if (json)
			print_json(&t, s);
		else
			print_text(&t, s);
		rc = fflush(stdout) ? err_report(-errno, "cannot write the snapshot") : EXIT_OK;
	}
	free(s);
	ruby_target_detach(&t);
	return rc;
}
