/* flamegraph.c: a self-contained interactive flame graph (SVG with its own script), and the tree behind it. */
#include "flamegraph.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/map.h"
#include "output.h"
#include "../lib/xml.h"
#include "../lib/vec.h"

#define FG_WIDTH 1200.0 /* drawing width in px, frames included */
#define FG_PAD 10.0
#define FG_ROW 16
#define FG_HEAD 58 /* title, legend and search above the frames */
#define FG_FOOT 28 /* the details line below */

struct fg_node {
	uint32_t parent, func, depth;
	uint32_t first, next; /* children, in label order; 0 ends (node 0 is the root) */
	uint64_t count, x;    /* samples in this node and under it; offset from the left in samples */
	uint64_t base;        /* a diff's (output_options.diff): BASE's weight in this node and under it */
};

struct fg_tree {
	struct fg_node *n;
	uint32_t len;
	size_t cap;
	uint32_t *func_of_frame; /* frame id -> function (name + path) */
	uint32_t *func_frame;    /* function -> a representative frame */
	uint32_t *func_rank;     /* function -> its place in label order */
	uint32_t nfuncs;
};

static void tree_free(struct fg_tree *t)
{
	free(t->n);
	free(t->func_of_frame);
	free(t->func_frame);
	free(t->func_rank);
}

static const struct profile *sort_profile; /* qsort has no context argument in C11 */

static int by_label(const void *a, const void *b)
{
	const struct profile_frame *x = &sort_profile->frames[*(const uint32_t *)a];
	const struct profile_frame *y = &sort_profile->frames[*(const uint32_t *)b];
	int c = strcmp(strtab_get(&sort_profile->strs, x->name), strtab_get(&sort_profile->strs, y->name));
	return c ? c : strcmp(strtab_get(&sort_profile->strs, x->path), strtab_get(&sort_profile->strs, y->path));
}

/* Frames that differ only by line are one function in a flame graph. */
static int group_functions(const struct profile *p, struct fg_tree *t)
{
	struct map m;
	map_init(&m);
	t->func_of_frame = malloc((p->nframes + 1) * sizeof(uint32_t));
	t->func_frame = malloc((p->nframes + 1) * sizeof(uint32_t));
	t->func_rank = malloc((p->nframes + 1) * sizeof(uint32_t));
	uint32_t *order = malloc((p->nframes + 1) * sizeof(uint32_t));
	int err = t->func_of_frame && t->func_frame && t->func_rank && order ? 0 : -ENOMEM;
	for (uint32_t i = 0; !err && i < p->nframes; i++) {
		const struct profile_frame *f = &p->frames[i];
		uint64_t key = (uint64_t)f->name << 32 | f->path;
		uint64_t *hit = map_get(&m, key);
		if (hit) {
			t->func_of_frame[i] = (uint32_t)*hit;
			continue;
		}
		t->func_of_frame[i] = t->nfuncs;
		t->func_frame[t->nfuncs++] = i;
		err = map_put(&m, key, t->func_of_frame[i]);
	}
	map_free(&m);
	if (!err) {
		memcpy(order, t->func_frame, t->nfuncs * sizeof(uint32_t));
		sort_profile = p;
		qsort(order, t->nfuncs, sizeof(uint32_t), by_label);
		for (uint32_t r = 0; r < t->nfuncs; r++)
			t->func_rank[t->func_of_frame[order[r]]] = r;
	}
	free(order);
	return err;
}

static const struct fg_tree *sort_tree;

/* A stack's functions by their label rank, root first: stacks compare as these sequences, a prefix first. */
static int by_ranks(const void *a, const void *b)
{
	const struct profile_stack *x = &sort_profile->stacks[*(const uint32_t *)a];
	const struct profile_stack *y = &sort_profile->stacks[*(const uint32_t *)b];
	const uint32_t *pool = sort_profile->pool, *rank = sort_tree->func_rank, *func = sort_tree->func_of_frame;
	uint32_t n = x->len < y->len ? x->len : y->len;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t rx = rank[func[pool[x->start + j]]], ry = rank[func[pool[y->start + j]]];
		if (rx != ry)
			return rx < ry ? -1 : 1;
	}
	return x->len < y->len ? -1 : x->len > y->len;
}

