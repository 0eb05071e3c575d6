/* pairtime - paired wall-clock timing of a program bare and under tools.
 *
 * usage: pairtime [-n RUNS] [-m MIN_RUNS] [-b BUDGET_S] [-t TIMEOUT_S]
 *                 [-T FACTOR] [-w WARMUP] [-e PREFIX]
 *                 -V NAME[:RUNS] [VAR=VALUE ...] PROG [ARG ...]
 *                 -V NAME[:RUNS] [VAR=VALUE ...] PROG [ARG ...] ...
 *
 * The first -V is the baseline (the bare program); each later -V is a
 * variant (the same program under a tool). Leading VAR=VALUE words are added
 * to that variant's environment, as env(1) does. Each round times, for
 * every variant, one pair: the baseline and the variant back to back, in
 * alternating order from round to round, so that drift in the machine's
 * speed hits both sides of a pair alike.
 *
 * A variant runs RUNS pairs (-n, 11 by default, or NAME:RUNS), cut to what
 * fits in BUDGET_S seconds (-b, 0 = no limit; a pair's time is the variant's
 * run plus the baseline's) judged from its first pair, but never below
 * MIN_RUNS (-m, 3). A run that exits non-zero, dies from a signal or times
 * out marks its variant failed; the others go on. A run times out after
 * TIMEOUT_S seconds (-t, 300), or sooner with -T: after FACTOR times the
 * baseline's warm-up time, but no sooner than 10 s. WARMUP untimed baseline
 * runs come first (-w, 1; -T needs at least one).
 *
 * The programs' stdout goes to /dev/null, and their stderr too, or with
 * -e PREFIX to the file PREFIX NAME ".err", rewritten by each run of that
 * variant, so that a failure can be shown.
 *
 * Output, one tab-separated line per -V:
 *   NAME RUNS MEDIAN_MS RATIO MIN_RATIO MAX_RATIO STATUS MAXRSS_KB
 * MEDIAN_MS is the median wall time of the variant's runs. RATIO is the
 * median over its pairs of (variant time / baseline time in the same pair);
 * MIN/MAX_RATIO are the extremes. The baseline line has ratio 1 and the
 * median over all its runs. MAXRSS_KB is the median of the runs' maximum
 * resident set size (wait4's, in KiB: the largest of the process and the
 * children it waited for). STATUS is "ok", "exit N", "signal N" or
 * "timeout"; a failed variant prints "-" for the numbers.
 * Exit status: 0, or 1 when the baseline failed, 2 on a usage error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct variant {
	const char *name;
	char **env;		/* VAR=VALUE words (nenv of them) */
	int nenv;
	char **argv;		/* NULL-terminated */
	int runs;		/* pairs to run */
	int done;		/* pairs timed */
	double *t;		/* its times, seconds */
	double *ratio;		/* t / baseline time of the same pair */
	double *rss;		/* each run's maximum resident set size, KiB */
	char status[32];	/* "" while it is fine */
	double last_rss;	/* of the last run */
};

static double timeout_s = 300;	/* the limit of the run at hand */
static const char *errfile;
static volatile sig_atomic_t alarmed;

static void on_alarm(int sig)
{
	(void)sig;
	alarmed = 1;
}

