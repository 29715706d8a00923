/* html.c: one self-contained HTML report: the run's metadata, the flame graph and the summary tables. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flamegraph.h"
#include "output.h"
#include "../lib/xml.h"

#define HTML_ROWS 100 /* rows per summary table */

static void meta_row(FILE *f, const char *key, const char *val)
{
	fprintf(f, "<tr><th>%s</th><td>", key);
	xml_write_text(f, val, SIZE_MAX);
	fputs("</td></tr>\n", f);
}

static int table(const struct profile *p, FILE *f, int by_line)
{
	struct summary_row *rows;
	uint32_t n;
	uint64_t total;
	int err = summary_rows(p, by_line, &rows, &n, &total);
	if (err)
		return err;
	fprintf(f, "<h2>%s</h2>\n<table class=\"summary sortable\" id=\"%s\">\n", by_line ? "Lines" : "Functions",
		by_line ? "by-line" : "by-function");
	fprintf(f, "<thead><tr><th data-num>%% self</th><th data-num>%% total</th><th data-num>self</th>"
		"<th data-num>total</th><th>%s</th></tr></thead>\n<tbody>\n", by_line ? "location" : "function");
	char label[1024];
	for (uint32_t i = 0; i < n && i < HTML_ROWS && total; i++) {
		const struct summary_row *r = &rows[i];
		summary_label(p, r, by_line, label, sizeof(label));
		fprintf(f, "<tr><td>%.2f</td><td>%.2f</td><td>%llu</td><td>%llu</td><td>",
			100.0 * (double)r->self / (double)total, 100.0 * (double)r->total / (double)total,
			(unsigned long long)r->self, (unsigned long long)r->total);
		xml_write_text(f, label, SIZE_MAX);
		fputs("</td></tr>\n", f);
	}
	if (n > HTML_ROWS)
		fprintf(f, "<tr><td colspan=\"5\">(%u more; rbscope report -f %s lists them all)</td></tr>\n",
			n - HTML_ROWS, by_line ? "summary-by-line" : "summary");
	fputs("</tbody></table>\n", f);
	free(rows);
	return 0;
}