/*
 * Merge every stack into one tree of functions, children in label order, with
 * x offsets. The stacks are sorted as sequences of label ranks, so that each
 * shares its longest common prefix with the one before it: the tree is built
 * by walking down that prefix and adding the rest, children arriving in label
 * order, with no lookup table (a million samples make millions of nodes,
 * where a hash table's misses were most of the time).
 */
/* The diff whose profile p is, when the command asked for a differential flame graph. */
static const struct profile_diff *diff_of(const struct profile *p)
{
	return output_options.diff && &output_options.diff->p == p ? output_options.diff : NULL;
}

static int build_tree(const struct profile *p, struct fg_tree *t)
{
	const struct profile_diff *d = diff_of(p);
	memset(t, 0, sizeof(*t));
	int err = group_functions(p, t);
	if (err)
		return err;
	uint32_t *order = malloc((p->nstacks + 1) * sizeof(*order));
	uint32_t *path = NULL; /* path[d]: the node at depth d of the previous stack (path[0] the root) */
	size_t path_cap = 0;
	t->cap = 1024;
	t->n = malloc(t->cap * sizeof(*t->n));
	if (!order || !t->n) {
		free(order);
		return -ENOMEM;
	}
	t->n[0] = (struct fg_node){ 0 };
	t->len = 1;
	uint32_t nord = 0;
	for (uint32_t i = 0; i < p->nstacks; i++)
		if (p->stacks[i].count || (d && d->base[i]))
			order[nord++] = i;
	sort_profile = p;
	sort_tree = t;
	qsort(order, nord, sizeof(*order), by_ranks);
	const struct profile_stack *prev = NULL;
	for (uint32_t k = 0; k < nord && !err; k++) {
		const struct profile_stack *s = &p->stacks[order[k]];
		uint32_t common = 0;
		if (prev) {
			uint32_t n = prev->len < s->len ? prev->len : s->len;
			while (common < n && t->func_of_frame[p->pool[prev->start + common]] ==
						     t->func_of_frame[p->pool[s->start + common]])
				common++;
		}
		uint32_t *v = vec_grow(path, s->len + 1, &path_cap, sizeof(*path));
		if (!v) {
			err = -ENOMEM;
			break;
		}
		path = v;
		path[0] = 0;
		for (uint32_t j = common; j < s->len; j++) {
			struct fg_node *n = vec_grow(t->n, t->len, &t->cap, sizeof(*n));
			if (!n) {
				err = -ENOMEM;
				break;
			}
			t->n = n;
			uint32_t id = t->len++, parent = path[j];
			t->n[id] = (struct fg_node){ parent, t->func_of_frame[p->pool[s->start + j]], j + 1, 0, 0, 0, 0, 0 };
			/* the previous stack's node at this depth is the last child so far of the same parent */
			if (j == common && prev && common < prev->len)
				t->n[path[j + 1]].next = id;
			else
				t->n[parent].first = id;
			path[j + 1] = id;
		}
		uint64_t w = profile_stack_weight(p, order[k]), b = d ? d->base[order[k]] : 0;
		for (uint32_t j = 0; j <= s->len && !err; j++) {
			t->n[path[j]].count += w;
			t->n[path[j]].base += b;
		}
		prev = s;
	}
	free(order);
	free(path);
	if (err)
		return err;
	for (uint32_t i = 0; i < t->len; i++) {
		uint64_t x = t->n[i].x;
		for (uint32_t c = t->n[i].first; c; c = t->n[c].next) {
			t->n[c].x = x;
			x += t->n[c].count;
		}
	}
	return 0;
}

enum fg_kind { FG_RUBY, FG_CFUNC, FG_GC, FG_IDLE, FG_WAITING, FG_NATIVE, FG_CLASS, FG_OTHER };

