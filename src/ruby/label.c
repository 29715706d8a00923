/* label.c: the request a thread serves, told by its frames: a Sinatra route, a Rails action, a Rack env's method and path. */
#include "label.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"
#include "frames.h"
#include "locals.h"
#include "object.h"
#include "value.h"

/*
 * t->labels: a frame name's strtab id -> what it says (kind | label << 8);
 * an iseq | ISEQ_KEY -> where its env parameter is; a String | STRING_KEY
 * -> which Rack env key it is.
 */
enum { NAME_NOTHING = 1, NAME_ROUTE = 2, NAME_SEND_ACTION = 3, NAME_CALL = 4 };
#define ISEQ_KEY (1ULL << 63)
#define STRING_KEY (1ULL << 62)
enum { KEY_OTHER = 1, KEY_METHOD = 2, KEY_PATH = 3, KEY_ROUTE = 4, KEY_PARAMS = 5 };
#define LABEL_MAX 160 /* a label's bytes */
#define RHASH_HEAD 32 /* bytes of a Hash read to tell it unchanged: RBasic, and the table pointer or ar flags after it */

/* What the frame named sid says: a Sinatra route (and its label), Rails's send_action, a call(...), or nothing. */
static uint64_t classify(struct ruby_target *t, uint32_t sid)
{
	uint64_t *hit = map_get(&t->labels, sid);
	if (hit)
		return *hit;
	static const char *const verbs[] = { "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "LINK",
					     "UNLINK" };
	const char *name = strtab_get(&t->strs, sid), *hash = strchr(name, '#');
	size_t len = strlen(name);
	uint64_t what = NAME_NOTHING;
	if (!strcmp(name, "ActionController::BasicImplicitRender#send_action")) {
		what = NAME_SEND_ACTION;
	} else if (len > 5 && !strcmp(name + len - 5, "#call")) {
		what = NAME_CALL;
	} else if (hash) {
		for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
			size_t n = strlen(verbs[i]);
			if (!strncmp(hash + 1, verbs[i], n) && hash[1 + n] == ' ' && hash[2 + n] == '/') {
				char route[LABEL_MAX]; /* (a copy: interning may move the names) */
				snprintf(route, sizeof(route), "%s", hash + 1);
				uint32_t label = ruby_intern(t, route);
				what = label ? NAME_ROUTE | (uint64_t)label << 8 : NAME_NOTHING;
				break;
			}
		}
	}
	map_put(&t->labels, sid, what);
	return what;
}

/*
 * Is the iseq's first parameter named env? Then *size gets its local table's
 * size. Cached (its size, whether t->env_iseq_seen was told, whether env).
 */
static int env_param(struct ruby_target *t, uint64_t iseq, uint32_t *size)
{
	const struct ruby_layout *L = t->L;
	uint64_t *hit = map_get(&t->labels, iseq | ISEQ_KEY);
	if (hit) {
		*size = (uint32_t)(*hit >> 2);
		if ((*hit & 1) && !(*hit & 2) && t->env_iseq_seen) { /* (found before there was a capture to tell) */
			t->env_iseq_seen(t->env_iseq_ctx, iseq, ((uint64_t)*size + 2) * 8, 0);
			*hit |= 2;
		}
		return (int)(*hit & 1);
	}
	uint64_t body, table, id;
	uint32_t params = 0, n = 0;
	int found = L->body_local_table >= 0 && L->body_param_size >= 0 &&
		    !mem_read_u64(&t->mem, iseq + (uint64_t)L->iseq_body, &body) &&
		    !mem_read_u64(&t->mem, body + (uint64_t)L->body_local_table, &table) &&
		    !mem_read_u32(&t->mem, body + (uint64_t)L->body_local_table_size, &n) &&
		    !mem_read_u32(&t->mem, body + (uint64_t)L->body_param_size, &params) && params >= 1 && n >= 1 &&
		    n < 65536 && !mem_read_u64(&t->mem, table, &id);
	uint32_t name = found ? ruby_id_name(t, id) : 0;
	found = name && !strcmp(strtab_get(&t->strs, name), "env");
	int told = found && t->env_iseq_seen;
	if (told)
		t->env_iseq_seen(t->env_iseq_ctx, iseq, ((uint64_t)n + 2) * 8, 0);
	map_put(&t->labels, iseq | ISEQ_KEY, (uint64_t)n << 2 | (uint64_t)told << 1 | (uint64_t)found);
	*size = n;
	return found;
}

