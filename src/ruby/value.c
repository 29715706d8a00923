/* value.c: a Ruby value read out of a target's memory and shown as Ruby's inspect shows it (snapshot --locals). */
#include "value.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/buf.h"
#include "../lib/err.h"
#include "frames.h"
#include "object.h"

#define VALUE_TEXT_MAX (16 * 1024) /* one value's text */
#define VALUE_IVARS 8              /* an object's instance variables or a Struct's members shown */

struct show {
	struct ruby_target *t;
	struct buf *b;
	struct ruby_shown *out; /* the outermost value's (class, encoding, torn) */
};

static void show_value(struct show *sh, uint64_t v, int depth);

const char *ruby_encoding_name(const struct ruby_target *t, unsigned i)
{
	const struct ruby_layout *L = t->L;
	if (i == (unsigned)L->encindex_utf_8)
		return "UTF-8";
	if (i == (unsigned)L->encindex_binary)
		return "ASCII-8BIT";
	if (i == (unsigned)L->encindex_us_ascii)
		return "US-ASCII";
	return NULL;
}

/* The length of the UTF-8 character at s (n bytes left) and its code point, or 0 if it is not one. */
static size_t utf8_char(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
	if (!len || len > n)
		return 0;
	uint32_t v = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	static const uint32_t least[] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (v < least[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0; /* overlong, out of range, a surrogate */
	*cp = v;
	return len;
}

/* The bytes of a String between double quotes, escaped as String#inspect escapes them. */
static void str_inspect(struct buf *b, const unsigned char *s, size_t n, int utf8)
{
	buf_addch(b, '"');
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		const char *esc = NULL;
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\f': esc = "\\f"; break;
		case '\v': esc = "\\v"; break;
		case '\b': esc = "\\b"; break;
		case '\a': esc = "\\a"; break;
		case 033: esc = "\\e"; break;
		case '#':
			if (i + 1 < n && (s[i + 1] == '{' || s[i + 1] == '$' || s[i + 1] == '@'))
				esc = "\\#";
			break;
		}
		if (esc) {
			buf_adds(b, esc);
			i++;
			continue;
		}
		uint32_t cp;
		size_t len = utf8 ? utf8_char(s + i, n - i, &cp) : 0;
		if (c >= 0x20 && c < 0x7f) {
			buf_addch(b, (char)c);
			i++;
		} else if (len && cp >= 0xa0) {
			buf_add(b, s + i, len); /* printable beyond ASCII, as is */
			i += len;
		} else if (len) {
			buf_addf(b, "\\u%04X", (unsigned)cp); /* a control character */
			i += len;
		} else {
			buf_addf(b, "\\x%02X", c); /* not a character of its encoding */
			i++;
		}
	}
	buf_addch(b, '"');
}

/* Drop the bytes of a UTF-8 character cut by the end of the first n bytes read of a longer string. */
static size_t utf8_cut(const unsigned char *s, size_t n)
{
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = s[n - back];
		if ((c & 0xc0) == 0x80)
			continue;
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 1;
		return len > back ? n - back : n;
	}
	return n;
}

/* A Float as Float#inspect writes it: the shortest digits that read back, fixed or with an exponent. */
static void float_text(struct buf *b, double d)
{
	if (isnan(d)) {
		buf_adds(b, "NaN");
		return;
	}
	if (isinf(d)) {
		buf_adds(b, d < 0 ? "-Infinity" : "Infinity");
		return;
	}
	char tmp[48];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	const char *p = tmp;
	if (*p == '-') {
		buf_addch(b, '-');
		p++;
	}
	char digs[24];
	int nd = 0;
	for (; *p && *p != 'e'; p++)
		if (*p != '.' && nd < (int)sizeof(digs) - 1)
			digs[nd++] = *p;
	int decpt = (*p == 'e' ? atoi(p + 1) : 0) + 1;
	while (nd > 1 && digs[nd - 1] == '0')
		nd--;
	digs[nd] = '\0';
	if (decpt > 0 && decpt < nd) {
		buf_addf(b, "%.*s.%s", decpt, digs, digs + decpt);
	} else if (decpt > 0 && decpt <= 15) {
		buf_adds(b, digs);
		for (int i = nd; i < decpt; i++)
			buf_addch(b, '0');
		buf_adds(b, ".0");
	} else if (decpt <= 0 && decpt > -4) {
		buf_adds(b, "0.");
		for (int i = 0; i < -decpt; i++)
			buf_addch(b, '0');
		buf_adds(b, digs);
	} else {
		buf_addf(b, "%c.%se%+03d", digs[0], nd > 1 ? digs + 1 : "0", decpt - 1);
	}
}

