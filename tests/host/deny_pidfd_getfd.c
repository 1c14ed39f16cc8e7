// Fault injection for tests/host/stock_backend.sh, loaded into gappaced with LD_PRELOAD:
// pidfd_getfd(2) fails with EPERM, as it does for every process under Yama's ptrace_scope 3 or
// an LSM that denies ptrace access. This host's kernel has TCP_RTO_MIN_US but no Yama, and the
// guests' kernels have Yama but not the option, so the stock backend's fallback from the
// socket's floor to the peer's route can be reached on real TCP only this way.
//
// The daemon makes the call through glibc's syscall(); every other number passes through.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

long syscall(long number, ...)
{
	static long (*real)(long, ...);
	va_list ap;
	long a[6];

	// syscall() takes up to six register-sized arguments; reading all six is how glibc's
	// own wrapper works on every Linux ABI.
	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (number == SYS_pidfd_getfd) {
		errno = EPERM;
		return -1;
	}
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
