/* label.h: the request a thread serves, told by its frames: a Sinatra route, a Rails action, a Rack env's method and path. */
#ifndef RBSCOPE_LABEL_H
#define RBSCOPE_LABEL_H

#include <stdint.h>

#include "sample.h"
#include "target.h"

/*
 * The request a thread serves in a sample of its n frames (innermost first;
 * at[i], when at is not NULL, where frame i lives): a strtab id of t's, or 0
 * when its frames say none.
 * - Sinatra names a route's block as a method of the app named after the
 *   route ("ShopApp#GET /orders/:id"): the innermost such frame's route,
 *   "GET /orders/:id".
 * - Rails calls an action from ActionController::BasicImplicitRender#send_action:
 *   the method that frame called, "OrdersController#show".
 * - Elsewhere in a Rack request (with at: its middleware, any other Rack
 *   app): the env Hash of the innermost method named call whose first
 *   parameter is env: its sinatra.route or Rails path parameters once
 *   routed, else its REQUEST_METHOD and PATH_INFO, the path's segments that
 *   are numbers or hex ids as ":id" ("GET /orders/:id").
 * What each name, method and env key says is cached in t->labels; a Rack
 * env costs one read of its table and one of its path a sample.
 */
uint32_t ruby_request_label(struct ruby_target *t, const struct ruby_frame *frames, const struct ruby_frame_at *at,
			    int n);

#endif