/* Is name an identifier (with an optional ? ! or = at its end), as a label or :sym writes it bare? */
static int identifier(const char *s, int allow_eq)
{
	const unsigned char *p = (const unsigned char *)s;
	if (!*p || (*p >= '0' && *p <= '9'))
		return 0;
	for (; *p; p++) {
		if (*p == '_' || *p >= 0x80 || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))
			continue;
		return (*p == '?' || *p == '!' || (allow_eq && *p == '=')) && !p[1];
	}
	return 1;
}

/* Can :name be written without quotes? */
static int bare_symbol(const char *s)
{
	static const char *const ops[] = { "+", "-", "*", "/", "%", "**", "==", "===", "!=", "=~", "!~", "!", "<", ">",
					   "<=", ">=", "<=>", "<<", ">>", "&", "|", "^", "~", "+@", "-@", "[]", "[]=",
					   "`" };
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(s, ops[i]))
			return 1;
	if (s[0] == '@')
		return identifier(s + (s[1] == '@' ? 2 : 1), 0) && !strpbrk(s, "?!");
	if (s[0] == '$')
		return identifier(s + 1, 0) && !strpbrk(s, "?!");
	return identifier(s, 1);
}

static void symbol_text(struct buf *b, const char *name, int label)
{
	if (label) { /* a Hash's key as 3.4 writes it: `key: ` */
		if (identifier(name, 0))
			buf_addf(b, "%s: ", name);
		else {
			str_inspect(b, (const unsigned char *)name, strlen(name), 1);
			buf_adds(b, ": ");
		}
		return;
	}
	buf_addch(b, ':');
	if (bare_symbol(name))
		buf_adds(b, name);
	else
		str_inspect(b, (const unsigned char *)name, strlen(name), 1);
}

static void torn(struct show *sh, const char *what)
{
	sh->out->torn = 1;
	sh->out->simple = 0; /* (its text is not the value) */
	buf_addf(sh->b, "(%s)", what);
}

/* The name of the class of an object whose klass is klass and type is type (a built-in name if it has none). */
/*
 * The name of an object's class (its klass word; past a singleton class of
 * its own, as Object#class goes), else of its built-in type's class; 0 with
 * *anon set to the class when that is an anonymous one (Class.new).
 */
static uint32_t class_of(struct ruby_target *t, uint64_t klass, int type, uint64_t *anon)
{
	const struct ruby_layout *L = t->L;
	uint64_t cflags;
	*anon = 0;
	for (int hop = 0; hop < 4 && klass && L->rclass_super >= 0; hop++) {
		int ct = ruby_type_of(t, klass, &cflags);
		if (ct < 0 || (ct != L->t_iclass && !(cflags & (uint64_t)L->fl_singleton)))
			break;
		if (mem_read_u64(&t->mem, klass + (uint64_t)L->rclass_super, &klass))
			klass = 0;
	}
	int singleton;
	uint32_t c = klass ? ruby_class_name(t, klass, &singleton) : 0;
	if (c && !singleton)
		return c;
	if (klass && L->rclass_super >= 0 && ruby_type_of(t, klass, NULL) == L->t_class) {
		*anon = klass;
		return 0;
	}
	const char *n = type == L->t_object ? "Object" : type == L->t_string ? "String" : type == L->t_array ? "Array" :
			type == L->t_hash ? "Hash" : type == L->t_float ? "Float" : type == L->t_bignum ? "Integer" :
			type == L->t_symbol ? "Symbol" : type == L->t_regexp ? "Regexp" : type == L->t_struct ? "Struct" :
			type == L->t_class ? "Class" : type == L->t_module ? "Module" : NULL;
	return n ? ruby_intern(t, n) : 0;
}