/* Which Rack env key the String k is (read once per String). */
static int key_kind(struct ruby_target *t, uint64_t k)
{
	uint64_t *hit = map_get(&t->labels, k | STRING_KEY), len;
	if (hit)
		return (int)*hit;
	char s[48];
	int n = ruby_string_peek(t, k, s, sizeof(s), &len, NULL);
	int kind = n < 0 || len >= sizeof(s) ? KEY_OTHER : !strcmp(s, "REQUEST_METHOD") ? KEY_METHOD :
		   !strcmp(s, "PATH_INFO") ? KEY_PATH : !strcmp(s, "sinatra.route") ? KEY_ROUTE :
		   !strcmp(s, "action_dispatch.request.path_parameters") ? KEY_PARAMS : KEY_OTHER;
	if (n >= 0) /* (a key that did not read is asked again) */
		map_put(&t->labels, k | STRING_KEY, (uint64_t)kind);
	return kind;
}

/* Is a path segment an id (a number, a long hex string, a UUID) rather than a name? */
static int id_segment(const char *s, size_t n)
{
	size_t digits = 0, hex = 0;
	for (size_t i = 0; i < n; i++) {
		digits += isdigit((unsigned char)s[i]) != 0;
		hex += isxdigit((unsigned char)s[i]) || s[i] == '-';
	}
	return n && (digits == n || (hex == n && n >= 16 && digits));
}

/* Rails's path parameters ({controller: "admin/orders", action: "show"}) as "Admin::OrdersController#show", or 0. */
static uint32_t rails_label(struct ruby_target *t, uint64_t params)
{
	uint64_t flags, keys[8], vals[8], size, len;
	char c[96] = "", a[64] = "", label[LABEL_MAX], name[32];
	if (ruby_type_of(t, params, &flags) != t->L->t_hash)
		return 0;
	int n = ruby_hash_pairs(t, params, flags, keys, vals, 8, &size);
	for (int i = 0; i < n; i++) {
		uint64_t id = (keys[i] & ~(~0ULL << t->L->special_shift)) == (uint64_t)t->L->symbol_flag ?
				      keys[i] >> t->L->special_shift : 0; /* (a static Symbol's ID) */
		uint32_t sid = id ? ruby_id_name(t, id) : 0;
		snprintf(name, sizeof(name), "%s", sid ? strtab_get(&t->strs, sid) : "");
		if (!strcmp(name, "controller") && ruby_string_peek(t, vals[i], c, sizeof(c), &len, NULL) < 0)
			c[0] = '\0';
		else if (!strcmp(name, "action") && ruby_string_peek(t, vals[i], a, sizeof(a), &len, NULL) < 0)
			a[0] = '\0';
	}
	if (!c[0] || !a[0])
		return 0;
	size_t k = 0; /* camelized, "/" as "::", then "Controller#" and the action */
	for (const char *s = c; *s && k < sizeof(label) - 32; s++) {
		if (*s == '/')
			k += (size_t)snprintf(label + k, sizeof(label) - k, "::");
		else if (*s != '_')
			label[k++] = (s == c || s[-1] == '/' || s[-1] == '_') ? (char)toupper((unsigned char)*s) : *s;
	}
	snprintf(label + k, sizeof(label) - k, "Controller#%s", a);
	return ruby_intern(t, label);
}

