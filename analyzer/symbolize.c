/* symbolize - turns a dump's return addresses into function, file and line
 * through the dump's module map, with the symbolizer the shim shares
 * (common/dwsym.c) and libdw linked in. */
#include "symbolize.h"

#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dwsym.h"
#include "msg.h"

/* libstdc++'s demangler (<cxxabi.h> is C++ only). */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

struct asp_symbolizer {
	asp_dwsym_t *dw;
};

/* The table the shared symbolizer calls through: libdw is linked here. */
static const asp_dw_api_t api = {
#define ASP_DW_LINKED(f) .f = f,
	ASP_DW_FUNCS(ASP_DW_LINKED)
#undef ASP_DW_LINKED
	.demangle = __cxa_demangle,
};

asp_symbolizer_t *asp_symbolizer_new(const asp_dump_t *d)
{
	asp_symbolizer_t *s = calloc(1, sizeof *s);

	if (!s)
		return NULL;
	s->dw = asp_dwsym_new(&api);
	if (!s->dw) {
		free(s);
		return NULL;
	}
	for (size_t i = 0; i < d->nmodules; i++) {
		const asp_module_t *m = &d->modules[i];

		if (asp_dwsym_add(s->dw, m->path, m->base, m->end, m) < 0) {
			asp_symbolizer_free(s);
			return NULL;
		}
	}
	return s;
}

void asp_symbolizer_free(asp_symbolizer_t *s)
{
	if (!s)
		return;
	asp_dwsym_free(s->dw);
	free(s);
}

/* Opens module i the first time, with its warnings. */
static void open_module(asp_symbolizer_t *s, int i)
{
	const asp_module_t *m = asp_dwsym_tag(s->dw, i);
	char hex[2 * 128 + 1];
	const char *why;

	if (asp_dwsym_open(s->dw, i, &why) < 0) {
		if (why)
			asp_warn("%s: no symbols: %s", m->path, why);
		return;
	}
	if (m->build_id && asp_dwsym_build_id(s->dw, i, hex) > 0 &&
	    strcasecmp(hex, m->build_id) == 0)
		return;
	if (m->build_id)
		asp_warn("%s: not the file that ran, symbols may be wrong [build-id mismatch]",
			 m->path);
}

size_t asp_symbolize(asp_symbolizer_t *s, uint64_t addr, asp_line_t *out,
		     size_t max)
{
	asp_dwline_t lines[64];
	int i = asp_dwsym_find(s->dw, addr);
	size_t n;

	memset(out, 0, sizeof *out);
	out[0].addr = addr;
	if (i < 0)
		return 1;
	if (addr <= ((const asp_module_t *)asp_dwsym_tag(s->dw, i))->base) {
		return 1;
	}
	if (!asp_dwsym_tried(s->dw, i))
		open_module(s, i);
	if (max > sizeof lines / sizeof *lines)
		max = sizeof lines / sizeof *lines;
	n = asp_dwsym_lookup(s->dw, addr - 1, lines, max);
	for (size_t k = 0; k < n; k++)
		out[k] = (asp_line_t){
			.addr = addr, .fn = lines[k].fn, .raw = lines[k].raw,
			.file = lines[k].file, .line = lines[k].line,
			.module = lines[k].module, .inlined = lines[k].inlined,
		};
	return n;
}

bool asp_symbolize_is_shim(asp_symbolizer_t *s, uint64_t addr)
{
	int i = asp_dwsym_find(s->dw, addr);

	return i >= 0 &&
	       asp_dwsym_is_shim(((const asp_module_t *)asp_dwsym_tag(s->dw, i))->path);
}

char *asp_demangle(const char *name)
{
	return asp_dwsym_demangle(&api, name);
}
