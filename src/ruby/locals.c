/* locals.c: a frame's local variables and a thread's fiber-local and thread variables, read from outside (snapshot --locals). */
#include "locals.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"
#include "frames.h"
#include "object.h"

#define LOCAL_TABLE_MAX 65536 /* a local table longer than this is not one */

/* Is the name one Ruby's binding.local_variables would list (not `*`, `&`, `...` or an internal one)? */
static int user_local(const char *s)
{
	unsigned char c = (unsigned char)s[0];
	return c == '_' || (c >= 'a' && c <= 'z') || c >= 0x80;
}

static int add(struct ruby_target *t, struct ruby_locals *out, uint32_t name, int arg, uint64_t v)
{
	if (out->n >= LOCALS_MAX) {
		out->more++;
		return 0;
	}
	if (!out->v && !(out->v = calloc(LOCALS_MAX, sizeof(*out->v))))
		return -ENOMEM;
	struct ruby_local *l = &out->v[out->n];
	l->name = name;
	l->arg = arg;
	int err = ruby_value_show(t, v, &l->value);
	if (!err)
		out->n++;
	return err;
}

int ruby_frame_locals(struct ruby_target *t, const struct ruby_frame_at *at, struct ruby_locals *out)
{
	const struct ruby_layout *L = t->L;
	memset(out, 0, sizeof(*out));
	if (!at->iseq || !at->ep)
		return 0;
	if (L->body_local_table < 0 || L->body_local_table_size < 0)
		return ERR_UNSUPPORTED;
	uint64_t body, table;
	uint32_t size, params = 0;
	int err = mem_read_u64(&t->mem, at->iseq + (uint64_t)L->iseq_body, &body);
	err = err ?: mem_read_u64(&t->mem, body + (uint64_t)L->body_local_table, &table);
	err = err ?: mem_read_u32(&t->mem, body + (uint64_t)L->body_local_table_size, &size);
	if (!err && L->body_param_size >= 0)
		err = mem_read_u32(&t->mem, body + (uint64_t)L->body_param_size, &params);
	if (err)
		return err;
	if (!size)
		return 0;
	if (size > LOCAL_TABLE_MAX || !table)
		return ERR_CORRUPT;
	/* Local i lives at ep[-(size - i + 2)]: below the env's three words (method entry, specval, flags). */
	uint64_t *ids = malloc((size_t)size * 8), *vals = malloc((size_t)size * 8);
	if (!ids || !vals) {
		err = -ENOMEM;
		goto out;
	}
	if ((err = mem_read(&t->mem, table, ids, (size_t)size * 8)) ||
	    (err = mem_read(&t->mem, at->ep - ((uint64_t)size + 2) * 8, vals, (size_t)size * 8)))
		goto out;
	for (uint32_t i = 0; i < size && !err; i++) {
		uint32_t name = ids[i] ? ruby_id_name(t, ids[i]) : 0;
		if (name && user_local(strtab_get(&t->strs, name)))
			err = add(t, out, name, i < params, vals[i]);
	}
out:
	free(ids);
	free(vals);
	if (err)
		ruby_locals_free(out);
	return err;
}

/* Called with each fiber-local's name and value until it returns non-zero (returned). */
typedef int (*fiber_local_fn)(struct ruby_target *t, uint32_t name, uint64_t value, void *ctx);

/* 2.7: an st_table of ID -> value (its first RUBY_ST_SCAN: more fiber-locals than that are not shown). */
static int st_locals(struct ruby_target *t, uint64_t tbl, fiber_local_fn fn, void *ctx)
{
	uint64_t keys[RUBY_ST_SCAN], vals[RUBY_ST_SCAN];
	int n = ruby_st_pairs(t, tbl, keys, vals), err = n < 0 ? n : 0;
	for (int i = 0; i < n && !err; i++) {
		uint32_t name = ruby_id_name(t, keys[i]);
		if (name)
			err = fn(t, name, vals[i], ctx);
	}
	return err;
}

/* 3.0+: an rb_id_table, its keys ID serials (0: an empty slot). */
static int idtbl_locals(struct ruby_target *t, uint64_t tbl, fiber_local_fn fn, void *ctx)
{
	const struct ruby_layout *L = t->L;
	int32_t capa;
	uint64_t items;
	int err = mem_read(&t->mem, tbl + (uint64_t)L->idtbl_capa, &capa, sizeof(capa));
	err = err ?: mem_read_u64(&t->mem, tbl + (uint64_t)L->idtbl_items, &items);
	if (err)
		return err;
	size_t isz = (size_t)L->id_item_size;
	if (capa < 0 || capa > LOCALS_MAX * 8 || isz > 32)
		return ERR_CORRUPT;
	if (!capa || !items)
		return 0;
	unsigned char *e = malloc((size_t)capa * isz);
	if (!e)
		return -ENOMEM;
	err = mem_read(&t->mem, items, e, (size_t)capa * isz);
	for (int32_t i = 0; i < capa && !err; i++) {
		uint32_t serial;
		uint64_t val;
		memcpy(&serial, e + (size_t)i * isz + L->id_item_key, 4);
		memcpy(&val, e + (size_t)i * isz + L->id_item_val, 8);
		if (!serial)
			continue;
		/* an ID of that serial (the scope bits do not matter to its name) */
		uint64_t id = serial > (uint64_t)L->last_op_id ? (uint64_t)serial << L->id_scope_shift | 1 : serial;
		uint32_t name = ruby_id_name(t, id);
		if (name)
			err = fn(t, name, val, ctx);
	}
	free(e);
	return err;
}

