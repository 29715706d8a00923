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
	const struct ruby_layout *L = t->L;
	unsigned char hdr[48];
	out[0] = '\0';
	if (!ruby_is_heap(t, v))
		return ERR_CORRUPT;
	int err = mem_read(&t->mem, v, hdr, sizeof(hdr));
	if (err)
		return err;
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
	if (ptr + n <= v + sizeof(hdr) && ptr >= v) {
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

uint32_t ruby_id_name(struct ruby_target *t, uint64_t id)
{
	uint64_t *hit = map_get(&t->ids, id);
	if (hit)
		return (uint32_t)(*hit - 1);
	char name[256];
	int64_t sid = 0;
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

/* Look for the hidden instance variables of a class in its st_table (Rubies without a classpath field). */
static int class_ivar(struct ruby_target *t, uint64_t ext, uint64_t *classpath, uint64_t *attached)
{
	const struct ruby_layout *L = t->L;
	uint64_t tbl, hdr[8];
	if (L->classext_iv_tbl < 0)
		return -ENOENT;
	int err = mem_read_u64(&t->mem, ext + (uint64_t)L->classext_iv_tbl, &tbl);
	if (err || !tbl)
		return err ? err : -ENOENT;
	if ((err = mem_read(&t->mem, tbl, hdr, sizeof(hdr))))
		return err;
	uint64_t entries = hdr[L->st_entries / 8], start = hdr[L->st_entries_start / 8],
		 bound = hdr[L->st_entries_bound / 8];
	if (bound < start || bound - start > 64)
		return ERR_CORRUPT;
	unsigned char ebuf[64 * 24];
	size_t esz = (size_t)L->st_entry_size, n = (size_t)(bound - start);
	if (esz * n > sizeof(ebuf))
		return ERR_CORRUPT;
	if ((err = mem_read(&t->mem, entries + start * esz, ebuf, esz * n)))
		return err;
	uint64_t tmp = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t key, rec;
		memcpy(&key, ebuf + i * esz + L->st_entry_key, 8);
		memcpy(&rec, ebuf + i * esz + L->st_entry_record, 8);
		if (key && key != (uint64_t)L->qundef)
			take_hidden_ivar(t, key, rec, classpath, &tmp, attached);
	}
	if (!*classpath)
		*classpath = tmp;
	return 0;
}

#define SHAPE_HOPS 256 /* a class with more ivars than this keeps its path out of reach */

/*
 * The same through object shapes (3.2): the class's shape, from its flags,
 * and its ancestors in the VM's shape list name each ivar and its slot in
 * the classext's iv_ptr.
 */
static int class_ivar_shapes(struct ruby_target *t, uint64_t flags, uint64_t ext, uint64_t *classpath,
			     uint64_t *attached)
{
	const struct ruby_layout *L = t->L;
	uint64_t list, ivs, tmp = 0;
	unsigned char sh[64];
	if (L->shape_size > (int64_t)sizeof(sh) || L->shape_id_bits <= 0 || L->shape_id_bits > 32)
		return ERR_UNSUPPORTED;
	int err = mem_read_u64(&t->mem, t->vm + (uint64_t)L->vm_shape_list, &list);
	err = err ?: mem_read_u64(&t->mem, ext + (uint64_t)L->classext_iv_ptr, &ivs);
	if (err || !list || !ivs)
		return err ? err : -ENOENT;
	uint64_t id = (flags >> L->shape_flag_shift) & ((1ULL << L->shape_id_bits) - 1);
	for (int hop = 0; hop < SHAPE_HOPS && id; hop++) {
		if ((err = mem_read(&t->mem, list + id * (uint64_t)L->shape_size, sh, (size_t)L->shape_size)))
			return err;
		uint64_t name, value;
		uint32_t next, parent;
		memcpy(&name, sh + L->shape_edge_name, 8);
		memcpy(&next, sh + L->shape_next_iv_index, 4);
		memcpy(&parent, sh + L->shape_parent_id, 4);
		if (sh[L->shape_type] == L->shape_type_ivar && next > 0 &&
		    !mem_read_u64(&t->mem, ivs + (uint64_t)(next - 1) * 8, &value))
			take_hidden_ivar(t, name, value, classpath, &tmp, attached);
		if (parent == id)
			break;
		id = parent;
	}
	if (!*classpath)
		*classpath = tmp;
	return 0;
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
