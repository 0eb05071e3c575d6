/* platform.h - the platform the shim is written for, in one place: x86-64
 * Linux with glibc 2.34 or later, built by GCC or Clang. Another platform
 * stops the build here rather than giving a shim that miscounts.
 *
 * What the shim assumes of it, where, and what it does on a machine where
 * the assumption does not hold (the fallback):
 *
 * x86-64
 *   - The instructions below: the thread pointer (%fs:0), the owned
 *     counter's add to memory, the spin loop's pause, the raw system calls
 *     of the ticker and the live view (platform.c). No fallback: x86-64
 *     is required.
 *   - The System V calling convention and frame layout: malloc's and
 *     free's dispatch reads the return address at (%rsp) and passes the
 *     call site in %rsi (override.c); a frame pointer walk reads the
 *     caller's frame pointer at [rbp] and the return address at [rbp+8]
 *     (stack.h); the leak scan's thread registers and the fatal signal's
 *     and guard's program counter and frame pointer come from the signal
 *     context (asp_uc_* below). No fallback.
 *   - The size of a faulting access, decoded from the instruction
 *     (platform.c, asp__access_size: the common moves, arithmetic and
 *     SSE/AVX loads and stores). Fallback: 0, and the guard's report says
 *     "of size 0" (the suppression kind allocspy:Addr then matches it).
 *   - 4 KiB pages (ASP_PAGE): the guard's pages, the live table's leaves,
 *     the leak scan's windows, valloc in the fatal signal's copy. Checked
 *     at start-up: with any other page size the shim counts in count mode
 *     and warns (options.c).
 *   - The ELF relocation kinds R_X86_64_JUMP_SLOT and R_X86_64_GLOB_DAT,
 *     which unwmask.c rewrites in libunwind's objects. Fallback: an object
 *     without them is left as it is (libunwind's own signal masking).
 *   - libunwind's register numbers for the frame pointer and the program
 *     counter (ASP_UNW_FP, ASP_UNW_PC: stack.c's stack cache). No
 *     fallback.
 * glibc
 *   - __libc_start_main is interposed to run main's exit report after
 *     every exit handler (process.c). Fallback: a program started without
 *     it gets its report from the shim's destructor.
 *   - __register_atfork with no DSO, so that the fork handlers outlive the
 *     shim's destructor (process.c). No fallback.
 *   - _Fork, a fork without handlers, for the fatal signal's copy
 *     (report.c): glibc 2.34 (checked below).
 *   - __libc_freeres and libstdc++'s __gnu_cxx::__freeres, run at exit as
 *     valgrind runs them (process.c). Fallback: looked up with dlsym; a
 *     missing one is not run.
 *   - _IO_list_all and FILE's _chain, _IO_write_ptr and _IO_read_ptr:
 *     stdio's pending output dropped before _exit in a copy of the
 *     process (process.c). No fallback.
 *   - The loader's lock of its module list inside _rtld_global, found by
 *     scanning for a held recursive mutex (loader.c), so that fork waits
 *     for threads inside it. Fallback: not found, fork does not wait for
 *     it (a libunwind walk in another thread may then leave it held in
 *     the child).
 *   - _dl_find_object (glibc 2.35) for where a module begins (loader.c).
 *     Fallback: the module's first program header.
 *   - The thread descriptor's slot of the shim's thread key, found at
 *     start-up by reading the descriptor back with process_vm_readv
 *     (thread.c). Fallback: pthread_getspecific on every call.
 *   - glibc's malloc: 16-byte chunk headers, so that two live blocks never
 *     share a 32-byte granule of the live table (live.c), and
 *     malloc_usable_size. Fallback: another allocator underneath (found
 *     at start-up, next.c) puts the table in its shared mode: atomic words
 *     and a side table.
 *   - reallocarray calling realloc (account.c: its inner realloc is no
 *     invalid one), the C library's start-up functions that call main
 *     named "(below main)" (common/dwsym.c). Fallback: none needed; other
 *     names are kept as they are.
 * Linux
 *   - /proc/self/maps and /proc/PID/maps, process_vm_readv, mincore,
 *     membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (thread.c: fork's gate
 *     and the table's gather; fallback: a full fence in every change of
 *     the table, which costs the allocation paths), MAP_NORESERVE,
 *     O_TMPFILE (report.c; fallback: a named temporary file), clone of a
 *     thread without a pthread (the ticker), tgkill. */
