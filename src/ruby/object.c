/* object.c: reading Ruby objects (strings, arrays, IDs, class names) out of a target's memory. */
#include "object.h"

#include <errno.h>
#include <string.h>

#include "../lib/err.h"

int ruby_is_heap(const struct ruby_target *t, uint64_t v)
{
	/* Immediates (Fixnum, Symbol, Flonum) have low bits set; the specials are small. */
	return v && !(v & 7) && v != (uint64_t)t->L->qnil && v != (uint64_t)t->L->qtrue &&
	       v != (uint64_t)t->L->qundef && v > 0xffff;
}

int ruby_type_of(struct ruby_target *t, uint64_t v, uint64_t *flags)
{
	if (!ruby_is_heap(t, v))
		return ERR_CORRUPT;
	uint64_t f;
	int err = mem_read_u64(&t->mem, v + (uint64_t)t->L->rbasic_flags, &f);
	if (err)
		return err;
	if (flags)
		*flags = f;
	return (int)(f & (uint64_t)t->L->t_mask);
}

int ruby_read_string(struct ruby_target *t, uint64_t v, char *out, size_t cap)
{
	uint64_t len;
	int n = ruby_string_peek(t, v, out, cap, &len, NULL);
	if (n >= 0 && len > RUBY_STR_MAX * 16)
		n = ERR_CORRUPT;
	if (n < 0)
		out[0] = '\0';
	return n < 0 ? n : 0;
}

int ruby_string_peek(struct ruby_target *t, uint64_t v, char *out, size_t cap, uint64_t *lenp, uint64_t *flagsp)
{
	unsigned char hdr[RUBY_STRING_HEAD];
	out[0] = '\0';
	if (!ruby_is_heap(t, v))
		return ERR_CORRUPT;
	int err = mem_read(&t->mem, v, hdr, sizeof(hdr));
	return err ? err : ruby_string_from_head(t, v, hdr, out, cap, lenp, flagsp);
}

int ruby_string_from_head(struct ruby_target *t, uint64_t v, const unsigned char *hdr, char *out, size_t cap,
			  uint64_t *lenp, uint64_t *flagsp)
{
	const struct ruby_layout *L = t->L;
	int err;
	out[0] = '\0';
	uint64_t flags;
	memcpy(&flags, hdr + L->rbasic_flags, 8);
	if ((flags & (uint64_t)L->t_mask) != (uint64_t)L->t_string)
		return ERR_CORRUPT;
	if (flagsp)
		*flagsp = flags;
	uint64_t len, ptr;
	if (flags & (uint64_t)L->rstring_noembed) {
		memcpy(&len, hdr + L->rstring_heap_len, 8);
		memcpy(&ptr, hdr + L->rstring_heap_ptr, 8);
	} else {
		if (L->rstring_len >= 0)
			memcpy(&len, hdr + L->rstring_len, 8);
		else
			len = (flags & (uint64_t)L->rstring_embed_len_mask) >> L->rstring_embed_len_shift;
		ptr = v + (uint64_t)L->rstring_embed_ary;
	}
	if (len >> 40) /* (a terabyte: not a length) */
		return ERR_CORRUPT;
	*lenp = len;
	size_t n = len < cap - 1 ? (size_t)len : cap - 1;
	if (ptr + n <= v + RUBY_STRING_HEAD && ptr >= v) {
		memcpy(out, hdr + (ptr - v), n); /* short embedded strings came with the header */
	} else if (n) {
		err = mem_read(&t->mem, ptr, out, n);
		if (err)
			return err;
	}
	out[n] = '\0';
	return (int)n;
}

int ruby_read_array_elt(struct ruby_target *t, uint64_t v, uint64_t i, uint64_t *out)
{
	const struct ruby_layout *L = t->L;
	unsigned char hdr[40];
	if (!ruby_is_heap(t, v))
		return ERR_CORRUPT;
	int err = mem_read(&t->mem, v, hdr, sizeof(hdr));
	if (err)
		return err;
	uint64_t flags, len, ptr;
	memcpy(&flags, hdr + L->rbasic_flags, 8);
	if ((flags & (uint64_t)L->t_mask) != (uint64_t)L->t_array)
		return ERR_CORRUPT;
	if (flags & (uint64_t)L->rarray_embed_flag) {
		len = (flags & (uint64_t)L->rarray_embed_len_mask) >> L->rarray_embed_len_shift;
		ptr = v + (uint64_t)L->rarray_embed_ary;
	} else {
		memcpy(&len, hdr + L->rarray_heap_len, 8);
		memcpy(&ptr, hdr + L->rarray_heap_ptr, 8);
	}
	if (i >= len)
		return -ERANGE;
	return mem_read_u64(&t->mem, ptr + i * 8, out);
}

