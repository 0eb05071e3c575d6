/* suppress.c - suppressions (see suppress.h). */
#include "options.h"
#include "suppress.h"

void asp__suppress_apply(struct asp_leak_result *r)
{
	(void)r;
	if (asp__opt.suppressions[0] == '\0')
		return;
}
