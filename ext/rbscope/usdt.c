/* usdt.c: Rbscope::Provider and Rbscope::Probe: USDT probes declared from Ruby, loaded as a generated ELF object, and their in-process latency subscribers. */
#include "agent.h"
#include "hist.h"
#include "usdt_elf.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* What Ruby passes; the object only knows int64 and string. */
enum probe_kind { KIND_INT = 1, KIND_STRING, KIND_SYMBOL, KIND_BOOL, KIND_FLOAT };

/* Passed as an int64 (Integer, true/false); the others as a char *. */
static inline int kind_is_int(enum probe_kind k)
{
	return k == KIND_INT || k == KIND_BOOL;
}

#define PROBE_MAX_SUBS 8
#define STR_ARG_MAX 256 /* Symbols and Floats are copied into buffers this big */

typedef void (*probe_stub)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

struct probe_def {
	char name[USDT_NAME_MAX];
	int nargs;
	enum probe_kind kind[USDT_MAX_ARGS];
	probe_stub stub;	      /* NULL while the provider is disabled */
	volatile uint16_t *sem;	      /* the semaphore; NULL while disabled */
	struct agent_hist *subs[PROBE_MAX_SUBS]; /* `rbscope latency` clients: arg0 goes into each */
	int nsubs;
	struct provider *prov;
};

struct provider {
	char name[USDT_NAME_MAX];
	struct probe_def **probes;
	int n, cap;
	void *handle; /* dlopen'ed object, NULL while disabled */
	int fd;	      /* its memfd, kept open: tracers find the object through /proc/PID/fd */
	VALUE self;
};

struct probe_ref {
	VALUE provider;
	struct probe_def *def;
};

/* A latency subscription: one histogram fed by every enabled probe of that name. */
struct usdt_sub {
	struct agent_hist *hist;
	size_t map_size;
	char provider[USDT_NAME_MAX], probe[USDT_NAME_MAX];
	struct usdt_sub *next;
};

static VALUE cProvider, cProbe;
static VALUE enabled_providers; /* a Ruby array: enabled providers stay alive until disabled */
static struct usdt_sub *subs;

/* ---- providers ---- */

static void provider_detach_subs(struct provider *p);

static void provider_unload(struct provider *p)
{
	for (int i = 0; i < p->n; i++) {
		p->probes[i]->stub = NULL;
		p->probes[i]->sem = NULL;
	}
	if (p->handle)
		dlclose(p->handle);
	if (p->fd >= 0)
		close(p->fd);
	p->handle = NULL;
	p->fd = -1;
}

static void provider_free(void *ptr)
{
	struct provider *p = ptr;
	provider_detach_subs(p);
	provider_unload(p);
	for (int i = 0; i < p->n; i++)
		free(p->probes[i]);
	free(p->probes);
	free(p);
}

static size_t provider_memsize(const void *ptr)
{
	const struct provider *p = ptr;
	return sizeof(*p) + (size_t)p->cap * sizeof(void *) + (size_t)p->n * sizeof(struct probe_def);
}

