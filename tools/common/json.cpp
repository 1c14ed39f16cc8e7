#include "json.hpp"

#include <cmath>
#include <cstdio>

namespace gp {

void JsonWriter::separate()
{
	if (after_key_) {
		after_key_ = false;
		return;
	}
	if (!first_.empty()) {
		if (!first_.back())
			out_ += ',';
		first_.back() = false;
	}
}

JsonWriter &JsonWriter::begin_object()
{
	separate();
	out_ += '{';
	first_.push_back(true);
	return *this;
}

JsonWriter &JsonWriter::end_object()
{
	out_ += '}';
	first_.pop_back();
	return *this;
}

JsonWriter &JsonWriter::begin_array()
{
	separate();
	out_ += '[';
	first_.push_back(true);
	return *this;
}

JsonWriter &JsonWriter::end_array()
{
	out_ += ']';
	first_.pop_back();
	return *this;
}

JsonWriter &JsonWriter::key(std::string_view name)
{
	value(name);
	out_ += ':';
	after_key_ = true;
	return *this;
}

JsonWriter &JsonWriter::value(std::string_view s)
{
	separate();
	out_ += '"';
	for (const char c : s) {
		switch (c) {
		case '"': out_ += "\\\""; break;
		case '\\': out_ += "\\\\"; break;
		case '\n': out_ += "\\n"; break;
		case '\t': out_ += "\\t"; break;
		case '\r': out_ += "\\r"; break;
		default:
			if (static_cast<unsigned char>(c) < 0x20) {
				char buf[8];
				std::snprintf(buf, sizeof(buf), "\\u%04x", c);
				out_ += buf;
			} else {
				out_ += c;
			}
		}
	}
	out_ += '"';
	return *this;
}

JsonWriter &JsonWriter::value(uint64_t v)
{
	separate();
	out_ += std::to_string(v);
	return *this;
}

JsonWriter &JsonWriter::value(int64_t v)
{
	separate();
	out_ += std::to_string(v);
	return *this;
}

JsonWriter &JsonWriter::value(double v)
{
	if (!std::isfinite(v))
		return null();
	separate();
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%.9g", v);
	out_ += buf;
	return *this;
}

JsonWriter &JsonWriter::value(bool v)
{
	separate();
	out_ += v ? "true" : "false";
	return *this;
}

JsonWriter &JsonWriter::null()
{
	separate();
	out_ += "null";
	return *this;
}

} // namespace gp
