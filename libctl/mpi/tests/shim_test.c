/*
 * Test program for libgapctl-mpi.so: runs every wrapped collective form and checks MPI's
 * results (the shim must never change them). Before each call it prints what the shim
 * should log ("expect ...", computed here from the arguments it passes, not by the shim's
 * code), and marks around completion calls; run_shim_test.py matches these against the
 * shim's GAPPACE_SHIM_LOG lines. Without the shim it is a plain MPI correctness test.
 *
 *   shim_test [check]        the scenario (exit 1 on a wrong result)
 *   shim_test bench N        N MPI_Barrier calls, prints ns per call on rank 0
 *   shim_test threads        MPI_THREAD_MULTIPLE: two threads, collectives on two comms
 */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if (defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define PERSISTENT(name) MPIX_##name##_init
#define HAVE_PERSISTENT 1
#elif MPI_VERSION >= 4
#define PERSISTENT(name) MPI_##name##_init
#define HAVE_PERSISTENT 1
#endif

enum { F_VECTOR = 1, F_NONBLOCKING = 2, F_PERSISTENT = 4 };

static int world_rank, world_size, failures;

/* One write per line so the shim's lines and ours keep their order on stderr. */
static void say(const char *fmt, ...)
{
	char buf[512];
	int len = snprintf(buf, sizeof(buf), "gp-test: rank=%d ", world_rank);
	va_list ap;
	va_start(ap, fmt);
	len += vsnprintf(buf + len, sizeof(buf) - len - 1, fmt, ap);
	va_end(ap);
	if (len > (int)sizeof(buf) - 2)
		len = sizeof(buf) - 2;
	buf[len++] = '\n';
	if (write(2, buf, len) < 0)
		exit(3);
}

static void expect(const char *tag, const char *kind, unsigned flags, unsigned long long bytes,
		   int comm_size)
{
	say("expect tag=%s kind=%s flags=%u bytes=%llu comm_size=%d", tag, kind, flags, bytes,
	    comm_size);
}

static void expect_none(const char *why) { say("expect none %s", why); }
static void before_complete(const char *tag) { say("mark before-complete %s", tag); }
static void after_complete(const char *tag) { say("mark after-complete %s", tag); }

static void check(int ok, const char *what)
{
	if (!ok) {
		say("FAIL %s", what);
		failures++;
	}
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Bounded polling for the Test* variants. */
#define POLL_UNTIL(cond, what)                                                   \
	do {                                                                     \
		const double deadline_ = now_s() + 30.0;                         \
		while (!(cond) && now_s() < deadline_)                           \
			;                                                        \
		check((cond), what);                                             \
	} while (0)

static int max_other_int(const int *v, int n, int self)
{
	int m = 0;
	for (int i = 0; i < n; i++)
		if (i != self && v[i] > m)
			m = v[i];
	return m;
}

/* Counts of the v-variants: what rank a sends to rank b. */
static int pair_count(int a, int b) { return 4 * (a + b + 1); }

static void blocking_collectives(MPI_Comm comm)
{
	int rank, size;
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);
	const int n = 64;
	int *ints = calloc((size_t)size * n, sizeof(int));
	int *ints2 = calloc((size_t)size * n, sizeof(int));

	for (int i = 0; i < size; i++)
		for (int j = 0; j < n; j++)
			ints[i * n + j] = rank * 100000 + i * 100 + j;
	expect("a2a", "alltoall", 0, n * sizeof(int), size);
	MPI_Alltoall(ints, n, MPI_INT, ints2, n, MPI_INT, comm);
	int ok = 1;
	for (int i = 0; i < size; i++)
		for (int j = 0; j < n; j++)
			ok &= ints2[i * n + j] == i * 100000 + rank * 100 + j;
	check(ok, "alltoall result");

	/* In place: the send side is not significant, MPI_DATATYPE_NULL must not bother us. */
	for (int i = 0; i < size; i++)
		for (int j = 0; j < n; j++)
			ints2[i * n + j] = rank * 1000 + i;
	expect("a2a-inplace", "alltoall", 0, n * sizeof(int), size);
	MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ints2, n, MPI_INT, comm);
	ok = 1;
	for (int i = 0; i < size; i++)
		ok &= ints2[i * n] == i * 1000 + rank;
	check(ok, "alltoall in place result");

	double dbl[32], *dbls = calloc((size_t)size * 32, sizeof(double));
	for (int j = 0; j < 32; j++)
		dbl[j] = rank + j * 0.5;
	expect("ag", "allgather", 0, 32 * sizeof(double), size);
	MPI_Allgather(dbl, 32, MPI_DOUBLE, dbls, 32, MPI_DOUBLE, comm);
	ok = 1;
	for (int i = 0; i < size; i++)
		ok &= dbls[i * 32 + 3] == i + 1.5;
	check(ok, "allgather result");

	for (int j = 0; j < 32; j++)
		dbls[rank * 32 + j] = -rank;
	expect("ag-inplace", "allgather", 0, 32 * sizeof(double), size);
	MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, dbls, 32, MPI_DOUBLE, comm);
	ok = 1;
	for (int i = 0; i < size; i++)
		ok &= dbls[i * 32 + 31] == -i;
	check(ok, "allgather in place result");

	int bc[100];
	for (int j = 0; j < 100; j++)
		bc[j] = rank == 0 ? 7 * j : -1;
	expect("bcast", "bcast", 0, sizeof(bc), size);
	MPI_Bcast(bc, 100, MPI_INT, 0, comm);
	check(bc[99] == 7 * 99, "bcast result");

	for (int i = 0; i < size * 16; i++)
		ints[i] = i;
	expect("rsb", "reduce_scatter", 0, 16 * sizeof(int), size);
	MPI_Reduce_scatter_block(ints, ints2, 16, MPI_INT, MPI_SUM, comm);
	check(ints2[5] == size * (rank * 16 + 5), "reduce_scatter_block result");

	int *counts = calloc((size_t)size, sizeof(int)), *counts2 = calloc((size_t)size, sizeof(int));
	int *displs = calloc((size_t)size, sizeof(int)), *displs2 = calloc((size_t)size, sizeof(int));
	int total = 0;
	for (int i = 0; i < size; i++)
		total += counts[i] = 8 * (i + 1);
	int *big = calloc(total * 4 + 64, sizeof(int)), *big2 = calloc(total * 4 + 64, sizeof(int));
	for (int i = 0; i < total; i++)
		big[i] = 1;
	expect("rs", "reduce_scatter", F_VECTOR,
	       (unsigned long long)max_other_int(counts, size, rank) * sizeof(int), size);
	MPI_Reduce_scatter(big, big2, counts, MPI_INT, MPI_SUM, comm);
	check(big2[0] == size && big2[counts[rank] - 1] == size, "reduce_scatter result");

	long lr[50];
	for (int j = 0; j < 50; j++)
		lr[j] = rank + j;
	expect("ar-inplace", "allreduce", 0, sizeof(lr), size);
	MPI_Allreduce(MPI_IN_PLACE, lr, 50, MPI_LONG, MPI_SUM, comm);
	check(lr[1] == (long)size * (size - 1) / 2 + size, "allreduce in place result");

	/* Gather: the root receives into a derived type and gathers in place. */
	MPI_Datatype block;
	MPI_Type_contiguous(10, MPI_INT, &block);
	MPI_Type_commit(&block);
	for (int i = 0; i < size * 10; i++)
		ints[i] = rank == 0 ? -1 : 0;
	for (int j = 0; j < 10; j++)
		ints[rank * 10 + j] = rank * 10 + j;
	expect("gather", "gather", 0, 10 * sizeof(int), size);
	if (rank == 0)
		MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ints, 1, block, 0, comm);
	else
		MPI_Gather(ints + rank * 10, 10, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, 0, comm);
	if (rank == 0) {
		ok = 1;
		for (int i = 0; i < size * 10; i++)
			ok &= ints[i] == i;
		check(ok, "gather result");
	}
	MPI_Type_free(&block);

	const int sroot = 1 % size;
	for (int i = 0; i < size * 12; i++)
		ints[i] = i;
	expect("scatter", "scatter", 0, 12 * sizeof(int), size);
	if (rank == sroot)
		MPI_Scatter(ints, 12, MPI_INT, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, sroot, comm);
	else
		MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, ints2, 12, MPI_INT, sroot, comm);
	if (rank != sroot)
		check(ints2[0] == rank * 12 && ints2[11] == rank * 12 + 11, "scatter result");

	expect("barrier", "barrier", 0, 0, size);
	MPI_Barrier(comm);

	double rd[20], rd2[20];
	for (int j = 0; j < 20; j++)
		rd[j] = j;
	expect("reduce", "reduce", 0, sizeof(rd), size);
	MPI_Reduce(rd, rd2, 20, MPI_DOUBLE, MPI_MAX, 0, comm);
	if (rank == 0)
		check(rd2[19] == 19.0, "reduce result");

	/* v-variants: counts differ per pair; the hint carries the largest. */
	int so = 0, ro = 0, largest = 0;
	for (int i = 0; i < size; i++) {
		counts[i] = pair_count(rank, i);
		counts2[i] = pair_count(i, rank);
		displs[i] = so;
		displs2[i] = ro;
		so += counts[i];
		ro += counts2[i];
		if (i != rank) {
			if (counts[i] > largest)
				largest = counts[i];
			if (counts2[i] > largest)
				largest = counts2[i];
		}
		for (int j = 0; j < counts[i]; j++)
			big[displs[i] + j] = rank * 1000 + i;
	}
	expect("a2av", "alltoall", F_VECTOR, (unsigned long long)largest * sizeof(int), size);
	MPI_Alltoallv(big, counts, displs, MPI_INT, big2, counts2, displs2, MPI_INT, comm);
	ok = 1;
	for (int i = 0; i < size; i++)
		ok &= big2[displs2[i]] == i * 1000 + rank &&
		      big2[displs2[i] + counts2[i] - 1] == i * 1000 + rank;
	check(ok, "alltoallv result");

	MPI_Datatype *types = calloc((size_t)size, sizeof(MPI_Datatype));
	int *bdispls = calloc((size_t)size, sizeof(int)), *bdispls2 = calloc((size_t)size, sizeof(int));
	for (int i = 0; i < size; i++) {
		types[i] = MPI_INT;
		bdispls[i] = displs[i] * (int)sizeof(int);
		bdispls2[i] = displs2[i] * (int)sizeof(int);
	}
	memset(big2, 0, sizeof(int) * ro);
	expect("a2aw", "alltoall", F_VECTOR, (unsigned long long)largest * sizeof(int), size);
	MPI_Alltoallw(big, counts, bdispls, types, big2, counts2, bdispls2, types, comm);
	ok = 1;
	for (int i = 0; i < size; i++)
		ok &= big2[displs2[i] + counts2[i] - 1] == i * 1000 + rank;
	check(ok, "alltoallw result");

	int off = 0;
	for (int i = 0; i < size; i++) {
		counts2[i] = i + 1;
		displs2[i] = off;
		off += counts2[i];
	}
	for (int j = 0; j < rank + 1; j++)
		ints[j] = rank;
	expect("agv", "allgather", F_VECTOR,
	       (unsigned long long)max_other_int(counts2, size, rank) * sizeof(int), size);
	MPI_Allgatherv(ints, rank + 1, MPI_INT, big2, counts2, displs2, MPI_INT, comm);
	check(big2[displs2[size - 1]] == size - 1, "allgatherv result");

	off = 0;
	for (int i = 0; i < size; i++) {
		counts2[i] = i + 2;
		displs2[i] = off;
		off += counts2[i];
	}
	for (int j = 0; j < rank + 2; j++)
		ints[j] = 10 * rank + j;
	expect("gv", "gather", F_VECTOR,
	       (unsigned long long)(rank == 0 ? max_other_int(counts2, size, 0) : rank + 2) *
		       sizeof(int),
	       size);
	MPI_Gatherv(ints, rank + 2, MPI_INT, big2, counts2, displs2, MPI_INT, 0, comm);
	if (rank == 0)
		check(big2[displs2[size - 1] + 1] == 10 * (size - 1) + 1, "gatherv result");

	for (int i = 0; i < off; i++)
		big[i] = i;
	expect("sv", "scatter", F_VECTOR,
	       (unsigned long long)(rank == 0 ? max_other_int(counts2, size, 0) : rank + 2) *
		       sizeof(int),
	       size);
	MPI_Scatterv(big, counts2, displs2, MPI_INT, ints2, rank + 2, MPI_INT, 0, comm);
	check(ints2[0] == displs2[rank], "scatterv result");

	free(types);
	free(bdispls);
	free(bdispls2);
	free(big);
	free(big2);
	free(counts);
	free(counts2);
	free(displs);
	free(displs2);
	free(dbls);
	free(ints);
	free(ints2);
}

