/* layout.c: the table of generated Ruby layouts and the lookup by version. */
#include "layout.h"

#include <stdio.h>
#include <string.h>

extern const struct ruby_layout ruby_layout_2_7, ruby_layout_3_1, ruby_layout_3_3;

const struct ruby_layout *const ruby_layouts[] = {
	&ruby_layout_2_7,
	&ruby_layout_3_1,
	&ruby_layout_3_3,
	NULL,
};

const struct ruby_layout *ruby_layout_find(const char *version)
{
	int major, minor;
	if (!version || sscanf(version, "%d.%d", &major, &minor) != 2)
		return NULL;
	const struct ruby_layout *found = NULL;
	for (int i = 0; ruby_layouts[i]; i++) {
		const struct ruby_layout *l = ruby_layouts[i];
		if (l->api_major == major && l->api_minor == minor) {
			if (found)
				return NULL; /* two tables for one series: refuse to guess */
			found = l;
		}
	}
	return found;
}

const struct ruby_layout *ruby_layout_newest(void)
{
	const struct ruby_layout *best = NULL;
	for (int i = 0; ruby_layouts[i]; i++)
		if (!best || ruby_layouts[i]->api_major * 100 + ruby_layouts[i]->api_minor >
				     best->api_major * 100 + best->api_minor)
			best = ruby_layouts[i];
	return best;
}

const struct ruby_layout *ruby_layout_nearest(const char *version)
{
	int major = 0, minor = 0;
	if (!version || sscanf(version, "%d.%d", &major, &minor) != 2)
		return ruby_layout_newest();
	const struct ruby_layout *best = NULL;
	for (int i = 0; ruby_layouts[i]; i++) {
		const struct ruby_layout *l = ruby_layouts[i];
		int64_t v = l->api_major * 100 + l->api_minor;
		if (v <= major * 100 + minor && (!best || v > best->api_major * 100 + best->api_minor))
			best = l;
	}
	return best ? best : ruby_layout_newest();
}
