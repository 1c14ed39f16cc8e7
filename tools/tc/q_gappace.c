// SPDX-License-Identifier: GPL-2.0
/*
 * q_gappace.so: the "gappace" qdisc for iproute2's tc.
 *
 *   TC_LIB_DIR=/path/to/dir tc qdisc add dev eth0 root gappace linkrate 1gbit ifg 100 limit 1000
 *   TC_LIB_DIR=/path/to/dir tc -s [-j] qdisc show dev eth0
 *
 * tc looks for an unknown qdisc kind in $TC_LIB_DIR/q_<kind>.so (default /usr/lib/tc) and
 * takes the symbol <kind>_qdisc_util from it. iproute2 installs no headers for this, so
 * the few declarations we need are copied below, and must match the tc binary:
 *
 *   struct qdisc_util: this layout (8 pointers, 64 bytes on LP64) is the one of iproute2
 *   5.1 (when has_block was added) through at least 6.x; iproute2 6.5 made the qu
 *   parameters const, which does not change the ABI. Checked against Debian bookworm's
 *   iproute2 6.1: `nm -D -S /usr/sbin/tc` shows every built-in *_qdisc_util as 0x40 bytes.
 *
 *   Helpers: tc is linked with -rdynamic (`nm -D /usr/sbin/tc` lists addattr_l,
 *   addattr_nest, parse_rtattr_flags, print_color_u64, open_json_object, ...), so the
 *   plugin calls tc's own netlink and JSON helpers and `tc -j` output stays well-formed.
 *   Rates are parsed here rather than with tc's get_rate64(), which returns bytes/s and
 *   would lose the low bits of a bit/s rate.
 *
 * Units, as in the uapi and in gapctl: rates are bit/s in JSON ("linkrate": 1000000000),
 * sizes are bytes, counts are packets.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <linux/gappace.h>
#include <linux/gen_stats.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

/* ---------------------------------------------------------- from iproute2 */

/* tc/tc_util.h */
struct qdisc_util {
	struct qdisc_util *next;
	const char *id;
	int (*parse_qopt)(struct qdisc_util *qu, int argc, char **argv, struct nlmsghdr *n, const char *dev);
	int (*print_qopt)(struct qdisc_util *qu, FILE *f, struct rtattr *opt);
	int (*print_xstats)(struct qdisc_util *qu, FILE *f, struct rtattr *xstats);
	int (*parse_copt)(struct qdisc_util *qu, int argc, char **argv, struct nlmsghdr *n, const char *dev);
	int (*print_copt)(struct qdisc_util *qu, FILE *f, struct rtattr *opt);
	int (*has_block)(struct qdisc_util *qu, struct rtattr *opt, __u32 block_idx, bool *p_has);
};

/* include/libnetlink.h */
int addattr32(struct nlmsghdr *n, int maxlen, int type, __u32 data);
int addattr64(struct nlmsghdr *n, int maxlen, int type, __u64 data);
struct rtattr *addattr_nest(struct nlmsghdr *n, int maxlen, int type);
int addattr_nest_end(struct nlmsghdr *n, struct rtattr *nest);
int parse_rtattr_flags(struct rtattr *tb[], int max, struct rtattr *rta, int len, unsigned short flags);

/* include/json_print.h, include/color.h */
enum output_type { PRINT_FP = 1, PRINT_JSON = 2, PRINT_ANY = 4 };
enum color_attr { COLOR_IFNAME, COLOR_MAC, COLOR_INET, COLOR_INET6, COLOR_OPERSTATE_UP, COLOR_OPERSTATE_DOWN, COLOR_NONE };
void open_json_object(const char *str);
void close_json_object(void);
void print_nl(void);
int print_color_string(enum output_type t, enum color_attr color, const char *key, const char *fmt, const char *value);
int print_color_u64(enum output_type t, enum color_attr color, const char *key, const char *fmt, uint64_t value);

/* ---------------------------------------------------------- gappace */

/* Room tc's qdisc request buffer leaves for TCA_OPTIONS (tc_qdisc.c uses 1024 too). */
#define GAPPACE_MAXLEN 1024

static void explain(void)
{
	fprintf(stderr, "Usage: ... gappace [ linkrate RATE|auto ] [ ifg BYTES ] [ limit PACKETS ] [ lookahead TIME ]\n"
			"  RATE: bit/s, with units bit, kbit, mbit, gbit, tbit, kibit.., bps, kbps, ...\n"
			"  TIME: ns, us, ms or s (bare: us), at most 1s; 0: no bound (the default)\n"
			"  auto: follow the device's speed (the default)\n");
}