static void nonblocking_collectives(MPI_Comm comm)
{
	int rank, size;
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);
	int *a = calloc((size_t)size * 64, sizeof(int)), *b = calloc((size_t)size * 64, sizeof(int));
	MPI_Request req, reqs[3];

	for (int i = 0; i < size * 64; i++)
		a[i] = rank;
	expect("ia2a", "alltoall", F_NONBLOCKING, 64 * sizeof(int), size);
	MPI_Ialltoall(a, 64, MPI_INT, b, 64, MPI_INT, comm, &req);
	before_complete("ia2a");
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	after_complete("ia2a");
	check(b[(size - 1) * 64] == size - 1, "ialltoall result");

	int v[8];
	for (int j = 0; j < 8; j++)
		v[j] = rank == 0 ? 42 : 0;
	expect("ibcast", "bcast", F_NONBLOCKING, sizeof(v), size);
	MPI_Ibcast(v, 8, MPI_INT, 0, comm, &req);
	before_complete("ibcast");
	int flag = 0;
	POLL_UNTIL((MPI_Test(&req, &flag, MPI_STATUS_IGNORE), flag), "ibcast completes");
	after_complete("ibcast");
	check(v[7] == 42, "ibcast result");

	int s1 = rank, r1 = -1, s2 = 2 * rank, r2 = -1;
	expect("iar1", "allreduce", F_NONBLOCKING, sizeof(int), size);
	MPI_Iallreduce(&s1, &r1, 1, MPI_INT, MPI_SUM, comm, &reqs[0]);
	expect("iar2", "allreduce", F_NONBLOCKING, sizeof(int), size);
	MPI_Iallreduce(&s2, &r2, 1, MPI_INT, MPI_SUM, comm, &reqs[1]);
	before_complete("iar1");
	before_complete("iar2");
	MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
	after_complete("iar1");
	after_complete("iar2");
	check(r1 == size * (size - 1) / 2 && r2 == size * (size - 1), "iallreduce results");

	reqs[0] = MPI_REQUEST_NULL;
	expect("ibarrier", "barrier", F_NONBLOCKING, 0, size);
	MPI_Ibarrier(comm, &reqs[1]);
	before_complete("ibarrier");
	int index = -1;
	MPI_Waitany(2, reqs, &index, MPI_STATUS_IGNORE);
	after_complete("ibarrier");
	check(index == 1, "waitany index");

	expect("igather", "gather", F_NONBLOCKING, 4 * sizeof(int), size);
	MPI_Igather(a, 4, MPI_INT, b, 4, MPI_INT, 0, comm, &req);
	before_complete("igather");
	int outcount = 0, indices[3];
	POLL_UNTIL((MPI_Testsome(1, &req, &outcount, indices, MPI_STATUSES_IGNORE),
		    outcount == 1 || outcount == MPI_UNDEFINED),
		   "igather completes");
	after_complete("igather");

	int *counts = calloc((size_t)size, sizeof(int)), *displs = calloc((size_t)size, sizeof(int));
	for (int i = 0; i < size; i++) {
		counts[i] = 3;
		displs[i] = 3 * i;
	}
	expect("ia2av", "alltoall", F_VECTOR | F_NONBLOCKING, 3 * sizeof(int), size);
	MPI_Ialltoallv(a, counts, displs, MPI_INT, b, counts, displs, MPI_INT, comm, &req);
	before_complete("ia2av");
	MPI_Waitsome(1, &req, &outcount, indices, MPI_STATUSES_IGNORE);
	after_complete("ia2av");
	check(outcount == 1, "waitsome outcount");

	expect("iscatter", "scatter", F_NONBLOCKING, 5 * sizeof(int), size);
	MPI_Iscatter(a, 5, MPI_INT, b, 5, MPI_INT, 0, comm, &req);
	before_complete("iscatter");
	POLL_UNTIL((MPI_Testall(1, &req, &flag, MPI_STATUSES_IGNORE), flag), "iscatter completes");
	after_complete("iscatter");

	expect("iag", "allgather", F_NONBLOCKING, 2 * sizeof(int), size);
	MPI_Iallgather(a, 2, MPI_INT, b, 2, MPI_INT, comm, &req);
	before_complete("iag");
	POLL_UNTIL((MPI_Testany(1, &req, &index, &flag, MPI_STATUS_IGNORE), flag),
		   "iallgather completes");
	after_complete("iag");

	expect("ireduce", "reduce", F_NONBLOCKING, 6 * sizeof(int), size);
	MPI_Ireduce(a, b, 6, MPI_INT, MPI_SUM, 0, comm, &req);
	before_complete("ireduce");
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	after_complete("ireduce");

	expect("irsb", "reduce_scatter", F_NONBLOCKING, 2 * sizeof(int), size);
	MPI_Ireduce_scatter_block(a, b, 2, MPI_INT, MPI_SUM, comm, &req);
	before_complete("irsb");
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	after_complete("irsb");

	for (int i = 0; i < size; i++)
		counts[i] = i + 1;
	expect("irs", "reduce_scatter", F_VECTOR | F_NONBLOCKING,
	       (unsigned long long)max_other_int(counts, size, rank) * sizeof(int), size);
	MPI_Ireduce_scatter(a, b, counts, MPI_INT, MPI_SUM, comm, &req);
	before_complete("irs");
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	after_complete("irs");

	for (int i = 0; i < size; i++) {
		counts[i] = 2;
		displs[i] = 2 * i;
	}
	expect("iagv", "allgather", F_VECTOR | F_NONBLOCKING, 2 * sizeof(int), size);
	MPI_Iallgatherv(a, 2, MPI_INT, b, counts, displs, MPI_INT, comm, &req);
	before_complete("iagv");
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	after_complete("iagv");

	expect("igv", "gather", F_VECTOR | F_NONBLOCKING, 2 * sizeof(int), size);
	MPI_Igatherv(a, 2, MPI_INT, b, counts, displs, MPI_INT, 0, comm, &req);
	before_complete("igv");
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	after_complete("igv");

	expect("isv", "scatter", F_VECTOR | F_NONBLOCKING, 2 * sizeof(int), size);
	MPI_Iscatterv(a, counts, displs, MPI_INT, b, 2, MPI_INT, 0, comm, &req);
	before_complete("isv");
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	after_complete("isv");

	MPI_Datatype *types = calloc((size_t)size, sizeof(MPI_Datatype));
	for (int i = 0; i < size; i++) {
		types[i] = MPI_INT;
		displs[i] = 2 * i * (int)sizeof(int);
	}
	expect("ia2aw", "alltoall", F_VECTOR | F_NONBLOCKING, 2 * sizeof(int), size);
	MPI_Ialltoallw(a, counts, displs, types, b, counts, displs, types, comm, &req);
	before_complete("ia2aw");
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	after_complete("ia2aw");

	free(types);
	free(counts);
	free(displs);
	free(a);
	free(b);
}

