/* stack.h - backtraces: capturing return addresses (libunwind or frame
 * pointers) and interning each distinct stack once. A stack id is what
 * the live table keeps as a block's site when backtraces are on. */
#ifndef ASP_STACK_H
#define ASP_STACK_H

#include <stddef.h>
#include <stdint.h>

#include "glue.h"
#include "thread.h"

/* Loads libunwind when ALLOCSPY_BACKTRACE > 1 asks for it. */
void asp__stack_init(void);

/* The interned stack of the current allocation: its id (1, 2, ...), or 0.
 * Frame 0 is site, the return address of the interposed function. */
uintptr_t asp__stack_capture(struct asp_thread *t, uintptr_t site);

/* The frames of stack id into out; returns the depth (0: unknown id). */
size_t asp__stack_frames(uintptr_t id, const uintptr_t **out);

/* Whether a thread's stack bounds are wanted (libunwind stacks). */
int asp__stack_bounds_wanted(void);

/* Bumped by every dlclose: the stack caches' entries are of older code. */
extern ASP_HIDDEN uint32_t asp__code_gen;

/* fork: every stripe's lock is held across it. */
void asp__stack_atfork_prepare(void);
void asp__stack_atfork_release(void);

#endif
