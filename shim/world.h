/* world.h - stopping the program's other threads at its end, as valgrind
 * stops them before its freeres and its leak check. */
#ifndef ASP_WORLD_H
#define ASP_WORLD_H

#include <stdint.h>
#include <sys/types.h>
#include <ucontext.h>

#include "glue.h"

enum asp_world_state {
	ASP_WORLD_UNKNOWN,	/* could not be stopped: it may still run */
	ASP_WORLD_PARKED,	/* stopped in the shim's handler: registers known */
	ASP_WORLD_BLOCKED,	/* blocks signals, waits in futex(2) for good */
	ASP_WORLD_GONE,		/* ended meanwhile */
};

struct asp_world_thread {
	pid_t tid;
	int state;		/* enum asp_world_state */
	int asked;		/* a signal is on its way */
	uintptr_t sp;		/* 0: unknown */
	uintptr_t gregs[ASP_UC_NREGS];	/* when parked */
	uintptr_t call_pc;	/* the system call it was seen to wait in, */
	uintptr_t call_arg;	/* and its first argument; 0: none approved */
};

/* Stops every other thread it safely can: a thread is parked for good in a
 * signal handler, but only where it holds none of the C library's locks (in
 * its own code, or waiting in a system call that is not a wait for one of
 * the C library's or the loader's own locks); one that is in the middle of
 * the C library, the C++ runtime or the shim is asked again a millisecond
 * later, for at most ASP_WAIT_NS. Returns 1 when no other thread
 * can run any more, else 0. Once per process: later calls return the first
 * answer. For the end of the process only: the parked never run again. */
int asp__world_stop(void);

/* Once asp__world_stop has begun, holds every other thread that calls it
 * for good (where a thread would take the shim's locks for long, as fork's
 * prepare handler does, again and again: the end of the process could
 * wait for them forever). Returns at once otherwise. */
void asp__world_hold(void);

/* What is known of thread tid after asp__world_stop, or NULL. */
const struct asp_world_thread *asp__world_thread(pid_t tid);

/* Every thread asp__world_stop saw; *n their number. */
const struct asp_world_thread *asp__world_threads(size_t *n);

/* The ticker's tid (process.c): not one of the program's threads. */
extern ASP_HIDDEN pid_t asp__world_ticker;

/* fork's child: its threads are not the parent's. */
void asp__world_atfork_child(void);

#endif
