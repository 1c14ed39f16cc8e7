/*
 * collectives: times MPI collectives over the test cluster and checks their data.
 *
 *   collectives [--size BYTES] [--iters N] [--warmup N] [--kinds alltoall,bcast,allgather]
 *               [--timeout SECONDS] [--no-barrier] [--env NAME]...
 *
 * --size is the message of one rank to one peer: the block per destination of MPI_Alltoall, the
 * buffer of MPI_Bcast (root 0), the contribution of each rank to MPI_Allgather. k/m suffixes are
 * powers of 1024. Each timed iteration starts after an MPI_Barrier (unless --no-barrier), and its
 * time is the slowest rank's, so one rank stuck in a retransmission timeout shows up.
 * Those times start when each rank leaves the barrier, and ranks leave it at different moments,
 * so their sum under-counts what the iterations took (at 1 KB by a third): throughput is to be
 * computed from loop_s, the slowest rank's time from one barrier before the first timed iteration
 * to the end of its last. With --no-barrier the timed collectives run back to back, as applications
 * run them; their buffers are then filled before the first and the last, and only the last is checked.
 * Rank 0 prints one JSON line: per kind the iteration times (min, mean, p50, p99, max), loop_s, whether
 * every received byte was right, the host of every rank and the values of the --env variables in
 * every rank (to check what the launcher forwarded).
 * Exit: 0 done and data verified, 1 wrong data or MPI failure, 2 usage error, 3 timeout.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum kind { KIND_ALLTOALL, KIND_BCAST, KIND_ALLGATHER, KIND_COUNT };
static const char *const kind_names[KIND_COUNT] = {"alltoall", "bcast", "allgather"};

#define MAX_ENV_NAMES 16
#define ENV_VALUE_MAX 256
#define MAX_ITERS 1000000L
#define MAX_BUFFER_BYTES (4UL << 30)

struct options {
	long size;
	long iters;
	long warmup;
	int kinds[KIND_COUNT]; /* selected, in command-line order; -1 ends */
	int kind_count;
	unsigned timeout_s;
	int barrier;
	const char *env_names[MAX_ENV_NAMES];
	int env_count;
};

static int world_rank;

static void on_alarm(int sig)
{
	(void)sig;
	char msg[96];
	int len = snprintf(msg, sizeof(msg), "collectives: rank %d: timeout, giving up\n", world_rank);
	if (len > 0 && write(STDERR_FILENO, msg, (size_t)len) < 0) {
		/* nothing left to report to */
	}
	_exit(3);
}

static int usage_error(const char *fmt, const char *arg)
{
	if (world_rank == 0) {
		fprintf(stderr, "collectives: ");
		fprintf(stderr, fmt, arg);
		fprintf(stderr, "\nusage: collectives [--size BYTES] [--iters N] [--warmup N] "
				"[--kinds alltoall,bcast,allgather] [--timeout SECONDS] [--no-barrier] "
				"[--env NAME]...\n");
	}
	return 2;
}

/* Decimal with optional k/m/g (powers of 1024); -1 on anything else or overflow past max. */
static long parse_count(const char *text, long max)
{
	char *end;
	errno = 0;
	long value = strtol(text, &end, 10);
	if (errno || end == text || value < 0)
		return -1;
	long scale = 1;
	if (*end == 'k' || *end == 'K')
		scale = 1L << 10, end++;
	else if (*end == 'm' || *end == 'M')
		scale = 1L << 20, end++;
	else if (*end == 'g' || *end == 'G')
		scale = 1L << 30, end++;
	if (*end != '\0' || value > max / scale)
		return -1;
	return value * scale;
}

static int parse_kinds(const char *text, struct options *opt)
{
	char *copy = strdup(text), *save = NULL;
	if (!copy)
		return -1;
	opt->kind_count = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int found = -1;
		for (int k = 0; k < KIND_COUNT; k++)
			if (strcmp(tok, kind_names[k]) == 0)
				found = k;
		for (int i = 0; i < opt->kind_count; i++)
			if (opt->kinds[i] == found)
				found = -2; /* listed twice */
		if (found < 0 || opt->kind_count == KIND_COUNT) {
			free(copy);
			return -1;
		}
		opt->kinds[opt->kind_count++] = found;
	}
	free(copy);
	return opt->kind_count > 0 ? 0 : -1;
}