/* The fiber-locals of the fiber th runs, each to fn. */
static int fiber_locals_each(struct ruby_target *t, uint64_t th, fiber_local_fn fn, void *ctx)
{
	const struct ruby_layout *L = t->L;
	if (L->ec_local_storage < 0)
		return ERR_UNSUPPORTED;
	uint64_t ec, tbl;
	int err = mem_read_u64(&t->mem, th + (uint64_t)L->th_ec, &ec);
	err = err ?: mem_read_u64(&t->mem, ec + (uint64_t)L->ec_local_storage, &tbl);
	if (err || !tbl)
		return err;
	return L->ec_local_storage_idtbl ? idtbl_locals(t, tbl, fn, ctx) : st_locals(t, tbl, fn, ctx);
}

static int add_shown(struct ruby_target *t, uint32_t name, uint64_t value, void *ctx)
{
	return add(t, ctx, name, 0, value);
}

int ruby_fiber_locals(struct ruby_target *t, uint64_t th, struct ruby_locals *out)
{
	memset(out, 0, sizeof(*out));
	int err = fiber_locals_each(t, th, add_shown, out);
	if (err)
		ruby_locals_free(out);
	return err;
}

struct one_local {
	const char *key;
	uint64_t value;
	int found;
};

static int match(struct ruby_target *t, uint32_t name, uint64_t value, void *ctx)
{
	struct one_local *o = ctx;
	if (strcmp(strtab_get(&t->strs, name), o->key))
		return 0;
	o->value = value;
	o->found = 1;
	return 1;
}

int ruby_fiber_local(struct ruby_target *t, uint64_t th, const char *key, uint64_t *value)
{
	struct one_local o = { key, 0, 0 };
	int err = fiber_locals_each(t, th, match, &o);
	if (err < 0)
		return err;
	*value = o.value;
	return o.found;
}

#define THREAD_IVARS 32 /* a Thread's generic instance variables looked through for "locals" */

int ruby_thread_variables_read(const struct ruby_target *t)
{
	return t->generic_ivtbl && t->L->gen_ivtbl_ivptr >= 0 && t->L->th_self >= 0;
}

int ruby_thread_variables(struct ruby_target *t, uint64_t th, struct ruby_locals *out)
{
	const struct ruby_layout *L = t->L;
	uint64_t self, hdr[2], hash = 0, hflags, size, keys[RUBY_ST_SCAN], vals[RUBY_ST_SCAN];
	struct ruby_ivar iv[THREAD_IVARS];
	int total;
	memset(out, 0, sizeof(*out));
	if (L->th_self < 0)
		return ERR_UNSUPPORTED;
	int err = mem_read_u64(&t->mem, th + (uint64_t)L->th_self, &self);
	if (err || !ruby_is_heap(t, self) || (err = mem_read(&t->mem, self, hdr, sizeof(hdr))))
		return err ? err : ERR_TORN;
	int n = ruby_generic_ivars(t, self, hdr[L->rbasic_flags / 8], hdr[L->rbasic_klass / 8], iv, THREAD_IVARS, &total);
	for (int i = 0; i < n && !hash; i++) {
		uint32_t name = ruby_id_name(t, iv[i].id);
		if (name && !strcmp(strtab_get(&t->strs, name), "locals"))
			hash = iv[i].value;
	}
	if (n <= 0 || !hash)
		return n < 0 ? n : 0; /* none set yet */
	if (ruby_type_of(t, hash, &hflags) != L->t_hash)
		return ERR_TORN;
	int k = ruby_hash_pairs(t, hash, hflags, keys, vals, RUBY_ST_SCAN, &size);
	for (int i = 0; i < k && !err; i++) {
		char name[256];
		if (ruby_symbol_name(t, keys[i], name, sizeof(name)))
			err = add(t, out, ruby_intern(t, name), 0, vals[i]);
	}
	if (!err && k >= 0 && size > (uint64_t)k)
		out->more += (int)(size - (uint64_t)k < 1000000 ? size - (uint64_t)k : 1000000);
	if (err || k < 0)
		ruby_locals_free(out);
	return err ? err : k < 0 ? k : 0;
}

void ruby_locals_free(struct ruby_locals *l)
{
	for (int i = 0; i < l->n; i++)
		ruby_shown_free(&l->v[i].value);
	free(l->v);
	memset(l, 0, sizeof(*l));
}
