/* stack.h - backtraces: capturing return addresses (libunwind or frame
 * pointers) and interning each distinct stack once. A stack id is what
 * the live table keeps as a block's site when backtraces are on. */
#ifndef ASP_STACK_H
#define ASP_STACK_H

#include <stddef.h>
#include <stdint.h>

#include "glue.h"
#include "options.h"
#include "thread.h"

#define ASP_SKIP_FRAMES 8	/* the shim's own frames, at most */
/* A walk asks for this many frames more than ALLOCSPY_BACKTRACE: the
 * shim's own above the caller, and the trampolines the shim puts in the
 * program's stacks (main's and each thread's), which are kept but not
 * counted. */
#define ASP_WALK_EXTRA (ASP_SKIP_FRAMES + 2)

/* The shim's text: a return address there, inside the program's stack,
 * is a trampoline of the shim's (stack.c). */
extern ASP_HIDDEN uintptr_t asp__shim_lo, asp__shim_hi;

static inline int asp__in_shim(uintptr_t pc)
{
	return pc - asp__shim_lo < asp__shim_hi - asp__shim_lo;
}

extern void *__libc_stack_end;

/* Loads libunwind when ALLOCSPY_BACKTRACE > 1 asks for it. */
void asp__stack_init(void);

/* The interned stack of the current allocation: its id (1, 2, ...), or 0.
 * Frame 0 is site, the return address of the interposed function. */
uintptr_t asp__stack_capture(struct asp_thread *t, uintptr_t site);

/* Where a walk from fp may read: up to the thread's descriptor (self,
 * pthread_self()), which glibc puts above its stack, or the main thread's
 * stack end. */
static inline uintptr_t asp__fp_high(uintptr_t self, uintptr_t fp)
{
	uintptr_t high = self;
	if (high < fp || high - fp > (64u << 20))
		high = (uintptr_t)__libc_stack_end;
	return high;
}

/* The return addresses up the frame-pointer chain from fp, at most max,
 * while the chain rises, aligned, below high: [fp] is the caller's fp,
 * [fp + 8] the return address. Returns how many. fp is not 0. */
