/* libc_netdb - getaddrinfo on numeric hosts only (no network, no resolver):
 * "127.0.0.1" and "::1" with numeric services, a name refused under
 * AI_NUMERICHOST, getnameinfo back to text, inet_ntop/inet_pton. The first
 * result list is never freed. Exits 0. */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static struct addrinfo *kept;

static int lookup(const char *host, const char *serv, int family, struct addrinfo **res)
{
	struct addrinfo hints;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	return getaddrinfo(host, serv, &hints, res);
}

int main(void)
{
	struct addrinfo *res = NULL;
	char host[NI_MAXHOST], serv[NI_MAXSERV];

	for (int i = 0; i < 20; i++) {
		char port[16];
		snprintf(port, sizeof port, "%d", 8000 + i);
		if (lookup("127.0.0.1", port, AF_INET, &res) != 0)
			return 99;
		freeaddrinfo(res);
	}
	int rc = lookup("127.0.0.1", "80", AF_INET, &res);
	getnameinfo(res->ai_addr, res->ai_addrlen, host, sizeof host, serv, sizeof serv,
	    NI_NUMERICHOST | NI_NUMERICSERV);
	printf("v4 rc=%d %s:%s\n", rc, host, serv);
	freeaddrinfo(res);

	rc = lookup("::1", "443", AF_INET6, &res);
	getnameinfo(res->ai_addr, res->ai_addrlen, host, sizeof host, serv, sizeof serv,
	    NI_NUMERICHOST | NI_NUMERICSERV);
	printf("v6 rc=%d [%s]:%s\n", rc, host, serv);
	freeaddrinfo(res);

	rc = lookup("localhost.invalid", "80", AF_INET, &res);
	printf("name under AI_NUMERICHOST: %s\n", gai_strerror(rc));

	unsigned char buf[16];
	inet_pton(AF_INET6, "2001:db8::42", buf);
	inet_ntop(AF_INET6, buf, host, sizeof host);
	printf("pton/ntop: %s\n", host);

	lookup("10.1.2.3", "22", AF_INET, &kept);
	return 0;
}
