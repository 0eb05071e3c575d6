/* libc_scandir - scandir with a filter and alphasort over a directory the
 * program makes (30 files), then opendir/readdir, glob and realpath over
 * it. The entries of one scandir are freed, the other's are kept. Exits 6. */
#include <dirent.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct dirent **kept;

static int only_f(const struct dirent *d)
{
	return d->d_name[0] == 'f';
}

static void clean(const char *dir)
{
	char p[256];
	for (int i = 0; i < 30; i++) {
		snprintf(p, sizeof p, "%s/%c%02d.txt", dir, i % 3 ? 'f' : 'g', i);
		unlink(p);
	}
	rmdir(dir);
}

int main(void)
{
	const char *dir = "libc_scandir.d";
	char p[256];

	clean(dir);
	mkdir(dir, 0755);
	for (int i = 0; i < 30; i++) {
		snprintf(p, sizeof p, "%s/%c%02d.txt", dir, i % 3 ? 'f' : 'g', i);
		FILE *f = fopen(p, "w");
		fputs("x\n", f);
		fclose(f);
	}

	struct dirent **list;
	int n = scandir(dir, &list, only_f, alphasort);
	printf("scandir: %d entries, first %s last %s\n", n, list[0]->d_name, list[n - 1]->d_name);
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);

	int m = scandir(dir, &kept, NULL, alphasort);
	int seen = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		seen++;
	closedir(d);

	glob_t g;
	snprintf(p, sizeof p, "%s/g*.txt", dir);
	glob(p, 0, NULL, &g);
	printf("all: %d, readdir: %d, glob g*: %zu first %s\n", m, seen, g.gl_pathc, g.gl_pathv[0]);
	globfree(&g);

	char *rp = realpath(dir, NULL);
	printf("realpath ends with /%s: %d\n", dir, strlen(rp) > strlen(dir) &&
	    strcmp(rp + strlen(rp) - strlen(dir), dir) == 0);
	free(rp);
	clean(dir);
	return 6;
}
