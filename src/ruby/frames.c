/* frames.c: naming a thread's frames: methods with their class, blocks with their method, C methods, waits. */
#include "frames.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../lib/map.h"
#include "iseq.h"
#include "jit.h"
#include "object.h"
#include "waits.h"

#define NAME_TRIES 8      /* lookups of a method entry without a name or class before it is kept so a while */
#define NAME_AGAIN 8      /* lookups between two reads of one kept so, or of an address that held no entry */
#define NO_OWNER_READS 8 /* consistent reads finding no method before a frame is left unqualified for good */

static uint64_t word(const unsigned char *p, int64_t off)
{
	uint64_t v;
	memcpy(&v, p + off, 8);
	return v;
}

uint32_t ruby_intern(struct ruby_target *t, const char *s)
{
	int64_t id = strtab_intern(&t->strs, s, strlen(s));
	return id < 0 ? 0 : (uint32_t)id;
}

/*
 * "Foo#bar", "Foo.bar" or just "bar" for the method entry me (fallback names
 * the method when the entry's IDs do not resolve); 0 when it has no name,
 * and *not_me set when me does not read as a method entry at all.
 */
static uint32_t method_name_uncached(struct ruby_target *t, uint64_t me, uint32_t fallback, int *not_me)
{
	const struct ruby_layout *L = t->L;
	uint64_t flags;
	*not_me = 1;
	if (ruby_type_of(t, me, &flags) != L->t_imemo)
		return 0;
	if (((flags >> L->fl_ushift) & (uint64_t)L->imemo_mask) == (uint64_t)L->imemo_svar) {
		/* A method that used $~ or $_ keeps its method entry inside the svar that holds them. */
		if (mem_read_u64(&t->mem, me + (uint64_t)L->svar_cref_or_me, &me) || ruby_type_of(t, me, &flags) != L->t_imemo)
			return 0;
	}
	if (((flags >> L->fl_ushift) & (uint64_t)L->imemo_mask) != (uint64_t)L->imemo_ment)
		return 0;
	/* (no more than the entry's words: one in the last slot of a heap page ends where the mapping may end) */
	unsigned char buf[64], def[64];
	const int64_t offs[] = { L->me_def, L->me_called_id, L->me_owner };
	size_t need = layout_span(offs, sizeof(offs) / sizeof(offs[0]));
	if (need > sizeof(buf) || mem_read(&t->mem, me, buf, need))
		return 0;
	*not_me = 0;
	uint64_t defp = word(buf, L->me_def), owner = word(buf, L->me_owner);
	uint32_t mname = 0;
	if (defp && (size_t)L->def_original_id + 8 <= sizeof(def) && !mem_read(&t->mem, defp, def, (size_t)L->def_original_id + 8))
		mname = ruby_id_name(t, word(def, L->def_original_id));
	if (!mname)
		mname = ruby_id_name(t, word(buf, L->me_called_id));
	if (!mname)
		mname = fallback;
	if (!mname)
		return 0;
	int singleton = 0;
	uint32_t cname = ruby_class_name(t, owner, &singleton);
	if (!cname)
		return mname;
	char s[1024];
	snprintf(s, sizeof(s), "%s%c%s", strtab_get(&t->strs, cname), singleton ? '.' : '#', strtab_get(&t->strs, mname));
	return ruby_intern(t, s);
}