static int symbols_lookup(struct ruby_target *t, uint64_t symbols, uint64_t id, char *out, size_t cap)
{
	const struct ruby_layout *L = t->L;
	uint64_t serial = id > (uint64_t)L->last_op_id ? id >> L->id_scope_shift : id;
	uint32_t last_id;
	uint64_t ids, chunk, str;
	int err = mem_read_u32(&t->mem, symbols + (uint64_t)L->symbols_last_id, &last_id);
	if (!err && serial > last_id)
		err = -ERANGE;
	if (!err)
		err = mem_read_u64(&t->mem, symbols + (uint64_t)L->symbols_ids, &ids);
	if (!err)
		err = ruby_read_array_elt(t, ids, serial / (uint64_t)L->id_entry_unit, &chunk);
	if (!err)
		err = ruby_read_array_elt(t, chunk, (serial % (uint64_t)L->id_entry_unit) * (uint64_t)L->id_entry_size, &str);
	if (!err)
		err = ruby_read_string(t, str, out, cap);
	return err;
}

int ruby_symbols_valid(struct ruby_target *t, uint64_t addr)
{
	char name[16];
	uint64_t each = ((uint64_t)t->L->id_serial_each << t->L->id_scope_shift) | 1; /* a local ID */
	return !symbols_lookup(t, addr, each, name, sizeof(name)) && !strcmp(name, "each");
}

/* A word of libruby's data that starts a global symbol table whose "each" reads as such (ruby_target_scan). */
static int check_symbols(struct ruby_target *t, uint64_t addr, const uint64_t *w)
{
	const struct ruby_layout *L = t->L;
	uint32_t last_id = (uint32_t)w[L->symbols_last_id / 8];
	uint64_t str_sym = w[L->symbols_str_sym / 8], ids = w[L->symbols_ids / 8];
	if (last_id < 100 || last_id > 100000000 || !str_sym || (str_sym & 7) || !ids || (ids & 7))
		return 0;
	if (!maps_readable(&t->maps, str_sym, 8) || !maps_readable(&t->maps, ids, 8))
		return 0;
	return ruby_symbols_valid(t, addr);
}

/* The global symbol table: where libruby's symbol says, if it reads as one, else found by a scan; looked for once. */
static uint64_t symbols_of(struct ruby_target *t)
{
	if (t->symbols || t->symbols_searched)
		return t->symbols;
	t->symbols_searched = 1;
	if (t->symbols_sym && ruby_symbols_valid(t, t->symbols_sym))
		t->symbols = t->symbols_sym;
	else if (t->L && t->L->symbols_size > 0)
		t->symbols = ruby_target_scan(t, (size_t)(t->L->symbols_size / 8), check_symbols);
	return t->symbols;
}

/*
 * An ID's name, cached once read. One that does not read is not remembered:
 * it may be being added, or the symbol table growing under the read, and
 * the callers that look names up at every sample keep what they name
 * (method_name reads an unnamed entry again only now and then).
 */
uint32_t ruby_id_name(struct ruby_target *t, uint64_t id)
{
	uint64_t *hit = map_get(&t->ids, id); /* (the name's string id + 1) */
	if (hit)
		return (uint32_t)*hit - 1;
	char name[256];
	int64_t sid = -1;
	if (symbols_of(t) && !symbols_lookup(t, t->symbols, id, name, sizeof(name)))
		sid = strtab_intern(&t->strs, name, strlen(name));
	if (sid < 0)
		return 0;
	map_put(&t->ids, id, (uint64_t)sid + 1);
	return (uint32_t)sid;
}