static void persistent_collectives(MPI_Comm comm)
{
#ifdef HAVE_PERSISTENT
	int rank, size;
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);
	int in = rank + 1, out = 0;
	MPI_Request ar, pair[2];
	expect_none("allreduce_init");	/* the init call itself is no phase */
	PERSISTENT(Allreduce)(&in, &out, 1, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &ar);
	for (int round = 0; round < 3; round++) {
		expect("par", "allreduce", F_PERSISTENT, sizeof(int), size);
		MPI_Start(&ar);
		before_complete("par");
		MPI_Wait(&ar, MPI_STATUS_IGNORE);
		after_complete("par");
		check(out == size * (size + 1) / 2, "persistent allreduce result");
		out = 0;
	}
	int bc[4] = {0}, *a = calloc((size_t)size * 8, sizeof(int)), *b = calloc((size_t)size * 8, sizeof(int));
	if (rank == 0)
		bc[3] = 9;
	for (int i = 0; i < size * 8; i++)
		a[i] = rank;
	expect_none("bcast_init alltoall_init");
	PERSISTENT(Bcast)(bc, 4, MPI_INT, 0, comm, MPI_INFO_NULL, &pair[0]);
	PERSISTENT(Alltoall)(a, 8, MPI_INT, b, 8, MPI_INT, comm, MPI_INFO_NULL, &pair[1]);
	expect("pbcast", "bcast", F_PERSISTENT, sizeof(bc), size);
	expect("pa2a", "alltoall", F_PERSISTENT, 8 * sizeof(int), size);
	MPI_Startall(2, pair);
	before_complete("pbcast");
	before_complete("pa2a");
	MPI_Waitall(2, pair, MPI_STATUSES_IGNORE);
	after_complete("pbcast");
	after_complete("pa2a");
	check(bc[3] == 9 && b[(size - 1) * 8] == size - 1, "persistent bcast/alltoall results");
	expect_none("request_free");
	MPI_Request_free(&pair[0]);
	MPI_Request_free(&pair[1]);
	MPI_Request_free(&ar);
	free(a);
	free(b);
