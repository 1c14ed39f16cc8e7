// Loss, reordering and duplication of one numbered stream, from the sequence numbers seen in
// arrival order. Memory grows with the number of holes (runs of missing numbers), not with the
// number of datagrams, so a long clean run costs nothing and a wild jump costs one entry.
#pragma once
#include <cstdint>
#include <map>
#include <optional>

namespace gp::traffic {

class SequenceTracker {
public:
	// With `first_expected`, numbers below the first one seen count as lost from there on (a sink
	// knows senders start at 0); without, counting starts at the lowest number seen (a capture may
	// start in the middle of a stream).
	explicit SequenceTracker(std::optional<uint64_t> first_expected = std::nullopt)
		: first_expected_(first_expected)
	{
	}

	void observe(uint64_t seq)
	{
		++received_;
		if (!highest_) {
			start_at(seq);
			return;
		}
		if (seq > *highest_) {
			if (seq > *highest_ + 1)
				add_hole(*highest_ + 1, seq - 1);
			highest_ = seq;
		} else if (seq == *highest_) {
			++duplicated_;
		} else if (seq < lowest_) {
			++reordered_; // lower than the highest seen, and never seen before
			if (seq + 1 < lowest_)
				add_hole(seq + 1, lowest_ - 1);
			lowest_ = seq;
		} else if (fill_hole(seq)) {
			++reordered_;
		} else {
			++duplicated_;
		}
	}

	uint64_t received() const { return received_; }
	uint64_t lost() const { return missing_; } // numbers in [lowest, highest] never seen
	uint64_t reordered() const { return reordered_; }
	uint64_t duplicated() const { return duplicated_; }
	std::optional<uint64_t> lowest() const { return highest_ ? std::optional(lowest_) : std::nullopt; }
	std::optional<uint64_t> highest() const { return highest_; }

private:
	void start_at(uint64_t seq)
	{
		highest_ = seq;
		lowest_ = seq;
		if (first_expected_ && seq > *first_expected_) {
			add_hole(*first_expected_, seq - 1);
			lowest_ = *first_expected_;
		}
	}

	void add_hole(uint64_t first, uint64_t last)
	{
		holes_.emplace(first, last);
		missing_ += last - first + 1;
	}

	// Removes `seq` from the hole containing it; false if it was in none (already seen).
	bool fill_hole(uint64_t seq)
	{
		auto it = holes_.upper_bound(seq);
		if (it == holes_.begin())
			return false;
		--it;
		const auto [first, last] = *it;
		if (last < seq)
			return false;
		holes_.erase(it);
		if (first < seq)
			holes_.emplace(first, seq - 1);
		if (seq < last)
			holes_.emplace(seq + 1, last);
		--missing_;
		return true;
	}

	std::optional<uint64_t> first_expected_;
	std::optional<uint64_t> highest_;
	uint64_t lowest_ = 0;
	std::map<uint64_t, uint64_t> holes_; // first -> last (inclusive), disjoint
	uint64_t missing_ = 0;
	uint64_t received_ = 0, reordered_ = 0, duplicated_ = 0;
};

} // namespace gp::traffic
