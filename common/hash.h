/* hash.h - the multiplicative hash of the shim's tables and the
 * symbolizer's cache: x times 2^64 over the golden ratio (Fibonacci
 * hashing). Its high bits depend on all of x's: a table of 2^k slots takes
 * the top k. */
#ifndef ASP_HASH_H
#define ASP_HASH_H

#include <stdint.h>

static inline uint64_t asp_hash(uint64_t x)
{
	return x * 0x9E3779B97F4A7C15ull;
}

#endif
