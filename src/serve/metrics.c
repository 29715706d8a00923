/* metrics.c: what `rbscope serve` says on /metrics, in Prometheus's text exposition format (version 0.0.4). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/buf.h"
#include "../ruby/vm.h"
#include "serve.h"

/* A label value with \, " and newlines escaped, as the format wants. */
static void add_value(struct buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			buf_addch(b, '\\');
		if (*s == '\n')
			buf_adds(b, "\\n");
		else
			buf_addch(b, *s);
	}
}

static void head(struct buf *b, const char *name, const char *type, const char *help)
{
	buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The labels every per-process series carries. */
static void proc_labels(struct buf *b, const struct proc_entry *e)
{
	buf_addf(b, "pid=\"%d\",command=\"", (int)e->pid);
	add_value(b, e->command);
	buf_adds(b, "\"");
}


enum gc_unit { GC_COUNT, GC_NS, GC_SLOTS };

/*
 * The GC's own counters and its heap's slots, read from each process's VM
 * now: exact, where its layout knows them. Counts, nanoseconds shown as
 * seconds (counters), or a number of heap slots now (gauges).
 */
static const struct gc_metric {
	const char *name, *help;
	size_t field;
	enum gc_unit unit;
} gc_metrics[] = {
	{ "rbscope_ruby_gc_count_total", "Garbage collections since the process started (GC.count), read from the VM.",
	  offsetof(struct ruby_gc_counts, count), GC_COUNT },
	{ "rbscope_ruby_gc_major_count_total", "Major (full) garbage collections since the process started, read from the VM.",
	  offsetof(struct ruby_gc_counts, major), GC_COUNT },
	{ "rbscope_ruby_gc_measured_seconds_total",
	  "Time the VM measured collecting garbage since the process started (GC.stat(:time); Ruby 3.1 and later).",
	  offsetof(struct ruby_gc_counts, time_ns), GC_NS },
	{ "rbscope_ruby_heap_live_slots", "Object slots in use on the Ruby heap (GC.stat(:heap_live_slots)), read from the VM.",
	  offsetof(struct ruby_gc_counts, live_slots), GC_SLOTS },
	{ "rbscope_ruby_heap_free_slots", "Object slots free on the Ruby heap (GC.stat(:heap_free_slots)), read from the VM.",
	  offsetof(struct ruby_gc_counts, free_slots), GC_SLOTS },
};

/* One GC series: each process whose layout has it. */
static void gc_series(struct buf *b, const struct procs *f, const struct ruby_gc_counts *gc, const struct gc_metric *m)
{
	head(b, m->name, m->unit == GC_SLOTS ? "gauge" : "counter", m->help);
	for (int i = 0; i < f->n; i++) {
		uint64_t v;
		if (!(m->unit == GC_NS ? gc[i].have_time : m->unit == GC_SLOTS ? gc[i].have_slots : gc[i].have_count))
			continue;
		memcpy(&v, (const char *)&gc[i] + m->field, sizeof(v));
		buf_addf(b, "%s{", m->name);
		proc_labels(b, f->v[i]);
		if (m->unit == GC_NS)
			buf_addf(b, "} %llu.%09llu\n", (unsigned long long)(v / 1000000000u), (unsigned long long)(v % 1000000000u));
		else
			buf_addf(b, "} %llu\n", (unsigned long long)v);
	}
}

static void gc_counters(struct buf *b, const struct procs *f)
{
	struct ruby_gc_counts *gc = calloc((size_t)f->n + 1, sizeof(*gc));
	if (!gc)
		return;
	for (int i = 0; i < f->n; i++)
		if (f->v[i]->state != PROC_LIVE || ruby_gc_counts(&f->v[i]->t, &gc[i]))
			memset(&gc[i], 0, sizeof(gc[i]));
	for (size_t k = 0; k < sizeof(gc_metrics) / sizeof(gc_metrics[0]); k++)
		gc_series(b, f, gc, &gc_metrics[k]);
	free(gc);
}

/* The last census of each live process (--census): objects and their bytes by type, and the census's own cost. */
static void census_series(struct buf *b, const struct procs *f, const struct serve_counters *c)
{
	if (!c->ncensus)
		return;
	static const struct {
		const char *name, *type, *help;
	} m[] = {
		{ "rbscope_ruby_heap_objects", "gauge",
		  "Objects on the Ruby heap by type, at the last census read from outside (serve --census; as ObjectSpace.count_objects)." },
		{ "rbscope_ruby_heap_object_bytes", "gauge",
		  "Bytes of those objects by type: their slots, and a String's or Array's own buffer." },
		{ "rbscope_ruby_heap_census_seconds", "gauge", "How long the last census of the process took (its sampling waited)." },
		{ "rbscope_ruby_heap_census_timestamp_seconds", "gauge", "When the last census of the process was taken." },
	};
	for (int k = 0; k < 4; k++) {
		head(b, m[k].name, m[k].type, m[k].help);
		for (int j = 0; j < c->ncensus; j++) {
			const struct serve_census *z = &c->census[j];
			const struct proc_entry *e = procs_find(f, z->pid);
			if (!e || e->state != PROC_LIVE)
				continue;
			if (k >= 2) {
				buf_addf(b, "%s{", m[k].name);
				proc_labels(b, e);
				buf_addf(b, "} %.3f\n", k == 2 ? z->seconds : (double)z->at_ns / 1e9);
				continue;
			}
			for (int t = 0; t < SERVE_CENSUS_TYPES; t++) {
				if (!z->count[t] || !z->type_name[t])
					continue;
				buf_addf(b, "%s{", m[k].name);
				proc_labels(b, e);
				buf_addf(b, ",type=\"%s\"} %llu\n", z->type_name[t],
					 (unsigned long long)(k == 0 ? z->count[t] : z->type_bytes[t]));
			}
		}
	}
}

int serve_metrics(struct buf *b, const struct sampling *sm, const struct serve_counters *c)
{
	const struct procs *f = &sm->procs;
	struct sampler_stats st;
	sampling_stats(sm, &st);
	uint64_t samples = 0, fails[PROC_FAILURES] = { 0 };
	int targets[3] = { 0 };
	for (int i = 0; i < f->n; i++) {
		const struct proc_entry *e = f->v[i];
		for (int k = 0; k < PROFILE_STATES; k++)
			samples += e->state_samples[k];
		for (int k = 0; k < PROC_FAILURES; k++)
			fails[k] += e->failures[k];
		targets[e->state]++;
	}
	head(b, "rbscope_samples_total", "counter", "Thread stacks sampled, in all processes.");
	buf_addf(b, "rbscope_samples_total %llu\n", (unsigned long long)samples);
	head(b, "rbscope_stacks_unchanged_total", "counter",
	     "Thread stacks that read as at the sample before, to the byte: named from it, in a short read.");
	buf_addf(b, "rbscope_stacks_unchanged_total %llu\n", (unsigned long long)st.unchanged);
	head(b, "rbscope_reads_left_out_total", "counter",
	     "Process reads left out, every other tick, while all its threads stay parked in the same calls: the next read counts twice.");
	buf_addf(b, "rbscope_reads_left_out_total %llu\n", (unsigned long long)f->left_out);
	head(b, "rbscope_sample_failures_total", "counter",
	     "Process samples that failed: torn (memory changed under the read), read (unreadable), other.");
	static const char *const reason[PROC_FAILURES] = { "torn", "read", "other" };
	for (int k = 0; k < PROC_FAILURES; k++)
		buf_addf(b, "rbscope_sample_failures_total{reason=\"%s\"} %llu\n", reason[k], (unsigned long long)fails[k]);
	head(b, "rbscope_ticks_total", "counter", "Sampling ticks taken.");
	buf_addf(b, "rbscope_ticks_total %llu\n", (unsigned long long)sm->ticks);
	head(b, "rbscope_ticks_dropped_total", "counter", "Sampling ticks skipped because the sampler was behind.");
	buf_addf(b, "rbscope_ticks_dropped_total %llu\n", (unsigned long long)sm->missed);
	head(b, "rbscope_sampling_lag_seconds", "gauge", "How late the last tick started.");
	buf_addf(b, "rbscope_sampling_lag_seconds %.6f\n", (double)sm->lag_ns / 1e9);
	head(b, "rbscope_sampling_lag_max_seconds", "gauge", "The latest a tick started since the last scrape of /metrics.");
	buf_addf(b, "rbscope_sampling_lag_max_seconds %.6f\n", (double)sm->lag_max_ns / 1e9);
	head(b, "rbscope_profile_build_seconds", "gauge", "Time to make the last profile answered (sampling waits meanwhile).");
	buf_addf(b, "rbscope_profile_build_seconds %.6f\n", c->build_s);
	head(b, "rbscope_profile_build_max_seconds", "gauge", "The longest time to make a profile since the last scrape of /metrics.");
	buf_addf(b, "rbscope_profile_build_max_seconds %.6f\n", c->build_max_s);
	head(b, "rbscope_targets", "gauge", "Processes known: live (sampled), gone (exited), failed (not a Ruby it can read).");
	static const char *const tstate[3] = { "live", "gone", "failed" };
	for (int k = 0; k < 3; k++)
		buf_addf(b, "rbscope_targets{state=\"%s\"} %d\n", tstate[k], targets[k]);
	head(b, "rbscope_http_requests_total", "counter", "HTTP requests answered, by status class.");
	static const char *const code[6] = { "2xx", "400", "401", "404", "503", "other" };
	for (int k = 0; k < 6; k++)
		buf_addf(b, "rbscope_http_requests_total{code=\"%s\"} %llu\n", code[k], (unsigned long long)c->requests[k]);
	head(b, "rbscope_pushes_total", "counter", "Profiles pushed (--push), and those that failed.");
	buf_addf(b, "rbscope_pushes_total{result=\"ok\"} %llu\nrbscope_pushes_total{result=\"failed\"} %llu\n",
		 (unsigned long long)c->pushes, (unsigned long long)c->push_failures);
	head(b, "rbscope_cpu_seconds_total", "counter", "CPU time rbscope serve itself has used.");
	buf_addf(b, "rbscope_cpu_seconds_total %.3f\n", c->cpu_s);
	head(b, "rbscope_resident_memory_bytes", "gauge", "rbscope serve's own resident memory.");
	buf_addf(b, "rbscope_resident_memory_bytes %llu\n", (unsigned long long)c->rss_bytes);

	head(b, "rbscope_ruby_info", "gauge", "A Ruby process sampled: its version, container and service name.");
	for (int i = 0; i < f->n; i++) {
		const struct proc_entry *e = f->v[i];
		if (e->state != PROC_LIVE)
			continue;
		buf_adds(b, "rbscope_ruby_info{");
		proc_labels(b, e);
		buf_adds(b, ",version=\"");
		add_value(b, e->t.version);
		buf_adds(b, "\",container_id=\"");
		add_value(b, e->container);
		buf_adds(b, "\",service=\"");
		add_value(b, e->service);
		buf_adds(b, "\"} 1\n");
	}
	head(b, "rbscope_ruby_threads", "gauge",
	     "Ruby threads by state at the last sample: running, gvl_wait (runnable, waiting for the GVL), blocked "
	     "(in a system call or C code without the GVL), idle (in a known wait: sleep, Queue#pop, IO.select...), gc.");
	for (int i = 0; i < f->n; i++)
		for (int k = 0; k < PROFILE_STATES && f->v[i]->state == PROC_LIVE; k++) {
			buf_adds(b, "rbscope_ruby_threads{");
			proc_labels(b, f->v[i]);
			buf_addf(b, ",state=\"%s\"} %u\n", profile_state_label(k), f->v[i]->threads_now[k]);
		}
	head(b, "rbscope_ruby_thread_samples_total", "counter",
	     "Thread samples by state: rate() over the sum is each state's share of the threads' time.");
	for (int i = 0; i < f->n; i++)
		for (int k = 0; k < PROFILE_STATES && f->v[i]->state == PROC_LIVE; k++) {
			buf_adds(b, "rbscope_ruby_thread_samples_total{");
			proc_labels(b, f->v[i]);
			buf_addf(b, ",state=\"%s\"} %llu\n", profile_state_label(k), (unsigned long long)f->v[i]->state_samples[k]);
		}
	head(b, "rbscope_ruby_gc_seconds_total", "counter",
	     "Time the VM spent collecting garbage, estimated: ticks that found it collecting times the tick interval.");
	double interval = sm->o.rate > 0 ? 1.0 / sm->o.rate : 0;
	for (int i = 0; i < f->n; i++)
		if (f->v[i]->state == PROC_LIVE) {
			buf_adds(b, "rbscope_ruby_gc_seconds_total{");
			proc_labels(b, f->v[i]);
			buf_addf(b, "} %.3f\n", (double)f->v[i]->ticks_in_gc * interval);
		}
	head(b, "rbscope_ruby_gc_seen_total", "counter",
	     "Garbage collections the sampler caught in progress (a lower bound of their number: short ones fall between ticks).");
	for (int i = 0; i < f->n; i++)
		if (f->v[i]->state == PROC_LIVE) {
			buf_adds(b, "rbscope_ruby_gc_seen_total{");
			proc_labels(b, f->v[i]);
			buf_addf(b, "} %llu\n", (unsigned long long)f->v[i]->gcs_seen);
		}
	gc_counters(b, f);
	census_series(b, f, c);
	return 0; /* b's maximum is far above what any number of processes needs */
}
