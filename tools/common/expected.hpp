// Errors as values: an errno plus a human message (for netlink: the kernel's extack text).
// No exceptions cross our interfaces; C++20 has no std::expected, so this is the small subset we use.
#pragma once
#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace gp {

struct Error {
	int err = 0;		// positive errno
	std::string message;	// what went wrong, for a human; never empty on failure
};

template <class T> class Expected {
public:
	Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
	Expected(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

	bool has_value() const noexcept { return v_.index() == 0; }
	explicit operator bool() const noexcept { return has_value(); }
	T &value() & { assert(has_value()); return std::get<0>(v_); }
	const T &value() const & { assert(has_value()); return std::get<0>(v_); }
	T &&value() && { assert(has_value()); return std::get<0>(std::move(v_)); }
	T &operator*() & { return value(); }
	const T &operator*() const & { return value(); }
	T *operator->() { return &value(); }
	const T *operator->() const { return &value(); }
	const Error &error() const { assert(!has_value()); return std::get<1>(v_); }

private:
	std::variant<T, Error> v_;
};

template <> class Expected<void> {
public:
	Expected() = default;
	Expected(Error error) : error_(std::move(error)), ok_(false) {}
	bool has_value() const noexcept { return ok_; }
	explicit operator bool() const noexcept { return ok_; }
	const Error &error() const { assert(!ok_); return error_; }

private:
	Error error_;
	bool ok_ = true;
};

inline Error make_error(int err, std::string message) { return Error{err, std::move(message)}; }

} // namespace gp
