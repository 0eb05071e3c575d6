/* glib_rcbox - GLib's reference-counted boxes and strings: an rc box and an
 * atomic rc box, each acquired 3 times and released 4 times (the last
 * release frees it, running a clear function for the atomic one), and a
 * ref string acquired once and released twice. Exits 0. */
#include <glib.h>
#include <stdio.h>

static int cleared;

static void clear(gpointer p)
{
	(void)p;
	cleared++;
}

int main(void)
{
	int *box = g_rc_box_new0(int);
	int *abox = g_atomic_rc_box_new0(int);
	char *s = g_ref_string_new("a ref string");

	for (int i = 0; i < 3; i++) {
		g_rc_box_acquire(box);
		g_atomic_rc_box_acquire(abox);
	}
	for (int i = 0; i < 3; i++) {
		g_rc_box_release(box);
		g_atomic_rc_box_release_full(abox, clear);
	}
	g_rc_box_release(box);
	g_atomic_rc_box_release_full(abox, clear);
	g_ref_string_acquire(s);
	g_ref_string_release(s);
	g_ref_string_release(s);
	printf("cleared=%d\n", cleared);
	return cleared == 1 ? 0 : 1;
}
