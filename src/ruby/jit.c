/* jit.c: is a JIT on in the target: its enabled flag, else its code's mapping. */
#include "jit.h"

#include <stdint.h>
#include <string.h>

#include "../proc/maps.h"
#include "../proc/mem.h"

const char *ruby_jit_name(const struct ruby_target *t)
{
	return t->L && t->L->api_major >= 4 ? "JIT" : "YJIT";
}

/*
 * Is some mapping anonymous and executable (JIT code)? A core names no
 * mapping the kernel made: the vDSO (an ELF image) and the vsyscall page
 * (in the kernel's half) are anonymous there, and are not JIT code.
 */
static int jit_code_mapped(struct ruby_target *t, const struct maps *m)
{
	for (int i = 0; i < m->n; i++) {
		const struct map_entry *e = &m->v[i];
		char magic[4];
		if (e->path[0] || e->perms[2] != 'x')
			continue;
		if (t->core && (e->start >> 47 || (!mem_read(&t->mem, e->start, magic, 4) && !memcmp(magic, "\177ELF", 4))))
			continue;
		return 1;
	}
	return 0;
}

const char *ruby_jit_on(struct ruby_target *t)
{
	static const char *const names[] = { "YJIT", "ZJIT" };
	int flags = 0;
	for (int i = 0; i < 2; i++) {
		uint8_t on;
		if (!t->jit_flags[i])
			continue;
		flags++;
		if (!mem_read(&t->mem, t->jit_flags[i], &on, 1) && on)
			return names[i];
	}
	if (flags)
		return NULL; /* the flags say: none is on */
	if (t->core)
		return jit_code_mapped(t, &t->maps) ? ruby_jit_name(t) : NULL;
	struct maps now;
	if (maps_read(t->pid, &now))
		return NULL;
	int on = jit_code_mapped(t, &now);
	maps_free(&now);
	return on ? ruby_jit_name(t) : NULL;
}
