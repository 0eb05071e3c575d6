/* start.h - the program's and its threads' starts and ends (see start.c). */
#ifndef ASP_START_H
#define ASP_START_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

int asp__libc_start_main(void *main, int argc, char **argv, void (*init)(void),
                         void (*fini)(void), void (*rtld_fini)(void), void *stack_end);
__attribute__((noreturn)) void asp__exit(int status, uintptr_t sp);
int asp__pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                        void *(*fn)(void *), void *arg);

/* Once, at start-up, after the options are read. */
void asp__start_process(void);

/* The pid the shim belongs to: set at start-up and in fork's child. A
 * vfork child (same memory, another pid) must leave the shim alone. */
pid_t asp__process_pid(void);

void *asp__dlopen(const char *file, int flags);

#endif