static const struct {
	const char *name;
	double scale;
} rate_units[] = {
	{"", 1.},	     {"bit", 1.},	  {"kbit", 1e3},	 {"mbit", 1e6},
	{"gbit", 1e9},	     {"tbit", 1e12},	  {"kibit", 1024.},	 {"mibit", 1048576.},
	{"gibit", 1073741824.}, {"tibit", 1099511627776.}, {"bps", 8.},	 {"kbps", 8e3},
	{"mbps", 8e6},	     {"gbps", 8e9},	  {"tbps", 8e12},	 {"kibps", 8192.},
	{"mibps", 8388608.}, {"gibps", 8589934592.}, {"tibps", 8796093022208.},
};

/* RATE in bit/s, with tc's units; 0 and -1 like tc's get_* helpers. */
static int parse_rate_bits(const char *text, uint64_t *bits)
{
	char *end;
	double value;
	size_t i;

	if (!*text || *text == '-' || *text == '+')
		return -1;
	errno = 0;
	value = strtod(text, &end);
	if (end == text || errno || !isfinite(value))
		return -1;
	for (i = 0; i < sizeof(rate_units) / sizeof(rate_units[0]); i++) {
		if (strcasecmp(end, rate_units[i].name) == 0) {
			value = value * rate_units[i].scale + 0.5;
			if (value >= 18446744073709551615.0)
				return -1;
			*bits = (uint64_t)value;
			return 0;
		}
	}
	return -1;
}

static int parse_u32(const char *text, __u32 *value)
{
	unsigned long long parsed;
	char *end;

	if (*text < '0' || *text > '9')
		return -1;
	errno = 0;
	parsed = strtoull(text, &end, 10);
	if (*end || errno || parsed > UINT32_MAX)
		return -1;
	*value = (__u32)parsed;
	return 0;
}

/* TIME: a whole number with ns, us, ms or s (bare: microseconds, as tc's get_time), in ns. */
static int parse_lookahead_ns(const char *text, __u32 *value)
{
	static const struct {
		const char *name;
		unsigned long long ns;
	} units[] = {{"", 1000}, {"ns", 1}, {"us", 1000}, {"usec", 1000}, {"ms", 1000000}, {"msec", 1000000},
		     {"s", 1000000000}, {"sec", 1000000000}};
	unsigned long long parsed;
	char *end;
	size_t i;

	if (*text < '0' || *text > '9')
		return -1;
	errno = 0;
	parsed = strtoull(text, &end, 10);
	if (errno)
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(end, units[i].name) == 0) {
			if (parsed > GAPPACE_LOOKAHEAD_MAX / units[i].ns)
				return -1;
			*value = (__u32)(parsed * units[i].ns);
			return 0;
		}
	}
	return -1;
}

static int bad_value(const char *keyword, const char *value)
{
	fprintf(stderr, "gappace: invalid %s \"%s\"\n", keyword, value);
	explain();
	return -1;
}