static void usage(FILE *f)
{
	fputs("usage: pairtime [-n RUNS] [-m MIN_RUNS] [-b BUDGET_S] [-t TIMEOUT_S]\n"
	      "                [-T FACTOR] [-w WARMUP] [-e PREFIX]\n"
	      "                -V NAME[:RUNS] [VAR=VALUE ...] PROG [ARG ...] ...\n",
	      f);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Runs v once; returns its wall time in seconds, or -1 with v->status set. */
static double run_once(struct variant *v)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };
	struct rusage ru;
	double t0, t1;
	int status;
	pid_t pid;

	t0 = now();
	pid = fork();
	if (pid < 0) {
		snprintf(v->status, sizeof v->status, "fork failed");
		return -1;
	}
	if (pid == 0) {
		int out = open("/dev/null", O_WRONLY);
		char path[4096];
		int err = out;

		if (errfile) {
			snprintf(path, sizeof path, "%s%s.err", errfile, v->name);
			err = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		}

		setpgid(0, 0);	/* so that a timeout kills the tool's helpers too */
		if (out < 0 || err < 0)
			_exit(126);
		dup2(out, 1);
		dup2(err, 2);
		for (int i = 0; i < v->nenv; i++)
			putenv(v->env[i]);
		execvp(v->argv[0], v->argv);
		dprintf(2, "pairtime: error: %s: %s\n", v->argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	alarmed = 0;
	it.it_value.tv_sec = (time_t)timeout_s;
	it.it_value.tv_usec = (suseconds_t)((timeout_s - (time_t)timeout_s) * 1e6);
	setitimer(ITIMER_REAL, &it, NULL);
	memset(&ru, 0, sizeof ru);
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			snprintf(v->status, sizeof v->status, "wait failed");
			return -1;
		}
		if (alarmed) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
		}
	}
	t1 = now();
	v->last_rss = (double)ru.ru_maxrss;
	it.it_value.tv_sec = it.it_value.tv_usec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	if (alarmed) {
		snprintf(v->status, sizeof v->status, "timeout");
		return -1;
	}
	if (WIFSIGNALED(status)) {
		snprintf(v->status, sizeof v->status, "signal %d", WTERMSIG(status));
		return -1;
	}
	if (WEXITSTATUS(status) != 0) {
		snprintf(v->status, sizeof v->status, "exit %d", WEXITSTATUS(status));
		return -1;
	}
	return t1 - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of x[0..n-1] (n > 0); sorts x. */
static double median(double *x, int n)
{
	qsort(x, n, sizeof *x, cmp_double);
	return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

static int parse_int(const char *s, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > 100000)
		return -1;
	*out = (int)v;
	return 0;
}

static void print_line(struct variant *v, int is_base)
{
	double lo, hi, med;

	if (v->status[0] || v->done == 0) {
		printf("%s\t%d\t-\t-\t-\t-\t%s\t-\n", v->name, v->done,
		       v->status[0] ? v->status : "not run");
		return;
	}
	if (is_base) {
		printf("%s\t%d\t%.3f\t1.000\t1.000\t1.000\tok\t%.0f\n", v->name, v->done,
		       median(v->t, v->done) * 1e3, median(v->rss, v->done));
		return;
	}
	med = median(v->t, v->done) * 1e3;
	qsort(v->ratio, v->done, sizeof *v->ratio, cmp_double);
	lo = v->ratio[0];
	hi = v->ratio[v->done - 1];
	printf("%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\tok\t%.0f\n", v->name, v->done, med,
	       median(v->ratio, v->done), lo, hi, median(v->rss, v->done));
}