#else
	(void)comm;
#endif
}

static void comm_variants(void)
{
	/* Sub-communicators: their own size and rank in the hint. */
	MPI_Comm half;
	MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
	int hsize;
	MPI_Comm_size(half, &hsize);
	if (hsize > 1)
		expect("half-ar", "allreduce", 0, sizeof(int), hsize);
	else
		expect_none("half-ar comm_size 1");
	int x = 1, y = 0;
	MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, half);
	check(y == hsize, "split allreduce result");

	/* An intercommunicator between the halves: passed through without a hint. */
	if (world_size >= 2) {
		MPI_Comm inter;
		MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, world_rank % 2 ? 0 : 1, 77, &inter);
		expect_none("intercomm barrier");
		MPI_Barrier(inter);
		MPI_Comm_free(&inter);
	}
	MPI_Comm_free(&half);

	expect_none("comm_self barrier");
	MPI_Barrier(MPI_COMM_SELF);

	/* Create and free communicators: the cache must follow (handles get reused). */
	for (int i = 0; i < 20; i++) {
		MPI_Comm dup;
		MPI_Comm_dup(MPI_COMM_WORLD, &dup);
		int z = i, sum = 0;
		expect("dup-ar", "allreduce", 0, sizeof(int), world_size);
		MPI_Allreduce(&z, &sum, 1, MPI_INT, MPI_SUM, dup);
		check(sum == i * world_size, "dup allreduce result");
		MPI_Comm_free(&dup);
	}

	/* A nonblocking collective must not wait for the other ranks, not even as the first
	 * collective on its communicator, where the shim's endpoint exchange comes due (its
	 * collectives wait for every rank): rank 1 reaches its Ibarrier only once rank 0, past
	 * its own, has received what rank 1 sends synchronously. The exchange runs at the next
	 * blocking collective instead. */
	if (world_size >= 2) {
		MPI_Comm fresh;
		MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
		MPI_Request r;
		int token = 7, got = -1;
		expect("nbx-ibarrier", "barrier", F_NONBLOCKING, 0, world_size);
		if (world_rank == 0) {
			MPI_Ibarrier(fresh, &r);
			MPI_Recv(&got, 1, MPI_INT, 1, 9, fresh, MPI_STATUS_IGNORE);
		} else {
			if (world_rank == 1)
				MPI_Ssend(&token, 1, MPI_INT, 0, 9, fresh);
			MPI_Ibarrier(fresh, &r);
		}
		before_complete("nbx-ibarrier");
		MPI_Wait(&r, MPI_STATUS_IGNORE);
		after_complete("nbx-ibarrier");
		if (world_rank == 0)
			check(got == 7, "the synchronous send behind a nonblocking barrier");
		int z = 1, sum = 0;
		expect("nbx-ar", "allreduce", 0, sizeof(int), world_size);
		MPI_Allreduce(&z, &sum, 1, MPI_INT, MPI_SUM, fresh);
		check(sum == world_size, "allreduce after the nonblocking barrier");
		MPI_Comm_free(&fresh);
	}

	/* Point-to-point requests are no phases, and their waits must not end any. */
	expect_none("p2p");
	int peer = (world_rank + 1) % world_size, from = (world_rank + world_size - 1) % world_size;
	int sendv = world_rank, recvv = -1;
	MPI_Request pr[2];
	MPI_Irecv(&recvv, 1, MPI_INT, from, 5, MPI_COMM_WORLD, &pr[0]);
	MPI_Isend(&sendv, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, &pr[1]);
	MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
	check(recvv == from, "p2p result");
}