static void show_string(struct show *sh, uint64_t v, int depth)
{
	struct ruby_target *t = sh->t;
	unsigned char s[VALUE_STR_BYTES + 1];
	uint64_t len, flags;
	int n = ruby_string_peek(t, v, (char *)s, sizeof(s), &len, &flags);
	if (n < 0) {
		torn(sh, "unreadable String");
		return;
	}
	unsigned enc = (unsigned)((flags & (uint64_t)t->L->enc_mask) >> t->L->enc_shift);
	const char *name = ruby_encoding_name(t, enc);
	int utf8 = enc == (unsigned)t->L->encindex_utf_8;
	size_t shown = (size_t)n;
	if (utf8 && shown < len)
		shown = utf8_cut(s, shown);
	str_inspect(sh->b, s, shown, utf8);
	if (shown < len)
		buf_addf(sh->b, "... (%llu bytes)", (unsigned long long)len);
	if (!name)
		buf_addf(sh->b, " (encoding #%u)", enc);
	if (depth == 0)
		sh->out->encoding = name ? name : "";
}

static void show_symbol_object(struct show *sh, uint64_t v, int label)
{
	char name[256];
	uint64_t fstr;
	if (mem_read_u64(&sh->t->mem, v + (uint64_t)sh->t->L->rsymbol_fstr, &fstr) ||
	    ruby_read_string(sh->t, fstr, name, sizeof(name)))
		torn(sh, "unreadable Symbol");
	else
		symbol_text(sh->b, name, label);
}

/* An immediate's class name, or NULL when v is a heap object. */
static const char *immediate_class(const struct ruby_layout *L, uint64_t v)
{
	if (v & (uint64_t)L->fixnum_flag)
		return "Integer";
	if ((v & (uint64_t)L->flonum_mask) == (uint64_t)L->flonum_flag)
		return "Float";
	if ((v & ~(~0ULL << L->special_shift)) == (uint64_t)L->symbol_flag)
		return "Symbol";
	if (v == (uint64_t)L->qnil)
		return "NilClass";
	if (v == (uint64_t)L->qtrue)
		return "TrueClass";
	if (v == (uint64_t)L->qfalse)
		return "FalseClass";
	return NULL;
}

/* A Flonum's double (Ruby keeps 62 bits of it, the exponent's top bits rotated out). */
static double flonum(uint64_t v)
{
	if (v == 0x8000000000000002ULL)
		return 0.0;
	uint64_t b63 = v >> 63, x = (2 - b63) | (v & ~3ULL);
	x = x >> 3 | x << 61;
	double d;
	memcpy(&d, &x, sizeof(d));
	return d;
}

/* Up to max elements of the Array at v (its flags read); their count, or negative. *len gets its size. */
static int array_head(struct ruby_target *t, uint64_t v, uint64_t flags, uint64_t *out, int max, uint64_t *len)
{
	const struct ruby_layout *L = t->L;
	uint64_t ptr;
	int err = 0;
	if (flags & (uint64_t)L->rarray_embed_flag) {
		*len = (flags & (uint64_t)L->rarray_embed_len_mask) >> L->rarray_embed_len_shift;
		ptr = v + (uint64_t)L->rarray_embed_ary;
	} else {
		err = mem_read_u64(&t->mem, v + (uint64_t)L->rarray_heap_len, len);
		err = err ?: mem_read_u64(&t->mem, v + (uint64_t)L->rarray_heap_ptr, &ptr);
	}
	if (err)
		return err;
	if (*len >> 40)
		return ERR_CORRUPT;
	int n = *len < (uint64_t)max ? (int)*len : max;
	return n && (err = mem_read(&t->mem, ptr, out, (size_t)n * 8)) ? err : n;
}

