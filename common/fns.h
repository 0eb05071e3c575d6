/* fns.h - the functions allocspy counts, once for the shim and the report
 * tool: their order (the dump lists them so), the name each has in the
 * dump, the frames valgrind shows for a block one of them handed out (its
 * replacement first, then what called it, as mangled symbols), and the
 * family a block belongs to: valgrind's "Mismatched free() / delete /
 * delete []" is a block freed by a function of another family.
 *
 * X(ID, name, family, frame, frame, frame): up to three frames, "" after
 * the last. */
#ifndef ASP_FNS_H
#define ASP_FNS_H

enum asp_family {
	ASP_FAMILY_MALLOC,	/* malloc and free */
	ASP_FAMILY_NEW,		/* new and delete */
	ASP_FAMILY_NEW_ARR,	/* new[] and delete[] */
	ASP_FAMILY_NONE,	/* neither hands out nor frees a block */
};

#define ASP_FNS(X) \
	X(MALLOC, "malloc", MALLOC, "malloc", "", "") \
	X(CALLOC, "calloc", MALLOC, "calloc", "", "") \
	X(REALLOC, "realloc", MALLOC, "realloc", "", "") \
	X(REALLOCARRAY, "reallocarray", MALLOC, "reallocarray", "", "") \
	X(POSIX_MEMALIGN, "posix_memalign", MALLOC, "posix_memalign", "", "") \
	X(ALIGNED_ALLOC, "aligned_alloc", MALLOC, "aligned_alloc", "", "") \
	X(MEMALIGN, "memalign", MALLOC, "memalign", "", "") \
	X(VALLOC, "valloc", MALLOC, "valloc", "", "") \
	X(PVALLOC, "pvalloc", MALLOC, "pvalloc", "", "") \
	X(STRDUP, "strdup", MALLOC, "malloc", "strdup", "") \
	X(STRNDUP, "strndup", MALLOC, "malloc", "strndup", "") \
	X(WCSDUP, "wcsdup", MALLOC, "malloc", "wcsdup", "") \
	X(NEW, "new", NEW, "_Znwm", "", "") \
	X(NEW_ARR, "new[]", NEW_ARR, "_Znam", "", "") \
	X(NEW_NOTHROW, "new_nothrow", NEW, "_ZnwmRKSt9nothrow_t", "", "") \
	X(NEW_ARR_NOTHROW, "new[]_nothrow", NEW_ARR, "_ZnamRKSt9nothrow_t", "", "") \
	X(NEW_ALIGNED, "new_aligned", NEW, "_ZnwmSt11align_val_t", "", "") \
	X(NEW_ARR_ALIGNED, "new[]_aligned", NEW_ARR, "_ZnamSt11align_val_t", "", "") \
	X(G_STRDUP, "g_strdup", MALLOC, "malloc", "g_malloc", "g_strdup") \
	X(G_STRNDUP, "g_strndup", MALLOC, "malloc", "g_malloc", "g_strndup") \
	X(G_MEMDUP2, "g_memdup2", MALLOC, "malloc", "g_malloc", "g_memdup2") \
	X(FREE, "free", MALLOC, "free", "", "") \
	X(DELETE, "delete", NEW, "_ZdlPv", "", "") \
	X(DELETE_ARR, "delete[]", NEW_ARR, "_ZdaPv", "", "") \
	X(DELETE_SIZED, "delete_sized", NEW, "_ZdlPvm", "", "") \
	X(DELETE_ARR_SIZED, "delete[]_sized", NEW_ARR, "_ZdaPvm", "", "") \
	X(DELETE_ALIGNED, "delete_aligned", NEW, "_ZdlPvSt11align_val_t", "", "") \
	X(DELETE_ARR_ALIGNED, "delete[]_aligned", NEW_ARR, "_ZdaPvSt11align_val_t", "", "") \
	X(USABLE_SIZE, "malloc_usable_size", NONE, "malloc_usable_size", "", "")

/* The interposed functions, in the order the dump lists them; those before
 * ASP_FN_ALLOC_END hand out blocks. */
enum asp_fn {
#define ASP_FN_ENUM(id, name, family, f0, f1, f2) ASP_FN_##id,
	ASP_FNS(ASP_FN_ENUM)
#undef ASP_FN_ENUM
	ASP_FN_COUNT,
	ASP_FN_ALLOC_END = ASP_FN_FREE,
};

/* The blocks of each family as a mask of bits fn + 1 (the functions that
 * hand them out), constants: the table of live blocks keeps fn + 1. */
#define ASP_FN_MALLOC_BIT(id, name, family, f0, f1, f2) \
	| (ASP_FN_##id < ASP_FN_ALLOC_END && ASP_FAMILY_##family == ASP_FAMILY_MALLOC ? 1u << (ASP_FN_##id + 1) : 0u)
#define ASP_FN_NEW_BIT(id, name, family, f0, f1, f2) \
	| (ASP_FN_##id < ASP_FN_ALLOC_END && ASP_FAMILY_##family == ASP_FAMILY_NEW ? 1u << (ASP_FN_##id + 1) : 0u)
#define ASP_FN_NEW_ARR_BIT(id, name, family, f0, f1, f2) \
	| (ASP_FN_##id < ASP_FN_ALLOC_END && ASP_FAMILY_##family == ASP_FAMILY_NEW_ARR ? 1u << (ASP_FN_##id + 1) : 0u)
enum {
	ASP_FAMILY_MALLOC_WORDS = 0u ASP_FNS(ASP_FN_MALLOC_BIT),
	ASP_FAMILY_NEW_WORDS = 0u ASP_FNS(ASP_FN_NEW_BIT),
	ASP_FAMILY_NEW_ARR_WORDS = 0u ASP_FNS(ASP_FN_NEW_ARR_BIT),
};
#undef ASP_FN_MALLOC_BIT
#undef ASP_FN_NEW_BIT
#undef ASP_FN_NEW_ARR_BIT

/* fn's family: a constant where fn is. */
static inline enum asp_family asp_fn_family(unsigned fn)
{
	switch (fn) {
#define ASP_FN_CASE(id, name, family, f0, f1, f2) \
	case ASP_FN_##id: \
		return ASP_FAMILY_##family;
		ASP_FNS(ASP_FN_CASE)
#undef ASP_FN_CASE
	default:
		return ASP_FAMILY_NONE;
	}
}

#endif
