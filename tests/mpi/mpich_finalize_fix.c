/*
 * mpich-finalize-fix.so: preloaded into MPICH 4.0.x ranks (Debian bookworm: ch4:ucx over UCX 1.13)
 * so that MPI_Finalize cannot deadlock.
 *
 * MPICH 4.0's UCX finalize hook closes every endpoint with ucp_disconnect_nb(), progresses until
 * its own closes complete, then waits in a PMI barrier without progressing UCX. Over the UCX tcp
 * transport a close flushes, and the flush sends a zero-length PUT whose ACK the peer's UCX has to
 * produce. A rank that finishes its closes early sits in the PMI barrier, never ACKs the flush of
 * a rank that starts its closes later, and the job hangs for good (upstream: pmodels/mpich PR
 * 6596 removed that barrier). On a CPU-starved test machine that happened in about 4 of 10 runs.
 *
 * Here ucp_disconnect_nb() does nothing: the endpoints stay open until ucp_worker_destroy(),
 * which MPICH 4.0 calls right after the PMI barrier. That is safe because of the barrier: every
 * rank enters it only after its MPI receives completed, so no message is still needed from a
 * connection when it is torn down. With another MPICH (no such barrier guaranteed) the real
 * ucp_disconnect_nb() runs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <ucp/api/ucp.h>

typedef ucs_status_ptr_t (*disconnect_fn)(ucp_ep_h);
typedef int (*library_version_fn)(char *, int *);

/* 1: MPICH 4.0.x (the hook ends in a PMI barrier), 0: anything else. Asked once, at finalize. */
static int running_mpich_4_0(void)
{
	static int answer = -1;
	if (answer >= 0)
		return answer;
	answer = 0;
	library_version_fn get_version = (library_version_fn)dlsym(RTLD_DEFAULT, "MPI_Get_library_version");
	if (!get_version)
		return answer;
	/* MPI_MAX_LIBRARY_VERSION_STRING is 8192 in MPICH; the first line is all we read. */
	static char version[8192];
	int length = 0;
	if (get_version(version, &length) != 0)
		return answer;
	/* "MPICH Version:\t4.0.2\n..." */
	const char *number = strstr(version, "MPICH Version:");
	if (number) {
		number += strlen("MPICH Version:");
		number += strspn(number, " \t");
		answer = strncmp(number, "4.0.", 4) == 0 || strcmp(number, "4.0") == 0;
	}
	return answer;
}

ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep)
{
	if (running_mpich_4_0())
		return NULL; /* done: ucp_worker_destroy() releases the endpoint after the PMI barrier */
	disconnect_fn real = (disconnect_fn)dlsym(RTLD_NEXT, "ucp_disconnect_nb");
	if (!real) {
		fprintf(stderr, "mpich-finalize-fix: no ucp_disconnect_nb after this library: %s\n", dlerror());
		return UCS_STATUS_PTR(UCS_ERR_NO_ELEM);
	}
	return real(ep);
}
