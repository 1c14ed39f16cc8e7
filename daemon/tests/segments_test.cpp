// Segment arithmetic (segments.hpp): the rates the stock backend sets, for IPv4 and IPv6
// connections.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include "segments.hpp"

namespace gp::daemon {
namespace {

TEST(Segments, AFullSegmentAtTheDefaultMtu)
{
	const Config config; // mtu 1500, frame_overhead 90
	const SegmentBytes v4 = full_segment(config, AF_INET);
	EXPECT_DOUBLE_EQ(v4.payload, 1448);
	EXPECT_DOUBLE_EQ(v4.on_wire, 1538) << "1448 + 90: a 1514-byte frame, FCS, preamble and gap";
	EXPECT_DOUBLE_EQ(v4.at_device, 1514);
	const SegmentBytes v6 = full_segment(config, AF_INET6);
	EXPECT_DOUBLE_EQ(v6.payload, 1428);
	EXPECT_DOUBLE_EQ(v6.on_wire, 1538) << "the same frame on the wire, 20 bytes less payload";
	EXPECT_DOUBLE_EQ(v6.at_device, 1514);
}

TEST(Segments, PayloadCapsOfAWireRate)
{
	const Config config;
	// 200 Mbit/s on the wire: 188.3 Mbit/s of IPv4 payload, 185.7 of IPv6.
	EXPECT_EQ(payload_rate_bps(200000000, config, AF_INET), static_cast<uint64_t>(200e6 * 1448 / 1538));
	EXPECT_EQ(payload_rate_bps(200000000, config, AF_INET6), static_cast<uint64_t>(200e6 * 1428 / 1538));
	EXPECT_LT(payload_rate_bps(200000000, config, AF_INET6), payload_rate_bps(200000000, config, AF_INET));
	// Without a frame overhead the wire rate is an IPv4 payload rate; IPv6 still pays its 20.
	Config bare;
	bare.frame_overhead = 0;
	EXPECT_EQ(payload_rate_bps(100000000, bare, AF_INET), 100000000u);
	EXPECT_EQ(payload_rate_bps(100000000, bare, AF_INET6), static_cast<uint64_t>(100e6 * 1428 / 1448));
	EXPECT_EQ(payload_rate_bps(1, config, AF_INET), 8u) << "never 0: 0 would lift the cap";
}

TEST(Segments, BucketBytesOfAWireShare)
{
	Config config;
	config.frame_overhead = 66; // the namespace cluster's tbf counts frames without FCS and gap
	// Where the bottleneck counts exactly what the device does, the bucket counts the share,
	// for either family: the same 1514-byte frame.
	EXPECT_EQ(bucket_bytes_per_second(8000000, config, AF_INET), 1000000u);
	EXPECT_EQ(bucket_bytes_per_second(8000000, config, AF_INET6), 1000000u);
	config.frame_overhead = 90;
	EXPECT_EQ(bucket_bytes_per_second(8000000, config, AF_INET), static_cast<uint64_t>(1e6 * 1514 / 1538));
	EXPECT_EQ(bucket_bytes_per_second(0, config, AF_INET), 1u);
}

TEST(Segments, PayloadRateOfAWholeBucket)
{
	const Config config; // 1514 bucket bytes per 1448 (IPv4) or 1428 (IPv6) bytes of payload
	// 1 MB/s through the bucket: 1000000 / 1514 segments a second.
	EXPECT_EQ(bucket_payload_rate_bps(1000000, config, AF_INET), static_cast<uint64_t>(8e6 * 1448 / 1514));
	EXPECT_EQ(bucket_payload_rate_bps(1000000, config, AF_INET6), static_cast<uint64_t>(8e6 * 1428 / 1514));
	// The round trip: a share into the bucket and back is the share's payload cap (to rounding).
	const uint64_t share = 3103000;
	const uint64_t back = bucket_payload_rate_bps(bucket_bytes_per_second(share, config, AF_INET), config, AF_INET);
	EXPECT_NEAR(static_cast<double>(back), static_cast<double>(payload_rate_bps(share, config, AF_INET)), 16);
	EXPECT_EQ(bucket_payload_rate_bps(0, config, AF_INET), 8u) << "never 0: 0 would lift the cap";
}

TEST(Segments, MtusTooSmallForTheHeadersFallBackToTheMinimumMss)
{
	Config config;
	config.mtu = 68;
	EXPECT_DOUBLE_EQ(full_segment(config, AF_INET).payload, 16);
	EXPECT_DOUBLE_EQ(full_segment(config, AF_INET6).payload, 1220);
	config.mtu = 9000;
	EXPECT_DOUBLE_EQ(full_segment(config, AF_INET6).payload, 8928);
}

} // namespace
} // namespace gp::daemon