/* The classext of klass: a pointer in the RClass (<= 3.2) or the memory after it (3.3+). */
static int classext(struct ruby_target *t, uint64_t klass, uint64_t *ext)
{
	if (t->L->classext_inline >= 0) {
		*ext = klass + (uint64_t)t->L->classext_inline;
		return 0;
	}
	return mem_read_u64(&t->mem, klass + (uint64_t)t->L->classext_ptr, ext);
}

/* Keep value if key is one of the hidden ivars that name a class: __classpath__, __tmp_classpath__, __attached__. */
static void take_hidden_ivar(struct ruby_target *t, uint64_t key, uint64_t value, uint64_t *classpath, uint64_t *tmp,
			     uint64_t *attached)
{
	if (!t->id_classpath || !t->id_attached || !t->id_tmp_classpath) {
		const char *s = strtab_get(&t->strs, ruby_id_name(t, key));
		if (!strcmp(s, "__classpath__"))
			t->id_classpath = key;
		else if (!strcmp(s, "__tmp_classpath__"))
			t->id_tmp_classpath = key;
		else if (!strcmp(s, "__attached__"))
			t->id_attached = key;
	}
	if (key == t->id_classpath)
		*classpath = value;
	else if (key == t->id_tmp_classpath)
		*tmp = value;
	else if (key == t->id_attached)
		*attached = value;
}


/*
 * The entries of the st_table at tbl that are not deleted, among its first
 * RUBY_ST_SCAN, up to max: their count, or negative. *size gets how many it
 * has.
 */
/* The st_table at tbl's entries array, its live range [*start, *bound) and its size: 0, or negative. */
static int st_head(struct ruby_target *t, uint64_t tbl, uint64_t *entries, uint64_t *start, uint64_t *bound,
		   uint64_t *size)
{
	const struct ruby_layout *L = t->L;
	uint64_t hdr[8];
	int err = mem_read(&t->mem, tbl, hdr, sizeof(hdr));
	if (err)
		return err;
	*entries = hdr[L->st_entries / 8], *start = hdr[L->st_entries_start / 8], *bound = hdr[L->st_entries_bound / 8];
	*size = hdr[L->st_num_entries / 8];
	return *bound < *start || *size >> 40 ? ERR_CORRUPT : 0;
}

static int st_read(struct ruby_target *t, uint64_t tbl, uint64_t *keys, uint64_t *vals, int max, uint64_t *size)
{
	const struct ruby_layout *L = t->L;
	uint64_t entries, start, bound;
	int err = st_head(t, tbl, &entries, &start, &bound, size), n = 0;
	if (err)
		return err;
	size_t esz = (size_t)L->st_entry_size, look = bound - start < RUBY_ST_SCAN ? (size_t)(bound - start) : RUBY_ST_SCAN;
	unsigned char e[RUBY_ST_SCAN * 24];
	if (esz > 24 || (look && (err = mem_read(&t->mem, entries + start * esz, e, look * esz))))
		return err ? err : ERR_UNSUPPORTED;
	for (size_t i = 0; i < look && n < max; i++) {
		uint64_t hash;
		memcpy(&hash, e + i * esz + L->st_entry_hash, 8);
		if (hash == ~0ULL)
			continue; /* deleted */
		memcpy(&keys[n], e + i * esz + L->st_entry_key, 8);
		memcpy(&vals[n++], e + i * esz + L->st_entry_record, 8);
	}
	return n;
}

int ruby_st_pairs(struct ruby_target *t, uint64_t tbl, uint64_t *keys, uint64_t *vals)
{
	uint64_t size;
	int n = st_read(t, tbl, keys, vals, RUBY_ST_SCAN, &size), k = 0;
	for (int i = 0; i < n; i++)
		if (keys[i] && keys[i] != (uint64_t)t->L->qundef) { /* (an ID or a VALUE: neither is 0 or undef) */
			keys[k] = keys[i];
			vals[k++] = vals[i];
		}
	return n < 0 ? n : k;
}