/* What a Rack env Hash was when its label was read: enough to tell, in one read, that it is still so. */
struct env_seen {
	uint64_t slot;  /* where it was found: the call(env) frame's env parameter */
	uint64_t env;   /* the Hash */
	uint64_t head[RHASH_HEAD / 8]; /* its first bytes: flags (type, ar size, st or not) and table pointer */
	uint64_t table; /* its table, and its entry count if an st_table */
	uint64_t size;
	uint64_t gc;    /* the GC's count when read */
	uint64_t told;  /* t->samples + 1 when a capture last told it unchanged (or read it); 0: never */
	uint32_t label;
};

#define ENV_SEEN 64 /* envs remembered, by slot (a server thread's call(env) sits at one place request after request) */

struct label_envs {
	struct env_seen e[ENV_SEEN];
};

static void label_envs_free(struct ruby_target *t)
{
	free(t->label_envs);
	t->label_envs = NULL;
}

/* The word at addr as the caller read it with the frames: 1, or 0 when it has none there. */
static int word_copied(const struct label_ctx *cx, uint64_t addr, uint64_t *v)
{
	if (cx && cx->word_at && cx->word_at == addr) {
		*v = cx->word;
		return 1;
	}
	if (cx && cx->local_at && cx->local_at == addr) {
		*v = cx->local;
		return 1;
	}
	for (int i = 0; cx && cx->words && i < cx->words->n && i < LABEL_WORDS; i++)
		if (cx->words->w[i].at == addr) {
			*v = cx->words->w[i].v;
			return 1;
		}
	if (!cx || !cx->vs || addr < cx->vs_lo || addr + 8 > cx->vs_hi || addr + 8 < addr)
		return 0;
	memcpy(v, cx->vs + (addr - cx->vs_lo), 8);
	return 1;
}

/* May the word at addr, not copied with the frames, be read now? Not from the thread's own VM stack. */
static int read_later(const struct label_ctx *cx, uint64_t addr)
{
	return !cx || addr < cx->stack_lo || addr >= cx->stack_hi;
}

/* Note that a label was read from the word at addr, whose value was v (cx->seen). */
static void word_seen(const struct label_ctx *cx, uint64_t addr, uint64_t v)
{
	struct label_words *s = cx ? cx->seen : NULL;
	if (!s || s->n > LABEL_WORDS)
		return;
	for (int i = 0; i < s->n; i++)
		if (s->w[i].at == addr)
			return;
	if (s->n == LABEL_WORDS)
		s->n++;
	else
		s->w[s->n++] = (struct label_word){ addr, v };
}

/*
 * The label of a Rack env Hash (its head: its first RHASH_HEAD bytes): its
 * Sinatra route (sinatra.route) or Rails action (its path parameters) once
 * routed, else "METHOD /path" with the path's ids as :id; 0 when it has no
 * method and path. *table and *size get its table and its size.
 */
