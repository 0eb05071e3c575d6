/* rel_argv - overwrites its arguments in place (as programs that set
 * their process title do) and drops them from argv. Exits 0. */
#include <string.h>

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		memset(argv[i], 'x', strlen(argv[i]));
	argv[1] = NULL;
	return 0;
}
