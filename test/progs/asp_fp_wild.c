/* asp_fp_wild - calls malloc with the frame pointer on a made-up frame
 * whose saved frame pointer is 0xfffffffffffffff0, as code built without
 * frame pointers may leave in rbp: a frame-pointer walk that checks its
 * bound as fp + 16 <= high wraps around there and reads the top of the
 * address space. Prints "ok" and exits 0; the shim must not change that,
 * with ALLOCSPY_UNWIND=fp or libunwind. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void *malloc_on_frame(size_t n, uintptr_t *frame)
{
	void *p;
	/* Past the red zone, 16-aligned at the call; rbp back after. */
	__asm__ volatile("sub $136, %%rsp\n\t"
	                 "push %%rbp\n\t"
	                 "mov %2, %%rbp\n\t"
	                 "call malloc@PLT\n\t"
	                 "pop %%rbp\n\t"
	                 "add $136, %%rsp\n\t"
	                 : "=a"(p), "+D"(n)
	                 : "r"(frame)
	                 : "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "xmm0", "xmm1", "xmm2",
	                   "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
	                   "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory", "cc");
	return p;
}

int main(void)
{
	uintptr_t frame[2] = { (uintptr_t)-16, 1 };
	for (int i = 0; i < 3; i++)
		free(malloc_on_frame(100, frame));
	printf("ok\n");
	return 0;
}
