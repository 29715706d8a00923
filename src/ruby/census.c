/* census.c: a count of a Ruby's objects, read from outside: every slot of every heap page, its type and class. */
#include "census.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../heap/summary.h"
#include "../lib/err.h"
#include "../lib/vec.h"
#include "object.h"
#include "vm.h"

/* 2.7's heap pages say no slot size: every slot is an RVALUE, five words on 64-bit (gc.c). */
#define RVALUE_SIZE 40
#define PAGE_HEADER 64                 /* the part of a struct heap_page read: its counts and first slot */
#define PAGE_MAX_BYTES (1u << 20)      /* more slots than that in one page: not a page (64 KB in 3.x) */
#define PAGES_MAX (UINT64_C(1) << 26)  /* pages in a heap, at most (64 KB each: 4 TB) */
#define BATCH_PAGES 256                /* pages read in one go */
#define BATCH_BYTES (8u << 20)         /* bytes of slots read in one go */

struct census_type_name {
	size_t field; /* offset of the type's number in struct ruby_layout */
	const char *name;
	int has_class;
};

#define TYPE(f, n, k) { offsetof(struct ruby_layout, f), n, k }
static const struct census_type_name type_names[] = {
	TYPE(t_none, "NONE", 0),	 TYPE(t_object, "OBJECT", 1),	  TYPE(t_class, "CLASS", 1),
	TYPE(t_module, "MODULE", 1),	 TYPE(t_float, "FLOAT", 1),	  TYPE(t_string, "STRING", 1),
	TYPE(t_regexp, "REGEXP", 1),	 TYPE(t_array, "ARRAY", 1),	  TYPE(t_hash, "HASH", 1),
	TYPE(t_struct, "STRUCT", 1),	 TYPE(t_bignum, "BIGNUM", 1),	  TYPE(t_file, "FILE", 1),
	TYPE(t_data, "DATA", 1),	 TYPE(t_match, "MATCH", 1),	  TYPE(t_complex, "COMPLEX", 1),
	TYPE(t_rational, "RATIONAL", 1), TYPE(t_symbol, "SYMBOL", 1),	  TYPE(t_imemo, "IMEMO", 0),
	TYPE(t_node, "NODE", 0),	 TYPE(t_iclass, "ICLASS", 0),	  TYPE(t_zombie, "ZOMBIE", 0),
	TYPE(t_moved, "MOVED", 0),
};
#undef TYPE

static const struct census_type_name *type_entry(const struct ruby_layout *L, int type)
{
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
		int64_t v;
		memcpy(&v, (const char *)L + type_names[i].field, sizeof(v));
		if (v >= 0 && v == type)
			return &type_names[i];
	}
	return NULL;
}

const char *census_type_name(const struct ruby_layout *L, int type)
{
	const struct census_type_name *e = type_entry(L, type);
	return e ? e->name : NULL;
}

int census_type_has_class(const struct ruby_layout *L, int type)
{
	const struct census_type_name *e = type_entry(L, type);
	return e && e->has_class;
}

void census_free(struct census *c)
{
	free(c->classes);
	map_free(&c->class_index);
	c->classes = NULL;
	c->nclasses = c->cap = 0;
}

static int add_class(struct census *c, uint64_t klass, uint64_t bytes)
{
	uint64_t *hit = map_get(&c->class_index, klass);
	if (hit) {
		c->classes[*hit - 1].count++;
		c->classes[*hit - 1].bytes += bytes;
		return 0;
	}
	size_t cap = (size_t)c->cap;
	struct census_group *g = vec_grow(c->classes, (size_t)c->nclasses, &cap, sizeof(*g));
	if (!g)
		return -ENOMEM;
	c->classes = g;
	c->cap = cap;
	g[c->nclasses] = (struct census_group){ klass, 1, bytes };
	if (map_put(&c->class_index, klass, c->nclasses + 1))
		return -ENOMEM;
	c->nclasses++;
	return 0;
}

/* The census's lookup of each type: whether a heap slot can hold it, and whether it has a class. */
struct type_info {
	signed char valid, has_class;
};

