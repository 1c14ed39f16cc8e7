// Vocabulary every part of gp-alltoall shares: exchange patterns, sides of the bottleneck, hint modes.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace gp::alltoall {

// The values travel in the rendezvous protocol (wire.hpp): keep them stable.
enum class Pattern : uint8_t { Pairwise = 1, Ring = 2, Half = 3 };
enum class Side : uint8_t { None = 0, Left = 1, Right = 2 };
enum class HintMode : uint8_t { None = 0, Iteration = 1, Once = 2 };

inline std::string_view pattern_name(Pattern pattern)
{
	switch (pattern) {
	case Pattern::Pairwise: return "pairwise";
	case Pattern::Ring: return "ring";
	case Pattern::Half: return "half";
	}
	return "?";
}

inline std::optional<Pattern> pattern_from_name(std::string_view name)
{
	for (Pattern p : {Pattern::Pairwise, Pattern::Ring, Pattern::Half})
		if (pattern_name(p) == name)
			return p;
	return std::nullopt;
}

inline std::string_view side_name(Side side)
{
	switch (side) {
	case Side::None: return "none";
	case Side::Left: return "left";
	case Side::Right: return "right";
	}
	return "?";
}

inline std::optional<Side> side_from_name(std::string_view name)
{
	if (name == "left")
		return Side::Left;
	if (name == "right")
		return Side::Right;
	return std::nullopt;
}

inline std::string_view hint_mode_name(HintMode mode)
{
	switch (mode) {
	case HintMode::None: return "none";
	case HintMode::Iteration: return "iteration";
	case HintMode::Once: return "once";
	}
	return "?";
}

inline std::optional<HintMode> hint_mode_from_name(std::string_view name)
{
	for (HintMode m : {HintMode::None, HintMode::Iteration, HintMode::Once})
		if (hint_mode_name(m) == name)
			return m;
	return std::nullopt;
}

} // namespace gp::alltoall
