/* test_stack - backtraces over frames the test builds by hand (shim/stack.c):
 * the frame-pointer walk and where it ends, the thread's last stack again,
 * cut stacks, the shim's trampolines (kept, not counted), and the stack
 * cache of libunwind mode: what sc_learn learns
 * (the words the unwinder read), the lookups that use it (capture's and
 * the inline one of stack.h), and the stacks it must not learn.
 *
 * The frames: a function (target) points its saved frame pointer at an
 * array of words in the test's frame above it, (next frame, return
 * address) pairs, and calls the shim's capture from there. The return addresses
 * are real code addresses (calls in code_1, code_2, ...), so that
 * libunwind unwinds them by their functions' rules (frame pointers: the
 * unit tests are built with them); the last frame's is in chain_end,
 * whose rule marks the return address undefined, as a thread's first
 * frame's does: libunwind's stack ends there, and the frame-pointer walk
 * at its frame pointer, 0. code_9's return address stands for a
 * trampoline of the shim's. The thread record is the test's own, with the
 * bounds of its stack (self, stack_lo) above and below the frames.
 *
 * stack.o is the shim's own object, linked from the unit archive, not
 * included: how it is compiled (its frames, capture's frame pointer, the
 * key) is what the cache depends on. */
#include <dlfcn.h>
#include <signal.h>

#include "account.h"
#include "options.h"
#include "process.h"
#include "stack.h"
#include "unit.h"

/* What stack.o calls beyond the archive's modules: the options (options.c
 * reads the environment and brings the rest of the shim), asp__warn, the
 * loader's figures account.c keeps, and process.c's loading of libunwind
 * (a dlopen, as there). */
struct asp_options asp__opt;
int asp__dtv_extra;
uintptr_t asp__ldso_lo, asp__ldso_hi;

void *asp__load_private(const char *name)
{
	return dlopen(name, RTLD_NOW | RTLD_LOCAL);
}

void asp__warn(const char *a, const char *b, const char *c)
{
	fprintf(stderr, "# allocspy: warning: %s%s%s\n", a, b, c);
}

/* Code addresses: the return address of a call in each of code_1 ...
 * code_8 (distinct bodies, so that none is folded into another). */
static ASP_NOINLINE uintptr_t here(int k)
{
	__asm__ volatile("" : : "r"(k));
	return (uintptr_t)__builtin_return_address(0);
}

#define CODE(k) \
	static ASP_NOINLINE uintptr_t code_##k(void) \
	{ \
		uintptr_t r = here(k); \
		__asm__ volatile("" : "+r"(r)); \
		return r; \
	}
CODE(1) CODE(2) CODE(3) CODE(4) CODE(5) CODE(6) CODE(7) CODE(8) CODE(9)

/* The first frame of a stack: no return address. */
void chain_end(void);
__asm__(".text\n"
        ".type chain_end, @function\n"
        "chain_end:\n"
        ".cfi_startproc\n"
        ".cfi_undefined rip\n"
        "nop\n"
        "nop\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size chain_end, .-chain_end\n");

#define END ((uintptr_t)chain_end + 1)
#define MAXF 10

static uintptr_t ip[MAXF + 1];	/* ip[1] ... ip[8]: code addresses */
#define TRAMP ip[9]		/* the shim's trampoline's (see setup) */

static void code_addresses(void)
{
	uintptr_t (*const fn[9])(void) = { code_1, code_2, code_3, code_4, code_5,
	                                   code_6, code_7, code_8, code_9 };
	for (int i = 0; i < 9; i++)
		ip[i + 1] = fn[i]();
}

/* Frame i (1 ... n) at w[2i - 2]: the next frame's address, then its
 * return address, ip[i]; the last one's are 0 and END. */
struct chain {
	uintptr_t below[2];		/* read too: below a frame pointer is
					 * where a realigning frame keeps its
					 * CFA (sc_learn) */
	uintptr_t w[2 * MAXF];
	uintptr_t other[2 * MAXF];	/* a copy of the frames, elsewhere */
	uintptr_t top[4];		/* the stack's end (self) */
};

#define F(c, i) ((uintptr_t)&(c)->w[2 * (i) - 2])

static void build(struct chain *c, int n)
{
	memset(c, 0, sizeof *c);
	for (int i = 1; i <= n; i++) {
		c->w[2 * i - 2] = i < n ? F(c, i + 1) : 0;
		c->w[2 * i - 1] = i < n ? ip[i] : END;
	}
	/* The copy: the same frames, at other addresses. */
	for (int i = 1; i <= n; i++) {
		c->other[2 * i - 2] = i < n ? (uintptr_t)&c->other[2 * i] : 0;
		c->other[2 * i - 1] = c->w[2 * i - 1];
	}
}

