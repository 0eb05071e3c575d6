/* leak_common.h - shared by the leak_* programs: helpers that keep stale
 * pointers out of the registers and the dead stack below main's frame, so
 * that each program's classification depends only on the shape it builds. */
#ifndef LEAK_COMMON_H
#define LEAK_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Overwrite 64 KiB of the stack below the caller with zeros. */
static __attribute__((noinline)) void scrub_stack(void)
{
	volatile char buf[65536];
	memset((char *)buf, 0, sizeof buf);
	__asm__ volatile("" ::"r"(buf) : "memory");
}

/* End the program by the way argv[1] asks: "exit" calls exit(status)
 * from main; anything else returns status from main. */
#define LEAK_END(argc, argv, status) do { \
	fflush(stdout); \
	if ((argc) > 1 && strcmp((argv)[1], "exit") == 0) \
		exit(status); \
	return (status); \
} while (0)

#endif
