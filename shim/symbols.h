/* symbols.h - naming code addresses inside the process at exit: the
 * function (from the object's .symtab, else .dynsym) and the object's
 * path. For suppressions and ALLOCSPY_LEAK_CHECK=full; file:line is the
 * analyzer's job (libdw), from the dump. */
#ifndef ASP_SYMBOLS_H
#define ASP_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct asp_symbol {
	const char *func;	/* NULL when unknown */
	const char *object;	/* NULL when the address is in no object */
	uintptr_t offset;	/* addr - function start */
};

/* Names addr. The strings live until the process ends. */
void asp__symbolize(uintptr_t addr, struct asp_symbol *out);

#endif