static struct asp_thread t;	/* the thread's record */

/* The thread's stack: from well below the test's frames up to the end
 * of the chain. */
static ASP_NOINLINE void bounds(struct chain *c)
{
	t.self = (uintptr_t)&c->top[4];
	t.stack_lo = (uintptr_t)__builtin_frame_address(0) - (1u << 20);
}

struct call {
	struct chain *c;	/* NULL: the real frames above target's */
	int n;			/* captures */
	void (*before)(struct call *x, int i);
	uintptr_t site, fp;	/* target's return address and frame */
	uintptr_t ret;		/* run's return address */
	uintptr_t again[8];	/* stack.h's inline lookup before capture i */
	uintptr_t id[8];
	uint32_t walks[8];	/* libunwind walks after capture i */
};

/* Calls capture n times from one call site, as an allocation in a loop
 * would: site is the return address into run (the program's frame the
 * shim is entered from), and above it the chain. */
static ASP_NOINLINE void target(struct call *x)
{
	volatile uintptr_t *fp = __builtin_frame_address(0);
	uintptr_t saved = fp[0];
	x->site = (uintptr_t)__builtin_return_address(0);
	x->fp = (uintptr_t)fp;
	if (x->c != NULL)
		fp[0] = (uintptr_t)x->c->w;
	for (int i = 0; i < x->n; i++) {
		if (x->before != NULL)
			x->before(x, i);
		x->again[i] = asp__opt.unwind == ASP_UNWIND_FP ? asp__stack_fp_again(&t, x->site)
		                                               : asp__stack_unw_again(&t, x->site);
		x->id[i] = asp__stack_capture(&t, x->site);
		x->walks[i] = t.unw_walks;
	}
	fp[0] = saved;
}

/* One call site for all of a test's calls: site is the same, and so is
 * the cache's key (target's frame) when the calls come from one test
 * function. */
static ASP_NOINLINE void run(struct call *x)
{
	x->ret = (uintptr_t)__builtin_return_address(0);
	target(x);
	__asm__ volatile("" : : : "memory");
}

/* The shim's text (asp__in_shim: a return address there is one of its
 * trampolines, kept in a stack but not counted) is the object that holds
 * stack.o, here the test's own: code_9 alone stands for it, so that every
 * other frame the test builds is the program's. */
static void setup(enum asp_unwind unwind, int backtrace)
{
	asp__opt.unwind = unwind;
	asp__opt.backtrace = backtrace;
	asp__stack_init();
	ASSERT_EQ(asp__opt.unwind, unwind);	/* libunwind was loaded */
	code_addresses();
	ASSERT(asp__in_shim((uintptr_t)asp__stack_capture));
	ASSERT(asp__in_shim(ip[1]));
	ASSERT(!asp__in_shim((uintptr_t)dlsym(RTLD_DEFAULT, "dlopen")));
	asp__shim_lo = (uintptr_t)code_9;
	asp__shim_hi = TRAMP + 1;
	for (int i = 1; i <= 8; i++)
		ASSERT(!asp__in_shim(ip[i]));
	ASSERT(!asp__in_shim(END));
}

/* The stack id's frames are site and then want[0 .. n). */
static void assert_frames(uintptr_t id, uintptr_t site, const uintptr_t *want, size_t n)
{
	const uintptr_t *f;
	ASSERT_EQ(asp__stack_frames(id, &f), n + 1);
	ASSERT_EQ(f[0], site);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(f[i + 1], want[i]);
}

/* Frame pointers ------------------------------------------------------------ */

TEST(fp_walk_over_hand_built_frames)
{
	setup(ASP_UNWIND_FP, 16);
	struct chain c;
	build(&c, 6);
	bounds(&c);
	struct call x = { .c = &c, .n = 2 };
	run(&x);
	ASSERT_EQ(x.id[0], 1);
	uintptr_t want[] = { ip[1], ip[2], ip[3], ip[4], ip[5], END };
	assert_frames(1, x.site, want, 6);
	/* It is the thread's last stack now: the inline walk finds it. */
	ASSERT_EQ(t.stack_id, 1);
	ASSERT_EQ(t.stack_n, 7);
	ASSERT_EQ(t.stack_frames[0], x.site);
	ASSERT_EQ(t.stack_frames[6], END);
	ASSERT_EQ(x.again[0], 0);
	ASSERT_EQ(x.again[1], 1);
	ASSERT_EQ(x.id[1], 1);
	const uintptr_t *f;
	ASSERT_EQ(asp__stack_frames(2, &f), 0);
}