/* Is v a static or dynamic Symbol? Its name into name if so. */
int ruby_symbol_name(struct ruby_target *t, uint64_t v, char *name, size_t cap)
{
	const struct ruby_layout *L = t->L;
	if ((v & ~(~0ULL << L->special_shift)) == (uint64_t)L->symbol_flag) {
		uint32_t id = ruby_id_name(t, v >> L->special_shift);
		snprintf(name, cap, "%s", id ? strtab_get(&t->strs, id) : "");
		return id != 0;
	}
	uint64_t fstr;
	return ruby_is_heap(t, v) && ruby_type_of(t, v, NULL) == L->t_symbol &&
	       !mem_read_u64(&t->mem, v + (uint64_t)L->rsymbol_fstr, &fstr) && !ruby_read_string(t, fstr, name, cap);
}

static void show_container(struct show *sh, uint64_t v, uint64_t flags, int type, uint32_t cls, int depth)
{
	struct ruby_target *t = sh->t;
	const struct ruby_layout *L = t->L;
	const char *what = type == L->t_array ? "Array" : "Hash";
	uint64_t keys[VALUE_ELEMENTS], vals[VALUE_ELEMENTS], size = 0;
	int n = type == L->t_array ? array_head(t, v, flags, vals, VALUE_ELEMENTS, &size) :
				     ruby_hash_pairs(t, v, flags, keys, vals, VALUE_ELEMENTS, &size);
	const char *cname = cls ? strtab_get(&t->strs, cls) : what;
	if (n == ERR_UNSUPPORTED) {
		buf_addf(sh->b, "#<%s>", cname);
		return;
	}
	if (n < 0) {
		torn(sh, type == L->t_array ? "unreadable Array" : "unreadable Hash");
		return;
	}
	if (depth > 0) { /* one level of elements */
		buf_addf(sh->b, "#<%s size=%llu>", cname, (unsigned long long)size);
		return;
	}
	uint64_t again;
	buf_addch(sh->b, type == L->t_array ? '[' : '{');
	for (int i = 0; i < n; i++) {
		if (i)
			buf_adds(sh->b, ", ");
		if (type == L->t_array) {
			show_value(sh, vals[i], depth + 1);
			continue;
		}
		char name[256];
		if (L->api_major * 100 + L->api_minor >= 304 && ruby_symbol_name(t, keys[i], name, sizeof(name))) {
			symbol_text(sh->b, name, 1);
		} else {
			show_value(sh, keys[i], depth + 1);
			buf_adds(sh->b, L->api_major * 100 + L->api_minor >= 304 ? " => " : "=>");
		}
		show_value(sh, vals[i], depth + 1);
	}
	if ((uint64_t)n < size)
		buf_adds(sh->b, n ? ", ..." : "...");
	buf_addch(sh->b, type == L->t_array ? ']' : '}');
	if ((uint64_t)n < size)
		buf_addf(sh->b, " (%s size %llu)", cname, (unsigned long long)size);
	/* The elements were read after the header: the same header after them, or it changed under the read. */
	if (mem_read_u64(&t->mem, v + (uint64_t)L->rbasic_flags, &again) || again != flags)
		torn(sh, "changed as it was read");
}