static uint32_t rack_label(struct ruby_target *t, uint64_t env, const uint64_t *head, uint64_t *table, uint64_t *size)
{
	const struct ruby_layout *L = t->L;
	uint64_t flags = head[L->rbasic_flags / 8], keys[RUBY_ST_SCAN], vals[RUBY_ST_SCAN], len;
	uint64_t method = 0, path = 0, route = 0, params = 0;
	if ((flags & (uint64_t)L->t_mask) != (uint64_t)L->t_hash || (L->rhash_table_ptr < 0 && L->rhash_table_inline < 0))
		return 0;
	*table = L->rhash_table_ptr >= 0 ? head[L->rhash_table_ptr / 8] : env + (uint64_t)L->rhash_table_inline;
	int n = ruby_hash_table_pairs(t, flags, *table, keys, vals, RUBY_ST_SCAN, size);
	for (int i = 0; i < n; i++) {
		int kind = ruby_is_heap(t, keys[i]) ? key_kind(t, keys[i]) : KEY_OTHER;
		if (kind == KEY_METHOD)
			method = vals[i];
		else if (kind == KEY_PATH)
			path = vals[i];
		else if (kind == KEY_ROUTE)
			route = vals[i];
		else if (kind == KEY_PARAMS)
			params = vals[i];
	}
	char m[16], p[LABEL_MAX], label[LABEL_MAX + 24];
	if (route && ruby_string_peek(t, route, p, sizeof(p), &len, NULL) > 0)
		return ruby_intern(t, p);
	uint32_t rails = params ? rails_label(t, params) : 0;
	if (rails)
		return rails;
	if (!ruby_is_heap(t, method) || !ruby_is_heap(t, path))
		return 0;
	/* the method and the path: one read (a short String's bytes come with its head) */
	unsigned char mh[RUBY_STRING_HEAD], ph[RUBY_STRING_HEAD];
	struct mem_iov iov[2] = { { method, mh, sizeof(mh) }, { path, ph, sizeof(ph) } };
	if (t->mem.readv(&t->mem, iov, 2) || ruby_string_from_head(t, method, mh, m, sizeof(m), &len, NULL) < 0 ||
	    ruby_string_from_head(t, path, ph, p, sizeof(p), &len, NULL) < 0 || !m[0] || p[0] != '/')
		return 0;
	size_t k = (size_t)snprintf(label, sizeof(label), "%s ", m);
	for (const char *s = p; *s && k < sizeof(label) - 4;) {
		const char *end = strchr(s + 1, '/');
		size_t seg = end ? (size_t)(end - s) : strlen(s);
		if (id_segment(s + 1, seg - 1))
			k += (size_t)snprintf(label + k, sizeof(label) - k, "/:id");
		else
			k += (size_t)snprintf(label + k, sizeof(label) - k, "%.*s", (int)seg, s);
		s += seg;
	}
	return ruby_intern(t, label);
}

/*
 * The label of the Rack env in the stack slot at slot. Read in full (four
 * reads, rack_label) the first time; then, while the GC's count is the one
 * it was read with, the Hash at that address is the same Hash (an object's
 * slot is given to another only after a GC has started and found it dead),
 * and while its head (its type, table and, for a small Hash, size) and its
 * st_table's entry count are as they were, it has gained no key since
 * (routing adds sinatra.route or Rails's path parameters): its label
 * stands, for one read of the slot, the head and the count. (A key whose
 * value changed in place, PATH_INFO under a Rack::URLMap, is not seen: the
 * label stays the path the request came with.)
 */
static uint32_t env_label(struct ruby_target *t, uint64_t slot, const struct label_ctx *cx)
{
	const struct ruby_layout *L = t->L;
	struct env_seen *e = NULL;
	if (cx && cx->gc_known &&
	    (t->label_envs || (!ruby_target_add_cache(t, label_envs_free) && (t->label_envs = calloc(1, sizeof(*t->label_envs))))))
		e = &t->label_envs->e[(slot * 0x9e3779b97f4a7c15ULL) >> 58 & (ENV_SEEN - 1)];
	uint64_t env = 0, head[RHASH_HEAD / 8], size = 0;
	int have_env = word_copied(cx, slot, &env);
	if (!have_env && !read_later(cx, slot))
		return 0;
	if (e && e->slot == slot && e->gc == cx->gc && e->label && (!have_env || env == e->env)) {
		/* The walker's read of the GVL holder's env, which a capture drained at this tick told unchanged
		   moments ago (its stack as the walker reads it stands for its time off its CPU only, if for
		   any): as told then. (The capture's frames come first; the walker's count says no GC since.) */
		if (have_env && cx->by == 1 && e->told == t->samples) {
			word_seen(cx, slot, env);
			return e->label;
		}
		int st_size = !!(e->head[L->rbasic_flags / 8] & (uint64_t)L->rhash_st_flag);
		struct mem_iov iov[3];
		int k = 0;
		if (!have_env)
			iov[k++] = (struct mem_iov){ slot, &env, 8 };
		iov[k++] = (struct mem_iov){ e->env, head, sizeof(head) };
		if (st_size)
			iov[k++] = (struct mem_iov){ e->table + (uint64_t)L->st_num_entries, &size, 8 };
		if (t->mem.readv(&t->mem, iov, k) == 0) {
			have_env = 1;
			word_seen(cx, slot, env);
			if (env == e->env && !memcmp(head, e->head, sizeof(head)) && (!st_size || size == e->size)) {
				if (cx->by == 2)
					e->told = t->samples + 1;
				return e->label;
			}
		}
	}
	if (!have_env && mem_read_u64(&t->mem, slot, &env))
		return 0;
	word_seen(cx, slot, env);
	if (!ruby_is_heap(t, env) || mem_read(&t->mem, env, head, sizeof(head)))
		return 0;
	uint64_t table = 0;
	uint32_t label = rack_label(t, env, head, &table, &size);
	if (e && label) {
		*e = (struct env_seen){ .slot = slot, .env = env, .table = table, .size = size, .gc = cx->gc, .label = label,
					.told = cx->by == 2 ? t->samples + 1 : 0 };
		memcpy(e->head, head, sizeof(head));
	}
	return label;
}