/* Look for the hidden instance variables of a class in its st_table (Rubies without a classpath field). */
static int class_ivar(struct ruby_target *t, uint64_t ext, uint64_t *classpath, uint64_t *attached)
{
	const struct ruby_layout *L = t->L;
	uint64_t tbl, keys[RUBY_ST_SCAN], vals[RUBY_ST_SCAN], tmp = 0;
	if (L->classext_iv_tbl < 0)
		return -ENOENT;
	int err = mem_read_u64(&t->mem, ext + (uint64_t)L->classext_iv_tbl, &tbl);
	if (err || !tbl)
		return err ? err : -ENOENT;
	int n = ruby_st_pairs(t, tbl, keys, vals);
	for (int i = 0; i < n; i++)
		take_hidden_ivar(t, keys[i], vals[i], classpath, &tmp, attached);
	if (!*classpath)
		*classpath = tmp;
	return n < 0 ? n : 0;
}

int ruby_hash_pairs(struct ruby_target *t, uint64_t v, uint64_t flags, uint64_t *keys, uint64_t *vals, int max,
		     uint64_t *size)
{
	const struct ruby_layout *L = t->L;
	if (L->rhash_table_ptr < 0 && L->rhash_table_inline < 0)
		return ERR_UNSUPPORTED;
	uint64_t table = v + (uint64_t)L->rhash_table_inline;
	int err;
	if (L->rhash_table_ptr >= 0 && (err = mem_read_u64(&t->mem, v + (uint64_t)L->rhash_table_ptr, &table)))
		return err;
	return ruby_hash_table_pairs(t, flags, table, keys, vals, max, size);
}

int ruby_hash_table_pairs(struct ruby_target *t, uint64_t flags, uint64_t table, uint64_t *keys, uint64_t *vals,
			  int max, uint64_t *size)
{
	const struct ruby_layout *L = t->L;
	int err = 0, n = 0;
	if (flags & (uint64_t)L->rhash_st_flag)
		return table ? st_read(t, table, keys, vals, max, size) : ERR_CORRUPT;
	*size = (flags & (uint64_t)L->rhash_ar_size_mask) >> L->rhash_ar_size_shift;
	uint64_t bound = (flags & (uint64_t)L->rhash_ar_bound_mask) >> L->rhash_ar_bound_shift;
	if (!*size)
		return 0;
	if (!table || bound > 16)
		return ERR_CORRUPT;
	uint64_t pairs[32];
	if ((err = mem_read(&t->mem, table + (uint64_t)L->ar_pairs, pairs, (size_t)bound * 16)))
		return err;
	for (uint64_t i = 0; i < bound && n < max; i++) {
		if (pairs[2 * i] == (uint64_t)L->qundef)
			continue; /* cleared */
		keys[n] = pairs[2 * i];
		vals[n++] = pairs[2 * i + 1];
	}
	return n;
}

#define SHAPE_HOPS 256 /* ivars followed through an object's shapes; a class with more keeps its path out of reach */

/* rb_shape_tree_ptr (3.3+): a pointer to a tree whose shape list and root shape are the same page-aligned address. */
static int check_shape_tree(struct ruby_target *t, uint64_t addr, const uint64_t *w)
{
	const struct ruby_layout *L = t->L;
	uint64_t tree[4];
	(void)addr;
	if (!w[0] || (w[0] & 7) || !maps_readable(&t->maps, w[0], sizeof(tree)) || mem_read(&t->mem, w[0], tree, sizeof(tree)))
		return 0;
	uint64_t list = tree[L->shape_tree_list / 8], root = tree[L->shape_tree_root / 8];
	uint32_t next;
	memcpy(&next, (const char *)tree + L->shape_tree_next_id, 4);
	return list && list == root && !(list & 0xfff) && next >= 1 && next < (1u << 24) &&
	       maps_readable(&t->maps, list, (size_t)L->shape_size);
}

/* The object shapes: 3.2's list in rb_vm_t; 3.3+'s in rb_shape_tree_ptr's tree, found by a scan the first time. */
static uint64_t shape_list_of(struct ruby_target *t)
{
	const struct ruby_layout *L = t->L;
	uint64_t list = 0;
	if (L->vm_shape_list >= 0)
		return mem_read_u64(&t->mem, t->vm + (uint64_t)L->vm_shape_list, &list) ? 0 : list;
	if (L->shape_tree_list < 0 || L->shape_tree_root < 0 || L->shape_tree_next_id < 0 || L->shape_tree_root >= 32 ||
	    L->shape_tree_list >= 32 || L->shape_tree_next_id > 28)
		return 0;
	if (!t->shape_list_searched) {
		t->shape_list_searched = 1;
		uint64_t at = ruby_target_scan(t, 1, check_shape_tree), tree;
		if (at && !mem_read_u64(&t->mem, at, &tree))
			mem_read_u64(&t->mem, tree + (uint64_t)L->shape_tree_list, &t->shape_list);
	}
	return t->shape_list;
}