/* An object with its instance variables, `#<Foo @a=1, @b="x">`, or a Struct with its members, `#<struct P x=1>`. */
static void show_fields(struct show *sh, uint64_t v, uint64_t flags, uint64_t klass, int type, uint32_t cls, int depth)
{
	struct ruby_target *t = sh->t;
	const struct ruby_layout *L = t->L;
	const char *cname = cls ? strtab_get(&t->strs, cls) : "?";
	struct ruby_ivar iv[VALUE_IVARS];
	int total = 0, n = depth > 0 ? 0 : type == L->t_object ? ruby_object_ivars(t, v, flags, klass, iv, VALUE_IVARS, &total)
						      : ruby_struct_members(t, v, flags, klass, iv, VALUE_IVARS, &total);
	int range = type == L->t_struct && !strcmp(cname, "Range");
	if (range && n == 3) { /* begin, end, exclude_end */
		uint64_t b = iv[0].value, e = iv[1].value, excl = iv[2].value;
		if (b != (uint64_t)L->qnil)
			show_value(sh, b, depth + 1);
		buf_adds(sh->b, excl == (uint64_t)L->qtrue ? "..." : "..");
		if (e != (uint64_t)L->qnil)
			show_value(sh, e, depth + 1);
		return;
	}
	buf_addf(sh->b, "#<%s%s", type == L->t_struct && !range ? "struct " : "", cname);
	for (int i = 0; i < n; i++) {
		char name[256];
		uint32_t id = type == L->t_object ? ruby_id_name(t, iv[i].id) : 0;
		if (type == L->t_object)
			snprintf(name, sizeof(name), "%s", id ? strtab_get(&t->strs, id) : "?");
		else if (!ruby_symbol_name(t, iv[i].id, name, sizeof(name)))
			snprintf(name, sizeof(name), "?");
		buf_addf(sh->b, "%s%s=", i ? ", " : " ", name);
		show_value(sh, iv[i].value, depth + 1);
	}
	if (n >= 0 && total > n)
		buf_adds(sh->b, n ? ", ..." : " ...");
	buf_addch(sh->b, '>');
	if (n < 0 && n != ERR_UNSUPPORTED)
		torn(sh, "fields unreadable");
}

#define BIGNUM_SHOWN_BYTES 1024 /* a larger Integer (over 2,466 decimal digits) is shown by its size */

/* A Bignum's decimal digits, as Integer#inspect writes them; 1 when shown. */
static int show_bignum(struct show *sh, uint64_t v, uint64_t flags)
{
	struct ruby_target *t = sh->t;
	const struct ruby_layout *L = t->L;
	int64_t dsz = L->bdigit_size;
	if (L->rbignum_embed_flag < 0 || L->rbignum_heap_digits < 0 || dsz <= 0 || dsz > 8)
		return 0;
	uint64_t len, ptr = v + (uint64_t)L->rbignum_embed_ary;
	if (flags & (uint64_t)L->rbignum_embed_flag)
		len = (flags & (uint64_t)L->rbignum_embed_len_mask) >> L->rbignum_embed_len_shift;
	else if (mem_read_u64(&t->mem, v + (uint64_t)L->rbignum_heap_len, &len) ||
		 mem_read_u64(&t->mem, v + (uint64_t)L->rbignum_heap_digits, &ptr)) {
		torn(sh, "unreadable Integer");
		return 1;
	}
	if (len > BIGNUM_SHOWN_BYTES / (uint64_t)dsz) {
		sh->out->simple = 0; /* (its size only: not the value) */
		buf_addf(sh->b, "#<Integer: %s%llu bits>", flags & (uint64_t)L->rbignum_sign_bit ? "" : "-",
			 (unsigned long long)(len * (uint64_t)dsz * 8));
		return 1;
	}
	/* the digits, least significant first, as little-endian 32-bit words */
	uint32_t w[BIGNUM_SHOWN_BYTES / 4 + 2] = { 0 };
	size_t bytes = (size_t)len * (size_t)dsz, n = (bytes + 3) / 4;
	if (bytes && mem_read(&t->mem, ptr, w, bytes)) {
		torn(sh, "unreadable Integer");
		return 1;
	}
	/* divided by 10^9 until nothing is left: each remainder nine decimal digits, the lowest first */
	uint32_t chunks[(BIGNUM_SHOWN_BYTES / 4) * 32 / 29 + 2];
	size_t nc = 0;
	while (n && !w[n - 1])
		n--;
	while (n) {
		uint64_t rem = 0;
		for (size_t i = n; i-- > 0;) {
			uint64_t cur = rem << 32 | w[i];
			w[i] = (uint32_t)(cur / 1000000000u);
			rem = cur % 1000000000u;
		}
		chunks[nc++] = (uint32_t)rem;
		while (n && !w[n - 1])
			n--;
	}
	if (!(flags & (uint64_t)L->rbignum_sign_bit) && nc)
		buf_adds(sh->b, "-");
	buf_addf(sh->b, "%u", nc ? chunks[nc - 1] : 0);
	for (size_t i = nc - (nc > 0); i-- > 0;)
		buf_addf(sh->b, "%09u", chunks[i]);
	return 1;
}

