/* top.h - `allocspy top PID` (top.c): the live view of a traced program. */
#ifndef ASP_TOP_H
#define ASP_TOP_H

/* argv[0] is "top"; returns the exit status. */
int asp_top_main(int argc, char **argv);

#endif
