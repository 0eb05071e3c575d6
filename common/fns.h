/* fns.h - the functions allocspy counts, once for the shim and the report
 * tool: their order (the dump lists them so), the name each has in the
 * dump, its role (hands out blocks, takes them back, or only answers), the
 * family a block belongs to (valgrind's "Mismatched free() / delete /
 * delete []" is a block freed by a function of another family), the symbol
 * the shim interposes, and what valgrind shows above that symbol.
 *
 * X(ID, name, role, family, symbol, above, above): symbol is the C or
 * mangled C++ name the program calls; the aboves are the functions valgrind
 * replaces and shows above it when it does not replace the function itself
 * (strdup calls its malloc: "malloc", then "strdup"), "" when none. A
 * block's allocation frames, as valgrind shows them, are the aboves, then
 * the symbol; the functions with an above are the strdup family.
 *
 * The shim numbers them (thread.h: enum asp_fn), the report tool reads
 * them by name (analyzer/load.c). */
#ifndef ASP_FNS_H
#define ASP_FNS_H

enum asp_fn_role {
	ASP_ROLE_ALLOC,		/* hands out a block */
	ASP_ROLE_FREE,		/* takes one back */
	ASP_ROLE_QUERY,		/* neither */
};

enum asp_family {
	ASP_FAMILY_MALLOC,	/* malloc and free */
	ASP_FAMILY_NEW,		/* new and delete */
	ASP_FAMILY_NEW_ARR,	/* new[] and delete[] */
	ASP_FAMILY_NONE,	/* neither hands out nor frees a block */
};

/* The allocation functions come first, then free. */
#define ASP_FNS(X) \
	X(MALLOC, "malloc", ALLOC, MALLOC, malloc, "", "") \
	X(CALLOC, "calloc", ALLOC, MALLOC, calloc, "", "") \
	X(REALLOC, "realloc", ALLOC, MALLOC, realloc, "", "") \
	X(REALLOCARRAY, "reallocarray", ALLOC, MALLOC, reallocarray, "", "") \
	X(POSIX_MEMALIGN, "posix_memalign", ALLOC, MALLOC, posix_memalign, "", "") \
	X(ALIGNED_ALLOC, "aligned_alloc", ALLOC, MALLOC, aligned_alloc, "", "") \
	X(MEMALIGN, "memalign", ALLOC, MALLOC, memalign, "", "") \
	X(VALLOC, "valloc", ALLOC, MALLOC, valloc, "", "") \
	X(PVALLOC, "pvalloc", ALLOC, MALLOC, pvalloc, "", "") \
	X(STRDUP, "strdup", ALLOC, MALLOC, strdup, "malloc", "") \
	X(STRNDUP, "strndup", ALLOC, MALLOC, strndup, "malloc", "") \
	X(WCSDUP, "wcsdup", ALLOC, MALLOC, wcsdup, "malloc", "") \
	X(NEW, "new", ALLOC, NEW, _Znwm, "", "") \
	X(NEW_ARR, "new[]", ALLOC, NEW_ARR, _Znam, "", "") \
	X(NEW_NOTHROW, "new_nothrow", ALLOC, NEW, _ZnwmRKSt9nothrow_t, "", "") \
	X(NEW_ARR_NOTHROW, "new[]_nothrow", ALLOC, NEW_ARR, _ZnamRKSt9nothrow_t, "", "") \
	X(NEW_ALIGNED, "new_aligned", ALLOC, NEW, _ZnwmSt11align_val_t, "", "") \
	X(NEW_ARR_ALIGNED, "new[]_aligned", ALLOC, NEW_ARR, _ZnamSt11align_val_t, "", "") \
	X(G_STRDUP, "g_strdup", ALLOC, MALLOC, g_strdup, "malloc", "g_malloc") \
	X(G_STRNDUP, "g_strndup", ALLOC, MALLOC, g_strndup, "malloc", "g_malloc") \
	X(G_MEMDUP2, "g_memdup2", ALLOC, MALLOC, g_memdup2, "malloc", "g_malloc") \
	X(FREE, "free", FREE, MALLOC, free, "", "") \
	X(DELETE, "delete", FREE, NEW, _ZdlPv, "", "") \
	X(DELETE_ARR, "delete[]", FREE, NEW_ARR, _ZdaPv, "", "") \
	X(DELETE_SIZED, "delete_sized", FREE, NEW, _ZdlPvm, "", "") \
	X(DELETE_ARR_SIZED, "delete[]_sized", FREE, NEW_ARR, _ZdaPvm, "", "") \
	X(DELETE_ALIGNED, "delete_aligned", FREE, NEW, _ZdlPvSt11align_val_t, "", "") \
	X(DELETE_ARR_ALIGNED, "delete[]_aligned", FREE, NEW_ARR, _ZdaPvSt11align_val_t, "", "") \
	X(USABLE_SIZE, "malloc_usable_size", QUERY, NONE, malloc_usable_size, "", "")

#endif