static void show_value(struct show *sh, uint64_t v, int depth)
{
	struct ruby_target *t = sh->t;
	const struct ruby_layout *L = t->L;
	const char *imm = immediate_class(L, v);
	if (imm || !ruby_is_heap(t, v)) {
		if (depth == 0)
			sh->out->simple = 1, sh->out->cls = imm ? ruby_intern(t, imm) : 0;
		if (!imm)
			buf_adds(sh->b, v == (uint64_t)L->qundef ? "(undefined)" : "(not a value)");
		else if (v & (uint64_t)L->fixnum_flag)
			buf_addf(sh->b, "%lld", (long long)((int64_t)v >> 1));
		else if (*imm == 'F' && imm[1] == 'l')
			float_text(sh->b, flonum(v));
		else if (*imm == 'S') {
			char name[256];
			if (ruby_symbol_name(t, v, name, sizeof(name)))
				symbol_text(sh->b, name, 0);
			else
				torn(sh, "unknown Symbol");
		} else
			buf_adds(sh->b, v == (uint64_t)L->qnil ? "nil" : v == (uint64_t)L->qtrue ? "true" : "false");
		return;
	}
	uint64_t hdr[2];
	if (mem_read(&t->mem, v, hdr, sizeof(hdr))) {
		torn(sh, "unreadable");
		return;
	}
	uint64_t flags = hdr[L->rbasic_flags / 8], klass = hdr[L->rbasic_klass / 8], top;
	int type = (int)(flags & (uint64_t)L->t_mask);
	if (type == L->t_none || type == L->t_moved || type == L->t_zombie) {
		torn(sh, type == L->t_none ? "freed" : type == L->t_moved ? "moved by GC.compact" : "being finalized");
		return;
	}
	if (!klass && type != L->t_class && type != L->t_module) { /* a hidden object: not a user's value */
		torn(sh, "hidden object");
		return;
	}
	uint64_t anon;
	uint32_t cls = class_of(t, klass, type, &anon);
	if (!cls && anon) { /* as Ruby writes an anonymous class */
		char name[40];
		snprintf(name, sizeof(name), "#<Class:0x%016llx>", (unsigned long long)anon);
		cls = ruby_intern(t, name);
	}
	if (depth == 0) {
		sh->out->cls = cls;
		sh->out->simple = type == L->t_string || type == L->t_float || type == L->t_symbol ||
				  (type == L->t_bignum && L->bdigit_size > 0);
	}
	if (type == L->t_string) {
		show_string(sh, v, depth);
	} else if (type == L->t_float) {
		double d;
		if (mem_read(&t->mem, v + (uint64_t)L->rfloat_value, &d, sizeof(d)))
			torn(sh, "unreadable Float");
		else
			float_text(sh->b, d);
	} else if (type == L->t_symbol) {
		show_symbol_object(sh, v, 0);
	} else if (type == L->t_bignum && show_bignum(sh, v, flags)) {
		/* (shown) */
	} else if (type == L->t_array || type == L->t_hash) {
		show_container(sh, v, flags, type, cls, depth);
	} else if (type == L->t_class || type == L->t_module) {
		int singleton;
		uint32_t name = ruby_class_name(t, v, &singleton);
		if (depth == 0)
			sh->out->cls = ruby_intern(t, type == L->t_class ? "Class" : "Module");
		if (!name)
			buf_addf(sh->b, "#<%s>", type == L->t_class ? "Class" : "Module");
		else
			buf_addf(sh->b, singleton ? "#<Class:%s>" : "%s", strtab_get(&t->strs, name));
	} else if (type == L->t_object && L->vm_top_self >= 0 && t->vm &&
		   !mem_read_u64(&t->mem, t->vm + (uint64_t)L->vm_top_self, &top) && top == v) {
		buf_adds(sh->b, "main"); /* the top level's self, as Ruby shows it */
	} else if (type == L->t_object || type == L->t_struct) {
		show_fields(sh, v, flags, klass, type, cls, depth);
	} else {
		buf_addf(sh->b, "#<%s>", cls ? strtab_get(&t->strs, cls) : "?");
	}
}

