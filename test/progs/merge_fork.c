/* merge_fork - a parent and a child that each allocate known amounts, for
 * allocspy-report merge (t57). Usage: merge_fork fork|exec.
 *
 * The parent allocates a 16-byte token and 40 blocks of 4,096 bytes
 * (parent_work), then makes a child: with "fork" a plain fork, which
 * inherits those blocks (and frees them before it exits); with "exec" a
 * fork that runs this program again as "merge_fork child R W", a new image
 * whose modules ASLR puts elsewhere. The child allocates a 16-byte token
 * and 30 blocks of 8,192 bytes (child_work). Each holds its peak while the
 * other reaches its own: the child frees its token and tells the parent
 * through a pipe, then waits; the parent frees its token (each first free
 * is taken at its peak) and tells the child. Then each frees its blocks,
 * and from one call site in main, the same in every process, makes 10
 * temporary blocks of 64 bytes (churn) and loses one of 100 bytes
 * (leave_one). No stdio: libc allocates nothing of its own.
 * Exit status 0, or 1 when a system call fails, 2 on a usage error. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PARENT_BLOCKS 40
#define PARENT_SIZE 4096
#define CHILD_BLOCKS 30
#define CHILD_SIZE 8192
#define CHURN 10

static void *parent_token, *parent_blocks[PARENT_BLOCKS];
static void *child_token, *child_blocks[CHILD_BLOCKS];
static void *lost;

static void parent_work(void)
{
	parent_token = malloc(16);
	for (int i = 0; i < PARENT_BLOCKS; i++) {
		parent_blocks[i] = malloc(PARENT_SIZE);
		memset(parent_blocks[i], i, PARENT_SIZE);
	}
}

static void child_work(void)
{
	child_token = malloc(16);
	for (int i = 0; i < CHILD_BLOCKS; i++) {
		child_blocks[i] = malloc(CHILD_SIZE);
		memset(child_blocks[i], i, CHILD_SIZE);
	}
}

static void churn(void)
{
	for (int i = 0; i < CHURN; i++) {
		char *volatile p = malloc(64);

		p[0] = (char)i;
		free(p);
	}
}

static void leave_one(void)
{
	lost = malloc(100);
	lost = NULL;
}

static void free_all(void **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
}

/* The child's part, talking through the pipe ends r and w. */
static int child(int r, int w)
{
	char c;

	child_work();
	free(child_token);
	if (write(w, "c", 1) != 1 || read(r, &c, 1) != 1)
		return 1;
	free_all(child_blocks, CHILD_BLOCKS);
	return 0;
}

/* The parent's part, while the child pid runs. */
static int parent(pid_t pid, int r, int w)
{
	char c;
	int st;

	if (read(r, &c, 1) != 1)
		return 1;
	free(parent_token);
	if (write(w, "p", 1) != 1)
		return 1;
	free_all(parent_blocks, PARENT_BLOCKS);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	return 0;
}

/* n as decimal text into buf (no stdio). */
static char *decimal(char buf[16], int n)
{
	char *p = buf + 15;

	*p = '\0';
	do
		*--p = (char)('0' + n % 10);
	while ((n /= 10) > 0);
	return p;
}

int main(int argc, char **argv)
{
	int up[2], down[2], rc;
	char rb[16], wb[16];
	pid_t pid;

	if (argc == 4 && strcmp(argv[1], "child") == 0) {
		rc = child(atoi(argv[2]), atoi(argv[3]));
	} else {
		if (argc != 2 || (strcmp(argv[1], "fork") != 0 &&
				  strcmp(argv[1], "exec") != 0))
			return 2;
		if (pipe(up) != 0 || pipe(down) != 0)
			return 1;
		parent_work();
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0 && argv[1][0] == 'e') {
			execl("/proc/self/exe", argv[0], "child", decimal(rb, down[0]),
			      decimal(wb, up[1]), (char *)NULL);
			_exit(1);
		}
		if (pid == 0) {
			rc = child(down[0], up[1]);
			free(parent_token);	/* the blocks it inherited */
			free_all(parent_blocks, PARENT_BLOCKS);
		} else {
			rc = parent(pid, up[0], down[1]);
		}
	}
	churn();
	leave_one();
	return rc;
}
