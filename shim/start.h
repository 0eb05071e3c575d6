/* start.h - the program's and its threads' starts and ends (see start.c). */
#ifndef ASP_START_H
#define ASP_START_H

#include <pthread.h>
#include <stdint.h>

int asp__libc_start_main(void *main, int argc, char **argv, void (*init)(void),
                         void (*fini)(void), void (*rtld_fini)(void), void *stack_end);
__attribute__((noreturn)) void asp__exit(int status, uintptr_t sp);
int asp__pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                        void *(*fn)(void *), void *arg);

#endif