#define CONTROLLER_IVARS 32 /* a controller's instance variables looked through for @_action_name */

/* A Rails controller's action as "OrdersController#show": its class and its @_action_name; 0 when they do not read. */
static uint32_t controller_action(struct ruby_target *t, uint64_t self)
{
	const struct ruby_layout *L = t->L;
	uint64_t w[2], len;
	struct ruby_ivar iv[CONTROLLER_IVARS];
	int total, singleton = 0;
	if (!ruby_is_heap(t, self) || mem_read(&t->mem, self, w, sizeof(w)) ||
	    (w[L->rbasic_flags / 8] & (uint64_t)L->t_mask) != (uint64_t)L->t_object)
		return 0;
	int n = ruby_object_ivars(t, self, w[L->rbasic_flags / 8], w[L->rbasic_klass / 8], iv, CONTROLLER_IVARS, &total);
	for (int i = 0; i < n; i++) {
		uint32_t name = ruby_id_name(t, iv[i].id);
		char action[64], label[LABEL_MAX];
		if (!name || strcmp(strtab_get(&t->strs, name), "@_action_name") ||
		    ruby_string_peek(t, iv[i].value, action, sizeof(action), &len, NULL) <= 0)
			continue;
		uint32_t cls = ruby_class_name(t, w[L->rbasic_klass / 8], &singleton);
		if (!cls || singleton)
			return 0;
		snprintf(label, sizeof(label), "%s#%s", strtab_get(&t->strs, cls), action);
		return ruby_intern(t, label);
	}
	return 0;
}

uint32_t ruby_request_label(struct ruby_target *t, const struct ruby_frame *frames, const struct ruby_frame_at *at,
			    int n, const struct label_ctx *cx)
{
	int call = -1, send = -1; /* the innermost call(...), and Rails's send_action */
	for (int j = 0; j < n; j++) {
		const struct ruby_frame *f = &frames[j];
		if (f->kind != FRAME_RUBY && f->kind != FRAME_CFUNC && f->kind != FRAME_WAIT)
			continue;
		uint64_t what = classify(t, f->name);
		if ((what & 0xff) == NAME_ROUTE)
			return (uint32_t)(what >> 8);
		if ((what & 0xff) == NAME_SEND_ACTION && send < 0)
			send = j;
		if ((what & 0xff) == NAME_CALL && f->kind == FRAME_RUBY && call < 0)
			call = j;
	}
	/*
	 * A Rack app's call(env): the env of the innermost one whose first
	 * parameter is env. Under Rails's send_action too: its callee is the
	 * action while the action runs, but the implicit render after it
	 * (default_render, in a Kernel#tap) is called from there as well, and
	 * the env's path parameters name the action either way. When the env
	 * does not read: the controller's class and @_action_name, else the
	 * callee.
	 */
	for (int j = call; at && j >= 0 && j < n; j++) {
		uint32_t size;
		if (frames[j].kind != FRAME_RUBY || (classify(t, frames[j].name) & 0xff) != NAME_CALL || !at[j].iseq ||
		    !env_param(t, at[j].iseq, &size))
			continue;
		uint32_t label = env_label(t, at[j].ep - ((uint64_t)size + 2) * 8, cx); /* parameter 0: ep[-(size + 2)] */
		if (label)
			return label;
		break;
	}
	uint32_t action = send >= 0 && at ? controller_action(t, at[send].self) : 0; /* (its self: the controller) */
	for (int k = send - 1; send >= 0 && !action && k >= 0; k--)
		if (frames[k].kind == FRAME_RUBY || frames[k].kind == FRAME_WAIT)
			action = frames[k].name;
	return action;
}

