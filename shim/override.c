/* override.c - every symbol the shim interposes, as a thin forwarder to
 * account.c. The caller's address is taken here, where it is the program's. */
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>
#include <wchar.h>

#include "account.h"
#include "glue.h"
#include "loader.h"
#include "refs.h"
#include "process.h"

#define CALLER ((uintptr_t)__builtin_return_address(0))

/* malloc, free and delete are a test or a few and a tail call
 * (account.h): count mode's path, count mode with ALLOCSPY_SAMPLE's, track
 * mode's, track mode's with stacks, or every mode's, in that order. This
 * file is built without frame pointers, so that these wrappers have no
 * frame: the program's return address is read off the stack, and the
 * functions they jump to, which keep frame pointers, find the program's
 * frame right above their own. */
#define COUNTING ASP_LIKELY(asp__state == ASP_FAST_COUNT)
#define SAMPLING (asp__state == ASP_FAST_COUNT_SAMPLE)
#define TRACKING (asp__state == ASP_FAST_TRACK)
#define STACKING (asp__state == ASP_FAST_STACKS)

/* malloc and free, the hottest two, are written out: C has no "jump to
 * that function if", and GCC's form of the same reaches every path but the
 * first through two taken branches more, which cost count mode with
 * ALLOCSPY_SAMPLE 0.08x on the malloc loop (of 1.41x). Here each path is
 * one taken jump away. The paths that take the call site find it in their
 * second argument, as they would from C; count mode's with
 * ALLOCSPY_SAMPLE reads it itself, when a sample needs it. x86-64 only, as
 * the whole shim (platform.h). */
_Static_assert(ASP_FAST_COUNT == 1 && ASP_FAST_COUNT_SAMPLE == 2 && ASP_FAST_TRACK == 3 &&
               ASP_FAST_STACKS == 4, "the modes' numbers below");
#define DISPATCH(sym, count, csample, site, track, stacks, any) \
	__asm__(".pushsection .text\n" \
	        ".globl " #sym "\n" \
	        ".type " #sym ", @function\n" \
	        ".p2align 4\n" \
	        #sym ":\n" \
	        ".cfi_startproc\n" \
	        "movl asp__state(%rip), %eax\n" \
	        "cmpl $1, %eax\n" \
	        "je " #count "\n" \
	        "cmpl $2, %eax\n" \
	        "je " #csample "\n" \
	        site \
	        "cmpl $3, %eax\n" \
	        "je " #track "\n" \
	        "cmpl $4, %eax\n" \
	        "je " #stacks "\n" \
	        "jmp " #any "\n" \
	        ".cfi_endproc\n" \
	        ".size " #sym ", .-" #sym "\n" \
	        ".popsection\n")

DISPATCH(malloc, asp__malloc_count, asp__malloc_csample, "movq (%rsp), %rsi\n",
         asp__malloc_track, asp__malloc_stacks, asp__malloc_any);
DISPATCH(free, asp__free_count, asp__free_csample, "", asp__free_track, asp__free_stacks,
         asp__free_any);

ASP_EXTERN void *calloc(size_t n, size_t size) { return asp__calloc(n, size, CALLER); }
ASP_EXTERN void *realloc(void *p, size_t size) { return asp__realloc(p, size, CALLER); }
ASP_EXTERN void *reallocarray(void *p, size_t n, size_t size)
{
	return asp__reallocarray(p, n, size, CALLER);
}

ASP_EXTERN int posix_memalign(void **out, size_t align, size_t size)
{
	return asp__posix_memalign(out, align, size, CALLER);
}

ASP_EXTERN void *aligned_alloc(size_t align, size_t size)
{
	return asp__memalign(ASP_FN_ALIGNED_ALLOC, align, size, CALLER);
}

ASP_EXTERN void *memalign(size_t align, size_t size)
{
	return asp__memalign(ASP_FN_MEMALIGN, align, size, CALLER);
}