#ifndef ASP_PLATFORM_H
#define ASP_PLATFORM_H

#if !defined(__x86_64__) || !defined(__linux__)
#error "liballocspy builds for x86-64 Linux only (shim/platform.h lists what it assumes)"
#endif

#include <stdint.h>
#include <sys/ucontext.h>
#if !defined(__GLIBC__) || __GLIBC__ < 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ < 34)
#error "liballocspy needs glibc 2.34 or later (shim/platform.h lists what it assumes)"
#endif
#if !defined(__GNUC__) || !defined(__SEG_FS)
#error "liballocspy is built with GCC or Clang (their builtins, inline assembly and __seg_fs)"
#endif

/* The page size the shim's layouts are made for (options.c checks it),
 * an address's offset in its page, and an address or a length rounded
 * down or up to pages. */
#define ASP_PAGE_SHIFT 12
#define ASP_PAGE (1 << ASP_PAGE_SHIFT)
#define ASP_PAGE_OFFSET(x) ((x) & (uintptr_t)(ASP_PAGE - 1))
#define ASP_PAGE_DOWN(x) ((x) & ~(uintptr_t)(ASP_PAGE - 1))
#define ASP_PAGE_UP(x) (((x) + ASP_PAGE - 1) & ~(uintptr_t)(ASP_PAGE - 1))

/* The thread pointer: glibc's descriptor of the calling thread. */
static inline uintptr_t asp_thread_pointer(void)
{
	uintptr_t tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}

/* A word at an offset from the thread pointer, read with one instruction
 * (thread.h: the shim's thread record, at the slot of its key). */
#define asp_thread_word(off) (*(void *__seg_fs *)(off))

/* A counter owned by one thread and read by others: one add instruction
 * on memory, without a lock prefix. A signal handler that counts in
 * between cannot be lost, and readers never see a torn value. */
#define asp_owned_add(p, v) \
	__asm__ __volatile__("addq %1, %0" : "+m"(*(p)) : "er"((uint64_t)(v)))

static inline void asp_cpu_relax(void)
{
	__builtin_ia32_pause();
}

/* A signal context's registers. */
static inline uintptr_t asp_uc_pc(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

static inline uintptr_t asp_uc_sp(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
}

static inline uintptr_t asp_uc_fp(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
}

/* The first argument of the call the context is in (its first register). */
static inline uintptr_t asp_uc_arg0(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RDI];
}

/* Whether the page fault of the context was a write. */
static inline int asp_uc_fault_write(const ucontext_t *uc)
{
	return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
}

/* The general registers a signal context holds, and the count of them
 * (the leak scan reads each as a root). */
#define ASP_UC_NREGS NGREG
static inline uintptr_t asp_uc_reg(const ucontext_t *uc, int r)
{
	return (uintptr_t)uc->uc_mcontext.gregs[r];
}

/* libunwind's numbers of the frame pointer and the program counter
 * (where <libunwind.h> is included). */
#define ASP_UNW_FP UNW_X86_64_RBP
#define ASP_UNW_PC UNW_X86_64_RIP

/* The ELF relocations of an imported function or object, as unwmask.c
 * rewrites them. */
#define ASP_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define ASP_R_GLOB_DAT R_X86_64_GLOB_DAT

/* platform.c: the size in bytes of the memory access the instruction at
 * pc makes, 0 when it cannot tell; a system call without the C library
 * (no errno, no cancellation point: the ticker, which has no thread of its
 * own, makes its calls so), its result or -errno. */
unsigned asp__access_size(const unsigned char *pc);
long asp__raw_syscall(long n, long a, long b, long c, long d, long e, long f);

#endif
