/* collapsed.c: the folded-stacks format, "root;...;leaf count" per unique stack. */
#include <errno.h>
#include <string.h>

#include "output.h"

int output_collapsed(const struct profile *p, FILE *f)
{
	char label[1024];
	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct profile_stack *s = &p->stacks[i];
		uint64_t w = profile_stack_weight(p, i);
		if (!w)
			continue;
		for (uint32_t j = 0; j < s->len; j++) {
			output_frame_label(p, p->pool[s->start + j], 1, label, sizeof(label));
			/* ';' separates frames and the last space separates the count. */
			for (char *c = label; *c; c++)
				if (*c == ';')
					*c = ':';
			if (j)
				fputc(';', f);
			fputs(label, f);
		}
		fprintf(f, " %llu\n", (unsigned long long)w);
	}
	return ferror(f) ? -(errno ?: EIO) : 0;
}