/* The walk ends at a frame that does not rise, one past the thread's
 * stack or misaligned, or a return address 0; the inline walk ends at the
 * same frame (or it would miss the thread's last stack, or take a longer
 * one for it). Between the cases, the whole chain is the last stack. */
static void end_case(struct call *x, int i)
{
	struct chain *c = x->c;
	build(c, 6);
	bounds(c);
	if (i % 2 == 0)
		return;		/* the whole chain */
	switch (i / 2) {
	case 0: c->w[4] = F(c, 1); break;		/* frame 3 points down */
	case 1: t.self = F(c, 4); break;		/* frame 4 past the stack */
	case 2: c->w[4] = F(c, 4) + 4; break;		/* misaligned */
	case 3: c->w[5] = 0; break;			/* frame 3's return address */
	}
}

TEST(walks_end_where_the_frames_do)
{
	setup(ASP_UNWIND_FP, 16);
	struct chain c;
	struct call x = { .c = &c, .n = 8, .before = end_case };
	run(&x);
	/* The whole chain, each time the same id, found in the store: the
	 * inline walk does not take the shorter last stack for it. */
	ASSERT_EQ(x.id[0], 1);
	for (int i = 2; i < 8; i += 2) {
		ASSERT_EQ(x.id[i], 1);
		ASSERT_EQ(x.again[i], 0);	/* the last stack was shorter */
	}
	/* Ended at frame 3: a stack of its own, found again in the store. */
	uintptr_t want[] = { ip[1], ip[2], ip[3] };
	for (int i = 1; i < 7; i += 2) {
		ASSERT_EQ(x.again[i], 0);
		ASSERT_EQ(x.id[i], 2);
	}
	assert_frames(2, x.site, want, 3);
	/* Frame 3 without a return address: site, ip 1 and 2. */
	ASSERT_EQ(x.id[7], 3);
	assert_frames(3, x.site, want, 2);
	/* And the inline walk stops where capture's did. */
	struct call y = { .c = &c, .n = 2, .before = NULL };
	for (int k = 0; k < 4; k++) {
		end_case(&y, 2 * k + 1);
		run(&y);
		ASSERT_EQ(y.id[0], k < 3 ? 2 : 3);
		ASSERT_EQ(y.again[1], y.id[0]);
	}
}

/* The thread's last stack (its record's stack_frames, stack_id) is what the
 * inline walk compares with: a record the test wrote is taken at its word.
 * A stack that differs is looked up (or added) and becomes the last. */
static void last_stack_case(struct call *x, int i)
{
	struct chain *c = x->c;
	switch (i) {
	case 0:	/* the record says the walk's stack is id 4242 */
		t.stack_frames[0] = x->site;
		for (int k = 1; k <= 5; k++)
			t.stack_frames[k] = c->w[2 * k - 1];
		t.stack_n = 6;
		t.stack_id = 4242;
		break;
	case 1: c->w[3] = ip[7]; break;		/* frame 2's return address */
	case 2: c->w[3] = ip[2]; break;
	case 3: c->w[3] = ip[7]; break;
	}
}

TEST(the_thread_last_stack_again)
{
	setup(ASP_UNWIND_FP, 16);
	struct chain c;
	build(&c, 5);
	bounds(&c);
	struct call x = { .c = &c, .n = 4, .before = last_stack_case };
	run(&x);
	ASSERT_EQ(x.again[0], 4242);
	ASSERT_EQ(x.id[0], 4242);
	ASSERT_EQ(x.again[1], 0);
	ASSERT_EQ(x.id[1], 1);		/* nothing was interned before */
	uintptr_t changed[] = { ip[1], ip[7], ip[3], ip[4], END };
	assert_frames(1, x.site, changed, 5);
	ASSERT_EQ(x.again[2], 0);
	ASSERT_EQ(x.id[2], 2);
	ASSERT_EQ(x.again[3], 0);
	ASSERT_EQ(x.id[3], 1);		/* found, not added again */
	const uintptr_t *f;
	ASSERT_EQ(asp__stack_frames(3, &f), 0);
	ASSERT_EQ(t.stack_id, 1);
	ASSERT_EQ(t.stack_frames[2], ip[7]);
}

/* A capture from a signal handler that landed in the shim (depth) finds
 * and adds stacks but leaves the thread's last one; from one that landed
 * inside the table (chg) it only looks: a new stack gets no id. */
static uint32_t g_last[8];	/* the last stack's id before capture i */

static void handler_case(struct call *x, int i)
{
	struct chain *c = x->c;
	g_last[i] = t.stack_id;
	switch (i) {
	case 1: t.depth = 1; c->w[3] = ip[7]; break;	/* a known stack */
	case 2: c->w[3] = ip[8]; break;			/* a new one */
	case 3: t.depth = 0; t.chg = 1; break;
	case 4: t.chg = 0; break;
	}
}