static uint32_t method_name(struct ruby_target *t, uint64_t me, uint32_t fallback)
{
	/*
	 * Keyed by entry and fallback: the same entry may be named with or without
	 * an iseq label. No name, or a name without its class, may be a passing
	 * failure (a read racing the entry or its class being set up, or the
	 * symbol table growing): it is tried again at each lookup NAME_TRIES
	 * times, then kept, and read again every NAME_AGAIN lookups, never given
	 * up on. An address that did not hold a method entry at all is read again
	 * every NAME_AGAIN lookups too: a torn read's garbage names heap slots
	 * that later hold method entries (a library loaded late: rubocop's
	 * Psych::Parser#parse read "unknown" for whole recordings, its slot given
	 * up on before it held it). The value: the name, the tries in bits 32-39,
	 * the lookups since the last read in bits 40-47, bit 62 when not a method
	 * entry, bit 63 when final, the GC's count when named in bits 48-61.
	 *
	 * A method entry made for a Method object (Sinatra binds each route's
	 * UnboundMethod for every request) is freed with it, and its address
	 * reused by the next: once the GC has run since an entry was named, its
	 * def is read again (one word), and a changed one renames it. (Before, a
	 * Sinatra route's frames were named after another route in 2-3% of the
	 * samples: tests/integration/labels.sh.)
	 */
	uint64_t key = me ^ ((uint64_t)fallback << 48), gc = t->gc_count_seen & 0x3fff;
	uint64_t *hit = map_get(&t->mes, key);
	if (hit && (*hit >> 63)) {
		if (!t->gc_count_seen || ((*hit >> 48) & 0x3fff) == gc)
			return (uint32_t)*hit;
		uint64_t defw, *was = map_get(&t->me_defs, me);
		/* (an svar keeps the entry further in: its word at me_def is read and compared all the same) */
		if (was && !mem_read_u64(&t->mem, me + (uint64_t)t->L->me_def, &defw) && defw == *was) {
			*hit = (*hit & ~(0x3fffULL << 48)) | gc << 48;
			return (uint32_t)*hit;
		}
	}
	uint32_t tries = hit ? (uint32_t)((*hit >> 32) & 0xff) : 0;
	if (hit && ((*hit >> 62 & 1) || tries >= NAME_TRIES)) {
		uint64_t seen = (*hit >> 40 & 0xff) + 1;
		if (seen < NAME_AGAIN) {
			*hit = (*hit & ~(0xffULL << 40)) | seen << 40;
			return (uint32_t)*hit;
		}
	}
	tries = tries < NAME_TRIES ? tries + 1 : NAME_TRIES;
	int not_me;
	uint32_t sid = method_name_uncached(t, me, fallback, &not_me);
	if (not_me) {
		map_put(&t->mes, key, 1ULL << 62);
		return 0;
	}
	const char *n = strtab_get(&t->strs, sid);
	int final = sid && (strchr(n, '#') || strchr(n, '.'));
	uint64_t now;
	if (final && !mem_read_u64(&t->mem, me + (uint64_t)t->L->me_def, &now)) /* (the word checked later) */
		map_put(&t->me_defs, me, now);
	map_put(&t->mes, key, sid | (uint64_t)tries << 32 | gc << 48 | (uint64_t)final << 63);
	return sid;
}

/* Is me a method entry (an IMEMO ment, or the svar that holds one)? */
static int is_method_entry(struct ruby_target *t, uint64_t me)
{
	const struct ruby_layout *L = t->L;
	uint64_t flags;
	if (ruby_type_of(t, me, &flags) != L->t_imemo)
		return 0;
	uint64_t type = (flags >> L->fl_ushift) & (uint64_t)L->imemo_mask;
	return type == (uint64_t)L->imemo_ment || type == (uint64_t)L->imemo_svar;
}

/* "block (2 levels) in bar" + "Foo#bar" -> "block (2 levels) in Foo#bar" */
static uint32_t qualify_block(struct ruby_target *t, uint32_t label, uint32_t method)
{
	const char *l = strtab_get(&t->strs, label), *in = strstr(l, " in ");
	if (!in || !method)
		return label;
	char s[1024];
	snprintf(s, sizeof(s), "%.*s in %s", (int)(in - l), l, strtab_get(&t->strs, method));
	return ruby_intern(t, s);
}

/* Follow a block's ep chain to the local ep and set *me to its method entry or cref; -1 if the chain breaks. */
static int local_me(struct ruby_target *t, uint64_t specval, uint64_t *me)
{
	const struct ruby_layout *L = t->L;
	for (int hop = 0; hop < 16; hop++) {
		uint64_t ep = specval & ~3ULL, w[EP_WORDS];
		if (!ep || (ep & 7) || mem_read(&t->mem, ep - 16, w, sizeof(w)))
			return -1;
		if (w[2] & (uint64_t)L->env_flag_local) {
			*me = w[0];
			return 0;
		}
		specval = w[1];
	}
	return -1;
}