/* Is s a name Ruby could give a local variable (or, after its @, an instance variable)? */
static int ruby_identifier(const char *s)
{
	if (!*s || !(*s == '_' || islower((unsigned char)*s) || isupper((unsigned char)*s) || (unsigned char)*s >= 0x80))
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || isalnum((unsigned char)*s) || (unsigned char)*s >= 0x80))
			return 0;
	return 1;
}

int ruby_user_label_parse(const char *spec, struct user_label *out, char *msg, size_t cap)
{
	memset(out, 0, sizeof(*out));
	const char *eq = strchr(spec, '='), *expr = eq ? eq + 1 : spec;
	size_t klen = eq ? (size_t)(eq - spec) : 0;
	char var[80];
	static const char tc[] = "Thread.current[:";
	if (!strncmp(expr, tc, sizeof(tc) - 1)) {
		const char *k = expr + sizeof(tc) - 1, *end = strchr(k, ']');
		if (!end || end[1] || end == k || (size_t)(end - k) >= sizeof(out->var)) {
			snprintf(msg, cap, "--label '%s': a fiber-local reads Thread.current[:key]", spec);
			return ERR_USAGE;
		}
		out->kind = USER_LABEL_FIBER;
		snprintf(out->var, sizeof(out->var), "%.*s", (int)(end - k), k);
		snprintf(var, sizeof(var), "%s", out->var);
	} else {
		const char *colon = strrchr(expr, ':');
		if (colon && *expr != '@') { /* Klass#meth:var: the method's frames only */
			size_t mlen = (size_t)(colon - expr);
			if (!mlen || mlen >= sizeof(out->method) || !memchr(expr, '#', mlen) == !memchr(expr, '.', mlen)) {
				snprintf(msg, cap, "--label '%s': a local of one method reads Klass#meth:var or Klass.meth:var",
					 spec);
				return ERR_USAGE;
			}
			snprintf(out->method, sizeof(out->method), "%.*s", (int)mlen, expr);
			expr = colon + 1;
			if (*expr == '@') {
				snprintf(msg, cap, "--label '%s': Klass#meth: names a local's method; @name is self's", spec);
				return ERR_USAGE;
			}
		}
		out->kind = *expr == '@' ? USER_LABEL_IVAR : USER_LABEL_LOCAL;
		if (strlen(expr) >= sizeof(out->var) || !ruby_identifier(expr + (*expr == '@')) ||
		    (*expr != '@' && isupper((unsigned char)*expr))) {
			snprintf(msg, cap, "--label '%s': EXPR is a local variable's name, @name or Thread.current[:key]",
				 spec);
			return ERR_USAGE;
		}
		snprintf(out->var, sizeof(out->var), "%s", expr);
		snprintf(var, sizeof(var), "%s", expr + (*expr == '@'));
	}
	if (eq && !klen) {
		snprintf(msg, cap, "--label '%s': NAME is empty (NAME=EXPR, or EXPR alone: named after its variable)", spec);
		return ERR_USAGE;
	}
	if (!klen) { /* named after its variable */
		snprintf(out->key, sizeof(out->key), "%.*s", (int)(sizeof(out->key) - 1), var);
		klen = strlen(out->key);
	} else if (klen >= sizeof(out->key)) {
		snprintf(msg, cap, "--label '%s': NAME is at most %zu bytes", spec, sizeof(out->key) - 1);
		return ERR_USAGE;
	} else {
		snprintf(out->key, sizeof(out->key), "%.*s", (int)klen, spec);
	}
	for (const char *c = out->key; *c; c++)
		if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '.' || *c == '-')) {
			snprintf(msg, cap, "--label '%s': NAME has letters, digits, '_', '.' and '-' only", spec);
			return ERR_USAGE;
		}
	if (!strcmp(out->key, "endpoint")) {
		snprintf(msg, cap, "--label '%s': endpoint is the request's label: give another NAME", spec);
		return ERR_USAGE;
	}
	return 0;
}

