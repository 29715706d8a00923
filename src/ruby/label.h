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
struct label_ctx {
	uint64_t gc;
	int gc_known;
	const unsigned char *vs;
	uint64_t vs_lo, vs_hi;
	/* the caller: 1 the walker (ruby_sample_take), 2 a capture of the GVL holder, drained before the
	   walker's sample of the same tick (capture.h) */
	int by;
	/* a word taken with the frames (a capture's env parameter, target->env_iseq_seen): where, and its value */
	uint64_t word_at, word;
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

#endif