static ASP_ALWAYS_INLINE int asp__fp_chain(uintptr_t fp, uintptr_t high, uintptr_t *out, int max)
{
	int n = 0;
	while (n < max && fp <= high - 16 && (fp & 7) == 0) {
		uintptr_t next = ((uintptr_t *)fp)[0];
		uintptr_t ret = ((uintptr_t *)fp)[1];
		if (ret == 0)
			break;
		out[n++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

/* Frame pointers, the common case: the thread's last stack again. The
 * walk asp__stack_capture would make, compared with that stack as it goes
 * (what it would find, without storing the frames): its id, or 0 when the
 * walk differs or the caller's frame is not among the shim's first (then
 * the whole path decides). From the frame of the function it is inlined
 * in: the fewer of the shim's frames below the caller's, the shorter the
 * walk. The caller holds t->depth up: a signal handler's allocation must
 * not change the thread's last stack while it is compared. */
static ASP_ALWAYS_INLINE uintptr_t asp__stack_fp_again(const struct asp_thread *t, uintptr_t site)
{
	uint32_t id = t->stack_id, want = t->stack_n;
	if (id == 0 || want == 0)
		return 0;
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t high = asp__fp_high(t->self, fp);
	/* Frames walked only after fp: the chain must rise, which keeps it
	 * above the first. (No fp + 16 here: a word near the top of the
	 * address space, which a program without frame pointers may leave
	 * there, would wrap past high.) */
#define FP_OK(fp) ((fp) <= high - 16 && ((fp) & 7) == 0)
	if (!FP_OK(fp))
		return 0;
	uintptr_t next = ((uintptr_t *)fp)[0], ret = ((uintptr_t *)fp)[1];
	/* The shim's frames, up to the caller's: the first ASP_SKIP_FRAMES */
	for (int n = 1; ret != site; n++) {
		if (ret == 0 || n == ASP_SKIP_FRAMES || next <= fp || !FP_OK(next))
			return 0;
		fp = next;
		next = ((uintptr_t *)fp)[0];
		ret = ((uintptr_t *)fp)[1];
	}
	/* The program's, from the caller's: the last stack's, one for one */
	for (uint32_t i = 0;;) {
		if (t->stack_frames[i] != ret)
			return 0;
		if (++i == want)
			break;
		if (next <= fp || !FP_OK(next))
			return 0;
		fp = next;
		next = ((uintptr_t *)fp)[0];
		ret = ((uintptr_t *)fp)[1];
	}
	/* and no more, unless the last stack was cut there: the walk ends at
	 * a frame that does not rise, leaves the stack or has no return
	 * address, and the whole path marks a stack with frames of the
	 * program's past the ones it keeps as cut (a trampoline of the shim's
	 * next: the whole path decides) */
	int more = next > fp && FP_OK(next) && ((uintptr_t *)next)[1] != 0;
	if (more && asp__in_shim(((uintptr_t *)next)[1]))
		return 0;
	return more == (int)t->stack_cut ? id : 0;
#undef FP_OK
}

/* An entry of a thread's stack cache (stack.c): a stack libunwind found,
 * the state the shim was entered with (its key: capture's return address,
 * stack pointer and frame pointer, the program's call site, the thread),
 * and the words the unwinder read, each with what it held then. */
struct asp_sc_check {
	uintptr_t addr, value;
};

struct asp_sc_entry {
	uintptr_t ip, sp, bp, site, self;	/* the key; ip == 0: empty */
	uint32_t gen, nchecks;
	uintptr_t id;
	struct asp_sc_check check[];
};

extern ASP_HIDDEN uint32_t asp__code_gen;

/* libunwind, the common case: the stack of the cache entry the thread used
 * last, again. That entry's key is the frame of capture's caller; when that
 * frame is the one this is inlined in, and the program called it directly
 * (its return address is site), the unwinder would start from the same
 * program frame with the same registers, so the entry's checks decide,
 * as they do in capture. Every word checked lies at or above that frame:
 * the unwinder reads the program's frames, and this frame's saved return
 * address and frame pointer. Its id, or 0 (then capture decides). The
 * caller holds t->depth up: a signal handler's allocation must not change
 * the entry while it is compared. */
static ASP_ALWAYS_INLINE uintptr_t asp__stack_unw_again(const struct asp_thread *t, uintptr_t site)
{
	const struct asp_sc_entry *e = t->sc_hot;
	if (e == NULL)
		return 0;
	const uintptr_t *fp = __builtin_frame_address(0);
	if (e->bp != (uintptr_t)fp || e->site != site || fp[1] != site || e->ip == 0 ||
	    e->self != t->self || e->gen != asp_atomic_load_acquire(&asp__code_gen))
		return 0;
	for (uint32_t i = 0; i < e->nchecks; i++)
		if (*(const uintptr_t *)e->check[i].addr != e->check[i].value)
			return 0;
	return e->id;
}

/* Built for the stack cache's tests (-DASP_SC_VERIFY): aborts when id is
 * not what the unwinder finds from here. */
void asp__stack_verify(struct asp_thread *t, uintptr_t site, uintptr_t id);

/* The stack of the current allocation, as asp__stack_capture, with the
 * common case inline in the caller: the thread's last stack again (frame
 * pointers), or the entry of its stack cache it used last (libunwind). */
static ASP_ALWAYS_INLINE uintptr_t asp__stack_take(struct asp_thread *t, uintptr_t site)
{
	t->depth++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uintptr_t id = asp__opt.unwind == ASP_UNWIND_FP ? asp__stack_fp_again(t, site)
	                                                : asp__stack_unw_again(t, site);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
#ifdef ASP_SC_VERIFY
	if (id != 0 && asp__opt.unwind != ASP_UNWIND_FP)
		asp__stack_verify(t, site, id);
#endif
	t->depth--;
	if (id != 0)
		return id;
	return asp__stack_capture(t, site);
}

/* The frames of stack id into out; returns the depth (0: unknown id). */
size_t asp__stack_frames(uintptr_t id, const uintptr_t **out);

/* The stack of the thread a fatal signal interrupted, from the handler's
 * context uc: the interrupted instruction first, then return addresses;
 * returns how many (at least 1), at most max. */
int asp__stack_signal_frames(void *uc, uintptr_t *out, int max);

/* Whether the walk that found stack id stopped at ALLOCSPY_BACKTRACE
 * frames with more below them (else the stack ended there). */
int asp__stack_cut(uintptr_t id);

/* Whether a thread's stack bounds are wanted (libunwind stacks). */
int asp__stack_bounds_wanted(void);

/* Bumped by every dlclose: the stack caches' entries are of older code
 * (declared above). */

/* fork: every stripe's lock is held across it. */
void asp__stack_atfork_prepare(void);
void asp__stack_atfork_release(void);

#endif