/* Count one page's slots, read into body (total of them, stride bytes apart). */
static int count_page(struct census *c, const struct ruby_layout *L, const struct type_info *ti,
		      const unsigned char *body, uint64_t total, uint64_t stride)
{
	c->pages++;
	c->slots += total;
	for (uint64_t i = 0; i < total; i++) {
		uint64_t w[2];
		memcpy(w, body + i * stride, sizeof(w));
		if (!w[0]) { /* (as count_objects: no flags, no object) */
			c->free++;
			continue;
		}
		int type = (int)(w[0] & (uint64_t)L->t_mask);
		if (!ti[type].valid) {
			c->torn++;
			continue;
		}
		c->objects++;
		c->bytes += stride;
		c->types[type].key = (uint64_t)type;
		c->types[type].count++;
		c->types[type].bytes += stride;
		uint64_t klass = ti[type].has_class && w[1] >= 0x1000 && !(w[1] & 7) ? w[1] : 0;
		if (add_class(c, klass, stride))
			return -ENOMEM;
	}
	return 0;
}

struct page {
	uint64_t addr, start, total, stride;
	unsigned char hdr[PAGE_HEADER];
};

/* Read the headers of n pages; a page that no longer reads (freed meanwhile) gets addr 0. */
static int read_headers(struct ruby_target *t, struct page *p, int n)
{
	struct mem_iov iov[BATCH_PAGES];
	for (int i = 0; i < n; i++)
		iov[i] = (struct mem_iov){ p[i].addr, p[i].hdr, PAGE_HEADER };
	int err = t->mem.readv(&t->mem, iov, n);
	if (err != -EFAULT)
		return err;
	for (int i = 0; i < n; i++) { /* one at a time, to know which */
		err = t->mem.read(&t->mem, p[i].addr, p[i].hdr, PAGE_HEADER);
		if (err == -EFAULT)
			p[i].addr = 0;
		else if (err)
			return err;
	}
	return 0;
}

