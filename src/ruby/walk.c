/* walk.c: reading every Ruby thread's control frames and naming each frame. */
#include "walk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/err.h"
#include "../proc/task.h"
#include "iseq.h"
#include "object.h"

#define RETRIES 2
#define EP_WORDS 3 /* ep[-2] (method entry or cref), ep[-1] (specval), ep[0] (flags) */

const char *ruby_thread_state_name(int state)
{
	switch (state) {
	case THREAD_RUNNING: return "running";
	case THREAD_GVL_WAIT: return "waiting for GVL";
	case THREAD_BLOCKED: return "blocked";
	case THREAD_SLEEPING: return "sleeping";
	case THREAD_KILLED: return "killed";
	}
	return "unknown";
}

static uint64_t word(const unsigned char *p, int64_t off)
{
	uint64_t v;
	memcpy(&v, p + off, 8);
	return v;
}

static uint32_t intern(struct ruby_target *t, const char *s)
{
	int64_t id = strtab_intern(&t->strs, s, strlen(s));
	return id < 0 ? 0 : (uint32_t)id;
}

/* "Foo#bar", "Foo.bar" or just "bar" for the method entry me. Cached by method entry address. */
static uint32_t method_name_uncached(struct ruby_target *t, uint64_t me, uint32_t fallback)
{
	const struct ruby_layout *L = t->L;
	uint64_t flags;
	if (ruby_type_of(t, me, &flags) != L->t_imemo ||
	    ((flags >> L->fl_ushift) & (uint64_t)L->imemo_mask) != (uint64_t)L->imemo_ment)
		return fallback;
	unsigned char buf[48], def[64];
	if (mem_read(&t->mem, me, buf, sizeof(buf)))
		return fallback;
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
	return intern(t, s);
}

static uint32_t method_name(struct ruby_target *t, uint64_t me, uint32_t fallback)
{
	/* Keyed by entry and fallback: the same entry may be named with or without an iseq label. */
	uint64_t key = me ^ ((uint64_t)fallback << 48);
	uint64_t *hit = map_get(&t->mes, key);
	if (hit)
		return (uint32_t)*hit;
	uint32_t sid = method_name_uncached(t, me, fallback);
	map_put(&t->mes, key, sid);
	return sid;
}

/* "block (2 levels) in bar" + "Foo#bar" -> "block (2 levels) in Foo#bar" */
static uint32_t qualify_block(struct ruby_target *t, uint32_t label, uint32_t method)
{
	const char *l = strtab_get(&t->strs, label), *in = strstr(l, " in ");
	if (!in || !method)
		return label;
	char s[1024];
	snprintf(s, sizeof(s), "%.*s in %s", (int)(in - l), l, strtab_get(&t->strs, method));
	return intern(t, s);
}

/* Follow a block's ep chain to the method's local ep and return its method entry (0 if none). */
static uint64_t local_me(struct ruby_target *t, uint64_t specval)
{
	const struct ruby_layout *L = t->L;
	for (int hop = 0; hop < 16; hop++) {
		uint64_t ep = specval & ~3ULL, w[EP_WORDS];
		if (!ep || mem_read(&t->mem, ep - 16, w, sizeof(w)))
			return 0;
		if (w[2] & (uint64_t)L->env_flag_local)
			return w[0];
		specval = w[1];
	}
	return 0;
}

struct raw_thread {
	uint64_t th, ec, cfp, end;
	int n;
};

/* Name one iseq frame. */
static void name_iseq_frame(struct ruby_target *t, struct iseq_info *is, uint64_t magic, const uint64_t *ep,
			    struct ruby_frame *f)
{
	const struct ruby_layout *L = t->L;
	f->kind = FRAME_RUBY;
	f->path = is->path;
	f->name = is->label;
	if (magic == (uint64_t)L->frame_magic_method) {
		if (!is->owner_tried) {
			is->qualified = method_name(t, ep[0], is->label);
			is->owner_tried = 1;
		}
		if (is->qualified)
			f->name = is->qualified;
	} else if (magic == (uint64_t)L->frame_magic_block) {
		if (ep[2] & (uint64_t)L->frame_flag_bmethod) {
			f->name = method_name(t, ep[0], is->label); /* define_method */
		} else {
			if (!is->owner_tried) {
				uint64_t me = (ep[2] & (uint64_t)L->env_flag_local) ? 0 : local_me(t, ep[1]);
				is->qualified = me ? qualify_block(t, is->label, method_name(t, me, 0)) : 0;
				is->owner_tried = 1;
			}
			if (is->qualified)
				f->name = is->qualified;
		}
	}
}

