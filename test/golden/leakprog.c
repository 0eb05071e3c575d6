/* leakprog.c - prints return addresses of its own code, relative to its
 * load bias, for t50-report.sh to build a dump of symbolized loss records. */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <stdio.h>

static uintptr_t bias;

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	bias = info->dlpi_addr;
	return 1;
}

/* Prints the address its caller returns to. */
static __attribute__((noinline)) void show(const char *tag)
{
	printf("%s 0x%lx\n", tag,
	       (unsigned long)((uintptr_t)__builtin_return_address(0) - bias));
}

static inline __attribute__((always_inline)) void fill(void)
{
	show("fill");
}

static inline __attribute__((always_inline)) void build(void)
{
	fill();
}

static __attribute__((noinline)) void make_tree(void)
{
	build();
	show("make_tree");
	printf("main 0x%lx\n",
	       (unsigned long)((uintptr_t)__builtin_return_address(0) - bias));
}

int main(void)
{
	dl_iterate_phdr(first_object, NULL);
	make_tree();
	return 0;
}
