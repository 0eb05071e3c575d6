/* leak_exit_regs - main keeps its only pointer to a block in rbx, a
 * register a callee must save, and calls exit: exit saves rbx in its own
 * frame, which stays live until the process ends. valgrind finds the
 * block there (still reachable); a scan that takes the stack below exit's
 * caller for dead calls it definitely lost. Another block is lost for
 * good. Exit status 0. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	void *kept = malloc(64);
	void *lost = malloc(32);
	lost = NULL;
	printf("exiting\n");
	fflush(stdout);
	/* kept's only copy goes to rbx; its stack slot is cleared. */
	__asm__ volatile("mov (%0), %%rbx\n\t"
	                 "movq $0, (%0)\n\t"
	                 "xor %%edi, %%edi\n\t"
	                 "call exit@PLT\n\t"
	                 :
	                 : "r"(&kept)
	                 : "rbx", "rdi", "memory");
	return (int)(long)lost;
}