/*
 * The ivars of the shape in an object's (or class's) flags: each one's ID
 * and slot (in value), the first set first, up to max. Their count, or
 * negative: ERR_UNSUPPORTED for a shape that keeps its ivars in a table of
 * their own (too complex) or a Ruby without shapes. *total gets them all.
 */
static int shape_ivars(struct ruby_target *t, uint64_t flags, struct ruby_ivar *out, int max, int *total)
{
	const struct ruby_layout *L = t->L;
	unsigned char sh[64];
	struct ruby_ivar chain[SHAPE_HOPS];
	int n = 0;
	*total = 0;
	if (L->shape_size > (int64_t)sizeof(sh) || L->shape_size <= 0 || L->shape_id_bits <= 0 || L->shape_id_bits > 32)
		return ERR_UNSUPPORTED;
	uint64_t list = shape_list_of(t);
	if (!list)
		return ERR_UNSUPPORTED;
	uint64_t mask = (1ULL << L->shape_id_bits) - 1, id = (flags >> L->shape_flag_shift) & mask;
	for (int hop = 0; hop < SHAPE_HOPS && id && id != mask; hop++) { /* (a root's parent: none, all ones) */
		int err = mem_read(&t->mem, list + id * (uint64_t)L->shape_size, sh, (size_t)L->shape_size);
		if (err)
			return err;
		uint64_t name;
		uint32_t next, parent;
		memcpy(&name, sh + L->shape_edge_name, 8);
		memcpy(&next, sh + L->shape_next_iv_index, 4);
		memcpy(&parent, sh + L->shape_parent_id, 4);
		if (L->shape_type_too_complex >= 0 && sh[L->shape_type] == L->shape_type_too_complex)
			return ERR_UNSUPPORTED;
		if (sh[L->shape_type] == L->shape_type_ivar && next > 0)
			chain[n++] = (struct ruby_ivar){ name, next - 1 };
		if (parent == id)
			break;
		id = parent;
	}
	*total = n;
	int k = 0;
	for (int i = n - 1; i >= 0 && k < max; i--)
		out[k++] = chain[i];
	return k;
}

/*
 * The same through object shapes (3.2): the class's shape, from its flags,
 * and its ancestors in the VM's shape list name each ivar and its slot in
 * the classext's iv_ptr.
 */
static int class_ivar_shapes(struct ruby_target *t, uint64_t flags, uint64_t ext, uint64_t *classpath,
			     uint64_t *attached)
{
	const struct ruby_layout *L = t->L;
	struct ruby_ivar iv[SHAPE_HOPS];
	uint64_t ivs, tmp = 0, value;
	int total, n = shape_ivars(t, flags, iv, SHAPE_HOPS, &total);
	int err = n < 0 ? n : mem_read_u64(&t->mem, ext + (uint64_t)L->classext_iv_ptr, &ivs);
	if (err || !ivs)
		return err ? err : -ENOENT;
	for (int i = 0; i < n; i++)
		if (!mem_read_u64(&t->mem, ivs + iv[i].value * 8, &value))
			take_hidden_ivar(t, iv[i].id, value, classpath, &tmp, attached);
	if (!*classpath)
		*classpath = tmp;
	return 0;
}

/* Does the ID name the string s? */
static int id_is(struct ruby_target *t, uint64_t id, const char *s)
{
	uint32_t n = ruby_id_name(t, id);
	return n && !strcmp(strtab_get(&t->strs, n), s);
}