ASP_EXTERN void *valloc(size_t size) { return asp__memalign(ASP_FN_VALLOC, 0, size, CALLER); }
ASP_EXTERN void *pvalloc(size_t size) { return asp__memalign(ASP_FN_PVALLOC, 0, size, CALLER); }
ASP_EXTERN size_t malloc_usable_size(void *p) { return asp__usable_size(p); }

ASP_EXTERN char *strdup(const char *s)
{
	if (COUNTING)
		return asp__strdup_count(ASP_FN_STRDUP, s);
	if (SAMPLING)
		return asp__strdup_csample(ASP_FN_STRDUP, s);
	if (TRACKING)
		return asp__strdup_track(ASP_FN_STRDUP, s, CALLER);
	if (STACKING)
		return asp__strdup_stacks(ASP_FN_STRDUP, s, CALLER);
	return asp__strdup(ASP_FN_STRDUP, s, CALLER);
}

ASP_EXTERN char *strndup(const char *s, size_t n)
{
	return asp__strndup(ASP_FN_STRNDUP, s, n, CALLER);
}

/* glibc's own names for the two, which its headers may call: the same
 * code. */
ASP_EXTERN extern __typeof__(strdup) __strdup __attribute__((alias("strdup"), copy(strdup)));
ASP_EXTERN extern __typeof__(strndup) __strndup __attribute__((alias("strndup"), copy(strndup)));

ASP_EXTERN wchar_t *wcsdup(const wchar_t *s) { return asp__wcsdup(s, CALLER); }