/* Each thread's samples, and how they split by state (running, GVL wait, blocked, idle, GC). */
static void threads(const struct profile *p, FILE *f)
{
	if (!p->nthreads)
		return;
	fputs("<h2>Threads</h2>\n<table class=\"summary\" id=\"threads\"><thead><tr><th>tid</th><th>name</th>"
	      "<th>samples</th>", f);
	for (int k = 0; k < PROFILE_STATES; k++)
		fprintf(f, "<th>%% %s</th>", profile_state_name(k));
	fputs("</tr></thead><tbody>\n", f);
	for (uint32_t i = 0; i < p->nthreads; i++) {
		uint64_t n = profile_thread_samples(p, i);
		char ref[24];
		if (p->threads[i].tid >= 0) /* (the tid alone, or "M:N thread 3") */
			snprintf(ref, sizeof(ref), "%d", (int)p->threads[i].tid);
		else
			profile_thread_ref(p->threads[i].tid, ref, sizeof(ref));
		fprintf(f, "<tr><td>%s</td><td>", ref);
		xml_write_text(f, strtab_get(&p->strs, p->threads[i].name), SIZE_MAX);
		fprintf(f, "</td><td>%llu</td>", (unsigned long long)n);
		for (int k = 0; k < PROFILE_STATES; k++)
			fprintf(f, "<td>%.1f</td>", n ? 100.0 * (double)p->thread_states[i][k] / (double)n : 0.0);
		fputs("</tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
}

static const char STYLE[] =
	"body{font-family:Verdana,sans-serif;margin:1.5em;color:#222;background:#fff}\n"
	"h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}\n"
	"table.meta th{text-align:left;padding-right:1em;font-weight:normal;color:#666}\n"
	"table.summary{border-collapse:collapse;font-size:0.85em}\n"
	"table.summary th,table.summary td{padding:2px 8px;border-bottom:1px solid #eee;text-align:right}\n"
	"table.summary td:last-child,table.summary th:last-child{text-align:left;font-family:monospace}\n"
	"table.sortable th{cursor:pointer}\n"
	".fg{overflow-x:auto;border:1px solid #ddd}\n";

/* Click a column heading to sort by it. */
static const char SCRIPT[] =
	"document.querySelectorAll('table.sortable').forEach(function(t){\n"
	"t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){\n"
	"var b=t.tBodies[0],rows=[].slice.call(b.rows).filter(function(r){return r.cells.length>1;});\n"
	"var num=th.hasAttribute('data-num'),dir=th.getAttribute('data-dir')==='d'?1:-1;th.setAttribute('data-dir',dir<0?'d':'a');\n"
	"rows.sort(function(x,y){var a=x.cells[i].textContent,c=y.cells[i].textContent;\n"
	"return dir*(num?(parseFloat(a)-parseFloat(c)):a.localeCompare(c));});\n"
	"rows.forEach(function(r){b.appendChild(r);});});});});\n";

int output_html(const struct profile *p, FILE *f)
{
	char title[512], buf[256];
	flamegraph_title(p, title, sizeof(title));
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>rbscope: ", f);
	xml_write_text(f, title, SIZE_MAX);
	fprintf(f, "</title>\n<style>\n%s</style>\n</head><body>\n<h1>", STYLE);
	xml_write_text(f, title, SIZE_MAX);
	fputs("</h1>\n<table class=\"meta\" id=\"meta\">\n", f);
	meta_row(f, "command", strtab_get(&p->strs, p->command));
	snprintf(buf, sizeof(buf), "%d", p->pid);
	meta_row(f, "pid", buf);
	meta_row(f, "Ruby", strtab_get(&p->strs, p->ruby_version));
	if (p->start_ns) {
		time_t secs = (time_t)(p->start_ns / 1000000000u);
		struct tm tm;
		gmtime_r(&secs, &tm);
		strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
		meta_row(f, "started", buf);
	}
	if (p->kind == PROFILE_ALLOCS)
		snprintf(buf, sizeof(buf), "%.2f s, one allocation in %llu sampled", (double)p->duration_ns / 1e9,
			 (unsigned long long)p->alloc_interval);
	else
		snprintf(buf, sizeof(buf), "%.2f s at %u Hz", (double)p->duration_ns / 1e9, p->rate_hz);
	meta_row(f, "duration", buf);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)profile_total(p));
	meta_row(f, "samples", buf);
	snprintf(buf, sizeof(buf), "%llu dropped ticks, %llu torn reads, %llu failed samples",
		 (unsigned long long)p->dropped, (unsigned long long)p->torn, (unsigned long long)p->errors);
	meta_row(f, "losses", buf);
	fputs("</table>\n", f);
	/* A server's wall profile is mostly threads waiting for work: the work itself first, on its own scale. */
	uint64_t total = profile_total(p), idle = 0;
	for (uint32_t i = 0; i < p->nthreads; i++)
		idle += p->thread_states[i][PROFILE_STATE_IDLE];
	int err = 0;
	if (total && idle * 2 >= total && idle < total) {
		struct profile work;
		err = profile_init(&work) ?: profile_merge_states(&work, p, PROFILE_ALL_STATES & ~(1u << PROFILE_STATE_IDLE));
		if (!err) {
			work.rate_hz = p->rate_hz, work.duration_ns = p->duration_ns, work.pid = p->pid;
			work.command = (uint32_t)strtab_intern(&work.strs, strtab_get(&p->strs, p->command),
							       strlen(strtab_get(&p->strs, p->command)));
			fprintf(f, "<h2>Flame graph: the work</h2>\n<p id=\"idle-note\">%.1f%% of the samples are threads "
				   "waiting (sleep, queues, locks, I/O readiness): this graph leaves them out; every sample is "
				   "in the one below. <code>rbscope record --mode cpu</code> records the CPU time alone.</p>\n"
				   "<div class=\"fg\" id=\"flamegraph-work\">\n",
				100.0 * (double)idle / (double)total);
			err = flamegraph_svg(&work, f, 0);
			fputs("</div>\n", f);
		}
		profile_free(&work);
		if (err)
			return err;
	}
	fputs("<h2>Flame graph</h2>\n<p>Click a frame to zoom, Escape or \"Reset zoom\" to go back; "
	      "search takes a regular expression.</p>\n<div class=\"fg\" id=\"flamegraph\">\n",
	      f);
	if ((err = flamegraph_svg(p, f, 0)))
		return err;
	fputs("</div>\n", f);
	threads(p, f);
	if ((err = table(p, f, 0)) || (err = table(p, f, 1)))
		return err;
	fprintf(f, "<p>Written by rbscope.</p>\n<script>\n%s</script>\n</body></html>\n", SCRIPT);
	return 0;
}