TEST(inside_a_handler_only_looks)
{
	setup(ASP_UNWIND_FP, 16);
	struct chain c;
	build(&c, 5);
	bounds(&c);
	/* Two stacks known first: ip 7 and ip 2 as frame 2's. */
	struct call x = { .c = &c, .n = 1 };
	c.w[3] = ip[7];
	run(&x);
	ASSERT_EQ(x.id[0], 1);
	c.w[3] = ip[2];
	run(&x);
	ASSERT_EQ(x.id[0], 2);
	x.n = 5;
	x.before = handler_case;
	run(&x);
	ASSERT_EQ(x.id[0], 2);
	ASSERT_EQ(x.again[1], 0);
	ASSERT_EQ(x.id[1], 1);		/* depth: found, */
	ASSERT_EQ(g_last[2], 2);	/* not the last */
	ASSERT_EQ(x.id[2], 3);		/* added, */
	ASSERT_EQ(g_last[3], 2);	/* not the last */
	ASSERT_EQ(x.id[3], 3);		/* chg: found, */
	ASSERT_EQ(g_last[4], 2);	/* not the last */
	ASSERT_EQ(x.id[4], 3);
	ASSERT_EQ(t.stack_id, 3);
	ASSERT_EQ(t.stack_frames[2], ip[8]);
	/* chg and a new stack: none. */
	c.w[3] = ip[6];
	t.chg = 1;
	x.n = 1;
	x.before = NULL;
	run(&x);
	ASSERT_EQ(x.id[0], 0);
	const uintptr_t *f;
	ASSERT_EQ(asp__stack_frames(4, &f), 0);
	ASSERT_EQ(t.stack_id, 3);
}

/* ALLOCSPY_BACKTRACE frames are kept: a longer chain is cut (the walk
 * asked for more), the inline walk takes the cut stack when a frame goes
 * on past it, and frames past the cut make no other stack. A stack that
 * ended is not taken for a longer one that goes on from it. */
static void cut_case(struct call *x, int i)
{
	struct chain *c = x->c;
	if (i == 1)
		c->w[7] = ip[8];	/* frame 4: past the cut */
	if (i == 2)
		c->w[3] = ip[8];	/* frame 2: inside */
}

TEST(cut_stacks)
{
	setup(ASP_UNWIND_FP, 3);
	struct chain c;
	build(&c, 7);
	bounds(&c);
	struct call x = { .c = &c, .n = 3, .before = cut_case };
	run(&x);
	uintptr_t want[] = { ip[1], ip[2] };
	ASSERT_EQ(x.id[0], 1);
	assert_frames(1, x.site, want, 2);
	ASSERT_EQ(asp__stack_cut(1), 1);
	ASSERT_EQ(x.again[1], 1);
	ASSERT_EQ(x.id[1], 1);
	ASSERT_EQ(x.again[2], 0);
	ASSERT_EQ(x.id[2], 2);
	uintptr_t other[] = { ip[1], ip[8] };
	assert_frames(2, x.site, other, 2);
	ASSERT_EQ(asp__stack_cut(2), 1);
}

TEST(an_ended_stack_is_not_a_longer_one)
{
	setup(ASP_UNWIND_FP, 16);
	struct chain c;
	build(&c, 3);
	bounds(&c);
	struct call x = { .c = &c, .n = 1 };
	run(&x);
	ASSERT_EQ(x.id[0], 1);
	uintptr_t want[] = { ip[1], ip[2], END };
	assert_frames(1, x.site, want, 3);
	/* Frame 3 goes on now, to a fourth frame. */
	c.w[4] = F(&c, 4);
	c.w[6] = 0;
	c.w[7] = ip[5];
	run(&x);
	ASSERT_EQ(x.again[0], 0);
	ASSERT_EQ(x.id[0], 2);
	uintptr_t longer[] = { ip[1], ip[2], END, ip[5] };
	assert_frames(2, x.site, longer, 4);
}

/* The shim's trampolines (main's return address into its main_trampoline,
 * a thread's into its thread_trampoline) are kept in a stack but not
 * counted among the ALLOCSPY_BACKTRACE frames. Past the frames kept, a
 * frame of the program's makes the stack cut; the shim's alone do not, and
 * the inline walk leaves that to the whole path. */