int main(int argc, char **argv)
{
	int runs = 11, min_runs = 3, warmup = 1, nv = 0, maxruns = 0, nbase = 0;
	double budget = 0, factor = 0, warm = 0;
	struct variant *vs, *base;
	struct sigaction sa;
	int i, opt;

	while ((opt = getopt(argc, argv, "+n:m:b:t:T:w:e:hV")) != -1) {
		if (opt == 'V') {
			optind--;	/* the first variant starts here */
			break;
		}
		switch (opt) {
		case 'n':
			if (parse_int(optarg, &runs) || runs < 1)
				goto bad;
			break;
		case 'm':
			if (parse_int(optarg, &min_runs))
				goto bad;
			break;
		case 'b':
			budget = atof(optarg);
			break;
		case 't':
			timeout_s = atof(optarg);
			if (timeout_s <= 0)
				goto bad;
			break;
		case 'T':
			factor = atof(optarg);
			if (factor <= 0)
				goto bad;
			break;
		case 'w':
			if (parse_int(optarg, &warmup))
				goto bad;
			break;
		case 'e':
			errfile = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	vs = calloc(argc, sizeof *vs);
	if (!vs)
		return 1;
	/* Split the rest at each -V into variants with their own argv. */
	for (i = optind; i < argc;) {
		struct variant *v;
		char *colon;
		int first;

		if (strcmp(argv[i], "-V") || i + 1 >= argc)
			goto bad;
		v = &vs[nv++];
		v->name = argv[i + 1];
		v->runs = runs;
		colon = strchr(argv[i + 1], ':');
		if (colon) {
			*colon = '\0';
			if (parse_int(colon + 1, &v->runs) || v->runs < 1)
				goto bad;
		}
		i += 2;
		v->env = &argv[i];
		while (i < argc && strcmp(argv[i], "-V") && argv[i][0] != '=' &&
		       strchr(argv[i], '=')) {
			v->nenv++;
			i++;
		}
		first = i;
		while (i < argc && strcmp(argv[i], "-V"))
			i++;
		if (i == first)
			goto bad;	/* no program */
		v->argv = calloc(i - first + 1, sizeof *v->argv);
		if (!v->argv)
			return 1;
		memcpy(v->argv, &argv[first], (i - first) * sizeof *v->argv);
	}
	if (nv == 0)
		goto bad;
	base = &vs[0];
	for (i = 0; i < nv; i++) {
		if (vs[i].runs > maxruns)
			maxruns = vs[i].runs;
		nbase += vs[i].runs;
	}
	nbase += maxruns + runs;
	for (i = 0; i < nv; i++) {
		vs[i].t = calloc(i ? vs[i].runs : nbase, sizeof(double));
		vs[i].ratio = calloc(i ? vs[i].runs : nbase, sizeof(double));
		vs[i].rss = calloc(i ? vs[i].runs : nbase, sizeof(double));
		if (!vs[i].t || !vs[i].ratio || !vs[i].rss)
			return 1;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);	/* no SA_RESTART: wait4 must return */

	for (i = 0; i < warmup; i++) {
		double tw = run_once(base);

		if (tw < 0)
			break;
		warm = tw;
	}
	if (factor > 0 && warm > 0 && factor * warm < timeout_s)
		timeout_s = factor * warm < 10 ? 10 : factor * warm;
	if (base->status[0]) {
		print_line(base, 1);
		return 1;
	}
	for (int r = 0; r < maxruns; r++) {
		if (nv == 1) {
			double tb = run_once(base);

			if (tb < 0)
				break;
			base->rss[base->done] = base->last_rss;
			base->t[base->done++] = tb;
			continue;
		}
		for (i = 1; i < nv; i++) {
			struct variant *v = &vs[i];
			double tb, tv;

			if (v->status[0] || r >= v->runs)
				continue;
			if (r % 2 == 0) {
				tb = run_once(base);
				tv = tb < 0 ? -1 : run_once(v);
			} else {
				tv = run_once(v);
				tb = tv < 0 ? -1 : run_once(base);
			}
			base->rss[base->done] = base->last_rss;
			v->rss[v->done] = v->last_rss;
			if (tb < 0 && base->status[0])
				break;
			if (tv < 0)
				continue;
			base->t[base->done++] = tb;
			v->t[v->done] = tv;
			v->ratio[v->done++] = tv / tb;
			/* Cut the runs to the budget, judged by the first one,
			 * but keep at least min_runs (or all asked, if fewer). */
			if (v->done == 1 && budget > 0 && (tv + tb) * v->runs > budget) {
				int fit = (int)(budget / (tv + tb));
				int least = min_runs < v->runs ? min_runs : v->runs;

				v->runs = fit > least ? fit : least;
			}
		}
		if (base->status[0])
			break;
	}
	/* Every variant failed: time the baseline alone. */
	while (!base->status[0] && base->done == 0) {
		for (i = 0; i < runs; i++) {
			double tb = run_once(base);

			if (tb < 0)
				break;
			base->rss[base->done] = base->last_rss;
			base->t[base->done++] = tb;
		}
	}
	for (i = 0; i < nv; i++)
		print_line(&vs[i], i == 0);
	if (fflush(stdout) || ferror(stdout))
		return 1;
	return base->status[0] ? 1 : 0;
bad:
	usage(stderr);
	return 2;
}