/* Read and name one thread's frames; 0, ERR_TORN, or another negative code. */
static int walk_thread(struct ruby_target *t, const struct raw_thread *rt, struct ruby_frame *out, int *nout)
{
	const struct ruby_layout *L = t->L;
	size_t csz = (size_t)L->cfp_size;
	int n = rt->n, skip = 0;
	if (n > WALK_MAX_FRAMES) {
		skip = n - WALK_MAX_FRAMES; /* keep the innermost frames */
		n = WALK_MAX_FRAMES;
	}
	unsigned char *cfps = malloc((size_t)n * csz);
	uint64_t (*eps)[EP_WORDS] = malloc((size_t)n * sizeof(*eps));
	struct mem_iov *iov = malloc(((size_t)n + 1) * sizeof(*iov));
	int err = cfps && eps && iov ? 0 : -ENOMEM;
	if (!err)
		err = mem_read(&t->mem, rt->cfp, cfps, (size_t)n * csz);
	/* One readv: the ec's cfp again (has the stack moved?) and each frame's env words. */
	uint64_t cfp_again = 0;
	int niov = 0;
	if (!err) {
		iov[niov++] = (struct mem_iov){ rt->ec + (uint64_t)L->ec_cfp, &cfp_again, 8 };
		for (int i = 0; i < n; i++) {
			uint64_t ep = word(cfps + (size_t)i * csz, L->cfp_ep);
			memset(eps[i], 0, sizeof(eps[i]));
			if (ep > 16 && !(ep & 7))
				iov[niov++] = (struct mem_iov){ ep - 16, eps[i], sizeof(eps[i]) };
		}
		err = t->mem.readv(&t->mem, iov, niov);
		if (err == -EFAULT)
			err = ERR_TORN; /* a frame's ep pointed at unmapped memory: it was being rewritten */
	}
	if (!err && cfp_again != rt->cfp)
		err = ERR_TORN;
	int k = 0;
	for (int i = 0; !err && i < n; i++) {
		const unsigned char *c = cfps + (size_t)i * csz;
		uint64_t iseq = word(c, L->cfp_iseq), pc = word(c, L->cfp_pc);
		uint64_t magic = eps[i][2] & (uint64_t)L->frame_magic_mask;
		struct ruby_frame *f = &out[k];
		memset(f, 0, sizeof(*f));
		if (magic == (uint64_t)L->frame_magic_cfunc) {
			f->kind = FRAME_CFUNC;
			f->name = method_name(t, eps[i][0], 0);
			if (!f->name)
				f->name = intern(t, "(unknown C method)");
			f->line = -1;
			k++;
			continue;
		}
		if (magic == (uint64_t)L->frame_magic_ifunc || magic == (uint64_t)L->frame_magic_dummy || !iseq || !pc)
			continue;
		struct iseq_info *is = iseq_get(t, iseq);
		if (!is)
			continue;
		name_iseq_frame(t, is, magic, eps[i], f);
		f->line = iseq_line(is, pc);
		k++;
	}
	if (!err && skip && k < WALK_MAX_FRAMES) {
		out[k++] = (struct ruby_frame){ intern(t, "(truncated)"), 0, 0, FRAME_TRUNCATED };
	}
	/* A C method runs at its caller's location, as in Ruby's own backtraces. */
	for (int i = k - 1, last = -1; !err && i >= 0; i--) {
		if (out[i].kind == FRAME_RUBY)
			last = i;
		else if (out[i].kind == FRAME_CFUNC && last >= 0) {
			out[i].path = out[last].path;
			out[i].line = out[last].line;
		}
	}
	free(cfps);
	free(eps);
	free(iov);
	*nout = err ? 0 : k;
	return err;
}

static int thread_state(struct ruby_target *t, const unsigned char *th, uint64_t thaddr, uint64_t gvl_owner)
{
	const struct ruby_layout *L = t->L;
	unsigned status = (th[L->th_status_byte] >> L->th_status_shift) & ((1u << L->th_status_bits) - 1);
	if (status == (unsigned)L->thread_killed)
		return THREAD_KILLED;
	if (gvl_owner == thaddr)
		return THREAD_RUNNING;
	if (status == (unsigned)L->thread_stopped || status == (unsigned)L->thread_stopped_forever)
		return THREAD_SLEEPING;
	return word(th, L->th_unblock_func) ? THREAD_BLOCKED : THREAD_GVL_WAIT;
}

static int32_t thread_tid(struct ruby_target *t, const unsigned char *th)
{
	const struct ruby_layout *L = t->L;
	uint32_t tid = 0;
	if (L->th_tid >= 0) {
		memcpy(&tid, th + L->th_tid, 4);
	} else if (L->th_nt >= 0) {
		uint64_t nt = word(th, L->th_nt);
		if (nt)
			mem_read_u32(&t->mem, nt + (uint64_t)L->nt_tid, &tid);
	} else if (L->th_thread_id >= 0) {
		uint64_t pt = word(th, L->th_thread_id); /* glibc: pthread_t is the struct pthread address */
		if (pt)
			mem_read_u32(&t->mem, pt + TASK_GLIBC_PTHREAD_TID_OFFSET, &tid);
	}
	return (int32_t)tid;
}