TEST(a_trampoline_is_kept_not_counted)
{
	setup(ASP_UNWIND_FP, 3);
	struct chain c;
	build(&c, 6);
	c.w[3] = TRAMP;			/* frame 2's return address */
	bounds(&c);
	struct call x = { .c = &c, .n = 2 };
	run(&x);
	uintptr_t kept[] = { ip[1], TRAMP, ip[3] };
	assert_frames(1, x.site, kept, 3);
	ASSERT_EQ(asp__stack_cut(1), 1);
	ASSERT_EQ(x.again[1], 1);
	ASSERT_EQ(x.id[1], 1);
	/* Frame 3's, past the three kept: cut, for the program's frame 4. */
	build(&c, 5);
	c.w[5] = TRAMP;
	x.n = 2;
	run(&x);
	uintptr_t want[] = { ip[1], ip[2] };
	ASSERT_EQ(x.id[0], 2);
	assert_frames(2, x.site, want, 2);
	ASSERT_EQ(asp__stack_cut(2), 1);
	ASSERT_EQ(x.again[1], 0);
	ASSERT_EQ(x.id[1], 2);
	/* Frame 3 the last: the shim's frame alone past them, whole. */
	c.w[4] = 0;
	x.n = 1;
	run(&x);
	ASSERT_EQ(x.again[0], 0);
	ASSERT_EQ(x.id[0], 3);
	assert_frames(3, x.site, want, 2);
	ASSERT_EQ(asp__stack_cut(3), 0);
	/* Frame 4 again, and five frames: the whole stack, the trampoline a
	 * sixth. */
	asp__opt.backtrace = 5;
	c.w[4] = F(&c, 4);
	run(&x);
	uintptr_t whole[] = { ip[1], ip[2], TRAMP, ip[4], END };
	ASSERT_EQ(x.id[0], 4);
	assert_frames(4, x.site, whole, 5);
	ASSERT_EQ(asp__stack_cut(4), 0);
}

/* libunwind and the stack cache ---------------------------------------------- */

/* The words the entry learnt: each (address, value) once, and no other. */
static void assert_checks(const struct asp_sc_entry *e, const uintptr_t (*want)[2], size_t n)
{
	ASSERT(e != NULL);
	ASSERT_EQ(e->nchecks, n);
	for (size_t i = 0; i < n; i++) {
		size_t found = 0;
		for (uint32_t j = 0; j < e->nchecks; j++)
			if (e->check[j].addr == want[i][0]) {
				ASSERT_EQ(e->check[j].value, want[i][1]);
				found++;
			}
		if (found != 1)
			fprintf(stderr, "#   check %zu: %#jx\n", i, (uintmax_t)want[i][0]);
		ASSERT_EQ(found, 1);
	}
}

/* A stack is learnt on its second miss: the third capture from the same
 * place takes its id from the cache without a walk, and so does stack.h's
 * inline lookup. The words learnt are those the unwinder read: each
 * frame's return address and the frame pointer it found its frame by,
 * target's (on the real stack) and the chain's, down to the last frame's
 * frame pointer, 0, where the stack ended. */
TEST(learns_a_stack_on_its_second_miss)
{
	setup(ASP_UNWIND_LIBUNWIND, 16);
	ASSERT(asp__stack_bounds_wanted());
	struct chain c;
	build(&c, 5);
	bounds(&c);
	struct call x = { .c = &c, .n = 4 };
	run(&x);
	uintptr_t want[] = { ip[1], ip[2], ip[3], ip[4], END };
	assert_frames(1, x.site, want, 5);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(x.id[i], 1);
	ASSERT_EQ(x.walks[0], 1);
	ASSERT_EQ(x.walks[1], 2);
	ASSERT_EQ(x.walks[2], 2);
	ASSERT_EQ(x.walks[3], 2);
	ASSERT_EQ(x.again[1], 0);
	ASSERT_EQ(x.again[2], 1);
	ASSERT_EQ(x.again[3], 1);
	const struct asp_sc_entry *e = t.sc_hot;
	ASSERT(e != NULL);
	ASSERT_EQ(e->bp, x.fp);
	ASSERT_EQ(e->site, x.site);
	ASSERT_EQ(e->self, t.self);
	ASSERT_EQ(e->id, 1);
	uintptr_t checks[][2] = {
		{ x.fp + 8, x.site }, { x.fp, F(&c, 1) },
		{ F(&c, 1) + 8, ip[1] }, { F(&c, 1), F(&c, 2) },
		{ F(&c, 2) + 8, ip[2] }, { F(&c, 2), F(&c, 3) },
		{ F(&c, 3) + 8, ip[3] }, { F(&c, 3), F(&c, 4) },
		{ F(&c, 4) + 8, ip[4] }, { F(&c, 4), F(&c, 5) },
		{ F(&c, 5) + 8, END }, { F(&c, 5), 0 },
	};
	assert_checks(e, checks, ASP_ARRAY_SIZE(checks));
}

