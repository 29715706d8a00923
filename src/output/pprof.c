/* pprof.c: the pprof format, a gzip-compressed perftools.profiles.Profile protobuf (go tool pprof). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../lib/buf.h"
#include "../lib/map.h"
#include "output.h"
#include "../lib/vec.h"

/* Field numbers of profile.proto (package perftools.profiles). */
enum {
	PPROF_SAMPLE_TYPE = 1, PPROF_SAMPLE = 2, PPROF_MAPPING = 3, PPROF_LOCATION = 4, PPROF_FUNCTION = 5,
	PPROF_STRING_TABLE = 6, PPROF_TIME_NANOS = 9, PPROF_DURATION_NANOS = 10,
	PPROF_PERIOD_TYPE = 11, PPROF_PERIOD = 12, PPROF_COMMENT = 13,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3,
	MAPPING_ID = 1, MAPPING_FILENAME = 5, MAPPING_HAS_FUNCTIONS = 7,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
};

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* One message is far smaller than this; the cap only stops a runaway. */
#define PB_MAX (64u << 20)

/* A protobuf message being encoded; the first error sticks and later calls do nothing. */
struct pb {
	struct buf b;
	int err;
};

/* The gzip stream the top-level fields go to. */
struct gz {
	z_stream z;
	FILE *f;
	int err;
	unsigned char out[1 << 14];
};

/* One sample of the output: a stack seen on a thread, and how often. */
struct agg {
	uint32_t stack;
	int32_t tid;
	uint64_t count;
};

struct pprof {
	const struct profile *p;
	uint32_t *func_of; /* frame -> function id, 0 for thread roots */
	uint32_t *loc_of;  /* frame -> location id, 0 for thread roots */
	uint32_t *func_frame; /* function id -> a frame of that function */
	uint32_t *map_of;  /* frame -> mapping id: --native's frames, one mapping per library; 0 for Ruby's */
	uint32_t *map_path; /* mapping id -> its library (profile strtab id) */
	uint32_t nfuncs, nlocs, nmaps;
	uint64_t *ids;     /* one sample's location ids */
	const char **strs; /* the string table */
	uint32_t nstrs;
	size_t strs_cap;
	struct map str_index;    /* profile strtab id -> string table index */
	struct map thread_index; /* tid -> string table index of its name */
	uint32_t s_samples, s_count, s_wall, s_ns, s_tid, s_thread, s_state; /* fixed strings */
	uint32_t s_alloc_objects, s_alloc_space, s_bytes, s_allocations, s_class; /* an allocation profile's */
	uint32_t s_states[PROFILE_STATES];
	uint32_t s_base, s_true; /* a diff's: BASE's samples labelled pprof::base=true */
	uint32_t s_endpoint;     /* the request a sample's thread served (its PROFILE_FRAME_LABEL) */
	uint32_t s_cpu, s_pid, s_command, s_container, s_service;
	const struct pprof_options *opt;
	struct map label_index; /* tid -> index in labels + 1 */
	struct label_set { int64_t pid; uint32_t command, container, service; } *labels;
	uint32_t nlabels;
	size_t labels_cap;
	uint64_t period;
	char comment[512];
	struct pb msg, sub; /* a message and one nested in it */
	struct gz gz;
};

