/* sort.h - qsort's interface without qsort's malloc: the exit report may
 * run in a signal handler that interrupted the program's allocator. */
#ifndef ASP_SORT_H
#define ASP_SORT_H

#include <stddef.h>

/* Sorts n elements of size bytes (at most 256) in place: a heapsort. */
void asp__sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

#endif
