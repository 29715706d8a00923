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