int ruby_value_show(struct ruby_target *t, uint64_t v, struct ruby_shown *out)
{
	struct buf b = BUF_INIT(VALUE_TEXT_MAX);
	memset(out, 0, sizeof(*out));
	struct show sh = { t, &b, out };
	show_value(&sh, v, 0);
	out->text = strdup(buf_str(&b));
	buf_free(&b);
	return out->text ? 0 : -ENOMEM;
}

void ruby_shown_free(struct ruby_shown *s)
{
	free(s->text);
	s->text = NULL;
}

int ruby_value_label(struct ruby_target *t, uint64_t v, char *text, size_t cap)
{
	const struct ruby_layout *L = t->L;
	if (cap < 16)
		return -EINVAL;
	const char *imm = immediate_class(L, v);
	if (imm && *imm == 'S') { /* a static Symbol: its bare name */
		if (!ruby_symbol_name(t, v, text, cap)) {
			snprintf(text, cap, "(unknown Symbol)");
			return ERR_TORN;
		}
		return 0;
	}
	if (imm || !ruby_is_heap(t, v)) {
		struct buf b = BUF_INIT(256);
		struct ruby_shown shown = { 0 };
		struct show sh = { t, &b, &shown };
		show_value(&sh, v, 0);
		snprintf(text, cap, "%.*s", (int)b.len, b.data ? b.data : "");
		buf_free(&b);
		return 0;
	}
	uint64_t hdr[2];
	if (mem_read(&t->mem, v, hdr, sizeof(hdr))) {
		snprintf(text, cap, "(unreadable)");
		return ERR_TORN;
	}
	uint64_t flags = hdr[L->rbasic_flags / 8], klass = hdr[L->rbasic_klass / 8];
	int type = (int)(flags & (uint64_t)L->t_mask);
	if (type == L->t_string) {
		uint64_t len;
		int n = ruby_string_peek(t, v, text, cap, &len, NULL);
		if (n < 0) {
			snprintf(text, cap, "(unreadable String)");
			return ERR_TORN;
		}
		size_t k = (size_t)n < cap ? (size_t)n : cap - 1;
		if (k < len)
			k = utf8_cut((const unsigned char *)text, k);
		for (size_t i = 0; i < k; i++)
			if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
				text[i] = '?';
		text[k] = '\0';
		return 0;
	}
	if (type == L->t_float || type == L->t_symbol || (type == L->t_bignum && L->bdigit_size > 0)) {
		struct buf b = BUF_INIT(256);
		struct ruby_shown shown = { 0 };
		struct show sh = { t, &b, &shown };
		show_value(&sh, v, 0);
		snprintf(text, cap, "%.*s", (int)b.len, b.data ? b.data : "");
		if (type == L->t_symbol && text[0] == ':') /* a Symbol's name, as for a static one */
			memmove(text, text + 1, strlen(text));
		buf_free(&b);
		return shown.torn ? ERR_TORN : 0;
	}
	if (type == L->t_none || type == L->t_moved || type == L->t_zombie || !klass) {
		snprintf(text, cap, "(not a value)");
		return ERR_TORN;
	}
	uint64_t anon;
	uint32_t cls = class_of(t, klass, type, &anon);
	snprintf(text, cap, "#<%s>", cls ? strtab_get(&t->strs, cls) : "Class");
	return 0;
}
