/* label.h: the request a thread serves, told by its frames: a Sinatra route, a Rails action, a Rack env's method and path. */
#ifndef RBSCOPE_LABEL_H
#define RBSCOPE_LABEL_H

#include <stdint.h>

#include "sample.h"
#include "target.h"

/*
 * What a caller read with a sample's frames, for ruby_request_label: the
 * GC's count then (gc_known: read in the same read as the frames, or as
 * the frames were taken), and a copy of the value stack [vs_lo, vs_hi)
 * (vs NULL: none).
 */
/*
 * The words of a thread's stack its labels were read from (a Rack env's
 * slot, --label's locals) and their values then: a thread read the quiet
 * way (quiet.c) keeps its labels only while they are unchanged, since a
 * call returned and made again at the same place has the same frames, to
 * the byte, and other values.
 */
#define LABEL_WORDS (1 + USER_LABELS_MAX)
struct label_words {
	int n; /* LABEL_WORDS + 1: more than fit (such a thread is read in full) */
	struct label_word {
		uint64_t at, v;
	} w[LABEL_WORDS];
};

struct label_ctx {
	uint64_t gc;
	int gc_known;
	const unsigned char *vs;
	uint64_t vs_lo, vs_hi;
	/* the caller: 1 the walker (ruby_sample_take), 2 a capture of the GVL holder, drained before the
	   walker's sample of the same tick (capture.h) */
	int by;
	/* words taken with the frames (a capture's env parameter, and --label's local; target->env_iseq_seen):
	   where, and their values */
	uint64_t word_at, word, local_at, local;
	const struct label_words *words; /* words read with the frames (a quiet read's), or NULL */
	uint64_t stack_lo, stack_hi;     /* the thread's VM stack: a word there not copied is not read later */
	struct label_words *seen;        /* where the words a label was read from are noted, or NULL */
};

/*
 * The request a thread serves in a sample of its n frames (innermost first;
 * at[i], when at is not NULL, where frame i lives): a strtab id of t's, or 0
 * when its frames say none. cx may be NULL.
 * - Sinatra names a route's block as a method of the app named after the
 *   route ("ShopApp#GET /orders/:id"): the innermost such frame's route,
 *   "GET /orders/:id".
 * - Rails calls an action from ActionController::BasicImplicitRender#send_action,
 *   and renders from there too: the action its env's path parameters name
 *   (below), else the method send_action called, "OrdersController#show".
 * - Elsewhere in a Rack request (with at: its middleware, any other Rack
 *   app): the env Hash of the innermost method named call whose first
 *   parameter is env: its sinatra.route or Rails path parameters once
 *   routed, else its REQUEST_METHOD and PATH_INFO, the path's segments that
 *   are numbers or hex ids as ":id" ("GET /orders/:id").
 * The env parameter is read with the frames: from the walker's copy of the
 * value stack, or taken by the BPF capture as it samples (target.h's
 * env_iseq_seen; read at the next tick instead, a short request's frame had
 * often returned, and its slot held the next request's env or nothing).
 * What each name, method and env key says is cached in t->labels. A Rack
 * env costs four reads the first time it is seen (its Hash, its table's
 * header, its entries, its method and path), and one while no GC has
 * started since and its size is the same (see env_label); none for the
 * walker's read of an env a capture told unchanged since the walker's last
 * sample.
 */
uint32_t ruby_request_label(struct ruby_target *t, const struct ruby_frame *frames, const struct ruby_frame_at *at,
			    int n, const struct label_ctx *cx);

/*
 * --label NAME=EXPR: a value every sample of a thread carries beside the
 * request, read from outside as the thread is read. EXPR is
 * - a local variable's name (order_id): in the innermost Ruby frame that has
 *   one of that name; Klass#meth:var (or Klass.meth:var) only in frames of
 *   that method, as they are named ("Busy.run:n");
 * - @name: the instance variable of the innermost frame's self that has it;
 * - Thread.current[:key]: the fiber-local of the fiber the thread runs.
 * Without NAME=, the name is the variable's ("@tenant" is tenant).
 */
enum user_label_kind { USER_LABEL_LOCAL = 1, USER_LABEL_IVAR = 2, USER_LABEL_FIBER = 3 };
struct user_label {
	char key[48]; /* NAME: letters, digits, _ . - (not endpoint, the request's) */
	int kind;
	char var[64]; /* the local's name, the instance variable's (with its @), the fiber-local's key (no colon) */
	char method[128]; /* a local's: only in frames named so ("" any) */
};
/* Parse one --label; 0, or ERR_USAGE with why in msg. */
int ruby_user_label_parse(const char *spec, struct user_label *out, char *msg, size_t cap);

/*
 * The values of t->user_labels for a thread (th) sampled with n frames and
 * where they live (at): into out, in their order, those found (a label whose
 * variable no frame has is left out). Their count. Each value's text is
 * ruby_value_label's, at most USER_LABEL_TEXT bytes. A local's word is the
 * one cx has where it has it (the capture takes it as it samples, once told
 * of its frames' iseq, as it takes a Rack env; the walker's copy of the value
 * stack), else read now unless it is on the thread's own VM stack (none
 * then: word_at); an instance variable and a fiber-local are read now (a
 * capture's: at the tick after it).
 */
#define USER_LABEL_TEXT 64
int ruby_user_labels(struct ruby_target *t, uint64_t th, const struct ruby_frame *frames,
		     const struct ruby_frame_at *at, int n, const struct label_ctx *cx, struct ruby_label_value *out);

#endif