static int gappace_parse_opt(struct qdisc_util *qu, int argc, char **argv, struct nlmsghdr *n, const char *dev)
{
	bool have_linkrate = false, have_ifg = false, have_limit = false, have_lookahead = false;
	uint64_t linkrate = 0;
	__u32 ifg = 0, limit = 0, lookahead_ns = 0;
	struct rtattr *nest;

	(void)qu;
	(void)dev;
	for (; argc > 0; argc--, argv++) {
		const char *keyword = *argv;
		bool *seen;

		if (strcmp(keyword, "help") == 0) {
			explain();
			return -1;
		}
		if (strcmp(keyword, "linkrate") == 0)
			seen = &have_linkrate;
		else if (strcmp(keyword, "ifg") == 0)
			seen = &have_ifg;
		else if (strcmp(keyword, "limit") == 0)
			seen = &have_limit;
		else if (strcmp(keyword, "lookahead") == 0)
			seen = &have_lookahead;
		else {
			fprintf(stderr, "gappace: unknown parameter \"%s\"\n", keyword);
			explain();
			return -1;
		}
		if (*seen) {
			fprintf(stderr, "gappace: duplicate \"%s\"\n", keyword);
			explain();
			return -1;
		}
		if (argc < 2) {
			fprintf(stderr, "gappace: missing value after \"%s\"\n", keyword);
			explain();
			return -1;
		}
		argc--, argv++;
		*seen = true;
		if (seen == &have_linkrate) {
			if (strcmp(*argv, "auto") == 0)
				linkrate = 0;
			else if (parse_rate_bits(*argv, &linkrate))
				return bad_value(keyword, *argv);
		} else if (seen == &have_lookahead) {
			if (parse_lookahead_ns(*argv, &lookahead_ns))
				return bad_value(keyword, *argv);
		} else if (parse_u32(*argv, seen == &have_ifg ? &ifg : &limit)) {
			return bad_value(keyword, *argv);
		}
	}

	/* Only what was given: the kernel keeps defaults (or current values) for the rest. */
	nest = addattr_nest(n, GAPPACE_MAXLEN, TCA_OPTIONS | NLA_F_NESTED);
	if (have_linkrate)
		addattr64(n, GAPPACE_MAXLEN, TCA_GAPPACE_LINKRATE, linkrate);
	if (have_ifg)
		addattr32(n, GAPPACE_MAXLEN, TCA_GAPPACE_IFG, ifg);
	if (have_limit)
		addattr32(n, GAPPACE_MAXLEN, TCA_GAPPACE_LIMIT, limit);
	if (have_lookahead)
		addattr32(n, GAPPACE_MAXLEN, TCA_GAPPACE_LOOKAHEAD, lookahead_ns);
	addattr_nest_end(n, nest);
	return 0;
}

/* "1Gbit", "2.5Gbit", "1500bit": like gapctl's format_rate. */
static void format_rate(char *buf, size_t len, uint64_t bits)
{
	static const struct {
		const char *name;
		uint64_t scale;
	} units[] = {{"Tbit", 1000000000000ULL}, {"Gbit", 1000000000ULL}, {"Mbit", 1000000ULL}, {"Kbit", 1000ULL}};
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (bits >= units[i].scale) {
			snprintf(buf, len, "%.4g%s", (double)bits / (double)units[i].scale, units[i].name);
			return;
		}
	}
	snprintf(buf, len, "%" PRIu64 "bit", bits);
}

/* A rate: bit/s as a number in JSON, with units in text. */
static void print_rate_bits(const char *key, const char *text_fmt, uint64_t bits)
{
	char text[64];

	format_rate(text, sizeof(text), bits);
	print_color_u64(PRINT_JSON, COLOR_NONE, key, NULL, bits);
	print_color_string(PRINT_FP, COLOR_NONE, NULL, text_fmt, text);
}

static __u32 rta_u32(const struct rtattr *rta)
{
	__u32 value;

	memcpy(&value, RTA_DATA(rta), sizeof(value));
	return value;
}

static int gappace_print_opt(struct qdisc_util *qu, FILE *f, struct rtattr *opt)
{
	struct rtattr *tb[TCA_GAPPACE_MAX + 1];

	(void)qu;
	(void)f;
	if (!opt)
		return 0;
	parse_rtattr_flags(tb, TCA_GAPPACE_MAX, RTA_DATA(opt), RTA_PAYLOAD(opt), NLA_F_NESTED);

	if (tb[TCA_GAPPACE_LINKRATE] && RTA_PAYLOAD(tb[TCA_GAPPACE_LINKRATE]) >= sizeof(__u64)) {
		uint64_t linkrate;

		memcpy(&linkrate, RTA_DATA(tb[TCA_GAPPACE_LINKRATE]), sizeof(linkrate));
		if (linkrate == 0) {
			print_color_u64(PRINT_JSON, COLOR_NONE, "linkrate", NULL, 0);
			print_color_string(PRINT_FP, COLOR_NONE, NULL, "linkrate %s ", "auto");
		} else {
			print_rate_bits("linkrate", "linkrate %s ", linkrate);
		}
	}
	if (tb[TCA_GAPPACE_IFG] && RTA_PAYLOAD(tb[TCA_GAPPACE_IFG]) >= sizeof(__u32))
		print_color_u64(PRINT_ANY, COLOR_NONE, "ifg", "ifg %" PRIu64 " ", rta_u32(tb[TCA_GAPPACE_IFG]));
	if (tb[TCA_GAPPACE_LIMIT] && RTA_PAYLOAD(tb[TCA_GAPPACE_LIMIT]) >= sizeof(__u32))
		print_color_u64(PRINT_ANY, COLOR_NONE, "limit", "limit %" PRIu64 "p ", rta_u32(tb[TCA_GAPPACE_LIMIT]));
	if (tb[TCA_GAPPACE_LOOKAHEAD] && RTA_PAYLOAD(tb[TCA_GAPPACE_LOOKAHEAD]) >= sizeof(__u32) &&
	    rta_u32(tb[TCA_GAPPACE_LOOKAHEAD])) {
		print_color_u64(PRINT_JSON, COLOR_NONE, "lookahead_ns", NULL, rta_u32(tb[TCA_GAPPACE_LOOKAHEAD]));
		print_color_u64(PRINT_FP, COLOR_NONE, NULL, "lookahead %" PRIu64 "us ",
				(rta_u32(tb[TCA_GAPPACE_LOOKAHEAD]) + 999) / 1000);
	}
	return 0;
}

