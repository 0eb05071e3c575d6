/* glib_two - one GLib program, built two ways: by default each of 4
 * threads makes 10,000 g_strdup/g_free copies of a string; with
 * -DREFCOUNT they take and drop 10,000 references to one shared object
 * with g_atomic_ref_count_inc/dec instead, and main drops the reference
 * g_atomic_ref_count_init made. Prints what it did; exits 0. */
#include <glib.h>
#include <stdio.h>

#define THREADS 4
#define GETS 10000

typedef struct {
	gatomicrefcount rc;
	const char *text;
} shared_t;

static shared_t *shared;
static const char text[] = "foobar";

static gpointer worker(gpointer arg)
{
	long sum = 0;
	(void)arg;
	for (int i = 0; i < GETS; i++) {
#ifdef REFCOUNT
		g_atomic_ref_count_inc(&shared->rc);
		sum += shared->text[0];
		if (g_atomic_ref_count_dec(&shared->rc))
			g_free(shared);
#else
		char *s = g_strdup(text);
		sum += s[0];
		g_free(s);
#endif
	}
	return GINT_TO_POINTER(sum != 0);
}

int main(void)
{
	GThread *t[THREADS];
	int ok = 1;

#ifdef REFCOUNT
	shared = g_new(shared_t, 1);
	shared->text = text;
	g_atomic_ref_count_init(&shared->rc);
#endif
	for (int i = 0; i < THREADS; i++)
		t[i] = g_thread_new("worker", worker, NULL);
	for (int i = 0; i < THREADS; i++)
		ok &= GPOINTER_TO_INT(g_thread_join(t[i]));
#ifdef REFCOUNT
	if (g_atomic_ref_count_dec(&shared->rc))
		g_free(shared);
	printf("refcount build: %d threads x %d gets, ok=%d\n", THREADS, GETS, ok);
#else
	printf("strdup build: %d threads x %d gets, ok=%d\n", THREADS, GETS, ok);
#endif
	return 0;
}