/* The ivar called name of class klass, or of its nearest superclass that has one (a Struct's __members__). */
static int class_ivar_named(struct ruby_target *t, uint64_t klass, const char *name, uint64_t *value)
{
	const struct ruby_layout *L = t->L;
	for (int hop = 0; hop < 16 && klass && L->rclass_super >= 0; hop++) {
		uint64_t flags, ext, tbl, ivs, keys[RUBY_ST_SCAN], vals[RUBY_ST_SCAN];
		int type = ruby_type_of(t, klass, &flags);
		if (type < 0 || classext(t, klass, &ext))
			return ERR_CORRUPT;
		if (type == L->t_class && L->classext_iv_tbl >= 0) {
			int n = !mem_read_u64(&t->mem, ext + (uint64_t)L->classext_iv_tbl, &tbl) && tbl ?
					ruby_st_pairs(t, tbl, keys, vals) : 0;
			for (int i = 0; i < n; i++)
				if (id_is(t, keys[i], name))
					return *value = vals[i], 0;
		} else if (type == L->t_class && L->classext_iv_ptr >= 0) {
			struct ruby_ivar iv[SHAPE_HOPS];
			int total, n = shape_ivars(t, flags, iv, SHAPE_HOPS, &total);
			for (int i = 0; i < n; i++)
				if (id_is(t, iv[i].id, name))
					return mem_read_u64(&t->mem, ext + (uint64_t)L->classext_iv_ptr, &ivs) ?:
					       mem_read_u64(&t->mem, ivs + iv[i].value * 8, value);
		}
		if (mem_read_u64(&t->mem, klass + (uint64_t)L->rclass_super, &klass))
			return ERR_CORRUPT;
	}
	return -ENOENT;
}

#define IVARS_MAX 256 /* an object's ivar slots read */

/*
 * Up to 3.1: the ivar names are the class's iv_index_tbl (ID -> index, or ->
 * an entry holding it), for an object of class klass whose numiv slots ivs holds.
 */
static int ivars_by_class_tbl(struct ruby_target *t, uint64_t klass, const uint64_t *ivs, uint32_t numiv,
			      struct ruby_ivar *out, int max, int *total)
{
	const struct ruby_layout *L = t->L;
	uint64_t cflags, ext, tbl, keys[RUBY_ST_SCAN], vals[RUBY_ST_SCAN];
	int err;
	/* its class, past a singleton class of its own */
	for (int hop = 0; hop < 4; hop++) {
		int type = ruby_type_of(t, klass, &cflags);
		if (type < 0)
			return ERR_CORRUPT;
		if (type == L->t_class && !(cflags & (uint64_t)L->fl_singleton))
			break;
		if ((err = mem_read_u64(&t->mem, klass + (uint64_t)L->rclass_super, &klass)))
			return err;
	}
	if ((err = classext(t, klass, &ext)) || (err = mem_read_u64(&t->mem, ext + (uint64_t)L->classext_iv_index_tbl, &tbl)))
		return err;
	if (!tbl)
		return 0;
	int n = ruby_st_pairs(t, tbl, keys, vals), k = 0;
	for (int i = 0; i < n; i++) {
		uint32_t index = (uint32_t)vals[i];
		if (L->iv_index_entry_index >= 0 &&
		    mem_read_u32(&t->mem, vals[i] + (uint64_t)L->iv_index_entry_index, &index))
			continue;
		if (index >= numiv || ivs[index] == (uint64_t)L->qundef)
			continue; /* not set on this object */
		++*total;
		if (k < max)
			out[k++] = (struct ruby_ivar){ keys[i], ivs[index] };
	}
	return n < 0 ? n : k;
}

/* The ivars of an object whose numiv slots are at ptr, named by its shape (3.2+) or its class's table. */
static int ivars_of_slots(struct ruby_target *t, uint64_t flags, uint64_t klass, uint64_t ptr, uint32_t numiv,
			  struct ruby_ivar *out, int max, int *total)
{
	const struct ruby_layout *L = t->L;
	uint64_t ivs[IVARS_MAX];
	int err;
	*total = 0;
	if (numiv > IVARS_MAX)
		numiv = IVARS_MAX;
	if (L->shape_flag_shift >= 0) {
		int n = shape_ivars(t, flags, out, max, total), k = 0;
		for (int i = 0; i < n; i++) {
			uint64_t value;
			if (out[i].value >= numiv)
				continue; /* (a slot the entry has no room for: not set) */
			if ((err = mem_read_u64(&t->mem, ptr + out[i].value * 8, &value)))
				return err;
			out[k++] = (struct ruby_ivar){ out[i].id, value };
		}
		return n < 0 ? n : k;
	}
	if (numiv && (err = mem_read(&t->mem, ptr, ivs, numiv * 8)))
		return err;
	return ivars_by_class_tbl(t, klass, ivs, numiv, out, max, total);
}