static const rb_data_type_t provider_type = {
	.wrap_struct_name = "Rbscope::Provider",
	.function = { .dfree = provider_free, .dsize = provider_memsize },
	.flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static struct provider *get_provider(VALUE self)
{
	return rb_check_typeddata(self, &provider_type);
}

static VALUE provider_alloc(VALUE klass)
{
	struct provider *p;
	VALUE self = TypedData_Make_Struct(klass, struct provider, &provider_type, p);
	p->fd = -1;
	p->self = self;
	return self;
}

static void check_name(VALUE name, const char *what, char *out)
{
	if (SYMBOL_P(name))
		name = rb_sym2str(name);
	if (!RB_TYPE_P(name, T_STRING))
		rb_raise(rb_eArgError, "%s name must be a String or Symbol", what);
	const char *s = StringValueCStr(name);
	if (!usdt_valid_name(s))
		rb_raise(rb_eArgError, "invalid %s name '%s': a C identifier ([A-Za-z_][A-Za-z0-9_]*, under %d bytes) is needed",
			 what, s, USDT_NAME_MAX);
	strcpy(out, s);
}

/* Rbscope::Provider.new(name) */
static VALUE provider_init(VALUE self, VALUE name)
{
	check_name(name, "provider", get_provider(self)->name);
	return self;
}

static int provider_enabled(const struct provider *p)
{
	return p->handle != NULL;
}

static int write_all(int fd, const unsigned char *data, size_t size)
{
	size_t done = 0;
	while (done < size) {
		ssize_t w = write(fd, data + done, size - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return 0;
}

/*
 * dlopen the image: from a memfd through /proc/self/fd (nothing on disk, works on noexec /tmp),
 * else (no /proc, as in a bare chroot) from a file in the agent's private directory or $TMPDIR,
 * unlinked once loaded. Either way *fd stays open: tracers find the object through /proc/PID/fd.
 */
static void *load_object(const char *name, const struct usdt_elf_image *img, int *fd, const char **why)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "rbscope:%s", name);
	*fd = memfd_create(path, MFD_CLOEXEC);
	if (*fd >= 0 && write_all(*fd, img->data, img->size) == 0) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", *fd);
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (h)
			return h;
		if (access("/proc/self/fd", F_OK) == 0) {
			*why = dlerror();
			close(*fd);
			*fd = -1;
			return NULL;
		}
	}
	if (*fd >= 0)
		close(*fd);
	const char *dir = channel_path(), *tmp = getenv("TMPDIR");
	if (dir) {
		const char *slash = strrchr(dir, '/');
		snprintf(path, sizeof(path), "%.*s/usdt-%s-XXXXXX.so", (int)(slash - dir), dir, name);
	} else {
		snprintf(path, sizeof(path), "%s/rbscope-usdt-%s-XXXXXX.so", tmp && *tmp ? tmp : "/tmp", name);
	}
	*fd = mkostemps(path, 3, O_CLOEXEC);
	if (*fd < 0) {
		*why = strerror(errno);
		return NULL;
	}
	int wrote = write_all(*fd, img->data, img->size) == 0;
	void *h = wrote ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!h) {
		*why = wrote ? dlerror() : strerror(errno);
		close(*fd);
		*fd = -1;
	}
	unlink(path);
	return h;
}

/* Generate the object, load it, and point each probe at its stub and semaphore. */
static void provider_load(struct provider *p)
{
	if (!p->n)
		rb_raise(rb_eArgError, "provider '%s' has no probes: declare them with #probe before #enable", p->name);
#if !defined(__x86_64__)
	rb_raise(rb_eNotImpError, "rbscope USDT probes are implemented for x86-64 only");
#endif
	struct usdt_elf_probe *ep = calloc((size_t)p->n, sizeof(*ep));
	if (!ep)
		rb_raise(rb_eNoMemError, "rbscope: out of memory");
	for (int i = 0; i < p->n; i++) {
		ep[i].name = p->probes[i]->name;
		ep[i].nargs = p->probes[i]->nargs;
		for (int k = 0; k < ep[i].nargs; k++)
			ep[i].args[k] = kind_is_int(p->probes[i]->kind[k]) ? USDT_ARG_INT64 : USDT_ARG_STRING;
	}
	struct usdt_elf_image img;
	int r = usdt_elf_build(p->name, ep, p->n, &img);
	if (r) {
		free(ep);
		rb_raise(rb_eRuntimeError, "rbscope: cannot build the probe object: %s", strerror(-r));
	}
	int fd = -1;
	const char *why = NULL;
	void *h = load_object(p->name, &img, &fd, &why);
	usdt_elf_free(&img);
	struct link_map *lm = NULL;
	if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) || !lm) {
		if (h) {
			why = dlerror();
			dlclose(h);
		}
		if (fd >= 0)
			close(fd);
		free(ep);
		rb_raise(rb_eRuntimeError, "rbscope: cannot load the probes of '%s': %s", p->name, why ? why : "unknown error");
	}
	p->handle = h;
	p->fd = fd;
	char *base = (char *)lm->l_addr;
	for (int i = 0; i < p->n; i++) {
		struct probe_def *d = p->probes[i];
		d->stub = (probe_stub)(void *)(base + ep[i].stub_off);
		d->sem = (volatile uint16_t *)(base + ep[i].sem_off);
		*d->sem = (uint16_t)d->nsubs; /* `rbscope latency` clients count as tracers */
	}
	free(ep);
}

/* provider.enable -> true. A second call does nothing. */
static VALUE provider_enable(VALUE self)
{
	struct provider *p = get_provider(self);
	if (provider_enabled(p))
		return Qtrue;
	provider_load(p);
	rb_ary_push(enabled_providers, self);
	return Qtrue;
}

