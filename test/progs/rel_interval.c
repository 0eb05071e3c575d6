/* rel_interval - allocates once a millisecond for 1.2 s and watches its
 * own dump (argv[1]): each time the file changes it reads when the dump
 * was made (its "dump" object's "t_s", the first in the file) and whether
 * it says it was written during the run. Prints the number of dumps seen,
 * the shortest and the longest gap between two of them in ms, and
 * "interval" when a mid-run dump said so. Exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	static void *keep[2000];
	struct timespec ms = { 0, 1000000 };
	struct timespec last = { 0, 0 };
	double start = now_ms(), prev = -1, lo = 1e9, hi = 0;
	int changes = 0, interval = 0;
	for (int i = 0; now_ms() - start < 1200 && argc > 1; i++) {
		free(keep[i % 2000]);
		keep[i % 2000] = malloc(64);
		struct stat st;
		if (stat(argv[1], &st) == 0 &&
		    (st.st_mtim.tv_sec != last.tv_sec || st.st_mtim.tv_nsec != last.tv_nsec)) {
			last = st.st_mtim;
			FILE *f = fopen(argv[1], "r");
			char buf[256];
			size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
			if (f)
				fclose(f);
			buf[n] = '\0';
			interval |= strstr(buf, "\"reason\": \"interval\"") != NULL;
			const char *ts = strstr(buf, "\"t_s\": ");
			if (ts == NULL)
				continue;
			double t = strtod(ts + 7, NULL) * 1e3;
			if (prev >= 0) {
				lo = t - prev < lo ? t - prev : lo;
				hi = t - prev > hi ? t - prev : hi;
			}
			prev = t;
			changes++;
		}
		nanosleep(&ms, NULL);
	}
	for (int i = 0; i < 2000; i++)
		free(keep[i]);
	printf("%d %.0f %.0f%s\n", changes, lo, hi, interval ? " interval" : "");
	return 0;
}