/* Does "Foo#bar" / "Foo.bar" name the method "bar"? */
static int names_method(const char *qualified, const char *method)
{
	size_t q = strlen(qualified), m = strlen(method);
	return q > m && !strcmp(qualified + q - m, method) && (qualified[q - m - 1] == '#' || qualified[q - m - 1] == '.');
}

/*
 * Name one iseq frame. Whether it is a method or a block comes from the iseq
 * itself, not from the env flags (which a torn read can garble). The class
 * comes from the method entry in the env, and is believed only when that
 * entry names the iseq's own method; it is cached on the iseq once found,
 * and "has no owner" is cached only from a trusted (not salvaged) read.
 */
static void name_iseq_frame(struct ruby_target *t, struct iseq_info *is, uint64_t magic, const uint64_t *ep,
			    int trusted, struct ruby_frame *f)
{
	const struct ruby_layout *L = t->L;
	/* strtab_get pointers die when the table grows (method_name interns): fetch them late. */
	f->kind = FRAME_RUBY;
	f->path = is->path;
	f->name = is->label;
	if (is->qualified || is->owner_tried) {
		if (is->qualified)
			f->name = is->qualified;
		if (!(magic == (uint64_t)L->frame_magic_block && (ep[2] & (uint64_t)L->frame_flag_bmethod)))
			return;
	}
	if (is->type == L->iseq_type_method) {
		uint32_t q = method_name(t, ep[0], is->label);
		if (q && names_method(strtab_get(&t->strs, q), strtab_get(&t->strs, is->label))) {
			is->qualified = q;
			is->owner_tried = 1;
			f->name = q;
		} else if (trusted && ++is->no_owner >= NO_OWNER_READS) {
			is->owner_tried = 1; /* e.g. an iseq defined under another name */
		}
		return;
	}
	if (is->type == L->iseq_type_eval || (L->rescue_as_parent > 0 && (is->type == L->iseq_type_rescue ||
									   is->type == L->iseq_type_ensure))) {
		/*
		 * Code run by eval, named as the code whose binding it runs in (3.4
		 * labels the iseq itself "<compiled>"; 2.7-3.3 its parent's, bare),
		 * and from 3.4 a rescue or ensure clause, named as the code it is in:
		 * after the parent iseq (past evals in evals), as Ruby's backtraces
		 * name them: a method ("Foo#bar"), a block ("block in Foo#bar"),
		 * "<main>"...
		 */
		const struct iseq_info *p = is; /* (is is not used past here: iseq_get may move the cache) */
		for (int hop = 0; hop < 8 && p && (p->type == L->iseq_type_eval || p->type == L->iseq_type_rescue ||
						   p->type == L->iseq_type_ensure); hop++)
			p = p->parent ? iseq_get(t, p->parent) : NULL;
		uint64_t me = ep[0];
		int ok = (ep[2] & (uint64_t)L->env_flag_local) ? 0 : local_me(t, ep[1], &me);
		uint32_t m = !ok && me ? method_name(t, me, 0) : 0;
		if (p && p->type == L->iseq_type_block)
			f->name = qualify_block(t, p->label, m);
		else if (p && p->type != L->iseq_type_method && p->type != L->iseq_type_eval)
			f->name = p->label; /* <main>, <class:Foo>, <top (required)> */
		else if (m)
			f->name = m;
		return;
	}
	if (is->type != L->iseq_type_block && is->type != L->iseq_type_rescue && is->type != L->iseq_type_ensure)
		return;
	if (magic == (uint64_t)L->frame_magic_block && (ep[2] & (uint64_t)L->frame_flag_bmethod)) {
		uint32_t q = method_name(t, ep[0], is->label); /* define_method: named by its method entry */
		f->name = q ? q : is->label;
		return;
	}
	/* "block (2 levels) in bar": the method whose local env the chain of eps ends in must be "bar". */
	uint64_t me = 0;
	int ok = (ep[2] & (uint64_t)L->env_flag_local) ? -1 : local_me(t, ep[1], &me);
	uint32_t m = !ok && me ? method_name(t, me, 0) : 0; /* 0: a cref, the block is outside any method */
	const char *in = strstr(strtab_get(&t->strs, is->label), " in ");
	if (m && in && names_method(strtab_get(&t->strs, m), in + 4)) {
		is->qualified = qualify_block(t, is->label, m);
		is->owner_tried = 1;
		f->name = is->qualified;
	} else if (trusted && !ok && !m && ++is->no_owner >= NO_OWNER_READS) {
		is->owner_tried = 1;
	}
}