/* Once learnt, a word the unwinder read that holds something else is a
 * miss: a return address (another stack), a frame pointer that leads to
 * the same frames elsewhere (the same stack, found by a walk), the last
 * frame's. So is another thread's record at the same frames (self). Put
 * back, the entry is found again. Each change is made in a child of its
 * own, from the same cache (a stack missed twice would be learnt), where
 * a new stack is the second one. */
struct change {
	uintptr_t *word, value, was;
	uintptr_t id;		/* what the walk finds meanwhile */
};

static struct change *g_change;

static void change_word(struct call *x, int i)
{
	(void)x;
	struct change *ch = g_change;
	if (i == 0) {
		ch->was = *ch->word;
		*ch->word = ch->value;
	} else if (i == 1) {
		*ch->word = ch->was;
	}
}

/* What a child saw: capture 0 missed and walked (finding id), capture 1,
 * the word put back, hit the learnt entry. */
static void assert_miss_then_hit(const struct call *x, const struct asp_sc_entry *learnt,
                                 uint32_t walks, uintptr_t id)
{
	ASSERT_EQ(x->again[0], 0);
	ASSERT_EQ(x->walks[0], walks + 1);
	ASSERT_EQ(x->id[0], id);
	ASSERT_EQ(x->again[1], 1);
	ASSERT_EQ(x->walks[1], walks + 1);
	ASSERT_EQ(x->id[1], 1);
	ASSERT(t.sc_hot == learnt);
}

static void assert_child_ok(pid_t pid)
{
	int st = 0;
	waitpid(pid, &st, 0);
	ASSERT(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0);
}

static void other_self(struct call *x, int i)
{
	(void)x;
	t.self += i == 0 ? 64 : -64;
}

TEST(a_changed_word_is_a_miss)
{
	setup(ASP_UNWIND_LIBUNWIND, 16);
	struct chain c;
	build(&c, 5);
	bounds(&c);
	struct call x = { .c = &c, .n = 2 };
	run(&x);
	ASSERT_EQ(x.walks[1], 2);
	const struct asp_sc_entry *learnt = t.sc_hot;
	ASSERT(learnt != NULL);
	struct change changes[] = {
		{ &c.w[1], ip[8], 0, 2 }, { &c.w[3], ip[8], 0, 2 }, { &c.w[7], ip[8], 0, 2 },
		{ &c.w[0], (uintptr_t)&c.other[2], 0, 1 }, { &c.w[4], (uintptr_t)&c.other[6], 0, 1 },
		{ &c.w[8], F(&c, 3), 0, 1 },
	};
	/* (run is called from this frame only: the key is the same.) */
	uint32_t walks = t.unw_walks;
	for (size_t k = 0; k <= ASP_ARRAY_SIZE(changes); k++) {
		int self = k == ASP_ARRAY_SIZE(changes);
		g_change = &changes[self ? 0 : k];
		x.before = self ? other_self : change_word;
		x.n = 2;
		pid_t pid = fork();
		if (pid == 0) {
			run(&x);
			assert_miss_then_hit(&x, learnt, walks, self ? 1 : changes[k].id);
			exit(0);
		}
		assert_child_ok(pid);
	}
}

/* Code unloaded (dlclose: asp__code_gen) makes every entry stale: the
 * stack is walked, and learnt again on its second miss. */
TEST(unloaded_code_makes_the_cache_stale)
{
	setup(ASP_UNWIND_LIBUNWIND, 16);
	struct chain c;
	build(&c, 5);
	bounds(&c);
	struct call x = { .c = &c, .n = 3 };
	run(&x);
	ASSERT_EQ(x.walks[2], 2);
	ASSERT_EQ(x.again[2], 1);
	const struct asp_sc_entry *first = t.sc_hot;
	__atomic_add_fetch(&asp__code_gen, 1, __ATOMIC_RELEASE);
	run(&x);
	ASSERT_EQ(x.again[0], 0);
	ASSERT_EQ(x.walks[0], 3);
	ASSERT_EQ(x.again[1], 0);
	ASSERT_EQ(x.walks[1], 4);
	ASSERT_EQ(x.again[2], 1);
	ASSERT_EQ(x.walks[2], 4);
	ASSERT_EQ(x.id[2], 1);
	ASSERT(t.sc_hot != first);
	ASSERT_EQ(t.sc_hot->gen, asp__code_gen);
}

/* A cut stack is learnt down to the frame below the last one kept: a hit
 * must find a frame there, or the stack would have ended where it was cut.
 * Past that frame's return address, anything may change. */
