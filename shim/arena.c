/* arena.c - mmap-backed internal memory: page runs for tables and a
 * bump region for records that live as long as the process. Every mapping
 * is remembered so the leak scan can leave the shim's own memory out. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "arena.h"
#include "glue.h"
#include "lock.h"

#define ASP_ARENA_CHUNK (1u << 20)
#define ASP_MAX_MAPS 4096

struct asp_map { uintptr_t start, end; };

static asp_lock_t g_lock = ASP_LOCK_INIT;

static struct asp_map g_maps[ASP_MAX_MAPS];
static size_t g_nmaps;
static char *g_bump, *g_bump_end;

static void note_map(void *p, size_t size)
{
	sigset_t old;
	asp_lock_nosig(&g_lock, &old);
	if (g_nmaps < ASP_MAX_MAPS)
		g_maps[g_nmaps++] = (struct asp_map){ (uintptr_t)p, (uintptr_t)p + size };
	asp_unlock_nosig(&g_lock, &old);
}

void *asp__pages_alloc(size_t size)
{
	int saved = errno;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	errno = saved;
	if (p == MAP_FAILED)
		return NULL;
	note_map(p, size);
	return p;
}

void asp__pages_free(void *p, size_t size)
{
	int saved = errno;
	sigset_t old;
	asp_lock_nosig(&g_lock, &old);
	/* Only a whole mapping leaves the list: a page given back out of a
	 * larger one leaves the rest of it listed (and left out of scans). */
	for (size_t i = 0; i < g_nmaps; i++) {
		if (g_maps[i].start == (uintptr_t)p && g_maps[i].end - g_maps[i].start == size) {
			g_maps[i] = g_maps[--g_nmaps];
			break;
		}
	}
	asp_unlock_nosig(&g_lock, &old);
	munmap(p, size);
	errno = saved;
}

void *asp__arena_alloc(size_t size)
{
	size = (size + ASP_CACHE_LINE - 1) & ~(size_t)(ASP_CACHE_LINE - 1);
	if (size > ASP_ARENA_CHUNK / 4)
		return asp__pages_alloc(size);
	for (;;) {
		sigset_t old;
		asp_lock_nosig(&g_lock, &old);
		if ((size_t)(g_bump_end - g_bump) >= size) {
			void *p = g_bump;
			g_bump += size;
			asp_unlock_nosig(&g_lock, &old);
			return p;
		}
		asp_unlock_nosig(&g_lock, &old);
		char *chunk = asp__pages_alloc(ASP_ARENA_CHUNK);
		if (chunk == NULL)
			return NULL;
		asp_lock_nosig(&g_lock, &old);
		g_bump = chunk;
		g_bump_end = chunk + ASP_ARENA_CHUNK;
		asp_unlock_nosig(&g_lock, &old);
	}
}

void asp__arena_ranges(void (*fn)(void *arg, const void *start, size_t len), void *arg)
{
	/* fn may map memory itself: call it on a copy, without the lock. */
	static struct asp_map copy[ASP_MAX_MAPS];
	sigset_t old;
	asp_lock_nosig(&g_lock, &old);
	size_t n = g_nmaps;
	memcpy(copy, g_maps, n * sizeof *copy);
	asp_unlock_nosig(&g_lock, &old);
	for (size_t i = 0; i < n; i++)
		fn(arg, (const void *)copy[i].start, copy[i].end - copy[i].start);
}