int ruby_object_ivars(struct ruby_target *t, uint64_t v, uint64_t flags, uint64_t klass, struct ruby_ivar *out, int max,
		      int *total)
{
	const struct ruby_layout *L = t->L;
	*total = 0;
	if (L->robject_embed_flag < 0 || L->rclass_super < 0)
		return ERR_UNSUPPORTED;
	if (L->shape_flag_shift < 0) {
		if (L->classext_iv_index_tbl < 0)
			return ERR_UNSUPPORTED;
		uint64_t ptr = v + (uint64_t)L->robject_embed_ary;
		uint32_t numiv = (uint32_t)L->robject_embed_len;
		int err;
		if (!(flags & (uint64_t)L->robject_embed_flag) &&
		    ((err = mem_read_u32(&t->mem, v + (uint64_t)L->robject_heap_numiv, &numiv)) ||
		     (err = mem_read_u64(&t->mem, v + (uint64_t)L->robject_heap_ivptr, &ptr))))
			return err;
		return ivars_of_slots(t, flags, klass, ptr, numiv, out, max, total);
	}
	/* 3.2+: the object's shape names each ivar and its slot, in the object or behind its pointer */
	int n = shape_ivars(t, flags, out, max, total), err;
	uint64_t ptr = v + (uint64_t)L->robject_embed_ary;
	if (n > 0 && !(flags & (uint64_t)L->robject_embed_flag) &&
	    (err = mem_read_u64(&t->mem, v + (uint64_t)L->robject_heap_ivptr, &ptr)))
		return err;
	for (int i = 0; i < n; i++)
		if ((err = mem_read_u64(&t->mem, ptr + out[i].value * 8, &out[i].value)))
			return err;
	return n;
}

#define ST_FIND_MAX (1u << 22) /* entries an st_table may have to be looked through */

int ruby_st_find(struct ruby_target *t, uint64_t tbl, uint64_t key, uint64_t *rec)
{
	const struct ruby_layout *L = t->L;
	uint64_t entries, start, bound, size;
	unsigned char e[256 * 24];
	size_t esz = (size_t)L->st_entry_size;
	int err = st_head(t, tbl, &entries, &start, &bound, &size);
	if (err)
		return err;
	if (bound - start > ST_FIND_MAX || size > bound - start || esz > 24)
		return ERR_CORRUPT;
	for (uint64_t i = start; i < bound; i += 256) {
		size_t k = bound - i < 256 ? (size_t)(bound - i) : 256;
		if ((err = mem_read(&t->mem, entries + i * esz, e, k * esz)))
			return err;
		for (size_t j = 0; j < k; j++) {
			uint64_t hash, ekey;
			memcpy(&hash, e + j * esz + L->st_entry_hash, 8);
			memcpy(&ekey, e + j * esz + L->st_entry_key, 8);
			if (hash != ~0ULL && ekey == key) {
				memcpy(rec, e + j * esz + L->st_entry_record, 8);
				return 1;
			}
		}
	}
	return 0;
}

int ruby_generic_ivars(struct ruby_target *t, uint64_t v, uint64_t flags, uint64_t klass, struct ruby_ivar *out,
		       int max, int *total)
{
	const struct ruby_layout *L = t->L;
	uint64_t tbl, gen, ptr;
	uint32_t numiv;
	*total = 0;
	if (!t->generic_ivtbl || L->gen_ivtbl_ivptr < 0 || L->gen_ivtbl_numiv < 0 || L->rclass_super < 0)
		return ERR_UNSUPPORTED;
	int err = mem_read_u64(&t->mem, t->generic_ivtbl, &tbl), r;
	if (err || !tbl)
		return err;
	if ((r = ruby_st_find(t, tbl, v, &gen)) <= 0)
		return r;
	ptr = gen + (uint64_t)L->gen_ivtbl_ivptr;
	if ((err = mem_read_u32(&t->mem, gen + (uint64_t)L->gen_ivtbl_numiv, &numiv)) ||
	    (L->gen_ivtbl_ivptr_ptr > 0 && (err = mem_read_u64(&t->mem, ptr, &ptr))))
		return err;
	return ivars_of_slots(t, flags, klass, ptr, numiv, out, max, total);
}

