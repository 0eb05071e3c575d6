/* leakkinds.h - valgrind's leak kinds, once for the shim and the report
 * tool: their order (valgrind's), the word of each (a loss record's "kind"
 * in the dump, a suppression's match-leak-kinds,
 * ALLOCSPY_ERRORS_FOR_LEAK_KINDS and --show-leak-kinds), its key in the
 * dump's "leaks", and valgrind's phrase for it ("definitely lost").
 *
 * X(ID, word, key, phrase) */
#ifndef ASP_LEAKKINDS_H
#define ASP_LEAKKINDS_H

#include <stddef.h>

#define ASP_LEAK_KIND_TABLE(X) \
	X(DEFINITE, "definite", "definitely_lost", "definitely lost") \
	X(INDIRECT, "indirect", "indirectly_lost", "indirectly lost") \
	X(POSSIBLE, "possible", "possibly_lost", "possibly lost") \
	X(REACHABLE, "reachable", "still_reachable", "still reachable") \
	X(SUPPRESSED, "suppressed", "suppressed", "suppressed")

/* A block and a loss record are of one of the kinds before
 * ASP_LEAK_SUPPRESSED; the suppressed ones are only a sum of the LEAK
 * SUMMARY. */
enum asp_leak_kind {
#define ASP_LEAK_ENUM(id, word, key, phrase) ASP_LEAK_##id,
	ASP_LEAK_KIND_TABLE(ASP_LEAK_ENUM)
#undef ASP_LEAK_ENUM
	ASP_LEAK_NKINDS,
	ASP_LEAK_RECORD_KINDS = ASP_LEAK_SUPPRESSED,
};

/* Indexed by enum asp_leak_kind. */
extern const char *const asp_leak_kind_name[ASP_LEAK_NKINDS];	/* "definite" */
extern const char *const asp_leak_key[ASP_LEAK_NKINDS];		/* "definitely_lost" */
extern const char *const asp_leak_phrase[ASP_LEAK_NKINDS];	/* "definitely lost" */

/* The record kind whose word is word[0..len), or -1 (suppressed is no
 * record's kind). */
int asp_leak_kind_of(const char *word, size_t len);

/* The kinds list names, as bits 1 << kind: "all", "none", or words
 * separated by commas; *bad is set when a word is no kind (the others
 * count). */
int asp_leak_kinds_of(const char *list, int *bad);

#endif