static enum fg_kind kind_of(const struct profile *p, uint32_t frame)
{
	const struct profile_frame *f = &p->frames[frame];
	const char *name = strtab_get(&p->strs, f->name);
	switch (f->kind) {
	case PROFILE_FRAME_THREAD:
	case PROFILE_FRAME_TRUNCATED: return FG_OTHER;
	case PROFILE_FRAME_GC: return FG_GC;
	case PROFILE_FRAME_WAIT: return FG_IDLE;
	case PROFILE_FRAME_NATIVE: return FG_NATIVE;
	case PROFILE_FRAME_CLASS: return FG_CLASS;
	case PROFILE_FRAME_STATE:
		if (!strcmp(name, profile_state_frame(PROFILE_STATE_RUNNING)))
			return FG_CFUNC;
		return !strcmp(name, profile_state_frame(PROFILE_STATE_IDLE)) ? FG_IDLE : FG_WAITING;
	}
	if (!strncmp(name, "GC.", 3) || !strncmp(name, "GC#", 3))
		return FG_GC; /* GC.start and friends: Ruby asking for a collection */
	return f->kind == PROFILE_FRAME_CFUNC ? FG_CFUNC : FG_RUBY;
}

/* A stable colour per name within its kind's palette. */
static void colour(const char *name, enum fg_kind k, int rgb[3])
{
	uint64_t h = map_hash_bytes(name, strlen(name), 17);
	int a = (int)(h & 0xff), b = (int)(h >> 8 & 0xff);
	switch (k) {
	case FG_RUBY: rgb[0] = 205 + a % 50, rgb[1] = 60 + b % 150, rgb[2] = 40 + a % 30; break;
	case FG_CFUNC: rgb[0] = 70 + a % 40, rgb[1] = 170 + b % 50, rgb[2] = 170 + a % 50; break;
	case FG_GC: rgb[0] = 150 + a % 40, rgb[1] = 90 + b % 30, rgb[2] = 200 + a % 40; break;
	case FG_IDLE: rgb[0] = 175 + a % 20, rgb[1] = 185 + a % 20, rgb[2] = 205 + b % 20; break;
	case FG_WAITING: rgb[0] = 235 + a % 20, rgb[1] = 200 + b % 30, rgb[2] = 60 + a % 30; break;
	case FG_NATIVE: rgb[0] = 90 + a % 40, rgb[1] = 180 + b % 50, rgb[2] = 80 + a % 30; break;
	case FG_CLASS: rgb[0] = 120 + a % 40, rgb[1] = 140 + b % 40, rgb[2] = 225 + a % 30; break;
	default: rgb[0] = rgb[1] = rgb[2] = 190 + a % 20; break;
	}
}

static void thousands(uint64_t v, char *out, size_t cap)
{
	char digits[32];
	int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v), j = 0;
	for (int i = 0; i < n && (size_t)j + 2 < cap; i++) {
		if (i && (n - i) % 3 == 0)
			out[j++] = ',';
		out[j++] = digits[i];
	}
	out[j] = '\0';
}

void flamegraph_title(const struct profile *p, char *out, size_t cap)
{
	char n[32];
	thousands(p->kind == PROFILE_ALLOCS ? profile_total_weight(p) : profile_total(p), n, sizeof(n));
	const char *cmd = strtab_get(&p->strs, p->command), *ver = strtab_get(&p->strs, p->ruby_version);
	if (output_options.title)
		snprintf(out, cap, "%s", output_options.title);
	else if (p->kind == PROFILE_ALLOCS)
		snprintf(out, cap, "%s%s(pid %d%s%s) \xe2\x80\x94 %.1f s, %s %s %s (estimated)", cmd, *cmd ? " " : "",
			 p->pid, *ver ? ", Ruby " : "", ver, (double)p->duration_ns / 1e9, n, profile_unit(p),
			 p->alloc_live ? "alive" : "allocated");
	else
		snprintf(out, cap, "%s%s(pid %d%s%s) \xe2\x80\x94 %.1f s at %u Hz, %s samples", cmd, *cmd ? " " : "", p->pid,
			 *ver ? ", Ruby " : "", ver, (double)p->duration_ns / 1e9, p->rate_hz, n);
}