/* C++ operators, by their mangled names (x86_64: size_t is unsigned long). */
#define NEW(sym, fn) \
	ASP_EXTERN void *sym(size_t size) { return asp__new(fn, size, CALLER, #sym); }
#define NEW_NOTHROW(sym, fn) \
	ASP_EXTERN void *sym(size_t size, const void *nt) \
	{ (void)nt; return asp__new_nothrow(fn, size, CALLER, #sym); }
#define NEW_ALIGNED(sym, fn) \
	ASP_EXTERN void *sym(size_t size, size_t align) \
	{ return asp__new_aligned(fn, size, align, 0, CALLER, #sym); }
#define NEW_ALIGNED_NOTHROW(sym, fn) \
	ASP_EXTERN void *sym(size_t size, size_t align, const void *nt) \
	{ (void)nt; return asp__new_aligned(fn, size, align, 1, CALLER, #sym); }
#define DELETE(sym, fn, ...) \
	ASP_EXTERN void sym(void *p, ##__VA_ARGS__) \
	{ \
		if (COUNTING) \
			asp__delete_count(p, fn); \
		else if (SAMPLING) \
			asp__delete_csample(p, fn); \
		else if (TRACKING) \
			asp__delete_track(p, fn); \
		else if (STACKING) \
			asp__delete_stacks(p, fn); \
		else \
			asp__delete_any(p, fn); \
	}

NEW(_Znwm, ASP_FN_NEW)
NEW(_Znam, ASP_FN_NEW_ARR)
NEW_NOTHROW(_ZnwmRKSt9nothrow_t, ASP_FN_NEW_NOTHROW)
NEW_NOTHROW(_ZnamRKSt9nothrow_t, ASP_FN_NEW_ARR_NOTHROW)
NEW_ALIGNED(_ZnwmSt11align_val_t, ASP_FN_NEW_ALIGNED)
NEW_ALIGNED(_ZnamSt11align_val_t, ASP_FN_NEW_ARR_ALIGNED)
NEW_ALIGNED_NOTHROW(_ZnwmSt11align_val_tRKSt9nothrow_t, ASP_FN_NEW_ALIGNED)
NEW_ALIGNED_NOTHROW(_ZnamSt11align_val_tRKSt9nothrow_t, ASP_FN_NEW_ARR_ALIGNED)

DELETE(_ZdlPv, ASP_FN_DELETE)
DELETE(_ZdaPv, ASP_FN_DELETE_ARR)
DELETE(_ZdlPvm, ASP_FN_DELETE_SIZED, size_t size)
DELETE(_ZdaPvm, ASP_FN_DELETE_ARR_SIZED, size_t size)
DELETE(_ZdlPvRKSt9nothrow_t, ASP_FN_DELETE, const void *nt)
DELETE(_ZdaPvRKSt9nothrow_t, ASP_FN_DELETE_ARR, const void *nt)
DELETE(_ZdlPvSt11align_val_t, ASP_FN_DELETE_ALIGNED, size_t align)
DELETE(_ZdaPvSt11align_val_t, ASP_FN_DELETE_ARR_ALIGNED, size_t align)
DELETE(_ZdlPvmSt11align_val_t, ASP_FN_DELETE_ALIGNED, size_t size, size_t align)
DELETE(_ZdaPvmSt11align_val_t, ASP_FN_DELETE_ARR_ALIGNED, size_t size, size_t align)
DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, ASP_FN_DELETE_ALIGNED, size_t align, const void *nt)
DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, ASP_FN_DELETE_ARR_ALIGNED, size_t align, const void *nt)

/* The exit report also happens on _exit, as valgrind's does. */
ASP_EXTERN void _exit(int status) { asp__exit_fast(status); }
ASP_EXTERN void _Exit(int status) { asp__exit_fast(status); }

/* quick_exit: after its handlers (a handler of the shim's, registered
 * first, makes the report). */
ASP_EXTERN void quick_exit(int status)
{
	asp__quick_exit(status, (uintptr_t)__builtin_frame_address(0));
}

__attribute__((constructor)) static void asp_constructor(int argc, char **argv)
{
	asp__constructor(argc, argv);
}

__attribute__((destructor)) static void asp_destructor(void)
{
	asp__destructor();
}

/* Where the program and its threads start and end (process.c). */
ASP_EXTERN int __libc_start_main(void *main, int argc, char **argv, void (*init)(void),
                                 void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	return asp__libc_start_main(main, argc, argv, init, fini, rtld_fini, stack_end);
}

ASP_EXTERN void exit(int status)
{
	asp__exit(status, (uintptr_t)__builtin_frame_address(0));
}

ASP_EXTERN void *dlopen(const char *file, int flags) { return asp__dlopen(file, flags); }
ASP_EXTERN int dlclose(void *handle) { return asp__dlclose(handle); }
ASP_EXTERN int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	return asp__dl_iterate_phdr(cb, arg);
}

/* Fatal signals: the shim's handler, where it stands, is the default
 * action the program sees (process.c). */
ASP_EXTERN int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return asp__sigaction(sig, act, old);
}

ASP_EXTERN sighandler_t signal(int sig, sighandler_t handler) { return asp__signal(sig, handler); }
ASP_EXTERN sighandler_t bsd_signal(int sig, sighandler_t handler) { return asp__signal(sig, handler); }

ASP_EXTERN int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                              void *(*fn)(void *), void *arg)
{
	return asp__pthread_create(thread, attr, fn, arg);
}

/* The refcount helpers of include/allocspy.h report here. */
ASP_EXTERN void asp_ref_event(int op, const void *obj) { asp__ref_note(op, obj); }

/* GLib: its strdup family, counted as strdup-family allocations, and its
 * refcount API, counted as ref operations. GLib is only looked up when the
 * program calls these, so a program without GLib is unaffected. */
ASP_EXTERN char *g_strdup(const char *s)
{
	return s ? asp__strdup(ASP_FN_G_STRDUP, s, CALLER) : NULL;
}

ASP_EXTERN char *g_strndup(const char *s, size_t n)
{
	return s ? asp__g_strndup(s, n, CALLER) : NULL;
}

ASP_EXTERN void *g_memdup2(const void *mem, size_t size)
{
	return mem && size ? asp__memdup(ASP_FN_G_MEMDUP2, mem, size, CALLER) : NULL;
}

/* Each GLib wrapper keeps its own slot for the function it wraps. */
#define G_SYM(sym) ({ static struct asp_gsym g_sym = { sym, NULL }; &g_sym; })

#define G_REF(prefix) \
	ASP_EXTERN void prefix##_init(int *rc) { asp__g_ref_init(G_SYM(#prefix "_init"), rc); } \
	ASP_EXTERN void prefix##_inc(int *rc) { asp__g_ref_inc(G_SYM(#prefix "_inc"), rc); } \
	ASP_EXTERN int prefix##_dec(int *rc) { return asp__g_ref_dec(G_SYM(#prefix "_dec"), rc); }
G_REF(g_atomic_ref_count)
G_REF(g_ref_count)

#define G_BOX(prefix) \
	ASP_EXTERN void *prefix##_alloc(size_t size) \
	{ return asp__g_box_alloc(G_SYM(#prefix "_alloc"), size); } \
	ASP_EXTERN void *prefix##_alloc0(size_t size) \
	{ return asp__g_box_alloc(G_SYM(#prefix "_alloc0"), size); } \
	ASP_EXTERN void *prefix##_dup(size_t size, const void *mem) \
	{ return asp__g_box_dup(G_SYM(#prefix "_dup"), size, mem); } \
	ASP_EXTERN void *prefix##_acquire(void *mem) \
	{ return asp__g_box_acquire(G_SYM(#prefix "_acquire"), mem); } \
	ASP_EXTERN void prefix##_release(void *mem) \
	{ asp__g_box_release(G_SYM(#prefix "_release"), mem, NULL); } \
	ASP_EXTERN void prefix##_release_full(void *mem, void (*clear)(void *)) \
	{ asp__g_box_release(G_SYM(#prefix "_release_full"), mem, clear); }
G_BOX(g_rc_box)
G_BOX(g_atomic_rc_box)

ASP_EXTERN char *g_ref_string_new(const char *str)
{
	return asp__g_ref_string_new(G_SYM("g_ref_string_new"), str, 0, 0);
}

ASP_EXTERN char *g_ref_string_new_len(const char *str, ssize_t len)
{
	return asp__g_ref_string_new(G_SYM("g_ref_string_new_len"), str, len, 1);
}

ASP_EXTERN char *g_ref_string_new_intern(const char *str)
{
	return asp__g_ref_string_new(G_SYM("g_ref_string_new_intern"), str, 0, 0);
}

ASP_EXTERN char *g_ref_string_acquire(char *str)
{
	return asp__g_box_acquire(G_SYM("g_ref_string_acquire"), str);
}

ASP_EXTERN void g_ref_string_release(char *str)
{
	asp__g_box_release(G_SYM("g_ref_string_release"), str, NULL);
}

/* The interposer of each function, for the "at" line of a loss record or
 * an error.
 * Taken through local aliases: inside a shared library, malloc's address
 * is the canonical one, which for a non-PIE executable that calls malloc
 * is that executable's PLT slot, not this code. Set in assembly: malloc
 * and free are defined there, where an alias attribute cannot name them. */
#define ASP_FN_LOCAL(id, name, role, family, sym, a0, a1) \
	extern __typeof__(sym) asp__local_##sym ASP_HIDDEN; \
	__asm__(".hidden asp__local_" #sym "\n.set asp__local_" #sym ", " #sym "\n");
ASP_FNS(ASP_FN_LOCAL)
#undef ASP_FN_LOCAL

const void *asp__fn_address(unsigned fn)
{
	static const void *const table[ASP_FN_COUNT] = {
#define ASP_FN_ADDRESS(id, name, role, family, sym, a0, a1) [ASP_FN_##id] = (const void *)asp__local_##sym,
		ASP_FNS(ASP_FN_ADDRESS)
#undef ASP_FN_ADDRESS
	};
	return fn < ASP_FN_COUNT ? table[fn] : NULL;
}