int ruby_struct_members(struct ruby_target *t, uint64_t v, uint64_t flags, uint64_t klass, struct ruby_ivar *out,
			int max, int *total)
{
	const struct ruby_layout *L = t->L;
	uint64_t members, len, ptr, name, val;
	*total = 0;
	if (L->rstruct_embed_ary < 0 || L->rclass_super < 0)
		return ERR_UNSUPPORTED;
	int err = class_ivar_named(t, klass, "__members__", &members);
	if (err)
		return err == -ENOENT ? ERR_UNSUPPORTED : err;
	if ((len = (flags & (uint64_t)L->rstruct_embed_len_mask) >> L->rstruct_embed_len_shift)) {
		ptr = v + (uint64_t)L->rstruct_embed_ary;
	} else if ((err = mem_read_u64(&t->mem, v + (uint64_t)L->rstruct_heap_len, &len)) ||
		   (err = mem_read_u64(&t->mem, v + (uint64_t)L->rstruct_heap_ptr, &ptr))) {
		return err;
	}
	if (len >> 20)
		return ERR_CORRUPT;
	*total = (int)len;
	int k = 0;
	for (uint64_t i = 0; i < len && k < max; i++) {
		if ((err = ruby_read_array_elt(t, members, i, &name)) || (err = mem_read_u64(&t->mem, ptr + i * 8, &val)))
			return err;
		out[k++] = (struct ruby_ivar){ name, val };
	}
	return k;
}

static uint32_t class_name_uncached(struct ruby_target *t, uint64_t klass, int *singleton, int depth)
{
	const struct ruby_layout *L = t->L;
	uint64_t flags, ext, classpath = 0, attached = 0;
	int type = ruby_type_of(t, klass, &flags);
	if (type < 0 || classext(t, klass, &ext))
		return 0;
	if (type == L->t_iclass) {
		uint64_t mod;
		if (depth > 2 || mem_read_u64(&t->mem, klass + (uint64_t)L->rbasic_klass, &mod))
			return 0;
		return class_name_uncached(t, mod, singleton, depth + 1);
	}
	if (type != L->t_class && type != L->t_module)
		return 0;
	if (L->classext_classpath >= 0) {
		mem_read_u64(&t->mem, ext + (uint64_t)L->classext_classpath, &classpath);
		if (flags & (uint64_t)L->fl_singleton)
			mem_read_u64(&t->mem, ext + (uint64_t)L->classext_attached_object, &attached);
	} else if (L->vm_shape_list >= 0) {
		class_ivar_shapes(t, flags, ext, &classpath, &attached);
	} else {
		class_ivar(t, ext, &classpath, &attached);
	}
	if ((flags & (uint64_t)L->fl_singleton) && attached && depth < 2) {
		/* Foo's singleton class: name it after Foo when Foo is a class or module. */
		int at = ruby_type_of(t, attached, NULL);
		if (at == L->t_class || at == L->t_module) {
			int dummy;
			*singleton = 1;
			return class_name_uncached(t, attached, &dummy, depth + 1);
		}
		return 0;
	}
	char name[512];
	if (!classpath || ruby_read_string(t, classpath, name, sizeof(name)) || !name[0])
		return 0;
	int64_t sid = strtab_intern(&t->strs, name, strlen(name));
	return sid < 0 ? 0 : (uint32_t)sid;
}

#define CLASS_TRIES 8

uint32_t ruby_class_name(struct ruby_target *t, uint64_t klass, int *singleton)
{
	/* The cache value: the name's string id (0: none), the tries in bits 32-39, the singleton bit 63. */
	/* A class found unnamed is asked again a few times (it may have been read while being named). */
	uint64_t *hit = map_get(&t->classes, klass);
	uint64_t tries = hit ? (*hit >> 32 & 0xff) : 0;
	if (hit && ((uint32_t)*hit || tries >= CLASS_TRIES)) {
		*singleton = (int)(*hit >> 63);
		return (uint32_t)*hit;
	}
	*singleton = 0;
	uint32_t sid = class_name_uncached(t, klass, singleton, 0);
	map_put(&t->classes, klass, sid | (tries + 1) << 32 | (uint64_t)!!*singleton << 63);
	return sid;
}
