/* seed000 - seed 000, "strdup/free vs atomic reference counting", built
 * three ways from this one file:
 *
 *   -DSEED000_STRDUP     get_string() returns g_strdup("foobar"); the
 *                        worker g_free()s it
 *   -DSEED000_REFCOUNT   one shared object, counted with allocspy.h's
 *                        asp_ref_acquire/asp_ref_release (the seed used
 *                        g_atomic_int_inc/g_atomic_int_dec_and_test)
 *   -DSEED000_GREFCOUNT  the same with GLib's refcount API:
 *                        g_atomic_ref_count_inc/g_atomic_ref_count_dec
 *   -DSEED000_MUTEX      one shared object whose count a GMutex guards
 *
 * usage: seed000-BUILD [NB_THREADS [GETS]]   (defaults 5 100000)
 * NB_THREADS GLib threads each do GETS get_string()/release pairs.
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>

#include "allocspy.h"
#include "bench.h"

#if defined(SEED000_STRDUP) + defined(SEED000_REFCOUNT) + defined(SEED000_GREFCOUNT) + \
	defined(SEED000_MUTEX) != 1
#error "define exactly one of SEED000_STRDUP, SEED000_REFCOUNT, SEED000_GREFCOUNT, SEED000_MUTEX"
#endif

static long gets;

#ifdef SEED000_STRDUP
static const gchar *str = "foobar";

static gchar *get_string(void)
{
	return g_strdup(bench_launder((void *)str));
}

static void put_string(gchar *s)
{
	g_free(bench_launder(s));
}

typedef gchar *string_t;

#else /* the refcount builds */
typedef struct {
	const gchar *str;
#if defined(SEED000_REFCOUNT)
	asp_ref_t ref;
#elif defined(SEED000_GREFCOUNT)
	gatomicrefcount ref;
#else
	guint ref;
	GMutex mutex;
#endif
} ss_t;

static ss_t *str;

static ss_t *ref(ss_t *ss)
{
#if defined(SEED000_REFCOUNT)
	asp_ref_acquire(&ss->ref);
#elif defined(SEED000_GREFCOUNT)
	g_atomic_ref_count_inc(&ss->ref);
#else
	g_mutex_lock(&ss->mutex);
	++ss->ref;
	g_mutex_unlock(&ss->mutex);
#endif
	return ss;
}

static void unref(ss_t *ss)
{
#if defined(SEED000_REFCOUNT)
	if (asp_ref_release(&ss->ref))
		g_free(ss);
#elif defined(SEED000_GREFCOUNT)
	if (g_atomic_ref_count_dec(&ss->ref))
		g_free(ss);
#else
	g_mutex_lock(&ss->mutex);
	if (--ss->ref == 0) {
		g_mutex_unlock(&ss->mutex);
		g_mutex_clear(&ss->mutex);
		g_free(ss);
	} else {
		g_mutex_unlock(&ss->mutex);
	}
#endif
}

static ss_t *get_string(void)
{
	return ref(str);
}

static void put_string(ss_t *s)
{
	unref(s);
}

typedef ss_t *string_t;
#endif

static gpointer worker(gpointer arg)
{
	for (long i = 0; i < gets; i++) {
		string_t s = get_string();

		put_string(s);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long nthreads = bench_arg(argc, argv, 1, 5);
	GThread **thread = g_new(GThread *, nthreads);

	gets = bench_arg(argc, argv, 2, 100000);
#ifndef SEED000_STRDUP
	str = g_new(ss_t, 1);
	str->str = "foobar";
#if defined(SEED000_REFCOUNT)
	asp_ref_init(&str->ref);
#elif defined(SEED000_GREFCOUNT)
	g_atomic_ref_count_init(&str->ref);
#else
	str->ref = 1;
	g_mutex_init(&str->mutex);
#endif
#endif
	for (long i = 0; i < nthreads; i++)
		thread[i] = g_thread_new("worker", worker, NULL);
	for (long i = 0; i < nthreads; i++)
		g_thread_join(thread[i]);
	g_free(thread);
#ifndef SEED000_STRDUP
	unref(str);
#endif
	return 0;
}