static int parse_args(int argc, char **argv, struct options *opt)
{
	*opt = (struct options){.size = 65536, .iters = 20, .warmup = 2, .timeout_s = 300, .barrier = 1};
	parse_kinds("alltoall,bcast", opt);
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *value = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(arg, "--no-barrier") == 0) {
			opt->barrier = 0;
			continue;
		}
		if (!value)
			return usage_error("option '%s' needs a value (or is unknown)", arg);
		i++;
		if (strcmp(arg, "--size") == 0) {
			opt->size = parse_count(value, INT_MAX);
			if (opt->size < 1)
				return usage_error("--size must be 1..2g-1 bytes, got '%s'", value);
		} else if (strcmp(arg, "--iters") == 0) {
			opt->iters = parse_count(value, MAX_ITERS);
			if (opt->iters < 1)
				return usage_error("--iters must be 1..1000000, got '%s'", value);
		} else if (strcmp(arg, "--warmup") == 0) {
			opt->warmup = parse_count(value, MAX_ITERS);
			if (opt->warmup < 0)
				return usage_error("--warmup must be 0..1000000, got '%s'", value);
		} else if (strcmp(arg, "--kinds") == 0) {
			if (parse_kinds(value, opt) < 0)
				return usage_error("--kinds must list alltoall, bcast, allgather (each once), got '%s'",
						   value);
		} else if (strcmp(arg, "--timeout") == 0) {
			long t = parse_count(value, 86400);
			if (t < 1)
				return usage_error("--timeout must be 1..86400 seconds, got '%s'", value);
			opt->timeout_s = (unsigned)t;
		} else if (strcmp(arg, "--env") == 0) {
			if (opt->env_count == MAX_ENV_NAMES || !*value)
				return usage_error("--env takes a variable name, at most 16 times ('%s')", value);
			opt->env_names[opt->env_count++] = value;
		} else {
			return usage_error("unknown option '%s'", arg);
		}
	}
	return 0;
}

/* The byte rank `from` sends to rank `to` at offset i: differs per pair and position. */
static inline unsigned char pattern(int from, int to, long i)
{
	return (unsigned char)(from * 131 + to * 17 + i * 7 + (i >> 8));
}

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct buffers {
	unsigned char *send, *recv;
};

/* Fills the send side for one kind; recv is cleared so stale bytes cannot pass the check. */
static void prepare(enum kind kind, const struct options *opt, int rank, int ranks, struct buffers *b)
{
	long n = opt->size;
	switch (kind) {
	case KIND_ALLTOALL:
		for (int to = 0; to < ranks; to++)
			for (long i = 0; i < n; i++)
				b->send[(size_t)to * n + i] = pattern(rank, to, i);
		memset(b->recv, 0, (size_t)n * ranks);
		break;
	case KIND_BCAST:
		for (long i = 0; i < n; i++)
			b->recv[i] = rank == 0 ? pattern(0, 0, i) : 0;
		break;
	case KIND_ALLGATHER:
		for (long i = 0; i < n; i++)
			b->send[i] = pattern(rank, 0, i);
		memset(b->recv, 0, (size_t)n * ranks);
		break;
	default:
		break;
	}
}

static int run_once(enum kind kind, const struct options *opt, struct buffers *b)
{
	int n = (int)opt->size;
	switch (kind) {
	case KIND_ALLTOALL:
		return MPI_Alltoall(b->send, n, MPI_BYTE, b->recv, n, MPI_BYTE, MPI_COMM_WORLD);
	case KIND_BCAST:
		return MPI_Bcast(b->recv, n, MPI_BYTE, 0, MPI_COMM_WORLD);
	case KIND_ALLGATHER:
		return MPI_Allgather(b->send, n, MPI_BYTE, b->recv, n, MPI_BYTE, MPI_COMM_WORLD);
	default:
		return MPI_ERR_ARG;
	}
}

