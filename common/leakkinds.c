/* leakkinds.c - the words, keys and phrases of the leak kinds
 * (leakkinds.h), compiled into the shim and the report tool. */
#include "leakkinds.h"

#include <string.h>

const char *const asp_leak_kind_name[ASP_LEAK_NKINDS] = {
#define ASP_LEAK_WORD(id, word, key, phrase) [ASP_LEAK_##id] = word,
	ASP_LEAK_KIND_TABLE(ASP_LEAK_WORD)
#undef ASP_LEAK_WORD
};

const char *const asp_leak_key[ASP_LEAK_NKINDS] = {
#define ASP_LEAK_KEY(id, word, key, phrase) [ASP_LEAK_##id] = key,
	ASP_LEAK_KIND_TABLE(ASP_LEAK_KEY)
#undef ASP_LEAK_KEY
};

const char *const asp_leak_phrase[ASP_LEAK_NKINDS] = {
#define ASP_LEAK_PHRASE(id, word, key, phrase) [ASP_LEAK_##id] = phrase,
	ASP_LEAK_KIND_TABLE(ASP_LEAK_PHRASE)
#undef ASP_LEAK_PHRASE
};

int asp_leak_kind_of(const char *word, size_t len)
{
	for (int k = 0; k < ASP_LEAK_RECORD_KINDS; k++)
		if (strlen(asp_leak_kind_name[k]) == len && memcmp(word, asp_leak_kind_name[k], len) == 0)
			return k;
	return -1;
}

int asp_leak_kinds_of(const char *list, int *bad)
{
	*bad = 0;
	if (strcmp(list, "all") == 0)
		return (1 << ASP_LEAK_RECORD_KINDS) - 1;
	if (strcmp(list, "none") == 0)
		return 0;
	int bits = 0;
	while (*list) {
		size_t len = strcspn(list, ",");
		int k = asp_leak_kind_of(list, len);
		if (k >= 0)
			bits |= 1 << k;
		else
			*bad = 1;
		list += len;
		if (*list == ',')
			list++;
	}
	return bits;
}