/*
 * Where the local variable of label k lives in an iseq's frames: cached in
 * t->labels under the iseq's address | LOCAL_KEY | k << 56, as its local
 * table's size << 32 | TOLD (the BPF capture was told to take it) | its
 * index + 1, or NOT_THERE.
 */
#define LOCAL_KEY (1ULL << 61)
#define NOT_THERE (1ULL << 31)
#define TOLD (1ULL << 30)
static int local_slot(struct ruby_target *t, uint64_t iseq, int k, const char *name, uint32_t *size, uint32_t *idx)
{
	const struct ruby_layout *L = t->L;
	uint64_t key = iseq | LOCAL_KEY | (uint64_t)k << 56, *hit = map_get(&t->labels, key);
	if (hit) {
		*size = (uint32_t)(*hit >> 32);
		*idx = (uint32_t)(*hit & (TOLD - 1)) - 1;
		if (*hit != NOT_THERE && !(*hit & TOLD) && t->env_iseq_seen) { /* (a capture opened since) */
			t->env_iseq_seen(t->env_iseq_ctx, iseq, ((uint64_t)*size - *idx + 2) * 8, 1);
			*hit |= TOLD;
		}
		return *hit != NOT_THERE;
	}
	uint64_t body, table;
	uint32_t n = 0;
	if (L->body_local_table < 0 || L->body_local_table_size < 0 ||
	    mem_read_u64(&t->mem, iseq + (uint64_t)L->iseq_body, &body) ||
	    mem_read_u64(&t->mem, body + (uint64_t)L->body_local_table, &table) ||
	    mem_read_u32(&t->mem, body + (uint64_t)L->body_local_table_size, &n) || n > 65536 || (n && !table))
		return 0; /* (unread: asked again) */
	uint64_t ids[256];
	uint64_t found = NOT_THERE;
	for (uint32_t i = 0; i < n && found == NOT_THERE; i += 256) {
		uint32_t m = n - i < 256 ? n - i : 256;
		if (mem_read(&t->mem, table + (uint64_t)i * 8, ids, (size_t)m * 8))
			return 0;
		for (uint32_t j = 0; j < m; j++) {
			uint32_t id = ids[j] ? ruby_id_name(t, ids[j]) : 0;
			if (id && !strcmp(strtab_get(&t->strs, id), name)) {
				found = (uint64_t)n << 32 | (i + j + 1);
				break;
			}
		}
	}
	*size = (uint32_t)(found >> 32);
	*idx = (uint32_t)found - 1;
	if (found != NOT_THERE && t->env_iseq_seen) {
		/* the capture takes the variable's word as it samples, as it takes a Rack env (one a sample: the
		   innermost frame's it was told of) */
		t->env_iseq_seen(t->env_iseq_ctx, iseq, ((uint64_t)*size - *idx + 2) * 8, 1);
		found |= TOLD;
	}
	map_put(&t->labels, key, found);
	return found != NOT_THERE;
}

/*
 * The value of the instance variable named name (with its @) of the object
 * v, if it has one (label k's). An object found without it is not read again
 * for k until the GC has run (t->ivar_misses, direct-mapped: the object and
 * label, and the GC's count then): a deep stack's selves are most of them
 * the framework's.
 */