/* The script: zoom on click, reset, search with the matched share, details on hover. */
static const char SCRIPT[] =
	"(function(){\n"
	"var svg=document.currentScript?document.currentScript.ownerSVGElement||document.querySelector('svg.rbscope-fg:not([data-ready])')"
	":document.querySelector('svg.rbscope-fg:not([data-ready])');\n"
	"if(!svg||svg.getAttribute('data-ready'))return;svg.setAttribute('data-ready','1');\n"
	"var W=+svg.getAttribute('data-w'),PAD=+svg.getAttribute('data-pad'),ROW=+svg.getAttribute('data-row');\n"
	"var frames=[].slice.call(svg.querySelectorAll('g.f'));\n"
	"var det=svg.querySelector('.details'),mt=svg.querySelector('.matched'),reset=svg.querySelector('.reset');\n"
	"var box=svg.querySelector('input.search');\n"
	"frames.forEach(function(g){var r=g.querySelector('rect'),t=g.querySelector('title').textContent;\n"
	"g.ox=+r.getAttribute('x');g.ow=+r.getAttribute('width');g.oy=+r.getAttribute('y');g.of=r.getAttribute('fill');\n"
	"g.label=t;g.name=g.getAttribute('data-n')||t.replace(/ \\(.*$/,'');});\n"
	"function fit(g,x,w){var t=g.querySelector('text');if(!t)return;var n=Math.floor((w-6)/7);\n"
	"t.setAttribute('x',x+3);t.textContent=n<3?'':(g.name.length<=n?g.name:g.name.substr(0,n-2)+'..');}\n"
	"function place(g,x,w,show){var r=g.querySelector('rect');g.style.display=show?'':'none';if(!show)return;\n"
	"r.setAttribute('x',x);r.setAttribute('width',Math.max(w,0.1));fit(g,x,w);}\n"
	"function zoom(z){var zx=z.ox,zw=z.ow,s=(W-2*PAD)/zw;reset.style.opacity=1;\n"
	"frames.forEach(function(g){var e=1e-6*W;\n"
	"if(g.oy<=z.oy&&g.ox>=zx-e&&g.ox+g.ow<=zx+zw+e){place(g,PAD+(g.ox-zx)*s,g.ow*s,1);g.style.opacity=1;}\n"
	"else if(g.oy>z.oy&&g.ox<=zx+e&&g.ox+g.ow>=zx+zw-e){place(g,PAD,W-2*PAD,1);g.style.opacity=0.6;}\n"
	"else place(g,0,0,0);});}\n"
	"function unzoom(){reset.style.opacity=0.3;frames.forEach(function(g){place(g,g.ox,g.ow,1);g.style.opacity=1;});}\n"
	"function search(q){var re=null;if(q){try{re=new RegExp(q,'i');}catch(e){re=null;}}\n"
	"var spans=[];frames.forEach(function(g){var r=g.querySelector('rect');\n"
	"var hit=q&&(re?re.test(g.name):g.name.toLowerCase().indexOf(q.toLowerCase())>=0);\n"
	"r.setAttribute('fill',hit?'rgb(230,0,230)':g.of);g.classList.toggle('hit',!!hit);if(hit)spans.push([g.ox,g.ox+g.ow]);});\n"
	"spans.sort(function(a,b){return a[0]-b[0]||b[1]-a[1];});var tot=0,end=-1;\n"
	"spans.forEach(function(s){if(s[0]>=end){tot+=s[1]-s[0];end=s[1];}else if(s[1]>end){tot+=s[1]-end;end=s[1];}});\n"
	"mt.textContent=q?('Matched: '+(100*tot/(W-2*PAD)).toFixed(1)+'%'):'';}\n"
	"frames.forEach(function(g){g.addEventListener('click',function(){zoom(g);});\n"
	"g.addEventListener('mouseover',function(){det.textContent=g.label;});\n"
	"g.addEventListener('mouseout',function(){det.textContent=' ';});});\n"
	"reset.addEventListener('click',unzoom);\n"
	"if(box){box.addEventListener('input',function(){search(box.value);});}\n"
	"document.addEventListener('keydown',function(e){if(box&&(e.ctrlKey||e.metaKey)&&e.key==='f'){e.preventDefault();box.focus();}\n"
	"else if(e.key==='Escape'){unzoom();if(box){box.value='';search('');}}});\n"
	"svg.rbscope={zoom:zoom,unzoom:unzoom,search:search};\n"
	"})();\n";