/* provider.disable: unload the object; probes stop firing (tracers attached to it see nothing more). */
static VALUE provider_disable(VALUE self)
{
	struct provider *p = get_provider(self);
	if (!provider_enabled(p))
		return Qfalse;
	/* `rbscope latency` clients let go of it: their histograms are only found through enabled providers */
	provider_detach_subs(p);
	provider_unload(p);
	rb_ary_delete(enabled_providers, self);
	return Qtrue;
}

static VALUE provider_enabled_p(VALUE self)
{
	return provider_enabled(get_provider(self)) ? Qtrue : Qfalse;
}

static VALUE provider_name(VALUE self)
{
	return rb_str_new_cstr(get_provider(self)->name);
}

/* The loaded object, readable as a file (readelf -n), or nil while disabled. */
static VALUE provider_path(VALUE self)
{
	struct provider *p = get_provider(self);
	if (!provider_enabled(p))
		return Qnil;
	return rb_sprintf("/proc/%ld/fd/%d", (long)getpid(), p->fd);
}

/* ---- probes ---- */

static void probe_mark(void *ptr)
{
	rb_gc_mark(((struct probe_ref *)ptr)->provider);
}

static const rb_data_type_t probe_type = {
	.wrap_struct_name = "Rbscope::Probe",
	.function = { .dmark = probe_mark, .dfree = RUBY_TYPED_DEFAULT_FREE },
	.flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static struct probe_def *get_probe(VALUE self)
{
	return ((struct probe_ref *)rb_check_typeddata(self, &probe_type))->def;
}

static enum probe_kind parse_kind(VALUE t)
{
	if (t == rb_cInteger)
		return KIND_INT;
	if (t == rb_cString)
		return KIND_STRING;
	if (t == rb_cSymbol)
		return KIND_SYMBOL;
	if (t == rb_cFloat)
		return KIND_FLOAT;
	if (t == rb_cTrueClass || t == rb_cFalseClass)
		return KIND_BOOL;
	if (SYMBOL_P(t)) {
		const char *s = rb_id2name(SYM2ID(t));
		static const struct { const char *name; enum probe_kind k; } names[] = {
			{ "int", KIND_INT },	   { "int64", KIND_INT },	{ "integer", KIND_INT },
			{ "string", KIND_STRING }, { "symbol", KIND_SYMBOL },	{ "float", KIND_FLOAT },
			{ "bool", KIND_BOOL },	   { "boolean", KIND_BOOL },
		};
		for (size_t i = 0; s && i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(s, names[i].name))
				return names[i].k;
	}
	rb_raise(rb_eArgError, "unsupported probe argument type %" PRIsVALUE " (Integer, String, Symbol, Float or :bool)", rb_inspect(t));
}

static const char *kind_name(enum probe_kind k)
{
	switch (k) {
	case KIND_INT: return "Integer";
	case KIND_STRING: return "String";
	case KIND_SYMBOL: return "Symbol";
	case KIND_BOOL: return "bool";
	case KIND_FLOAT: return "Float";
	}
	return "?";
}

static VALUE probe_wrap(VALUE provider, struct probe_def *d)
{
	struct probe_ref *r;
	VALUE obj = TypedData_Make_Struct(cProbe, struct probe_ref, &probe_type, r);
	r->provider = provider;
	r->def = d;
	return obj;
}

/* provider.probe(name, *types) -> Rbscope::Probe. Declared after #enable, the object is rebuilt. */
static VALUE provider_probe(int argc, VALUE *argv, VALUE self)
{
	struct provider *p = get_provider(self);
	if (argc < 1)
		rb_raise(rb_eArgError, "wrong number of arguments (given 0, expected 1+: name, *types)");
	if (argc - 1 > USDT_MAX_ARGS)
		rb_raise(rb_eArgError, "too many probe arguments (%d): at most %d on x86-64", argc - 1, USDT_MAX_ARGS);
	struct probe_def tmp = { .nargs = argc - 1 };
	check_name(argv[0], "probe", tmp.name);
	for (int i = 1; i < argc; i++)
		tmp.kind[i - 1] = parse_kind(argv[i]);
	for (int i = 0; i < p->n; i++)
		if (!strcmp(p->probes[i]->name, tmp.name))
			rb_raise(rb_eArgError, "probe '%s:%s' is already declared", p->name, tmp.name);
	if (p->n == p->cap) {
		int cap = p->cap ? 2 * p->cap : 8;
		struct probe_def **v = realloc(p->probes, (size_t)cap * sizeof(*v));
		if (!v)
			rb_raise(rb_eNoMemError, "rbscope: out of memory");
		p->probes = v;
		p->cap = cap;
	}
	struct probe_def *d = malloc(sizeof(*d));
	if (!d)
		rb_raise(rb_eNoMemError, "rbscope: out of memory");
	*d = tmp;
	d->prov = p;
	p->probes[p->n++] = d;
	if (provider_enabled(p)) { /* a new object with this probe too; disabled if that fails */
		provider_unload(p);
		rb_ary_delete(enabled_providers, self);
		provider_load(p);
		rb_ary_push(enabled_providers, self);
	}
	return probe_wrap(self, d);
}

static VALUE provider_probes(VALUE self)
{
	struct provider *p = get_provider(self);
	VALUE a = rb_ary_new_capa(p->n);
	for (int i = 0; i < p->n; i++)
		rb_ary_push(a, probe_wrap(self, p->probes[i]));
	return a;
}

/*
 * probe.enabled?: one load of the semaphore, which a tracer (or `rbscope latency`) raises.
 * No type check: Probe cannot be allocated (nor subclassed into something allocatable), so a
 * receiver of this method is always one of ours, and the check would be most of the cost.
 */
static VALUE probe_enabled_p(VALUE self)
{
	volatile uint16_t *sem = ((struct probe_ref *)RTYPEDDATA_DATA(self))->def->sem;
	return sem && *sem ? Qtrue : Qfalse;
}

/* Convert argument i for the stub; raises ArgumentError on a wrong type. */
static uint64_t fire_arg(const struct probe_def *d, int i, VALUE v, char *buf)
{
	switch (d->kind[i]) {
	case KIND_INT:
		if (!RB_INTEGER_TYPE_P(v))
			break;
		return (uint64_t)NUM2LL(v);
	case KIND_BOOL:
		if (v != Qtrue && v != Qfalse)
			break;
		return v == Qtrue;
	case KIND_STRING:
		if (!RB_TYPE_P(v, T_STRING))
			break;
		return (uint64_t)(uintptr_t)StringValueCStr(v);
	case KIND_SYMBOL: {
		if (!SYMBOL_P(v))
			break;
		VALUE s = rb_sym2str(v);
		long n = RSTRING_LEN(s) < STR_ARG_MAX - 1 ? RSTRING_LEN(s) : STR_ARG_MAX - 1;
		memcpy(buf, RSTRING_PTR(s), (size_t)n);
		buf[n] = '\0';
		return (uint64_t)(uintptr_t)buf;
	}
	case KIND_FLOAT:
		if (!RB_FLOAT_TYPE_P(v))
			break;
		/* bpftrace has no floating point: a Float travels as its shortest exact decimal text */
		snprintf(buf, STR_ARG_MAX, "%.17g", RFLOAT_VALUE(v));
		return (uint64_t)(uintptr_t)buf;
	}
	rb_raise(rb_eArgError, "%s:%s argument %d must be %s, not %" PRIsVALUE, d->prov->name, d->name, i,
		 kind_name(d->kind[i]), rb_obj_class(v));
}

/*
 * probe.fire(*args) or probe.fire { args } -> true if fired, false if nobody listens.
 * Disabled, it costs one load and a branch, and the block is not called.
 */
static VALUE probe_fire(int argc, VALUE *argv, VALUE self)
{
	struct probe_def *d = ((struct probe_ref *)RTYPEDDATA_DATA(self))->def; /* always a Probe: see enabled? */
	/*
	 * A wrong count of given arguments is caught even while disabled (one compare); none given may mean a
	 * block, whose values, like the types, are checked when the probe fires.
	 */
	if (argc && argc != d->nargs)
		rb_raise(rb_eArgError, "%s:%s takes %d argument%s, got %d", d->prov->name, d->name, d->nargs, d->nargs == 1 ? "" : "s", argc);
	if (!d->sem || !*d->sem)
		return Qfalse;
	VALUE vals = Qnil;
	if (rb_block_given_p()) {
		if (argc)
			rb_raise(rb_eArgError, "give %s:%s its arguments or a block, not both", d->prov->name, d->name);
		vals = rb_yield(Qnil);
		if (d->nargs == 1 && !RB_TYPE_P(vals, T_ARRAY))
			vals = rb_ary_new_from_values(1, &vals);
		if (!RB_TYPE_P(vals, T_ARRAY))
			rb_raise(rb_eArgError, "the block of %s:%s must return an Array of %d values", d->prov->name, d->name, d->nargs);
		argc = (int)RARRAY_LEN(vals);
		argv = (VALUE *)RARRAY_CONST_PTR(vals);
		if (!d->sem) /* the block ran Ruby code: the provider may have been disabled meanwhile */
			return Qfalse;
	}
	if (argc != d->nargs)
		rb_raise(rb_eArgError, "%s:%s takes %d argument%s, got %d", d->prov->name, d->name, d->nargs, d->nargs == 1 ? "" : "s", argc);
	uint64_t a[USDT_MAX_ARGS] = { 0 };
	char buf[USDT_MAX_ARGS][STR_ARG_MAX];
	for (int i = 0; i < argc; i++)
		a[i] = fire_arg(d, i, argv[i], buf[i]);
	if (d->stub)
		d->stub(a[0], a[1], a[2], a[3], a[4], a[5]);
	if (d->nsubs && d->nargs && kind_is_int(d->kind[0]))
		for (int i = 0; i < d->nsubs; i++)
			hist_add(d->subs[i], (int64_t)a[0]);
	RB_GC_GUARD(vals);
	return Qtrue;
}

static VALUE probe_name(VALUE self)
{
	return rb_str_new_cstr(get_probe(self)->name);
}

static VALUE probe_provider(VALUE self)
{
	return ((struct probe_ref *)rb_check_typeddata(self, &probe_type))->provider;
}

static VALUE probe_to_s(VALUE self)
{
	struct probe_def *d = get_probe(self);
	VALUE s = rb_sprintf("%s:%s(", d->prov->name, d->name);
	for (int i = 0; i < d->nargs; i++)
		rb_str_catf(s, "%s%s", i ? ", " : "", kind_name(d->kind[i]));
	return rb_str_cat_cstr(s, ")");
}

/* ---- latency subscriptions (serve.c) ---- */

static void sub_attach(struct usdt_sub *s, struct probe_def *d)
{
	if (d->nsubs == PROBE_MAX_SUBS)
		return;
	d->subs[d->nsubs++] = s->hist;
	if (d->sem)
		__atomic_fetch_add(d->sem, 1, __ATOMIC_RELAXED);
}

static void sub_detach(struct usdt_sub *s, struct probe_def *d)
{
	for (int i = 0; i < d->nsubs; i++) {
		if (d->subs[i] != s->hist)
			continue;
		d->subs[i] = d->subs[--d->nsubs];
		if (d->sem)
			__atomic_fetch_sub(d->sem, 1, __ATOMIC_RELAXED);
		return;
	}
}

/* A provider going away (GC) must not leave subscriptions pointing into it. */
static void provider_detach_subs(struct provider *p)
{
	for (struct usdt_sub *s = subs; s; s = s->next)
		for (int i = 0; i < p->n; i++)
			sub_detach(s, p->probes[i]);
}

struct usdt_sub *usdt_subscribe(const char *spec, int *fd_out, VALUE *msg)
{
	char prov[USDT_NAME_MAX], name[USDT_NAME_MAX];
	const char *colon = strchr(spec, ':');
	if (!colon || (size_t)(colon - spec) >= sizeof(prov) || strlen(colon + 1) >= sizeof(name)) {
		*msg = rb_sprintf("bad probe '%s': PROVIDER:PROBE is expected", spec);
		return NULL;
	}
	memcpy(prov, spec, (size_t)(colon - spec));
	prov[colon - spec] = '\0';
	strcpy(name, colon + 1);
	struct probe_def *found[AGENT_MAX_SESSIONS];
	int nfound = 0, declared = 0;
	const char *why = NULL;
	for (long i = 0; i < RARRAY_LEN(enabled_providers) && nfound < AGENT_MAX_SESSIONS; i++) {
		struct provider *p = get_provider(rb_ary_entry(enabled_providers, i));
		if (strcmp(p->name, prov))
			continue;
		for (int k = 0; k < p->n; k++) {
			struct probe_def *d = p->probes[k];
			if (strcmp(d->name, name))
				continue;
			declared = 1;
			if (!d->nargs || !kind_is_int(d->kind[0]))
				why = "its first argument is not an Integer";
			else if (d->nsubs == PROBE_MAX_SUBS)
				why = "too many latency clients on it already";
			else
				found[nfound++] = d;
		}
	}
	if (!nfound) {
		*msg = declared ? rb_sprintf("cannot show the latency of %s:%s: %s", prov, name, why)
				: rb_sprintf("no enabled probe %s:%s in this process", prov, name);
		return NULL;
	}
	struct usdt_sub *s = calloc(1, sizeof(*s));
	int fd = memfd_create("rbscope-latency", MFD_CLOEXEC);
	size_t size = (sizeof(struct agent_hist) + 4095) & ~(size_t)4095;
	void *m = MAP_FAILED;
	if (s && fd >= 0 && ftruncate(fd, (off_t)size) == 0)
		m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		*msg = rb_sprintf("cannot make the histogram: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		free(s);
		return NULL;
	}
	s->hist = m;
	s->hist->magic = HIST_MAGIC;
	s->hist->version = HIST_VERSION;
	s->map_size = size;
	strcpy(s->provider, prov);
	strcpy(s->probe, name);
	s->next = subs;
	subs = s;
	for (int i = 0; i < nfound; i++)
		sub_attach(s, found[i]);
	*fd_out = fd;
	*msg = rb_sprintf("%s:%s: arg0 of %d probe%s", prov, name, nfound, nfound == 1 ? "" : "s");
	return s;
}

void usdt_unsubscribe(struct usdt_sub *s)
{
	for (struct usdt_sub **pp = &subs; *pp; pp = &(*pp)->next) {
		if (*pp != s)
			continue;
		*pp = s->next;
		break;
	}
	for (long i = 0; i < RARRAY_LEN(enabled_providers); i++) {
		struct provider *p = get_provider(rb_ary_entry(enabled_providers, i));
		for (int k = 0; k < p->n; k++)
			sub_detach(s, p->probes[k]);
	}
	munmap(s->hist, s->map_size);
	free(s);
}

/*
 * In a fork's child: the histograms are shared with the parent's clients, so
 * the child stops feeding them and lowers its semaphores back. Its probes stay
 * loaded and keep working for tracers of the child.
 */
void usdt_forked(void)
{
	if (!enabled_providers)
		return;
	for (long i = 0; i < RARRAY_LEN(enabled_providers); i++) {
		struct provider *p = get_provider(RARRAY_AREF(enabled_providers, i));
		for (int k = 0; k < p->n; k++) {
			struct probe_def *d = p->probes[k];
			if (d->sem && d->nsubs)
				*d->sem = (uint16_t)(*d->sem >= d->nsubs ? *d->sem - d->nsubs : 0);
			d->nsubs = 0;
		}
	}
	while (subs) {
		struct usdt_sub *s = subs;
		subs = s->next;
		munmap(s->hist, s->map_size);
		free(s);
	}
}

void usdt_init(VALUE mRbscope)
{
	enabled_providers = rb_ary_new();
	rb_gc_register_address(&enabled_providers);
	cProvider = rb_define_class_under(mRbscope, "Provider", rb_cObject);
	rb_define_alloc_func(cProvider, provider_alloc);
	rb_define_method(cProvider, "initialize", provider_init, 1);
	rb_define_method(cProvider, "probe", provider_probe, -1);
	rb_define_method(cProvider, "probes", provider_probes, 0);
	rb_define_method(cProvider, "enable", provider_enable, 0);
	rb_define_method(cProvider, "disable", provider_disable, 0);
	rb_define_method(cProvider, "enabled?", provider_enabled_p, 0);
	rb_define_method(cProvider, "name", provider_name, 0);
	rb_define_method(cProvider, "path", provider_path, 0);
	cProbe = rb_define_class_under(mRbscope, "Probe", rb_cObject);
	rb_undef_alloc_func(cProbe);
	rb_define_method(cProbe, "fire", probe_fire, -1);
	rb_define_method(cProbe, "enabled?", probe_enabled_p, 0);
	rb_define_method(cProbe, "name", probe_name, 0);
	rb_define_method(cProbe, "provider", probe_provider, 0);
	rb_define_method(cProbe, "to_s", probe_to_s, 0);
	rb_define_method(cProbe, "inspect", probe_to_s, 0);
}
