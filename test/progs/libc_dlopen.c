/* libc_dlopen - the dynamic loader allocating on the program's heap:
 * dlopen of libm and libz (not linked in), dlsym, a failing dlopen whose
 * dlerror text is allocated, dlclose, and iconv_open/iconv between UTF-8
 * and ISO-8859-1 and UTF-16 (gconv reads its module configuration).
 * Exits 0. */
#include <dlfcn.h>
#include <iconv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	void *m = dlopen("libm.so.6", RTLD_NOW);
	double (*cosp)(double) = m ? (double (*)(double))dlsym(m, "cos") : NULL;
	printf("libm: %s cos(0)=%.1f\n", m ? "loaded" : "missing", cosp ? cosp(0.0) : -1.0);

	void *bad = dlopen("libdoes-not-exist.so.7", RTLD_NOW);
	const char *err = dlerror();
	printf("missing lib: %s %s\n", bad ? "loaded?" : "NULL",
	    err && strstr(err, "libdoes-not-exist.so.7") ? "dlerror names it" : "no dlerror");
	void *sym = dlsym(m, "no_such_symbol_here");
	err = dlerror();
	printf("missing symbol: %s %s\n", sym ? "found?" : "NULL", err ? "dlerror set" : "no dlerror");
	if (m)
		dlclose(m);

	void *z = dlopen("libz.so.1", RTLD_LAZY);
	printf("libz: %s\n", z ? "loaded" : "missing");
	if (z)
		dlclose(z);

	const char *to[] = { "ISO-8859-1", "UTF-16LE", "ASCII//TRANSLIT" };
	for (int i = 0; i < 3; i++) {
		iconv_t cd = iconv_open(to[i], "UTF-8");
		char in[] = "caf\xc3\xa9 na\xc3\xafve", out[64];
		char *ip = in, *op = out;
		size_t il = strlen(in), ol = sizeof out;
		size_t r = iconv(cd, &ip, &il, &op, &ol);
		printf("iconv to %s: %zu bytes, rc=%d\n", to[i], sizeof out - ol, (int)r);
		iconv_close(cd);
	}
	return 0;
}