static int run_check(void)
{
	blocking_collectives(MPI_COMM_WORLD);
	/* Enough collectives on one communicator to see the rescan schedule. */
	for (int i = 0; i < 24; i++) {
		int x = i, s = 0;
		expect("loop-ar", "allreduce", 0, sizeof(int), world_size);
		MPI_Allreduce(&x, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		check(s == i * world_size, "loop allreduce result");
	}
	nonblocking_collectives(MPI_COMM_WORLD);
	persistent_collectives(MPI_COMM_WORLD);
	comm_variants();
	expect("final", "barrier", 0, 0, world_size);
	MPI_Barrier(MPI_COMM_WORLD);
	say("done failures=%d", failures);
	return failures ? 1 : 0;
}

static int run_bench(long iterations)
{
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	const double t0 = now_s();
	for (long i = 0; i < iterations; i++)
		MPI_Barrier(MPI_COMM_WORLD);
	const double t1 = now_s();
	if (world_rank == 0)
		say("bench barrier iterations=%ld ns_per_call=%.0f", iterations,
		    (t1 - t0) * 1e9 / iterations);
	return 0;
}

struct thread_arg {
	MPI_Comm comm;
	int ok;
};

static void *thread_main(void *p)
{
	struct thread_arg *arg = p;
	arg->ok = 1;
	for (int i = 0; i < 200; i++) {
		int x = 1, s = 0;
		MPI_Allreduce(&x, &s, 1, MPI_INT, MPI_SUM, arg->comm);
		arg->ok &= s == world_size;
		MPI_Request r;
		MPI_Ibarrier(arg->comm, &r);
		MPI_Wait(&r, MPI_STATUS_IGNORE);
	}
	return NULL;
}

static int run_threads(void)
{
	struct thread_arg args[2];
	pthread_t threads[2];
	for (int t = 0; t < 2; t++)
		MPI_Comm_dup(MPI_COMM_WORLD, &args[t].comm);
	for (int t = 0; t < 2; t++)
		pthread_create(&threads[t], NULL, thread_main, &args[t]);
	for (int t = 0; t < 2; t++)
		pthread_join(threads[t], NULL);
	for (int t = 0; t < 2; t++) {
		check(args[t].ok, "threaded allreduce results");
		MPI_Comm_free(&args[t].comm);
	}
	say("done failures=%d", failures);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "check";
	int rc;
	if (strcmp(mode, "threads") == 0) {
		int provided = 0;
		MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
		MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
		MPI_Comm_size(MPI_COMM_WORLD, &world_size);
		if (provided < MPI_THREAD_MULTIPLE) {
			say("skip threads provided=%d", provided);
			MPI_Finalize();
			return 0;
		}
		rc = run_threads();
	} else {
		MPI_Init(&argc, &argv);
		MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
		MPI_Comm_size(MPI_COMM_WORLD, &world_size);
		if (strcmp(mode, "bench") == 0)
			rc = run_bench(argc > 2 ? atol(argv[2]) : 1000);
		else
			rc = run_check();
	}
	MPI_Finalize();
	return rc;
}
