// Parsing of user-facing quantities: the units tc users type.
#include "units.hpp"

#include <gtest/gtest.h>

namespace {

TEST(ParseRate, TcUnits)
{
	EXPECT_EQ(gp::parse_rate("1gbit"), 1000000000ULL);
	EXPECT_EQ(gp::parse_rate("250Mbit"), 250000000ULL);
	EXPECT_EQ(gp::parse_rate("1.5kbit"), 1500ULL);
	EXPECT_EQ(gp::parse_rate("100"), 100ULL);
	EXPECT_EQ(gp::parse_rate("1mibit"), 1048576ULL);
	EXPECT_EQ(gp::parse_rate("10mbps"), 80000000ULL);
	EXPECT_EQ(gp::parse_rate("4tbit"), 4000000000000ULL);
}

TEST(ParseRate, RejectsJunk)
{
	EXPECT_FALSE(gp::parse_rate(""));
	EXPECT_FALSE(gp::parse_rate("fast"));
	EXPECT_FALSE(gp::parse_rate("10 furlongs"));
	EXPECT_FALSE(gp::parse_rate("-1gbit"));
	EXPECT_FALSE(gp::parse_rate("99999999999999999999"));
	EXPECT_FALSE(gp::parse_rate("99999999999tbit"));  // overflows u64
	EXPECT_FALSE(gp::parse_rate("1.2.3mbit"));
}

TEST(ParseTime, RoundsUpToMicroseconds)
{
	EXPECT_EQ(gp::parse_time_us("5ms"), 5000ULL);
	EXPECT_EQ(gp::parse_time_us("200us"), 200ULL);
	EXPECT_EQ(gp::parse_time_us("1500ns"), 2ULL);
	EXPECT_EQ(gp::parse_time_us("1s"), 1000000ULL);
	EXPECT_EQ(gp::parse_time_us("7"), 7ULL);
	EXPECT_FALSE(gp::parse_time_us("5 minutes"));
}

TEST(ParseSize, BinaryUnits)
{
	EXPECT_EQ(gp::parse_size("64k"), 65536ULL);
	EXPECT_EQ(gp::parse_size("1m"), 1048576ULL);
	EXPECT_EQ(gp::parse_size("1500"), 1500ULL);
}

TEST(FormatRate, LikeTc)
{
	EXPECT_EQ(gp::format_rate(1000000000ULL), "1Gbit");
	EXPECT_EQ(gp::format_rate(250000000ULL), "250Mbit");
	EXPECT_EQ(gp::format_rate(999), "999bit");
}

} // namespace