enum { METHOD_WAITS = 1, METHOD_SWITCHES = 2 };

/* What the method named by string id is (METHOD_*), cached per name in t->waits (value: flags + 1). */
static int method_class(struct ruby_target *t, uint32_t name)
{
	uint64_t *hit = map_get(&t->waits, name);
	if (hit)
		return (int)*hit - 1;
	const char *s = strtab_get(&t->strs, name);
	int c = (ruby_wait_method(s) ? METHOD_WAITS : 0) | (ruby_switch_method(s) ? METHOD_SWITCHES : 0);
	map_put(&t->waits, name, (uint64_t)c + 1);
	return c;
}

/* Is magic one of the frame types a control frame can have? */
static int known_magic(const struct ruby_layout *L, uint64_t magic)
{
	const int64_t m[] = { L->frame_magic_method, L->frame_magic_block, L->frame_magic_class, L->frame_magic_top,
			      L->frame_magic_cfunc, L->frame_magic_ifunc, L->frame_magic_eval, L->frame_magic_rescue,
			      L->frame_magic_dummy };
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (magic == (uint64_t)m[i])
			return 1;
	return 0;
}

int ruby_name_frames(struct ruby_target *t, const unsigned char *cfps, uint64_t (*eps)[EP_WORDS], int n, int skip,
		     int trusted, const struct ruby_jit_at *jit_at, struct ruby_frame *out, struct ruby_frame_at *at,
		     int *dropped)
{
	const struct ruby_layout *L = t->L;
	size_t csz = (size_t)L->cfp_size;
	int k = 0, skip_parent = 0;
	for (int i = 0; i < n; i++) {
		const unsigned char *c = cfps + (size_t)i * csz;
		uint64_t iseq = word(c, L->cfp_iseq), pc = word(c, L->cfp_pc);
		uint64_t magic = eps[i][2] & (uint64_t)L->frame_magic_mask;
		struct ruby_frame *f = &out[k];
		memset(f, 0, sizeof(*f));
		if (at)
			at[k] = (struct ruby_frame_at){ iseq, word(c, L->cfp_ep), word(c, L->cfp_self) };
		if (!known_magic(L, magic) || (magic == (uint64_t)L->frame_magic_cfunc && iseq)) {
			++*dropped; /* not a frame's env (a C frame has no iseq): written over since, even in a read that
				       looked consistent (ec->cfp back where it was after a return and new calls) */
			continue;
		}
		if (magic == (uint64_t)L->frame_magic_cfunc) {
			f->kind = FRAME_CFUNC;
			f->name = method_name(t, eps[i][0], 0);
			if (!f->name && (!trusted || !is_method_entry(t, eps[i][0]))) {
				/* garbled by the thread returning under the read (a live C frame's env always holds its
				   method entry: one that does not was written over as it was read): leave it out */
				++*dropped;
				continue;
			}
			if (!f->name)
				f->name = ruby_intern(t, "(unknown C method)");
			f->line = -1;
			k++;
			continue;
		}
		if (magic == (uint64_t)L->frame_magic_ifunc || magic == (uint64_t)L->frame_magic_dummy || !iseq)
			continue;
		/*
		 * A frame that has run JIT code (its jit_return set: the interpreter
		 * clears it, the JIT's entry and its calls set it) has the pc the
		 * JIT last saved, which it does before each call: its callers' are
		 * exact, but the innermost frame's may be stale, 0, or an earlier
		 * frame's left in that stack slot. Its method stands; its line is
		 * the one the JIT's tables give for where the thread ran its code,
		 * else unknown, never a wrong one; unless the thread sleeps, in a
		 * call the JIT saved the pc for.
		 */
		int jit = L->cfp_jit_return >= 0 && word(c, L->cfp_jit_return);
		int unknown = jit && ((i == 0 && !(jit_at && jit_at->asleep)) || !pc);
		struct iseq_info *is;
		int torn = 0;
		int32_t jit_line = 0;
		if (unknown) {
			is = iseq_get(t, iseq);
			int r = is && i == 0 && jit_at && jit_at->ip ? ruby_jit_line(t, is, jit_at->ip, &jit_line) : -ENOTSUP;
			t->jit_table.asked += r != -ENOTSUP;
			t->jit_table.found += !r;
			t->jit_table.spanning += r == -ERANGE;
		} else if (pc) {
			is = iseq_get_at(t, iseq, pc, &torn);
			if (!is && torn && jit) { /* (an outer JIT frame whose pc is another call's: not one of Ruby's) */
				is = iseq_get(t, iseq);
				unknown = 1;
				torn = 0;
			}
		} else {
			continue;
		}
		if (!is) {
			/* a frame being pushed as it was read, or one of two calls: left out, and the read is not
			   clean whatever it looked like (named, it would show its method at a line it is not at) */
			*dropped += !trusted || torn;
			continue;
		}
		f->line = jit_line ? jit_line : unknown ? FRAME_LINE_UNKNOWN : iseq_line(is, pc);
		int clause = L->rescue_as_parent > 0 && (is->type == L->iseq_type_rescue || is->type == L->iseq_type_ensure);
		int c_trace = is->c_trace;
		name_iseq_frame(t, is, magic, eps[i], trusted, f); /* (is may be moved by it) */
		if (c_trace) { /* (3.4's Array#each & co under YJIT: a C method to Ruby's backtraces, at its caller's line) */
			f->kind = FRAME_CFUNC;
			f->path = 0;
			f->line = -1;
		}
		/* The frame of the code a rescue or ensure clause is in: from 3.4, Ruby shows the clause alone. */
		int skip = skip_parent;
		skip_parent = clause;
		if (skip)
			continue;
		k++;
	}
	if (skip) {
		if (at)
			at[k] = (struct ruby_frame_at){ 0 };
		out[k++] = (struct ruby_frame){ ruby_intern(t, "(truncated)"), 0, 0, FRAME_TRUNCATED };
	}
	/* A C method runs at its caller's location, as in Ruby's own backtraces. */
	for (int i = k - 1, last = -1; i >= 0; i--) {
		if (out[i].kind == FRAME_RUBY)
			last = i;
		else if (out[i].kind == FRAME_CFUNC && last >= 0) {
			out[i].path = out[last].path;
			out[i].line = out[last].line;
		}
	}
	/*
	 * Methods that wait are idle, not work. Frames above one that switches
	 * fibers are ones its thread returned from before it switched: read after
	 * the switch (the stack moved under the read), left out.
	 */
	for (int i = 0; i < k; i++) {
		if (out[i].kind == FRAME_TRUNCATED)
			continue;
		int cls = method_class(t, out[i].name);
		if (cls & METHOD_WAITS)
			out[i].kind = FRAME_WAIT;
		if ((cls & METHOD_SWITCHES) && i > 0) {
			*dropped += i;
			memmove(out, out + i, (size_t)(k - i) * sizeof(*out));
			if (at)
				memmove(at, at + i, (size_t)(k - i) * sizeof(*at));
			k -= i;
			i = 0;
		}
	}
	return k;
}
