/* loader.h - the loader's list of objects, as the shim lists it. */
#ifndef ASP_LOADER_H
#define ASP_LOADER_H

#include <link.h>
#include <stddef.h>

/* At set-up: the next dl_iterate_phdr, and where the loader keeps the lock
 * of its list (found by listing once). */
void asp__loader_init(void);

/* dl_iterate_phdr, interposed. Inside the shim's fork gate (thread.h,
 * asp__loader_enter) it marks the listing as holding the list's lock at
 * its callback's first call; in a child that lost the lock
 * (asp__loader_lost), a listing inside the gate goes without the lock. */
int asp__dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg);

/* The shim's own listings: dl_iterate_phdr's, and without the lock in a
 * child that lost it. */
int asp__loader_list(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg);

/* In a fork child: notes whether the list's lock came held. */
void asp__loader_atfork_child(void);

/* 1 in a process whose list lock is held for good: forked while another
 * thread of the parent listed the objects or changed the list (a
 * dl_iterate_phdr, a dlopen or dlclose of the program's). glibc does not
 * reset that lock in a child: there, dlopen of a new object and the
 * loader's own listing wait for ever. The shim's listings then read the
 * list without the lock (nothing can change it: every change waits for
 * the lock), and the shim loads nothing. */
int asp__loader_lost(void);

#endif
