/* fork_signal - fork from a signal handler while threads allocate. A timer
 * signal every 200 us lands in one of 3 threads that churn
 * malloc/realloc/free (the main thread blocks it and waits); when it
 * interrupts the program's own code or the preloaded shim's (never the C
 * library's, whose malloc locks make fork from a handler deadlock with or
 * without the shim), the handler forks a child that ends with _exit at
 * once. It stops after 100 forks, or after 10 s when few signals land
 * where a fork may (a fast shim on one CPU). Prints "done" and exits 0.
 *
 * A child may inherit table operations cut in half: its forking thread's,
 * and those of other threads whose handlers (forking too) interrupted the
 * shim; none of them ever ends in the child. With FORK_SIGNAL_NOTES=DIR,
 * each child writes DIR/PID.cut, the number of threads that were inside
 * a handler landed in the shim when it was forked: the most its dump's
 * allocs - frees may differ from its blocks in use. */
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static volatile int stop;
static volatile sig_atomic_t forks;
static int cut;			/* threads in a handler that landed in the shim */
static const char *notes;	/* FORK_SIGNAL_NOTES */

/* The text of the objects where a fork may land: the program and the shim. */
static struct { uintptr_t lo, hi; int shim; } safe[8];
static int nsafe;

static int note(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	const char *name = info->dlpi_name;
	if (name[0] != '\0' && strstr(name, "liballocspy") == NULL)
		return 0;
	for (int i = 0; i < info->dlpi_phnum && nsafe < 8; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			safe[nsafe].lo = info->dlpi_addr + ph->p_vaddr;
			safe[nsafe].hi = safe[nsafe].lo + ph->p_memsz;
			safe[nsafe].shim = name[0] != '\0';
			nsafe++;
		}
	}
	return 0;
}

/* The child's note: its pid and how many operations it may have cut. */
static void write_note(void)
{
	char path[4096], num[16];
	size_t n = strlen(notes);
	if (n + 32 > sizeof path)
		return;
	memcpy(path, notes, n);
	path[n++] = '/';
	int k = 0;
	for (pid_t p = getpid(); p > 0; p /= 10)
		num[k++] = (char)('0' + p % 10);
	while (k > 0)
		path[n++] = num[--k];
	memcpy(path + n, ".cut", 5);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	char c[2] = { (char)('0' + __atomic_load_n(&cut, __ATOMIC_SEQ_CST)), '\n' };
	ssize_t w = write(fd, c, 2);
	(void)w;
	close(fd);
}

static void on_alarm(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	uintptr_t pc = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
	int ok = 0, shim = 0;
	for (int i = 0; i < nsafe; i++) {
		int in = pc >= safe[i].lo && pc < safe[i].hi;
		ok |= in;
		shim |= in && safe[i].shim;
	}
	/* Past 100 forks, no more: a machine so busy that one fork takes
	 * longer than the timer's period would otherwise keep this thread
	 * in its handler for good. */
	if (!ok || forks >= 100)
		return;
	if (shim)
		__atomic_add_fetch(&cut, 1, __ATOMIC_SEQ_CST);
	pid_t pid = fork();
	if (pid == 0) {
		if (notes != NULL)
			write_note();
		_exit(0);
	}
	if (pid > 0)
		forks++;
	if (shim)
		__atomic_sub_fetch(&cut, 1, __ATOMIC_SEQ_CST);
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	void *keep[64] = { 0 };
	while (!stop) {
		unsigned i = (unsigned)rand_r(&seed) % 64;
		if (keep[i] && rand_r(&seed) % 2)
			keep[i] = realloc(keep[i], 1 + (size_t)rand_r(&seed) % 4000);
		else {
			free(keep[i]);
			keep[i] = malloc(1 + (size_t)rand_r(&seed) % 4000);
		}
	}
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	return NULL;
}

int main(void)
{
	pthread_t t[3];
	notes = getenv("FORK_SIGNAL_NOTES");
	dl_iterate_phdr(note, NULL);
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_alarm;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	/* The workers take the signals (they were created with it open). */
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	setitimer(ITIMER_REAL, &it, NULL);
	do {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		usleep(100);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (forks < 100 && now.tv_sec - t0.tv_sec < 10);
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	stop = 1;
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	while (waitpid(-1, NULL, 0) > 0)
		;
	printf("done\n");
	return 0;
}
