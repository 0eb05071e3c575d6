/* libc_misc - more of libc that allocates: getcwd(NULL), setenv, putenv
 * and unsetenv churn, hcreate/hsearch/hdestroy, wordexp without command
 * substitution, getpwuid/getpwnam/getgrgid for root (the "files" source of
 * NSS), strerror and strsignal. Exits 9. */
#include <grp.h>
#include <pwd.h>
#include <search.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wordexp.h>

static char putbuf[40][32];

int main(void)
{
	char *cwd = getcwd(NULL, 0);
	int cwd_ok = cwd != NULL && cwd[0] == '/';
	free(cwd);

	char name[32], val[64];
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof name, "ASP_VAR_%d", i);
		snprintf(val, sizeof val, "value-%d", i * i);
		setenv(name, val, 1);
	}
	for (int i = 0; i < 40; i += 2) {
		snprintf(name, sizeof name, "ASP_VAR_%d", i);
		setenv(name, "changed", 1);
	}
	for (int i = 0; i < 40; i++) {
		snprintf(putbuf[i], sizeof putbuf[i], "ASP_PUT_%d=%d", i, i);
		putenv(putbuf[i]);
	}
	for (int i = 0; i < 40; i += 3) {
		snprintf(name, sizeof name, "ASP_VAR_%d", i);
		unsetenv(name);
	}
	const char *v7 = getenv("ASP_VAR_7");

	hcreate(100);
	static char keys[50][16];
	for (int i = 0; i < 50; i++) {
		snprintf(keys[i], sizeof keys[i], "key%d", i);
		ENTRY e = { keys[i], (void *)(long)i };
		hsearch(e, ENTER);
	}
	ENTRY q = { "key33", NULL };
	ENTRY *hit = hsearch(q, FIND);
	long hitval = hit ? (long)hit->data : -1L;
	hdestroy();

	wordexp_t we;
	int wrc = wordexp("alpha 'beta gamma' ${ASP_VAR_1} [z]*", &we, WRDE_NOCMD);
	printf("wordexp rc=%d words=%zu: %s|%s|%s\n", wrc, we.we_wordc, we.we_wordv[0],
	    we.we_wordv[1], we.we_wordv[2]);
	wordfree(&we);

	struct passwd *pw = getpwuid(0);
	printf("uid 0: %s\n", pw ? pw->pw_name : "?");
	pw = getpwnam("root");
	printf("root: uid %d\n", pw ? (int)pw->pw_uid : -1);
	struct group *gr = getgrgid(0);
	printf("gid 0: %s\n", gr ? gr->gr_name : "?");

	printf("cwd_ok=%d v7=%s hit=%ld %s / %s\n", cwd_ok, v7, hitval,
	    strerror(2), strsignal(SIGTERM));
	return 9;
}