int flamegraph_svg(const struct profile *p, FILE *f, int standalone)
{
	struct fg_tree t;
	int err = build_tree(p, &t);
	if (err) {
		tree_free(&t);
		return err;
	}
	uint64_t total = t.n[0].count;
	double usable = FG_WIDTH - 2 * FG_PAD, min = output_options.flame_min_width * (double)total;
	/* Depth of the deepest frame that will be drawn. */
	uint32_t depth = 0;
	for (uint32_t i = 1; i < t.len; i++)
		if ((double)t.n[i].count >= min && t.n[i].depth > depth)
			depth = t.n[i].depth;
	int height = FG_HEAD + (int)depth * FG_ROW + FG_FOOT;
	char title[512], n[32], label[1200];
	const char *unit = profile_unit(p);
	flamegraph_title(p, title, sizeof(title));
	if (standalone)
		fputs("<?xml version=\"1.0\" standalone=\"no\"?>\n", f);
	fprintf(f,
		"<svg class=\"rbscope-fg\" version=\"1.1\" width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" data-w=\"%.0f\" data-pad=\"%.0f\" data-row=\"%d\">\n",
		FG_WIDTH, height, FG_WIDTH, height, FG_WIDTH, FG_PAD, FG_ROW);
	fputs("<style>\n"
	      ".rbscope-fg text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}\n"
	      ".rbscope-fg g.f{cursor:pointer}.rbscope-fg g.f:hover rect{stroke:#000;stroke-width:0.5}\n"
	      ".rbscope-fg .title{font-size:17px}.rbscope-fg .reset{cursor:pointer;opacity:0.3}\n"
	      ".rbscope-fg input.search{width:150px;font-size:12px}\n"
	      "</style>\n",
	      f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%d\" fill=\"#f8f8f0\"/>\n", FG_WIDTH, height);
	fprintf(f, "<text class=\"title\" x=\"%.0f\" y=\"22\" text-anchor=\"middle\">", FG_WIDTH / 2);
	xml_write_text(f, title, sizeof(title));
	fputs("</text>\n", f);
	fprintf(f, "<text class=\"reset\" x=\"%.0f\" y=\"44\">Reset zoom</text>\n", FG_PAD);
	static const char *names[] = { "Ruby", "C method", "GC", "idle", "waiting for the GVL, blocked", "native",
				       "class allocated" };
	const struct profile_diff *d = diff_of(p);
	double lx = 110, dmax = 0;
	for (uint32_t i = 1; d && i < t.len; i++) {
		double dd = fabs(profile_diff_pp(d, t.n[i].count, t.n[i].base));
		dmax = dd > dmax ? dd : dmax;
	}
	if (d) { /* the legend of a diff: its colours say which way a share went */
		fprintf(f, "<rect x=\"%.0f\" y=\"34\" width=\"12\" height=\"12\" fill=\"rgb(255,60,60)\"/>"
			"<text x=\"%.0f\" y=\"44\">grew</text>\n", lx, lx + 16);
		fprintf(f, "<rect x=\"%.0f\" y=\"34\" width=\"12\" height=\"12\" fill=\"rgb(60,60,255)\"/>"
			"<text x=\"%.0f\" y=\"44\">shrank (share of NEW against BASE; widths are NEW's)</text>\n",
			lx + 70, lx + 86);
	}
	for (int k = 0; k < 7 && !d; k++) {
		int allocs = p->kind == PROFILE_ALLOCS;
		if (allocs ? k != FG_RUBY && k != FG_CFUNC && k != FG_CLASS : k == FG_CLASS)
			continue; /* an allocation profile has classes, no GC, waits nor native frames; the others no classes */
		int rgb[3];
		colour("legend", (enum fg_kind)k, rgb);
		fprintf(f, "<rect x=\"%.0f\" y=\"34\" width=\"12\" height=\"12\" fill=\"rgb(%d,%d,%d)\"/>"
			"<text x=\"%.0f\" y=\"44\">%s</text>\n", lx, rgb[0], rgb[1], rgb[2], lx + 16, names[k]);
		lx += 30 + 7 * (double)strlen(names[k]);
	}
	fprintf(f, "<text class=\"matched\" x=\"%.0f\" y=\"44\" text-anchor=\"end\"> </text>\n", FG_WIDTH - 180);
	fprintf(f, "<foreignObject x=\"%.0f\" y=\"30\" width=\"170\" height=\"22\">"
		"<input xmlns=\"http://www.w3.org/1999/xhtml\" class=\"search\" type=\"search\" placeholder=\"Search (regexp)\"/>"
		"</foreignObject>\n", FG_WIDTH - 172);
	/* Frames, parents before children, root at the bottom. */
	for (uint32_t i = 1; i < t.len; i++) {
		const struct fg_node *nd = &t.n[i];
		if ((double)nd->count < min || !nd->count)
			continue;
		uint32_t fr = t.func_frame[nd->func];
		const char *name = strtab_get(&p->strs, p->frames[fr].name);
		enum fg_kind k = kind_of(p, fr);
		int rgb[3];
		colour(name, k, rgb);
		double delta = d ? profile_diff_pp(d, nd->count, nd->base) : 0;
		if (d) { /* deeper red the more it grew, blue the more it shrank, against the largest change */
			int c = (int)(235 - 195 * (dmax > 0 ? fabs(delta) / dmax : 0));
			rgb[0] = delta > 0 ? 255 : c;
			rgb[1] = c;
			rgb[2] = delta < 0 ? 255 : c;
		}
		double x = FG_PAD + usable * (double)nd->x / (double)total, w = usable * (double)nd->count / (double)total;
		int y = FG_HEAD + (int)(depth - nd->depth) * FG_ROW;
		output_frame_label(p, fr, 0, label, sizeof(label));
		thousands(nd->count, n, sizeof(n));
		fputs("<g class=\"f\"", f);
		if (strstr(name, " (")) { /* the script takes the name from the title, up to " (" */
			fputs(" data-n=\"", f);
			xml_write_text(f, name, strlen(name));
			fputc('"', f);
		}
		fputs("><title>", f);
		xml_write_text(f, label, sizeof(label));
		if (d)
			fprintf(f, " \xe2\x80\x94 NEW %.2f%%, BASE %.2f%%, %+.2f pp</title>",
				100.0 * (double)nd->count / (double)(d->new_total ? d->new_total : 1),
				100.0 * (double)nd->base / (double)(d->base_total ? d->base_total : 1), delta);
		else
			fprintf(f, " \xe2\x80\x94 %s %.*s, %.2f%%</title>", n, (int)strlen(unit) - (nd->count == 1), unit,
				100.0 * (double)nd->count / (double)total);
		fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" rx=\"2\"/>", x, y, w,
			FG_ROW - 1, rgb[0], rgb[1], rgb[2]);
		int chars = (int)((w - 6) / 7);
		fprintf(f, "<text x=\"%.2f\" y=\"%d\">", x + 3, y + 12);
		size_t len = strlen(name);
		if (chars >= 3 && len <= (size_t)chars)
			xml_write_text(f, name, len);
		else if (chars >= 3) {
			xml_write_text(f, name, (size_t)chars - 2);
			fputs("..", f);
		}
		fputs("</text></g>\n", f);
	}
	fprintf(f, "<text class=\"details\" x=\"%.0f\" y=\"%d\"> </text>\n", FG_PAD, height - 10);
	fputs("<script type=\"text/ecmascript\"><![CDATA[\n", f);
	fputs(SCRIPT, f);
	fputs("]]></script>\n</svg>\n", f);
	tree_free(&t);
	return 0;
}

int output_flamegraph(const struct profile *p, FILE *f)
{
	return flamegraph_svg(p, f, 1);
}
