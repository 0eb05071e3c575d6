/* report.h - what the shim leaves at exit: the summary text and the dump. */
#ifndef ASP_REPORT_H
#define ASP_REPORT_H

/* Remembers the start time (called once at start-up). */
void asp__report_start(void);

/* The program's arguments, from the constructor. */
void asp__set_argv(int argc, char **argv);

/* Ends the process now, through the allocator's _exit. */
__attribute__((noreturn)) void asp__exit_now(int status);

/* Called every few thousand allocations of a thread when periodic dumps
 * are on: writes one when ALLOCSPY_INTERVAL_MS has passed. */
struct asp_thread;
void asp__report_tick(struct asp_thread *t);

/* The exit status the leak check asks for, or -1. */
int asp__report_exit_status(void);

#endif
