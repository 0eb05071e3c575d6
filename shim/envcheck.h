/* envcheck.h - a warning for each ALLOCSPY_* variable in the environment
 * that allocspy does not know (a misspelling, most often), naming the
 * closest valid name. No malloc and no stdio: it may run at start-up. */
#ifndef ASP_ENVCHECK_H
#define ASP_ENVCHECK_H

/* Walks environ once; one asp__warn line per unknown ALLOCSPY_ name. */
void asp__options_check_names(void);

#endif