static int verify(enum kind kind, const struct options *opt, int rank, int ranks, const struct buffers *b)
{
	long n = opt->size;
	switch (kind) {
	case KIND_ALLTOALL:
		for (int from = 0; from < ranks; from++)
			for (long i = 0; i < n; i++)
				if (b->recv[(size_t)from * n + i] != pattern(from, rank, i))
					return 0;
		return 1;
	case KIND_BCAST:
		for (long i = 0; i < n; i++)
			if (b->recv[i] != pattern(0, 0, i))
				return 0;
		return 1;
	case KIND_ALLGATHER:
		for (int from = 0; from < ranks; from++)
			for (long i = 0; i < n; i++)
				if (b->recv[(size_t)from * n + i] != pattern(from, 0, i))
					return 0;
		return 1;
	default:
		return 0;
	}
}

struct kind_result {
	double total_s, loop_s, min_s, mean_s, p50_s, p99_s, max_s;
	int verified;
};

/* Runs warmup + timed iterations of one kind; every rank returns, rank 0 gets the result. */
static int measure(enum kind kind, const struct options *opt, int rank, int ranks, struct buffers *b,
		   struct kind_result *result)
{
	long total = opt->warmup + opt->iters;
	double *local = calloc((size_t)opt->iters, sizeof(double));
	double *slowest = calloc((size_t)opt->iters, sizeof(double));
	int ok = 1, rc = MPI_SUCCESS;
	if (!local || !slowest) {
		fprintf(stderr, "collectives: rank %d: out of memory\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	/* With a barrier per iteration, each iteration's buffers are prepared and checked outside its
	 * time. Back to back, the loop's time is the measurement, so they are prepared before the
	 * first timed iteration and again before the last, and only the last is checked (each one
	 * rewrites every byte of the result, so the check sees what the last one delivered). */
	double loop_start = 0;
	for (long it = 0; it < total && rc == MPI_SUCCESS; it++) {
		int timed = it >= opt->warmup, last = it == total - 1;
		if (it == opt->warmup) {
			prepare(kind, opt, rank, ranks, b);
			MPI_Barrier(MPI_COMM_WORLD);
			loop_start = MPI_Wtime();
		} else if (opt->barrier || !timed || last) {
			prepare(kind, opt, rank, ranks, b);
		}
		if (opt->barrier)
			MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		rc = run_once(kind, opt, b);
		double t1 = MPI_Wtime();
		if (it >= opt->warmup)
			local[it - opt->warmup] = t1 - t0;
		if (opt->barrier || !timed || last)
			ok &= verify(kind, opt, rank, ranks, b);
	}
	if (rc != MPI_SUCCESS) {
		fprintf(stderr, "collectives: rank %d: MPI_%s failed (%d)\n", rank, kind_names[kind], rc);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	double loop = MPI_Wtime() - loop_start, slowest_loop = 0;
	int all_ok = 0;
	MPI_Reduce(&loop, &slowest_loop, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	MPI_Reduce(local, slowest, (int)opt->iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		double sum = 0;
		for (long i = 0; i < opt->iters; i++)
			sum += slowest[i];
		qsort(slowest, (size_t)opt->iters, sizeof(double), compare_double);
		long n = opt->iters;
		*result = (struct kind_result){
			.total_s = sum,
			.loop_s = slowest_loop,
			.min_s = slowest[0],
			.mean_s = sum / (double)n,
			.p50_s = slowest[(n - 1) / 2],
			.p99_s = slowest[(long)((double)(n - 1) * 0.99 + 0.5)],
			.max_s = slowest[n - 1],
			.verified = all_ok,
		};
	}
	free(local);
	free(slowest);
	return all_ok;
}

/* Gathers a fixed-size string from every rank to rank 0 (NULL elsewhere). */
static char *gather_strings(const char *mine, int width, int rank, int ranks)
{
	char *slot = calloc(1, (size_t)width);
	char *all = rank == 0 ? calloc((size_t)ranks, (size_t)width) : NULL;
	if (!slot || (rank == 0 && !all)) {
		fprintf(stderr, "collectives: rank %d: out of memory\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	snprintf(slot, (size_t)width, "%s", mine);
	MPI_Gather(slot, width, MPI_CHAR, all, width, MPI_CHAR, 0, MPI_COMM_WORLD);
	free(slot);
	return all;
}

static void print_string_array(FILE *out, const char *all, int width, int ranks)
{
	fputc('[', out);
	for (int r = 0; r < ranks; r++) {
		if (r)
			fputc(',', out);
		json_string(out, all + (size_t)r * width);
	}
	fputc(']', out);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int ranks;
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);

	struct options opt;
	int rc = parse_args(argc, argv, &opt);
	if (rc) {
		MPI_Finalize();
		return rc;
	}
	/* Every rank bounds itself: a rank stuck in a collective whose peer died exits on its own. */
	signal(SIGALRM, on_alarm);
	alarm(opt.timeout_s);

	size_t per_rank = (size_t)opt.size * (size_t)ranks;
	if (per_rank > MAX_BUFFER_BYTES) {
		if (world_rank == 0)
			fprintf(stderr, "collectives: --size %ld x %d ranks needs more than 4 GiB per buffer\n",
				opt.size, ranks);
		MPI_Finalize();
		return 2;
	}
	struct buffers b = {malloc(per_rank), malloc(per_rank)};
	if (!b.send || !b.recv) {
		fprintf(stderr, "collectives: rank %d: cannot allocate 2 x %zu bytes\n", world_rank, per_rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}

	char host[MPI_MAX_PROCESSOR_NAME] = "";
	int host_len = 0;
	MPI_Get_processor_name(host, &host_len);
	char *hosts = gather_strings(host, MPI_MAX_PROCESSOR_NAME, world_rank, ranks);
	char *env_values[MAX_ENV_NAMES] = {0};
	for (int e = 0; e < opt.env_count; e++) {
		const char *v = getenv(opt.env_names[e]);
		env_values[e] = gather_strings(v ? v : "", ENV_VALUE_MAX, world_rank, ranks);
	}

	struct kind_result results[KIND_COUNT];
	int all_verified = 1;
	double wall0 = MPI_Wtime();
	for (int i = 0; i < opt.kind_count; i++)
		all_verified &= measure((enum kind)opt.kinds[i], &opt, world_rank, ranks, &b, &results[i]);
	double wall = MPI_Wtime() - wall0;

	if (world_rank == 0) {
		char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
		int version_len = 0;
		MPI_Get_library_version(version, &version_len);
		version[strcspn(version, "\n,")] = '\0';
		for (char *c = version; *c; c++) /* MPICH says "MPICH Version:\t4.0.2" */
			if (*c == '\t')
				*c = ' ';
		FILE *out = stdout;
		fprintf(out, "{\"program\":\"collectives\",\"mpi\":");
		json_string(out, version);
		fprintf(out, ",\"ranks\":%d,\"size\":%ld,\"iters\":%ld,\"warmup\":%ld,\"barrier\":%s,\"hosts\":",
			ranks, opt.size, opt.iters, opt.warmup, opt.barrier ? "true" : "false");
		print_string_array(out, hosts, MPI_MAX_PROCESSOR_NAME, ranks);
		fprintf(out, ",\"env\":{");
		for (int e = 0; e < opt.env_count; e++) {
			fprintf(out, "%s", e ? "," : "");
			json_string(out, opt.env_names[e]);
			fputc(':', out);
			print_string_array(out, env_values[e], ENV_VALUE_MAX, ranks);
		}
		fprintf(out, "},\"wall_s\":%.6f,\"results\":[", wall);
		for (int i = 0; i < opt.kind_count; i++) {
			const struct kind_result *r = &results[i];
			fprintf(out,
				"%s{\"kind\":\"%s\",\"verified\":%s,\"total_s\":%.6f,\"loop_s\":%.6f,\"min_us\":%.1f,"
				"\"mean_us\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f}",
				i ? "," : "", kind_names[opt.kinds[i]], r->verified ? "true" : "false", r->total_s, r->loop_s,
				r->min_s * 1e6, r->mean_s * 1e6, r->p50_s * 1e6, r->p99_s * 1e6, r->max_s * 1e6);
		}
		fprintf(out, "]}\n");
		fflush(out);
		if (!all_verified)
			fprintf(stderr, "collectives: received data differs from what was sent\n");
	}
	/* Every rank learns the verdict, so the exit code is the same everywhere. */
	MPI_Bcast(&all_verified, 1, MPI_INT, 0, MPI_COMM_WORLD);

	for (int e = 0; e < opt.env_count; e++)
		free(env_values[e]);
	free(hosts);
	free(b.send);
	free(b.recv);
	MPI_Finalize();
	return all_verified ? 0 : 1;
}
