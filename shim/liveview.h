/* liveview.h - the live view for `allocspy top`: /dev/shm/allocspy.PID,
 * rewritten by the ticker about once a second while the program runs
 * (ALLOCSPY_LIVE; the format is common/livefmt.h). */
#ifndef ASP_LIVEVIEW_H
#define ASP_LIVEVIEW_H

#include <stddef.h>
#include <stdint.h>

/* At start-up: the file's name, and a file this pid's previous program
 * left (an exec) removed. */
void asp__liveview_init(void);

/* From the ticker (process.c), which shares the program's memory, with no TLS
 * of its own: system calls are made raw, nothing here touches errno or
 * allocates. The first call a second after start-up creates and maps the
 * file; each call a second or more after the last update updates it. */
void asp__liveview_tick(void);

/* Whether the ticker must run for the live view. */
int asp__liveview_wanted(void);

/* From the ticker, once the program is gone without its exit report
 * (killed), or ran another program (exec set): the file is removed, but
 * when a traced program of the same pid may have made it anew. */
void asp__liveview_gone(int exec);

/* At the exit report: marks the view ended and removes the file. */
void asp__liveview_end(void);

/* fork's child: the parent's view is the parent's; the child makes its own. */
void asp__liveview_atfork_child(void);

/* The view's mapping (the shim's own memory), when there is one. */
int asp__liveview_mapping(uintptr_t *start, size_t *len);

#endif
