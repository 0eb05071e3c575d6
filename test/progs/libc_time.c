/* libc_time - time zones and formatting at fixed instants: setenv TZ to
 * a zone file (Europe/Paris), a POSIX rule that names no file, and UTC;
 * tzset, localtime_r, gmtime_r, mktime, strftime, ctime_r. Exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(void)
{
	static const char *zones[] = { "Europe/Paris", "XST3XDT,M3.2.0,M11.1.0", "UTC0", ":UTC" };
	static const time_t when[] = { 0, 1000000000, 1700000000, 1720000000 };
	char buf[128], cbuf[32];

	for (size_t z = 0; z < sizeof zones / sizeof zones[0]; z++) {
		setenv("TZ", zones[z], 1);
		tzset();
		for (size_t i = 0; i < sizeof when / sizeof when[0]; i++) {
			struct tm tm;
			localtime_r(&when[i], &tm);
			strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %Z %z %A %j", &tm);
			time_t back = mktime(&tm);
			printf("%-24s %s back=%d\n", zones[z], buf, back == when[i]);
		}
	}
	struct tm g;
	gmtime_r(&when[2], &g);
	strftime(buf, sizeof buf, "%c", &g);
	ctime_r(&when[3], cbuf);
	printf("gmtime: %s ctime: %s", buf, cbuf);
	unsetenv("TZ");
	return 0;
}