static size_t varint_encode(unsigned char out[10], uint64_t v)
{
	size_t n = 0;
	do {
		out[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			out[n] |= 0x80;
		n++;
	} while (v);
	return n;
}

static void pb_add(struct pb *e, const void *data, size_t len)
{
	if (!e->err)
		e->err = buf_add(&e->b, data, len);
}

static void pb_varint(struct pb *e, uint64_t v)
{
	unsigned char tmp[10];
	pb_add(e, tmp, varint_encode(tmp, v));
}

static void pb_key(struct pb *e, uint32_t field, int wire)
{
	pb_varint(e, (uint64_t)field << 3 | (uint64_t)wire);
}

/* An integer field; zero is the default, so it is left out. */
static void pb_int(struct pb *e, uint32_t field, uint64_t v)
{
	if (!v)
		return;
	pb_key(e, field, WIRE_VARINT);
	pb_varint(e, v);
}

static void pb_bytes(struct pb *e, uint32_t field, const void *data, size_t len)
{
	pb_key(e, field, WIRE_LEN);
	pb_varint(e, len);
	pb_add(e, data, len);
}

static void pb_message(struct pb *e, uint32_t field, const struct pb *m)
{
	if (m->err && !e->err)
		e->err = m->err;
	pb_bytes(e, field, m->b.data, m->b.len);
}

/* A packed repeated integer field; left out when empty. */
static void pb_packed(struct pb *e, uint32_t field, const uint64_t *v, size_t n)
{
	unsigned char tmp[10];
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += varint_encode(tmp, v[i]);
	if (!n)
		return;
	pb_key(e, field, WIRE_LEN);
	pb_varint(e, len);
	for (size_t i = 0; i < n; i++)
		pb_varint(e, v[i]);
}

static void pb_reset(struct pb *e)
{
	buf_reset(&e->b);
}

static int gz_open(struct gz *g, FILE *f)
{
	memset(&g->z, 0, sizeof(g->z));
	g->f = f;
	g->err = 0;
	/* windowBits 15 + 16: a gzip header and trailer, not a zlib one. */
	return deflateInit2(&g->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK ? 0 : -ENOMEM;
}

static void gz_put(struct gz *g, const void *data, size_t len, int flush)
{
	if (g->err)
		return;
	g->z.next_in = (Bytef *)data;
	g->z.avail_in = (uInt)len;
	do {
		g->z.next_out = g->out;
		g->z.avail_out = sizeof(g->out);
		if (deflate(&g->z, flush) == Z_STREAM_ERROR) {
			g->err = -EINVAL;
			return;
		}
		size_t n = sizeof(g->out) - g->z.avail_out;
		if (n && fwrite(g->out, 1, n, g->f) != n) {
			g->err = -(errno ?: EIO);
			return;
		}
	} while (g->z.avail_out == 0);
}

/* A top-level length-delimited field holding m. */
static void gz_message(struct gz *g, uint32_t field, const struct pb *m)
{
	unsigned char head[20];
	size_t n = varint_encode(head, (uint64_t)field << 3 | WIRE_LEN);
	n += varint_encode(head + n, m->b.len);
	if (m->err && !g->err)
		g->err = m->err;
	gz_put(g, head, n, Z_NO_FLUSH);
	gz_put(g, m->b.data, m->b.len, Z_NO_FLUSH);
}

/* Add s to the string table; its index. */
static uint32_t str_add(struct pprof *pp, const char *s)
{
	const char **n = vec_grow(pp->strs, pp->nstrs, &pp->strs_cap, sizeof(*n));
	if (!n) {
		pp->msg.err = -ENOMEM;
		return 0;
	}
	pp->strs = n;
	pp->strs[pp->nstrs] = s;
	return pp->nstrs++;
}

/* The string table index of a profile string, added on first use. */
static uint32_t str_of(struct pprof *pp, uint32_t id)
{
	if (!id)
		return 0;
	uint64_t *hit = map_get(&pp->str_index, id);
	if (hit)
		return (uint32_t)*hit;
	uint32_t i = str_add(pp, strtab_get(&pp->p->strs, id));
	if (map_put(&pp->str_index, id, i))
		pp->msg.err = -ENOMEM;
	return i;
}

/* Functions (one per name and path) and locations (one per frame); thread roots and requests become labels instead. */
static int index_frames(struct pprof *pp)
{
	const struct profile *p = pp->p;
	struct map funcs, maps;
	map_init(&funcs);
	map_init(&maps);
	for (uint32_t i = 0; i < p->nframes && !pp->msg.err; i++) {
		const struct profile_frame *fr = &p->frames[i];
		if (fr->kind == PROFILE_FRAME_THREAD || fr->kind == PROFILE_FRAME_LABEL)
			continue;
		uint64_t key = (uint64_t)fr->name << 32 | fr->path;
		uint64_t *hit = map_get(&funcs, key);
		if (hit) {
			pp->func_of[i] = (uint32_t)*hit;
		} else {
			pp->func_of[i] = ++pp->nfuncs;
			pp->func_frame[pp->nfuncs] = i;
			if (map_put(&funcs, key, pp->nfuncs))
				pp->msg.err = -ENOMEM;
			str_of(pp, fr->name);
			str_of(pp, fr->path);
		}
		pp->loc_of[i] = ++pp->nlocs;
		if (fr->kind == PROFILE_FRAME_NATIVE && fr->path) { /* the library it is in, as a native profiler's */
			uint64_t *m = map_get(&maps, fr->path);
			if (m) {
				pp->map_of[i] = (uint32_t)*m;
			} else {
				pp->map_of[i] = ++pp->nmaps;
				pp->map_path[pp->nmaps] = fr->path;
				if (map_put(&maps, fr->path, pp->nmaps))
					pp->msg.err = -ENOMEM;
				str_of(pp, fr->path);
			}
		}
	}
	map_free(&funcs);
	map_free(&maps);
	return pp->msg.err;
}

static int index_threads(struct pprof *pp)
{
	const struct profile *p = pp->p;
	for (uint32_t i = 0; i < p->nthreads && !pp->msg.err; i++)
		if (map_put(&pp->thread_index, (uint32_t)p->threads[i].tid, str_of(pp, p->threads[i].name)))
			pp->msg.err = -ENOMEM;
	return pp->msg.err;
}

static int pprof_init(struct pprof *pp, const struct profile *p, const struct pprof_options *o)
{
	memset(pp, 0, sizeof(*pp));
	pp->p = p;
	pp->opt = o;
	map_init(&pp->label_index);
	map_init(&pp->str_index);
	map_init(&pp->thread_index);
	buf_init(&pp->msg.b, PB_MAX);
	buf_init(&pp->sub.b, PB_MAX);
	uint32_t maxlen = 0;
	for (uint32_t i = 0; i < p->nstacks; i++)
		if (p->stacks[i].len > maxlen)
			maxlen = p->stacks[i].len;
	pp->func_of = calloc(p->nframes + 1, sizeof(*pp->func_of));
	pp->loc_of = calloc(p->nframes + 1, sizeof(*pp->loc_of));
	pp->func_frame = calloc(p->nframes + 1, sizeof(*pp->func_frame));
	pp->map_of = calloc(p->nframes + 1, sizeof(*pp->map_of));
	pp->map_path = calloc(p->nframes + 1, sizeof(*pp->map_path));
	pp->ids = calloc(maxlen + 1, sizeof(*pp->ids));
	if (!pp->func_of || !pp->loc_of || !pp->func_frame || !pp->map_of || !pp->map_path || !pp->ids)
		return -ENOMEM;
	pp->period = p->rate_hz ? 1000000000ull / p->rate_hz : 0;
	str_add(pp, "");
	snprintf(pp->comment, sizeof(pp->comment), "rbscope: pid %d, ruby %s, %s", p->pid,
		 strtab_get(&p->strs, p->ruby_version), strtab_get(&p->strs, p->command));
	pp->s_samples = str_add(pp, "samples");
	pp->s_count = str_add(pp, "count");
	pp->s_wall = str_add(pp, "wall");
	pp->s_ns = str_add(pp, "nanoseconds");
	pp->s_tid = str_add(pp, "thread id");
	pp->s_thread = str_add(pp, "thread name");
	pp->s_state = str_add(pp, "thread state");
	pp->s_endpoint = str_add(pp, "endpoint");
	for (int k = 0; k < PROFILE_STATES; k++)
		pp->s_states[k] = str_add(pp, profile_state_name(k));
	if (p->kind == PROFILE_ALLOCS) { /* the sample types of Go's heap profile that say what was allocated */
		pp->s_alloc_objects = str_add(pp, p->alloc_live ? "inuse_objects" : "alloc_objects");
		pp->s_alloc_space = str_add(pp, p->alloc_live ? "inuse_space" : "alloc_space");
		pp->s_bytes = str_add(pp, "bytes");
		pp->s_allocations = str_add(pp, "allocations");
		pp->s_class = str_add(pp, "object class");
		pp->period = p->alloc_interval;
	}
	if (o && o->diff) {
		pp->s_base = str_add(pp, "pprof::base");
		pp->s_true = str_add(pp, "true");
	}
	if (o) {
		pp->s_cpu = str_add(pp, "cpu");
		pp->s_pid = str_add(pp, "pid");
		pp->s_command = str_add(pp, "process command");
		pp->s_container = str_add(pp, "container id");
		pp->s_service = str_add(pp, "service_name");
		if (o->comment)
			snprintf(pp->comment, sizeof(pp->comment), "%s", o->comment);
	}
	return index_frames(pp) ?: index_threads(pp);
}

static void pprof_free(struct pprof *pp)
{
	free(pp->func_of);
	free(pp->loc_of);
	free(pp->func_frame);
	free(pp->map_of);
	free(pp->map_path);
	free(pp->ids);
	free(pp->strs);
	free(pp->labels);
	map_free(&pp->label_index);
	map_free(&pp->str_index);
	map_free(&pp->thread_index);
	buf_free(&pp->msg.b);
	buf_free(&pp->sub.b);
}

/* Samples by (stack, thread), in order of first appearance; or the stacks' counts if there are none. */
static struct agg *aggregate(const struct profile *p, uint64_t *n)
{
	struct agg *a = calloc((p->nsamples ? p->nsamples : p->nstacks) + 1, sizeof(*a));
	*n = 0;
	if (!a)
		return NULL;
	if (!p->nsamples || p->kind == PROFILE_ALLOCS) { /* (an allocation's bytes are known by stack) */
		for (uint32_t i = 0; i < p->nstacks; i++)
			if (p->stacks[i].count)
				a[(*n)++] = (struct agg){ i, 0, p->stacks[i].count };
		return a;
	}
	struct map m;
	map_init(&m);
	for (uint64_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint64_t key = (uint64_t)s->stack << 32 | (uint32_t)s->tid;
		uint64_t *hit = map_get(&m, key);
		if (hit) {
			a[*hit].count++;
			continue;
		}
		if (map_put(&m, key, *n)) {
			free(a);
			a = NULL;
			break;
		}
		a[(*n)++] = (struct agg){ s->stack, s->tid, 1 };
	}
	map_free(&m);
	return a;
}

static void put_value_type(struct pprof *pp, uint32_t field, uint32_t type, uint32_t unit)
{
	pb_reset(&pp->msg);
	pb_int(&pp->msg, VALUE_TYPE_TYPE, type);
	pb_int(&pp->msg, VALUE_TYPE_UNIT, unit);
	gz_message(&pp->gz, field, &pp->msg);
}

static void put_label(struct pprof *pp, uint32_t key, uint32_t str, int64_t num)
{
	pb_reset(&pp->sub);
	pb_int(&pp->sub, LABEL_KEY, key);
	pb_int(&pp->sub, LABEL_STR, str);
	pb_int(&pp->sub, LABEL_NUM, (uint64_t)num);
	pb_message(&pp->msg, SAMPLE_LABEL, &pp->sub);
}

/* The string table index of a --label frame's value: its name ("key=value") past its path ("key") and '='. */
static uint32_t label_value(struct pprof *pp, uint32_t frame)
{
	uint64_t key = 1ULL << 32 | frame, *hit = map_get(&pp->str_index, key); /* (above every strtab id) */
	if (hit)
		return (uint32_t)*hit;
	const struct profile_frame *f = &pp->p->frames[frame];
	const char *name = strtab_get(&pp->p->strs, f->name);
	size_t k = strlen(strtab_get(&pp->p->strs, f->path));
	uint32_t i = str_add(pp, strlen(name) > k && name[k] == '=' ? name + k + 1 : name);
	if (map_put(&pp->str_index, key, i))
		pp->msg.err = -ENOMEM;
	return i;
}

/* Thread tid's process labels (asked once per thread), or NULL. */
static const struct label_set *labels_of(struct pprof *pp, int32_t tid)
{
	if (!pp->opt || !pp->opt->labels)
		return NULL;
	uint64_t *hit = map_get(&pp->label_index, (uint32_t)tid);
	if (hit)
		return *hit ? &pp->labels[*hit - 1] : NULL;
	struct pprof_labels l = { 0 };
	if (pp->opt->labels(pp->opt->ctx, tid, &l)) {
		if (map_put(&pp->label_index, (uint32_t)tid, 0))
			pp->msg.err = -ENOMEM;
		return NULL;
	}
	struct label_set *v = vec_grow(pp->labels, pp->nlabels, &pp->labels_cap, sizeof(*v));
	if (!v || map_put(&pp->label_index, (uint32_t)tid, pp->nlabels + 1)) {
		pp->msg.err = -ENOMEM;
		return NULL;
	}
	pp->labels = v;
	v[pp->nlabels] = (struct label_set){
		l.pid,
		l.command && *l.command ? str_add(pp, l.command) : 0,
		l.container && *l.container ? str_add(pp, l.container) : 0,
		l.service && *l.service ? str_add(pp, l.service) : 0,
	};
	return &pp->labels[pp->nlabels++];
}

/* The location ids of stack's frames into pp->ids, the leaf first as pprof wants them: their count. */
static size_t stack_locations(struct pprof *pp, uint32_t stack)
{
	const struct profile *p = pp->p;
	const struct profile_stack *s = &p->stacks[stack];
	size_t n = 0;
	for (uint32_t j = s->len; j-- > 0;) {
		uint32_t loc = pp->loc_of[p->pool[s->start + j]];
		if (loc)
			pp->ids[n++] = loc;
	}
	return n;
}

/* A diff's BASE: each stack's samples scaled to NEW's total and negated, labelled pprof::base=true. */
static void put_base_samples(struct pprof *pp, const struct profile_diff *d)
{
	const struct profile *p = pp->p;
	double scale = d->base_total ? (double)d->new_total / (double)d->base_total : 0;
	for (uint32_t i = 0; i < p->nstacks && scale > 0 && !pp->gz.err; i++) {
		int64_t v0 = -llround((double)d->base_vals[i][0] * scale);
		int64_t v1 = p->kind == PROFILE_ALLOCS ? -llround((double)d->base_vals[i][1] * scale) : v0 * (int64_t)pp->period;
		if (!v0 && !v1)
			continue;
		uint64_t values[2] = { (uint64_t)v0, (uint64_t)v1 };
		size_t n = stack_locations(pp, i);
		pb_reset(&pp->msg);
		pb_packed(&pp->msg, SAMPLE_LOCATION_ID, pp->ids, n);
		pb_packed(&pp->msg, SAMPLE_VALUE, values, 2);
		put_label(pp, pp->s_base, pp->s_true, 0);
		gz_message(&pp->gz, PPROF_SAMPLE, &pp->msg);
	}
}

static void put_sample(struct pprof *pp, const struct agg *a, int labels)
{
	const struct profile *p = pp->p;
	const struct profile_stack *s = &p->stacks[a->stack];
	size_t n = stack_locations(pp, a->stack);
	uint64_t values[2] = { a->count, a->count * pp->period };
	if (p->kind == PROFILE_ALLOCS) {
		values[0] = profile_stack_objects(p, a->stack);
		values[1] = profile_stack_bytes(p, a->stack);
	}
	pb_reset(&pp->msg);
	pb_packed(&pp->msg, SAMPLE_LOCATION_ID, pp->ids, n);
	pb_packed(&pp->msg, SAMPLE_VALUE, values, 2);
	if (p->kind == PROFILE_ALLOCS) {
		uint32_t leaf = s->len ? p->pool[s->start + s->len - 1] : 0;
		if (s->len && p->frames[leaf].kind == PROFILE_FRAME_CLASS)
			put_label(pp, pp->s_class, str_of(pp, p->frames[leaf].name), 0);
		gz_message(&pp->gz, PPROF_SAMPLE, &pp->msg);
		return;
	}
	if (labels) {
		put_label(pp, pp->s_tid, 0, a->tid);
		uint64_t *name = map_get(&pp->thread_index, (uint32_t)a->tid);
		if (name && *name)
			put_label(pp, pp->s_thread, (uint32_t)*name, 0);
		const struct label_set *l = labels_of(pp, a->tid);
		if (l && l->pid)
			put_label(pp, pp->s_pid, 0, l->pid);
		if (l && l->command)
			put_label(pp, pp->s_command, l->command, 0);
		if (l && l->container)
			put_label(pp, pp->s_container, l->container, 0);
		if (l && l->service)
			put_label(pp, pp->s_service, l->service, 0);
	}
	put_label(pp, pp->s_state, pp->s_states[profile_stack_state(p, a->stack)], 0);
	int64_t label = profile_stack_label(p, a->stack);
	if (label >= 0)
		put_label(pp, pp->s_endpoint, str_of(pp, p->frames[label].name), 0);
	uint32_t user[8];
	int nuser = profile_stack_user_labels(p, a->stack, user, 8);
	for (int k = 0; k < nuser; k++) /* --label's: its name the key, the frame's "name=value" after the name the value */
		put_label(pp, str_of(pp, p->frames[user[k]].path), label_value(pp, user[k]), 0);
	gz_message(&pp->gz, PPROF_SAMPLE, &pp->msg);
}

static void put_location(struct pprof *pp, uint32_t frame)
{
	const struct profile_frame *fr = &pp->p->frames[frame];
	pb_reset(&pp->sub);
	pb_int(&pp->sub, LINE_FUNCTION_ID, pp->func_of[frame]);
	pb_int(&pp->sub, LINE_LINE, fr->line > 0 ? (uint64_t)fr->line : 0);
	pb_reset(&pp->msg);
	pb_int(&pp->msg, LOCATION_ID, pp->loc_of[frame]);
	if (pp->map_of[frame])
		pb_int(&pp->msg, LOCATION_MAPPING_ID, pp->map_of[frame]);
	pb_message(&pp->msg, LOCATION_LINE, &pp->sub);
	gz_message(&pp->gz, PPROF_LOCATION, &pp->msg);
}

/* A library native frames are in: its name, and that its functions are named (no addresses to symbolize). */
static void put_mapping(struct pprof *pp, uint32_t id)
{
	pb_reset(&pp->msg);
	pb_int(&pp->msg, MAPPING_ID, id);
	pb_int(&pp->msg, MAPPING_FILENAME, str_of(pp, pp->map_path[id]));
	pb_int(&pp->msg, MAPPING_HAS_FUNCTIONS, 1);
	gz_message(&pp->gz, PPROF_MAPPING, &pp->msg);
}

/*
 * start_line is left out: a frame holds the line it was at, not where its
 * method begins. A native function's system name is its symbol, for pprof to
 * demangle; a Ruby name has none: pprof takes a name with a system name equal
 * to it for a demangled C++ name and cuts what is in () and <> ("block (2
 * levels) in <class:App>" would read "block  in "), one without as it is.
 */
static void put_function(struct pprof *pp, uint32_t id)
{
	const struct profile_frame *fr = &pp->p->frames[pp->func_frame[id]];
	uint32_t name = str_of(pp, fr->name);
	pb_reset(&pp->msg);
	pb_int(&pp->msg, FUNCTION_ID, id);
	pb_int(&pp->msg, FUNCTION_NAME, name);
	if (fr->kind == PROFILE_FRAME_NATIVE)
		pb_int(&pp->msg, FUNCTION_SYSTEM_NAME, name);
	pb_int(&pp->msg, FUNCTION_FILENAME, str_of(pp, fr->path));
	gz_message(&pp->gz, PPROF_FUNCTION, &pp->msg);
}

static void put_scalar(struct pprof *pp, uint32_t field, uint64_t v)
{
	pb_reset(&pp->msg);
	pb_int(&pp->msg, field, v);
	if (pp->msg.err && !pp->gz.err)
		pp->gz.err = pp->msg.err;
	gz_put(&pp->gz, pp->msg.b.data, pp->msg.b.len, Z_NO_FLUSH);
}

/* The string table goes last: every index is known by then, and field order does not matter. */
static void put_strings(struct pprof *pp)
{
	unsigned char head[20];
	for (uint32_t i = 0; i < pp->nstrs && !pp->gz.err; i++) {
		size_t len = strlen(pp->strs[i]);
		size_t n = varint_encode(head, (uint64_t)PPROF_STRING_TABLE << 3 | WIRE_LEN);
		n += varint_encode(head + n, len);
		gz_put(&pp->gz, head, n, Z_NO_FLUSH);
		gz_put(&pp->gz, pp->strs[i], len, Z_NO_FLUSH);
	}
}

static int write_profile(struct pprof *pp, const struct agg *a, uint64_t n)
{
	const struct profile *p = pp->p;
	uint32_t kind = pp->opt && pp->opt->cpu ? pp->s_cpu : pp->s_wall, unit = pp->s_ns;
	if (p->kind == PROFILE_ALLOCS) {
		put_value_type(pp, PPROF_SAMPLE_TYPE, pp->s_alloc_objects, pp->s_count);
		put_value_type(pp, PPROF_SAMPLE_TYPE, pp->s_alloc_space, pp->s_bytes);
		kind = pp->s_allocations;
		unit = pp->s_count;
	} else {
		put_value_type(pp, PPROF_SAMPLE_TYPE, pp->s_samples, pp->s_count);
		put_value_type(pp, PPROF_SAMPLE_TYPE, kind, pp->s_ns);
	}
	for (uint64_t i = 0; i < n && !pp->gz.err; i++)
		put_sample(pp, &a[i], p->nsamples != 0);
	if (pp->opt && pp->opt->diff)
		put_base_samples(pp, pp->opt->diff);
	for (uint32_t i = 0; i < p->nframes && !pp->gz.err; i++)
		if (pp->loc_of[i])
			put_location(pp, i);
	for (uint32_t id = 1; id <= pp->nfuncs && !pp->gz.err; id++)
		put_function(pp, id);
	for (uint32_t id = 1; id <= pp->nmaps && !pp->gz.err; id++)
		put_mapping(pp, id);
	put_scalar(pp, PPROF_TIME_NANOS, p->start_ns);
	put_scalar(pp, PPROF_DURATION_NANOS, p->duration_ns);
	put_value_type(pp, PPROF_PERIOD_TYPE, kind, unit);
	put_scalar(pp, PPROF_PERIOD, pp->period);
	put_scalar(pp, PPROF_COMMENT, str_add(pp, pp->comment));
	put_strings(pp);
	if (pp->msg.err && !pp->gz.err)
		pp->gz.err = pp->msg.err;
	gz_put(&pp->gz, NULL, 0, Z_FINISH);
	return pp->gz.err;
}

int output_pprof(const struct profile *p, FILE *f)
{
	return output_pprof_with(p, f, NULL);
}

int output_pprof_with(const struct profile *p, FILE *f, const struct pprof_options *o)
{
	struct pprof pp;
	uint64_t n = 0;
	struct agg *a = NULL;
	int err = pprof_init(&pp, p, o);
	if (!err && !(a = aggregate(p, &n)))
		err = -ENOMEM;
	if (!err && !(err = gz_open(&pp.gz, f))) {
		err = write_profile(&pp, a, n);
		deflateEnd(&pp.gz.z);
	}
	free(a);
	pprof_free(&pp);
	return err;
}