/* The thread list head and the GVL owner: in the VM (2.7) or the main ractor (3.x). */
static int read_vm_threads(struct ruby_target *t, uint64_t *head, uint64_t *first, uint64_t *owner, uint64_t *main_th)
{
	const struct ruby_layout *L = t->L;
	uint64_t base = t->vm, ractor = 0;
	int err = 0;
	/* The main thread and ractor live as long as the VM: read them once. */
	if (!t->main_thread) {
		err = mem_read_u64(&t->mem, t->vm + (uint64_t)L->vm_main_thread, &t->main_thread);
		if (!err && L->vm_main_ractor >= 0)
			err = mem_read_u64(&t->mem, t->vm + (uint64_t)L->vm_main_ractor, &t->main_ractor);
		if (err) {
			t->main_thread = 0;
			return err;
		}
	}
	*main_th = t->main_thread;
	if (L->vm_main_ractor >= 0) {
		ractor = t->main_ractor;
		base = ractor;
	}
	int64_t hoff = ractor ? L->ractor_threads_set : L->vm_living_threads;
	int64_t ooff = ractor ? L->ractor_gvl_owner : L->vm_gvl_owner;
	int64_t lo = hoff < ooff ? hoff : ooff, hi = (hoff > ooff ? hoff : ooff) + 8;
	unsigned char buf[512];
	if (hi - lo > (int64_t)sizeof(buf))
		return ERR_UNSUPPORTED;
	if ((err = mem_read(&t->mem, base + (uint64_t)lo, buf, (size_t)(hi - lo))))
		return err;
	*head = base + (uint64_t)hoff;
	*first = word(buf, hoff - lo); /* list_head { n { next, prev } } */
	*owner = word(buf, ooff - lo);
	return 0;
}

int ruby_sample_take(struct ruby_target *t, struct ruby_sample *s, unsigned flags)
{
	const struct ruby_layout *L = t->L;
	uint64_t head, node, owner, main_th;
	s->nthreads = 0;
	s->nframes_total = 0;
	s->torn = s->retried = 0;
	int err = read_vm_threads(t, &head, &node, &owner, &main_th);
	if (err)
		return err == -EFAULT ? ERR_TORN : err;
	unsigned char th[1024];
	if (t->th_read_len > sizeof(th))
		return ERR_UNSUPPORTED;
	for (int guard = 0; node && node != head && guard < WALK_MAX_THREADS; guard++) {
		uint64_t thaddr = node - (uint64_t)L->th_lt_node;
		if ((err = mem_read(&t->mem, thaddr, th, t->th_read_len)))
			return err == -EFAULT ? ERR_TORN : err;
		node = word(th, L->th_lt_node); /* next */
		struct ruby_thread_sample *ts = &s->threads[s->nthreads];
		memset(ts, 0, sizeof(*ts));
		ts->th = thaddr;
		ts->main = thaddr == main_th;
		ts->state = thread_state(t, th, thaddr, owner);
		ts->tid = thread_tid(t, th);
		ts->kstate = (flags & WALK_KSTATE) && ts->tid ? task_state(t->pid, ts->tid) : '?';
		uint64_t name = word(th, L->th_name);
		if (ruby_is_heap(t, name)) {
			char nbuf[256];
			if (!ruby_read_string(t, name, nbuf, sizeof(nbuf)))
				ts->name = intern(t, nbuf);
		}
		uint64_t ec = word(th, L->th_ec);
		if (!ec || ts->state == THREAD_KILLED)
			continue;
		for (int attempt = 0; attempt <= RETRIES; attempt++) {
			uint64_t e[3];
			struct raw_thread rt = { thaddr, ec, 0, 0, 0 };
			err = mem_read(&t->mem, ec, e, sizeof(e));
			if (err)
				return err == -EFAULT ? ERR_TORN : err;
			uint64_t stack = e[L->ec_vm_stack / 8], size = e[L->ec_vm_stack_size / 8];
			rt.cfp = e[L->ec_cfp / 8];
			rt.end = stack + size * 8;
			/* Stack bounds: the frames sit between cfp and the end of the VM stack. */
			if (!stack || size > (64u << 20) || rt.cfp < stack || rt.cfp >= rt.end ||
			    (rt.end - rt.cfp) % (uint64_t)L->cfp_size) {
				err = ERR_TORN;
				continue;
			}
			rt.n = (int)((rt.end - rt.cfp) / (uint64_t)L->cfp_size);
			uint32_t room = WALK_MAX_TOTAL - s->nframes_total;
			if (room < 2) {
				err = 0;
				break;
			}
			int nf = 0;
			if (rt.n > (int)room - 1)
				rt.n = (int)room - 1;
			err = walk_thread(t, &rt, s->frames + s->nframes_total, &nf);
			if (err == ERR_TORN)
				continue;
			if (err)
				return err;
			if (attempt)
				s->retried++;
			ts->frames = s->frames + s->nframes_total;
			ts->nframes = nf;
			s->nframes_total += (uint32_t)nf;
			break;
		}
		if (err == ERR_TORN) {
			s->torn++;
			continue;
		}
		s->nthreads++;
	}
	return 0;
}
