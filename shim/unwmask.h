/* unwmask.h - libunwind without its signal masking inside the shim's own
 * walks, which block every signal themselves (unwmask.c). */
#ifndef ASP_UNWMASK_H
#define ASP_UNWMASK_H

/* After the shim loaded libunwind (handle). */
void asp__unwmask_init(void *handle);

/* The TLS modules of libunwind's own link namespace (its C library's,
 * its own), which every thread's vector of TLS blocks has room for; 0
 * when it shares the program's namespace. */
int asp__unwmask_tls_modules(void);

/* on: the calling thread, which has no record yet, starts a walk (with
 * every signal blocked); 0: it has ended it. */
void asp__unwmask_walker(int on);

/* on: the calling thread starts the start-up walk, which gets no frame
 * cache from libunwind; 0: it has ended it. */
void asp__unwmask_startup(int on);

#endif