static int ivar_of(struct ruby_target *t, uint64_t v, int k, const char *name, uint64_t *value)
{
	const struct ruby_layout *L = t->L;
	uint64_t hdr[2], key = v | (uint64_t)k << 56;
	uint64_t *miss = t->ivar_misses[(key * 0x9E3779B97F4A7C15ULL) >> 56];
	if (t->gc_count_seen && miss[0] == key && miss[1] == t->gc_count_seen)
		return 0;
	if (!ruby_is_heap(t, v) || mem_read(&t->mem, v, hdr, sizeof(hdr)))
		return 0;
	uint64_t flags = hdr[L->rbasic_flags / 8], klass = hdr[L->rbasic_klass / 8];
	if ((int)(flags & (uint64_t)L->t_mask) != L->t_object || !klass)
		return 0;
	struct ruby_ivar iv[64];
	int total = 0, n = ruby_object_ivars(t, v, flags, klass, iv, 64, &total);
	for (int i = 0; i < n; i++) {
		uint32_t id = ruby_id_name(t, iv[i].id);
		if (id && !strcmp(strtab_get(&t->strs, id), name)) {
			*value = iv[i].value;
			return 1;
		}
	}
	if (n >= 0 && t->gc_count_seen) {
		miss[0] = key;
		miss[1] = t->gc_count_seen;
	}
	return 0;
}

/*
 * The word at addr: as the capture took it, from the walker's copy of the
 * value stack, or read now (a frame's env on the heap); never read now for a
 * capture's sample (the tick comes up to a period after it) nor from the
 * walker's thread's own VM stack outside its copy: the frame may have
 * returned since and its slot hold another call's word, which would label the
 * sample wrong. 1, or 0 when there is none.
 */
static int word_at(struct ruby_target *t, uint64_t addr, const struct label_ctx *cx, uint64_t *w)
{
	if (!word_copied(cx, addr, w) && ((cx && cx->by == 2) || !read_later(cx, addr) || mem_read_u64(&t->mem, addr, w)))
		return 0;
	word_seen(cx, addr, *w);
	return 1;
}

int ruby_user_labels(struct ruby_target *t, uint64_t th, const struct ruby_frame *frames,
		     const struct ruby_frame_at *at, int n, const struct label_ctx *cx, struct ruby_label_value *out)
{
	int found = 0;
	for (int k = 0; k < t->nuser_labels && k < USER_LABELS_MAX; k++) {
		const struct user_label *u = &t->user_labels[k];
		char text[USER_LABEL_TEXT + 1] = "";
		int have = 0;
		uint64_t value = 0, self_seen = 0;
		if (u->kind == USER_LABEL_FIBER) {
			have = ruby_fiber_local(t, th, u->var, &value) > 0;
		} else if (at) {
			for (int i = 0; i < n && !have; i++) {
				if (frames[i].kind != FRAME_RUBY && frames[i].kind != FRAME_CFUNC)
					continue;
				uint32_t size, idx;
				if (u->kind == USER_LABEL_LOCAL && frames[i].kind == FRAME_RUBY && at[i].iseq && at[i].ep &&
				    (!u->method[0] || !strcmp(strtab_get(&t->strs, frames[i].name), u->method)) &&
				    local_slot(t, at[i].iseq, k, u->var, &size, &idx))
					have = word_at(t, at[i].ep - ((uint64_t)size - idx + 2) * 8, cx, &value);
				else if (u->kind == USER_LABEL_IVAR && at[i].self && at[i].self != self_seen) {
					self_seen = at[i].self; /* (a method's frames share their self: asked once) */
					have = ivar_of(t, at[i].self, k, u->var, &value);
				}
			}
		}
		if (!have)
			continue;
		ruby_value_label(t, value, text, sizeof(text));
		char kv[sizeof(u->key) + USER_LABEL_TEXT + 2];
		snprintf(kv, sizeof(kv), "%s=%s", u->key, text);
		uint32_t tid = ruby_intern(t, kv), key = ruby_intern(t, u->key);
		if (tid && key)
			out[found++] = (struct ruby_label_value){ tid, key };
	}
	return found;
}
