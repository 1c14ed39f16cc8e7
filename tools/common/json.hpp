// A small streaming JSON writer: what our tools print with -j. Numbers are base units (bit/s, bytes).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gp {

class JsonWriter {
public:
	JsonWriter &begin_object();
	JsonWriter &end_object();
	JsonWriter &begin_array();
	JsonWriter &end_array();
	JsonWriter &key(std::string_view name);
	JsonWriter &value(std::string_view s);
	JsonWriter &value(const char *s) { return value(std::string_view(s)); }
	JsonWriter &value(uint64_t v);
	JsonWriter &value(int64_t v);
	JsonWriter &value(uint32_t v) { return value(static_cast<uint64_t>(v)); }
	JsonWriter &value(int v) { return value(static_cast<int64_t>(v)); }
	JsonWriter &value(double v);
	JsonWriter &value(bool v);
	JsonWriter &null();
	template <class T> JsonWriter &field(std::string_view name, const T &v) { return key(name).value(v); }

	const std::string &str() const { return out_; }

private:
	void separate();
	std::string out_;
	std::vector<bool> first_; // per open container: no element written yet
	bool after_key_ = false;
};

} // namespace gp