TEST(a_cut_stack_learns_the_frame_below)
{
	setup(ASP_UNWIND_LIBUNWIND, 3);
	struct chain c;
	build(&c, 7);
	bounds(&c);
	struct call x = { .c = &c, .n = 2 };
	run(&x);
	ASSERT_EQ(x.walks[1], 2);
	uintptr_t want[] = { ip[1], ip[2] };
	assert_frames(1, x.site, want, 2);
	ASSERT_EQ(asp__stack_cut(1), 1);
	uintptr_t checks[][2] = {
		{ x.fp + 8, x.site }, { x.fp, F(&c, 1) },
		{ F(&c, 1) + 8, ip[1] }, { F(&c, 1), F(&c, 2) },
		{ F(&c, 2) + 8, ip[2] }, { F(&c, 2), F(&c, 3) },
		{ F(&c, 3) + 8, ip[3] },
	};
	assert_checks(t.sc_hot, checks, ASP_ARRAY_SIZE(checks));
	c.w[4] = (uintptr_t)&c.other[6];	/* frame 3's frame pointer */
	c.w[11] = ip[8];			/* frame 6's return address */
	x.n = 1;
	run(&x);
	ASSERT_EQ(x.again[0], 1);
	ASSERT_EQ(x.id[0], 1);
	ASSERT_EQ(x.walks[0], 2);
	/* Frame 3 without a return address: the same frames, whole now. */
	c.w[5] = 0;
	run(&x);
	ASSERT_EQ(x.again[0], 0);
	ASSERT_EQ(x.id[0], 2);
	ASSERT_EQ(x.walks[0], 3);
	assert_frames(2, x.site, want, 2);
	ASSERT_EQ(asp__stack_cut(2), 0);
	/* Another frame below the cut: a miss, the same cut stack. */
	c.w[5] = ip[8];
	run(&x);
	ASSERT_EQ(x.again[0], 0);
	ASSERT_EQ(x.id[0], 1);
	ASSERT_EQ(x.walks[0], 4);
	c.w[3] = ip[8];				/* frame 2's: inside */
	run(&x);
	ASSERT_EQ(x.again[0], 0);
	ASSERT_EQ(x.id[0], 3);
	ASSERT_EQ(x.walks[0], 5);
}

/* A cut stack with the shim's trampoline below its last frame is learnt
 * down to the program's frame below the trampoline: without that frame,
 * the same frames are a whole stack. */
TEST(a_cut_stack_learns_past_a_trampoline)
{
	setup(ASP_UNWIND_LIBUNWIND, 3);
	struct chain c;
	build(&c, 4);
	c.w[5] = TRAMP;			/* frame 3's return address */
	bounds(&c);
	struct call x = { .c = &c, .n = 2 };
	run(&x);
	ASSERT_EQ(x.walks[1], 2);
	uintptr_t want[] = { ip[1], ip[2] };
	assert_frames(1, x.site, want, 2);
	ASSERT_EQ(asp__stack_cut(1), 1);
	uintptr_t checks[][2] = {
		{ x.fp + 8, x.site }, { x.fp, F(&c, 1) },
		{ F(&c, 1) + 8, ip[1] }, { F(&c, 1), F(&c, 2) },
		{ F(&c, 2) + 8, ip[2] }, { F(&c, 2), F(&c, 3) },
		{ F(&c, 3) + 8, TRAMP }, { F(&c, 3), F(&c, 4) },
		{ F(&c, 4) + 8, END },
	};
	assert_checks(t.sc_hot, checks, ASP_ARRAY_SIZE(checks));
	/* The stack ends at the trampoline: whole. */
	c.w[7] = 0;
	x.n = 1;
	run(&x);
	ASSERT_EQ(x.again[0], 0);
	ASSERT_EQ(x.walks[0], 3);
	ASSERT_EQ(x.id[0], 2);
	assert_frames(2, x.site, want, 2);
	ASSERT_EQ(asp__stack_cut(2), 0);
}

/* Stacks that are never learnt: every capture walks. */
static void assert_never_learnt(struct call *x, uintptr_t id)
{
	for (int i = 0; i < x->n; i++) {
		ASSERT_EQ(x->id[i], id);
		ASSERT_EQ(x->walks[i], i + 1);
		ASSERT_EQ(x->again[i], 0);
	}
	ASSERT(t.sc_hot == NULL);
}

/* One that ends at a return address 0 read from the stack: the unwinder
 * stops there, but no rule of the frame's says so. */
TEST(not_learnt_an_end_the_words_do_not_show)
{
	setup(ASP_UNWIND_LIBUNWIND, 16);
	struct chain c;
	build(&c, 5);
	c.w[7] = 0;
	bounds(&c);
	struct call x = { .c = &c, .n = 4 };
	run(&x);
	uintptr_t want[] = { ip[1], ip[2], ip[3] };
	assert_frames(1, x.site, want, 3);
	assert_never_learnt(&x, 1);
}

