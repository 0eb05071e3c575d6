/* process.h - the process's life under the shim (see process.c): start-up,
 * threads, fork, the periodic ticker, fatal signals and the exit report. */
#ifndef ASP_PROCESS_H
#define ASP_PROCESS_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/* The interposed entry points (override.c forwards to these). */
int asp__libc_start_main(void *main, int argc, char **argv, void (*init)(void),
                         void (*fini)(void), void (*rtld_fini)(void), void *stack_end);
__attribute__((noreturn)) void asp__exit(int status, uintptr_t sp);
__attribute__((noreturn)) void asp__exit_fast(int status);
__attribute__((noreturn)) void asp__quick_exit(int status, uintptr_t sp);
int asp__pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                        void *(*fn)(void *), void *arg);
void *asp__dlopen(const char *file, int flags);
/* dlclose: code it unmaps makes the stack caches stale (asp__code_gen). */
int asp__dlclose(void *handle);
void asp__constructor(int argc, char **argv);
void asp__destructor(void);

/* The pid the shim belongs to: set at start-up and in fork's child. A
 * vfork child (same memory, another pid) must leave the shim alone. */
pid_t asp__process_pid(void);

/* The program's arguments, copied at start-up. */
int asp__argc(void);
char *const *asp__argv(void);

/* At set-up only: dlopen()s a library of the shim's own (libunwind) so that what
 * the loader allocates for it stays out of the program's heap and figures:
 * in the bootstrap arena, which the leak scan reads as a root (the loader's
 * list of objects runs through it). NULL when it cannot be loaded. */
void *asp__load_private(const char *name);

/* Whether the libraries' freeres runs now, and whether it ran. */
int asp__in_freeres(void);
int asp__freeres_ran(void);

/* The signal a fatal-signal report is made for (0: none). */
int asp__fatal_signal(void);

/* The program's sigaction and signal (override.c): where the shim's
 * handler stands for the default action, they show the default action. */
int asp__sigaction(int sig, const struct sigaction *act, struct sigaction *old);
sighandler_t asp__signal(int sig, sighandler_t handler);

#endif
