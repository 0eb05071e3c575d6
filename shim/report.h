/* report.h - what the shim leaves: the summary text and the dump, at
 * exit, on a fatal signal and every ALLOCSPY_INTERVAL_MS. */
#ifndef ASP_REPORT_H
#define ASP_REPORT_H

#include <signal.h>
#include <sys/types.h>

/* Remembers the start time and sets the report's jansson up (once, at
 * start-up). */
void asp__report_start(void);

/* Ends the process now, through the allocator's _exit. */
__attribute__((noreturn)) void asp__exit_now(int status);

/* The exit status the leak check asks for, or -1. */
int asp__report_exit_status(void);

/* A fatal signal's first lines, as valgrind writes them ("Process
 * terminating with default action of signal N (NAME)", what the kernel
 * said of a fault, the interrupted stack), made in the signal's handler
 * before the report (asp__finish). */
void asp__report_fatal(int sig, const siginfo_t *si, void *uc);

/* The thread making the report (asp__finish), or 0 before it begins; and
 * whether it is written. */
pid_t asp__report_begun(void);
int asp__report_done(void);

/* fork's child: the dump's name and the report's state are the parent's. */
void asp__report_atfork_child(void);

#endif