int census_take(struct ruby_target *t, struct census *c)
{
	const struct ruby_layout *L = t->L;
	memset(c, 0, sizeof(*c));
	map_init(&c->class_index);
	if (L->gc_pages_sorted < 0 || L->gc_page_start < 0 || L->gc_page_total_slots < 0 || L->t_mask <= 0 ||
	    L->t_mask >= CENSUS_TYPES || (L->gc_pages_allocated < 0 && L->gc_pages_darray < 0) ||
	    L->gc_page_start + 8 > PAGE_HEADER || L->gc_page_total_slots + 2 > PAGE_HEADER ||
	    L->gc_page_slot_size + 2 > PAGE_HEADER)
		return ERR_UNSUPPORTED;
	int err = vm_read_main(t);
	if (err)
		return err;
	if (!t->objspace)
		return ERR_UNSUPPORTED;
	struct type_info ti[CENSUS_TYPES] = { { 0, 0 } };
	for (int i = 0; i < CENSUS_TYPES; i++) {
		const struct census_type_name *e = type_entry(L, i);
		ti[i].valid = e && i != L->t_none;
		ti[i].has_class = e && e->has_class;
	}
	uint64_t sorted = 0, n = 0;
	err = mem_read_u64(&t->mem, t->objspace + (uint64_t)L->gc_pages_sorted, &sorted);
	if (!err && L->gc_pages_darray >= 0) { /* a darray: its length first in its header, then its elements */
		if (sorted && !(err = mem_read_u64(&t->mem, sorted, &n)))
			sorted += (uint64_t)L->gc_pages_darray;
	} else if (!err) {
		err = mem_read_u64(&t->mem, t->objspace + (uint64_t)L->gc_pages_allocated, &n);
	}
	if (err)
		return err;
	if (n > PAGES_MAX || (n && !sorted))
		return ERR_CORRUPT;
	uint64_t *addrs = n ? malloc(n * sizeof(*addrs)) : NULL;
	struct page *pages = malloc(BATCH_PAGES * sizeof(*pages));
	unsigned char *body = malloc(BATCH_BYTES);
	if ((n && !addrs) || !pages || !body) {
		err = -ENOMEM;
		goto out;
	}
	/* The page list, in reads the size a read may be. */
	for (uint64_t i = 0; i < n && !err;) {
		uint64_t k = n - i < MEM_MAX_READ / 8 ? n - i : MEM_MAX_READ / 8;
		err = t->mem.read(&t->mem, sorted + i * 8, addrs + i, (size_t)k * 8);
		i += k;
	}
	for (uint64_t i = 0; i < n && !err;) {
		int np = 0;
		for (; np < BATCH_PAGES && i < n; i++)
			if (addrs[i] && !(addrs[i] & 7))
				pages[np++].addr = addrs[i];
			else
				c->pages_gone++;
		if ((err = read_headers(t, pages, np)))
			break;
		/* Their slots, as many pages at a time as fit the buffer. */
		for (int a = 0; a < np && !err;) {
			struct mem_iov iov[BATCH_PAGES];
			size_t used = 0;
			int b = a, m = 0;
			for (; b < np; b++) {
				struct page *p = &pages[b];
				if (!p->addr) {
					c->pages_gone++;
					continue;
				}
				uint16_t total = 0, size = 0;
				memcpy(&p->start, p->hdr + L->gc_page_start, 8);
				memcpy(&total, p->hdr + L->gc_page_total_slots, 2);
				if (L->gc_page_slot_size >= 0)
					memcpy(&size, p->hdr + L->gc_page_slot_size, 2);
				p->total = total;
				p->stride = L->gc_page_slot_size >= 0 ? size : RVALUE_SIZE;
				uint64_t len = p->total * p->stride;
				if (!p->total || p->stride < 16 || (p->stride & 7) || len > PAGE_MAX_BYTES || !p->start ||
				    (p->start & 7)) {
					c->pages_gone++; /* (a page being freed or set up as it was read) */
					p->addr = 0;
					continue;
				}
				if (used + len > BATCH_BYTES)
					break;
				iov[m++] = (struct mem_iov){ p->start, body + used, (size_t)len };
				used += len;
			}
			err = m ? t->mem.readv(&t->mem, iov, m) : 0;
			if (err == -EFAULT) { /* a page freed meanwhile: each apart */
				err = 0;
				for (int j = 0; j < m && !err; j++)
					if ((err = t->mem.read(&t->mem, iov[j].addr, iov[j].buf, iov[j].len)) == -EFAULT) {
						err = 0;
						iov[j].len = 0;
					}
			}
			for (int j = a, q = 0; j < b && !err; j++) {
				if (!pages[j].addr)
					continue;
				if (!iov[q].len)
					c->pages_gone++;
				else
					err = count_page(c, L, ti, iov[q].buf, pages[j].total, pages[j].stride);
				q++;
			}
			a = b;
		}
	}
out:
	free(addrs);
	free(pages);
	free(body);
	if (err)
		census_free(c);
	return err;
}

void census_rows_free(struct heap_summary_row *rows, size_t n)
{
	for (size_t i = 0; rows && i < n; i++)
		free(rows[i].label);
	free(rows);
}

int census_rows(struct ruby_target *t, const struct census *c, int by_class, struct heap_summary_row **rows, size_t *n)
{
	size_t cap = by_class ? (size_t)c->nclasses : CENSUS_TYPES, k = 0;
	struct heap_summary_row *r = calloc(cap ? cap : 1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < cap; i++) {
		const struct census_group *g = by_class ? &c->classes[i] : &c->types[i];
		if (!g->count)
			continue;
		char label[600];
		if (!by_class) {
			const char *name = census_type_name(t->L, (int)g->key);
			snprintf(label, sizeof(label), "%s", name ? name : "?");
		} else if (!g->key) {
			snprintf(label, sizeof(label), "(no class: internal objects)");
		} else {
			int singleton = 0;
			uint32_t id = ruby_class_name(t, g->key, &singleton);
			const char *name = id ? strtab_get(&t->strs, id) : NULL;
			if (name && singleton)
				snprintf(label, sizeof(label), "#<Class:%s>", name);
			else if (name)
				snprintf(label, sizeof(label), "%s", name);
			else
				snprintf(label, sizeof(label), "#<Class:0x%016llx>", (unsigned long long)g->key);
		}
		if (!(r[k].label = strdup(label))) {
			census_rows_free(r, k);
			return -ENOMEM;
		}
		r[k].count = g->count;
		r[k].memsize = g->bytes;
		k++;
	}
	*rows = r;
	*n = k;
	return 0;
}
