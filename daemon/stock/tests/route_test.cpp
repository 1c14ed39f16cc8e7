// The route-metric actuator in a namespace of its own: the host route as `ip` shows it, its
// effect on a live connection's RTO, foreign routes left alone, purge.
#include <gtest/gtest.h>

#include <iostream>

#include "netns.hpp"
#include "stock.hpp"

namespace gp::stock {
namespace {

using testing::EchoClient;
using testing::FarServer;
using testing::NetnsPair;
using testing::run_command;

const std::string kOurProto = std::to_string(kRouteProtocolGappace);

class Routes : public testing::NetnsTest {
protected:
	std::string ip_family() const { return family() == AF_INET6 ? "-6" : "-4"; }
	std::string peer_text() const { return format_endpoint(pair_->far_address(family())); }
	// `ip route show` of what the main table has for the peer exactly.
	std::string show_peer_routes(const std::string &table = "main")
	{
		return run_command({"ip", ip_family(), "route", "show", "table", table, "exact", peer_text()}).output;
	}
	std::string show_our_routes()
	{
		return run_command({"ip", ip_family(), "route", "show", "table", "all", "proto", kOurProto}).output;
	}
	// A host address in the near subnet that nobody has.
	std::string spare_address(int last) const
	{
		return family() == AF_INET6 ? "fd77::" + std::to_string(last) : "10.77.0." + std::to_string(last);
	}
};

TEST_P(Routes, HostRouteWithLockedRtoMinAndQuickack)
{
	RouteActuator routes(*store_);
	auto in_use = lookup_route(pair_->far_address(family()));
	ASSERT_TRUE(in_use) << in_use.error().message;
	EXPECT_EQ(in_use->table, 254u);
	EXPECT_FALSE(in_use->gateway);
	EXPECT_EQ(in_use->fib_dst_len, family() == AF_INET6 ? 64 : 24) << "the subnet route is in use";
	ASSERT_TRUE(in_use->prefsrc);
	EXPECT_EQ(*in_use->prefsrc, pair_->near_address(family()));

	auto applied = routes.apply(pair_->far_address(family()), RouteSettings{5, true});
	ASSERT_TRUE(applied) << applied.error().message;
	const std::string shown = show_peer_routes();
	EXPECT_NE(shown.find("rto_min lock 5ms"), std::string::npos) << shown;
	EXPECT_NE(shown.find("quickack 1"), std::string::npos) << shown;
	EXPECT_NE(shown.find("proto " + kOurProto), std::string::npos) << shown;
	EXPECT_NE(shown.find(std::string("dev ") + NetnsPair::kNearIfname), std::string::npos) << shown;
	ASSERT_EQ(store_->state().routes.size(), 1u);
	EXPECT_EQ(store_->state().routes[0].rto_min_ms, 5u);

	// The kernel now uses our route.
	auto now = lookup_route(pair_->far_address(family()));
	ASSERT_TRUE(now);
	EXPECT_EQ(now->fib_protocol, kRouteProtocolGappace);

	// Applying again changes the metric in place: still one route.
	ASSERT_TRUE(routes.apply(pair_->far_address(family()), RouteSettings{10, true}));
	const std::string replaced = show_peer_routes();
	EXPECT_NE(replaced.find("rto_min lock 10ms"), std::string::npos) << replaced;
	EXPECT_EQ(replaced.find("5ms"), std::string::npos) << replaced;
	EXPECT_EQ(store_->state().routes[0].rto_min_ms, 10u);

	ASSERT_TRUE(routes.revert(pair_->far_address(family())));
	EXPECT_EQ(show_peer_routes(), "");
	EXPECT_EQ(show_our_routes(), "");
	EXPECT_TRUE(store_->state().routes.empty());
	auto again = routes.revert(pair_->far_address(family()));
	ASSERT_FALSE(again);
	EXPECT_EQ(again.error().err, ENOENT);
}

// Without quickack (the daemon's default, [rto] quickack), the route carries the locked
// rto_min and no RTAX_QUICKACK: the peer's ACKs stay delayed, one per two segments.
TEST_P(Routes, RtoMinWithoutQuickack)
{
	RouteActuator routes(*store_);
	ASSERT_TRUE(routes.apply(pair_->far_address(family()), RouteSettings{5, false}));
	const std::string shown = show_peer_routes();
	EXPECT_NE(shown.find("rto_min lock 5ms"), std::string::npos) << shown;
	EXPECT_EQ(shown.find("quickack"), std::string::npos) << shown;
	ASSERT_EQ(store_->state().routes.size(), 1u);
	EXPECT_FALSE(store_->state().routes[0].quickack);
	ASSERT_TRUE(routes.revert(pair_->far_address(family())));
	EXPECT_EQ(show_our_routes(), "");
}

TEST_P(Routes, ExistingConnectionPicksUpRtoMin)
{
	FarServer server(*pair_, family(), FarServer::Mode::echo);
	ASSERT_TRUE(server.ok());
	EchoClient connection(server.endpoint());
	ASSERT_TRUE(connection.connected());
	ASSERT_TRUE(connection.ping_pong(50));
	const uint32_t before = connection.rto_us();

	RouteActuator routes(*store_);
	ASSERT_TRUE(routes.apply(pair_->far_address(family()), RouteSettings{5, true}));
	const bool first_exchanges_ok = connection.ping_pong(1);
	const uint32_t during_first = connection.rto_us();
	// rttvar falls towards rto_min by a quarter per round trip: give it enough of them.
	ASSERT_TRUE(connection.ping_pong(200));
	const uint32_t during = connection.rto_us();

	ASSERT_TRUE(routes.revert(pair_->far_address(family())));
	ASSERT_TRUE(connection.ping_pong(200));
	const uint32_t after = connection.rto_us();

	EchoClient fresh(server.endpoint());
	ASSERT_TRUE(fresh.connected());
	ASSERT_TRUE(fresh.ping_pong(50));
	const uint32_t fresh_after = fresh.rto_us();

	std::cout << "[ measured ] " << (family() == AF_INET ? "IPv4" : "IPv6") << " rto before " << before / 1000.0
		  << " ms, after 1 exchange with rto_min 5ms " << during_first / 1000.0 << " ms, after 200 "
		  << during / 1000.0 << " ms, existing connection 200 exchanges after revert " << after / 1000.0
		  << " ms, new connection after revert " << fresh_after / 1000.0 << " ms\n";
	EXPECT_TRUE(first_exchanges_ok);
	EXPECT_GE(before, 200000u);
	EXPECT_LE(during, 20000u) << "the live connection must see the locked rto_min";
	EXPECT_GE(fresh_after, 200000u) << "after the revert, new connections have the default rto_min";
	// The existing connection keeps its low RTO after the revert (no estimator path raises
	// rttvar back to rto_min): shown above, not asserted, as it is the kernel's business.
}

TEST_P(Routes, ForeignHostRouteIsLeftAlone)
{
	ASSERT_EQ(run_command({"ip", ip_family(), "route", "add", peer_text(), "dev", NetnsPair::kNearIfname, "proto",
			       "static"})
			  .status,
		  0);
	const std::string before = show_peer_routes();
	RouteActuator routes(*store_);
	auto applied = routes.apply(pair_->far_address(family()), RouteSettings{5, true});
	ASSERT_FALSE(applied);
	EXPECT_EQ(applied.error().err, EEXIST);
	EXPECT_NE(applied.error().message.find("not ours"), std::string::npos) << applied.error().message;
	EXPECT_EQ(show_peer_routes(), before);
	EXPECT_EQ(before.find("rto_min"), std::string::npos);
	EXPECT_TRUE(store_->state().routes.empty()) << "a refused apply leaves no record";
}

TEST_P(Routes, RevertDeletesOnlyOurRoute)
{
	RouteActuator routes(*store_);
	ASSERT_TRUE(routes.apply(pair_->far_address(family()), RouteSettings{5, true}));
	// Somebody adds a host route of their own to the same peer, at another metric.
	ASSERT_EQ(run_command({"ip", ip_family(), "route", "add", peer_text(), "dev", NetnsPair::kNearIfname, "proto",
			       "static", "metric", "50"})
			  .status,
		  0);
	ASSERT_TRUE(routes.revert(pair_->far_address(family())));
	const std::string left = show_peer_routes();
	EXPECT_NE(left.find("proto static"), std::string::npos) << left;
	EXPECT_EQ(left.find("proto " + kOurProto), std::string::npos) << left;
	EXPECT_EQ(show_our_routes(), "");
}

TEST_P(Routes, RevertOfAVanishedRouteSucceeds)
{
	RouteActuator routes(*store_);
	ASSERT_TRUE(routes.apply(pair_->far_address(family()), RouteSettings{5, true}));
	ASSERT_EQ(run_command({"ip", ip_family(), "route", "del", peer_text(), "proto", kOurProto}).status, 0);
	auto reverted = routes.revert(pair_->far_address(family()));
	EXPECT_TRUE(reverted) << reverted.error().message;
	EXPECT_TRUE(store_->state().routes.empty());
}

TEST_P(Routes, PurgeDeletesEveryRouteOfOursAndNothingElse)
{
	RouteActuator routes(*store_);
	ASSERT_TRUE(routes.apply(pair_->far_address(family()), RouteSettings{5, true}));
	// Ours in another table, and in the main table at another metric.
	ASSERT_EQ(run_command({"ip", ip_family(), "route", "add", spare_address(9), "dev", NetnsPair::kNearIfname,
			       "proto", kOurProto, "table", "100"})
			  .status,
		  0);
	ASSERT_EQ(run_command({"ip", ip_family(), "route", "add", spare_address(10), "dev", NetnsPair::kNearIfname,
			       "proto", kOurProto, "metric", "7"})
			  .status,
		  0);
	// Not ours.
	ASSERT_EQ(run_command({"ip", ip_family(), "route", "add", spare_address(8), "dev", NetnsPair::kNearIfname,
			       "proto", "static"})
			  .status,
		  0);
	auto purged = purge_routes();
	ASSERT_TRUE(purged) << purged.error().message;
	EXPECT_EQ(*purged, 3u);
	EXPECT_EQ(show_our_routes(), "");
	const std::string foreign = run_command({"ip", ip_family(), "route", "show", "exact", spare_address(8)}).output;
	EXPECT_NE(foreign.find("proto static"), std::string::npos) << foreign;
	auto again = purge_routes();
	ASSERT_TRUE(again);
	EXPECT_EQ(*again, 0u);
	EXPECT_TRUE(routes.revert_all()) << "our own record of a purged route reverts as gone";
}

TEST_P(Routes, BadInput)
{
	RouteActuator routes(*store_);
	auto zero = routes.apply(pair_->far_address(family()), RouteSettings{0, true});
	ASSERT_FALSE(zero);
	EXPECT_EQ(zero.error().err, EINVAL);
	auto huge = routes.apply(pair_->far_address(family()), RouteSettings{120001, true});
	ASSERT_FALSE(huge);
	EXPECT_EQ(huge.error().err, EINVAL);
	auto local = routes.apply(pair_->near_address(family()), RouteSettings{5, true});
	ASSERT_FALSE(local);
	EXPECT_EQ(local.error().err, EINVAL);
	EXPECT_NE(local.error().message.find("local"), std::string::npos) << local.error().message;
	auto unreachable = routes.apply(*parse_host_address(family() == AF_INET6 ? "2001:db8::1" : "192.0.2.1"),
					RouteSettings{5, true});
	ASSERT_FALSE(unreachable);
	EXPECT_EQ(unreachable.error().err, ENETUNREACH) << unreachable.error().message;
	auto no_family = routes.apply(Endpoint{}, RouteSettings{5, true});
	ASSERT_FALSE(no_family);
	EXPECT_EQ(no_family.error().err, EINVAL);
	EXPECT_TRUE(store_->state().routes.empty());
	EXPECT_EQ(show_our_routes(), "");
}

TEST_P(Routes, CopiesTheNexthopAndMetricsOfAGatewayRoute)
{
	// A peer behind a gateway, on a route with metrics of its own in table 100 (selected by
	// a rule): our host route goes to the same table, via the same gateway, and keeps them.
	const std::string prefix = family() == AF_INET6 ? "fd99::/64" : "10.99.0.0/24";
	const std::string peer = family() == AF_INET6 ? "fd99::5" : "10.99.0.5";
	ASSERT_EQ(run_command({"ip", ip_family(), "route", "add", prefix, "via", peer_text(), "table", "100", "initcwnd",
			       "20", "advmss", "1200"})
			  .status,
		  0);
	ASSERT_EQ(run_command({"ip", ip_family(), "rule", "add", "to", prefix, "table", "100", "pref", "100"}).status, 0);
	auto in_use = lookup_route(*parse_host_address(peer));
	ASSERT_TRUE(in_use) << in_use.error().message;
	EXPECT_EQ(in_use->table, 100u) << run_command({"ip", ip_family(), "route", "get", peer}).output;
	EXPECT_EQ(in_use->fib_dst_len, family() == AF_INET6 ? 64 : 24);
	RouteActuator routes(*store_);
	auto applied = routes.apply(*parse_host_address(peer), RouteSettings{5, true});
	ASSERT_TRUE(applied) << applied.error().message;
	const std::string shown =
		run_command({"ip", ip_family(), "route", "show", "table", "100", "exact", peer}).output;
	EXPECT_NE(shown.find("via " + peer_text()), std::string::npos) << shown;
	EXPECT_NE(shown.find("initcwnd 20"), std::string::npos) << shown;
	EXPECT_NE(shown.find("advmss 1200"), std::string::npos) << shown;
	EXPECT_NE(shown.find("rto_min lock 5ms"), std::string::npos) << shown;
	ASSERT_EQ(store_->state().routes.size(), 1u);
	EXPECT_EQ(store_->state().routes[0].table, 100u);
	ASSERT_TRUE(store_->state().routes[0].gateway);
	ASSERT_TRUE(routes.revert(*parse_host_address(peer)));
	EXPECT_EQ(show_our_routes(), "");
}

INSTANTIATE_TEST_SUITE_P(Families, Routes, ::testing::Values(AF_INET, AF_INET6),
			 [](const auto &info) { return info.param == AF_INET ? "IPv4" : "IPv6"; });

} // namespace
} // namespace gp::stock
