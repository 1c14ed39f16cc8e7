/* tsqsend — tiny TCP sender/sink for the TSQ check.
 *   tsqsend sink PORT SECS
 *   tsqsend send DST PORT SECS MAXRATE_BYTES_PER_S(0=no cap) [CC]
 * send: connect, set SO_MAX_PACING_RATE (if >0) and TCP_CONGESTION, write for SECS seconds. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

int main(int argc, char **argv)
{
	static char buf[65536];
	if (argc >= 4 && !strcmp(argv[1], "sink")) {
		int port = atoi(argv[2]), secs = atoi(argv[3]), one = 1;
		alarm(secs);
		int l = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
		if (bind(l, (void *)&a, sizeof a) || listen(l, 4)) { perror("bind/listen"); return 1; }
		int c = accept(l, NULL, NULL);
		if (c < 0) { perror("accept"); return 1; }
		long long tot = 0; ssize_t n;
		while ((n = read(c, buf, sizeof buf)) > 0) tot += n;
		printf("{\"received\":%lld}\n", tot);
		return 0;
	}
	if (argc >= 6 && !strcmp(argv[1], "send")) {
		int port = atoi(argv[3]), secs = atoi(argv[4]);
		unsigned long rate = strtoul(argv[5], NULL, 0);
		const char *cc = argc >= 7 ? argv[6] : "cubic";
		signal(SIGPIPE, SIG_IGN);
		alarm(secs + 10);
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (setsockopt(s, IPPROTO_TCP, TCP_CONGESTION, cc, strlen(cc))) perror("TCP_CONGESTION");
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
		inet_pton(AF_INET, argv[2], &a.sin_addr);
		if (connect(s, (void *)&a, sizeof a)) { perror("connect"); return 1; }
		if (rate) {
			unsigned int r32 = rate; /* 32-bit form works on every kernel */
			if (setsockopt(s, SOL_SOCKET, SO_MAX_PACING_RATE, &r32, sizeof r32)) { perror("SO_MAX_PACING_RATE"); return 1; }
		}
		double t0 = now();
		long long tot = 0;
		while (now() - t0 < secs) {
			ssize_t n = write(s, buf, sizeof buf);
			if (n < 0) { if (errno == EINTR) continue; perror("write"); break; }
			tot += n;
		}
		/* abort: discard what is still queued so it cannot disturb the next case */
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };
		setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
		printf("{\"sent\":%lld,\"seconds\":%.3f,\"max_pacing_rate\":%lu}\n", tot, now() - t0, rate);
		close(s);
		return 0;
	}
	fprintf(stderr, "usage: tsqsend sink PORT SECS | send DST PORT SECS RATE_Bps [CC]\n");
	return 2;
}