/* The xstats, field by field. `line` starts a new text line before the field. */
#define XSTATS_FIELD(field, is_rate, line) \
	{ #field, offsetof(struct tc_gappace_xstats, field), sizeof(((struct tc_gappace_xstats *)0)->field), is_rate, line }

static const struct {
	const char *key;
	size_t offset;
	size_t size;
	bool is_rate;
	bool line;
} xstats_fields[] = {
	XSTATS_FIELD(linkrate, true, true),	     XSTATS_FIELD(rules, false, false),
	XSTATS_FIELD(ifg, false, false),	     XSTATS_FIELD(limit, false, false),
	XSTATS_FIELD(qlen, false, false),	     XSTATS_FIELD(data_packets, false, true),
	XSTATS_FIELD(data_bytes, false, false),	     XSTATS_FIELD(data_wire_bytes, false, false),
	XSTATS_FIELD(gap_frames, false, true),	     XSTATS_FIELD(gap_bytes, false, false),
	XSTATS_FIELD(gap_wire_bytes, false, false),  XSTATS_FIELD(paced_packets, false, true),
	XSTATS_FIELD(gso_segmented, false, false),   XSTATS_FIELD(drops, false, false),
	XSTATS_FIELD(idle_resyncs, false, false),    XSTATS_FIELD(gap_alloc_failures, false, false),
	XSTATS_FIELD(lookahead_waits, false, true),
};

static int gappace_print_xstats(struct qdisc_util *qu, FILE *f, struct rtattr *xstats)
{
	struct tc_gappace_xstats st;
	size_t received, i;
	bool first = true;

	(void)qu;
	(void)f;
	if (!xstats)
		return 0;
	/* Append-only struct: an older module sends less, a newer one more. */
	memset(&st, 0, sizeof(st));
	received = RTA_PAYLOAD(xstats) < sizeof(st) ? RTA_PAYLOAD(xstats) : sizeof(st);
	memcpy(&st, RTA_DATA(xstats), received);

	/* In an object of its own: tc's qdisc object already has "drops" and "qlen". */
	open_json_object("xstats");
	for (i = 0; i < sizeof(xstats_fields) / sizeof(xstats_fields[0]); i++) {
		const unsigned char *at = (const unsigned char *)&st + xstats_fields[i].offset;
		char fmt[64];
		uint64_t value;

		if (xstats_fields[i].offset + xstats_fields[i].size > received)
			continue;
		if (xstats_fields[i].size == sizeof(__u32)) {
			__u32 v32;

			memcpy(&v32, at, sizeof(v32));
			value = v32;
		} else {
			memcpy(&value, at, sizeof(value));
		}
		if (xstats_fields[i].line && !first)
			print_nl();
		first = false;
		snprintf(fmt, sizeof(fmt), "%s%s ", xstats_fields[i].line ? "  " : "", xstats_fields[i].key);
		print_color_string(PRINT_FP, COLOR_NONE, NULL, "%s", fmt);
		if (xstats_fields[i].is_rate)
			print_rate_bits(xstats_fields[i].key, "%s ", value);
		else
			print_color_u64(PRINT_ANY, COLOR_NONE, xstats_fields[i].key, "%" PRIu64 " ", value);
	}
	close_json_object();
	return 0;
}

struct qdisc_util gappace_qdisc_util = {
	.id = GAPPACE_QDISC_KIND,
	.parse_qopt = gappace_parse_opt,
	.print_qopt = gappace_print_opt,
	.print_xstats = gappace_print_xstats,
};