/* Frames past the end of the thread's stack (self): their words could be
 * gone when it is looked up. */
TEST(not_learnt_frames_past_the_stack)
{
	setup(ASP_UNWIND_LIBUNWIND, 16);
	struct chain c;
	build(&c, 5);
	bounds(&c);
	t.self = F(&c, 4) + 8;
	struct call x = { .c = &c, .n = 4 };
	run(&x);
	uintptr_t want[] = { ip[1], ip[2], ip[3], ip[4], END };
	assert_frames(1, x.site, want, 5);
	assert_never_learnt(&x, 1);
}

/* Taken on a stack that is not the thread's own (a coroutine's, a
 * signal stack): below its stack_lo. */
TEST(not_learnt_off_the_thread_stack)
{
	setup(ASP_UNWIND_LIBUNWIND, 16);
	struct chain c;
	build(&c, 5);
	bounds(&c);
	t.stack_lo = (uintptr_t)&c;
	struct call x = { .c = &c, .n = 4 };
	run(&x);
	assert_never_learnt(&x, 1);
}

/* Through a signal frame: its registers all come from memory. target is
 * called from a handler, and the stack goes on through the frame the
 * kernel made: the handler's return address is the kernel's restorer
 * (rt_sigreturn), whose frame gives the interrupted one its registers. */
static struct call g_in_handler;

static void on_signal(int sig)
{
	(void)sig;
	run(&g_in_handler);
	__asm__ volatile("" : : : "memory");	/* not a tail call: a frame */
}

/* The handler's stack, cut at backtrace frames: site, the handler's
 * return address, the restorer's, the interrupted frame's. */
static uintptr_t handler_stack(int backtrace)
{
	memset(&t, 0, sizeof t);
	asp__opt.backtrace = backtrace;
	t.self = (uintptr_t)pthread_self();
	raise(SIGUSR1);
	uintptr_t id = g_in_handler.id[0];
	const uintptr_t *f;
	ASSERT_EQ(asp__stack_frames(id, &f), backtrace);
	ASSERT_EQ(asp__stack_cut(id), 1);
	ASSERT_EQ(f[0], g_in_handler.site);
	ASSERT_EQ(f[1], g_in_handler.ret);
	static const unsigned char rt_sigreturn[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	if (backtrace > 2)
		ASSERT_EQ(memcmp((const void *)f[2], rt_sigreturn, sizeof rt_sigreturn), 0);
	return id;
}

TEST(not_learnt_through_a_signal_frame)
{
	setup(ASP_UNWIND_LIBUNWIND, 16);
	t.self = (uintptr_t)pthread_self();
	g_in_handler.n = 4;
	signal(SIGUSR1, on_signal);
	raise(SIGUSR1);
	ASSERT(g_in_handler.id[0] != 0);
	assert_never_learnt(&g_in_handler, g_in_handler.id[0]);
	ASSERT_EQ(asp__stack_cut(g_in_handler.id[0]), 0);
	/* Cut at the interrupted frame: a cut stack is learnt with the frame
	 * below, which is unwound from the interrupted frame's registers,
	 * read from the signal frame: never learnt either. */
	assert_never_learnt(&g_in_handler, handler_stack(4));
	/* Cut at the restorer: the frame below is the interrupted one, its
	 * return address a word of the signal frame, checked: learnt. */
	uintptr_t id = handler_stack(3);
	ASSERT_EQ(g_in_handler.walks[0], 1);
	ASSERT_EQ(g_in_handler.walks[1], 2);
	ASSERT_EQ(g_in_handler.walks[3], 2);
	ASSERT_EQ(g_in_handler.again[3], id);
	ASSERT_EQ(g_in_handler.id[3], id);
}

UNIT_MAIN(UNIT(fp_walk_over_hand_built_frames), UNIT(walks_end_where_the_frames_do),
          UNIT(the_thread_last_stack_again), UNIT(inside_a_handler_only_looks), UNIT(cut_stacks),
          UNIT(an_ended_stack_is_not_a_longer_one), UNIT(a_trampoline_is_kept_not_counted),
          UNIT(learns_a_stack_on_its_second_miss),
          UNIT(a_changed_word_is_a_miss), UNIT(unloaded_code_makes_the_cache_stale),
          UNIT(a_cut_stack_learns_the_frame_below), UNIT(a_cut_stack_learns_past_a_trampoline),
          UNIT(not_learnt_an_end_the_words_do_not_show), UNIT(not_learnt_frames_past_the_stack),
          UNIT(not_learnt_off_the_thread_stack), UNIT(not_learnt_through_a_signal_frame))
