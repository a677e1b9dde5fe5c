// A small strict JSON reader/writer for safetensors headers (core/serialize.cpp).
// Note [strict JSON]: RFC 8259 grammar only (no comments, no trailing commas, no NaN), valid
// UTF-8 with paired surrogates, nesting depth <= 32, duplicate object keys rejected. Numbers keep
// their text; as_index() accepts only plain non-negative integers that fit int64.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fw::json {

struct Value {
  enum Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Null;
  bool b = false;
  std::string text;  // a String's value or a Number's literal text
  std::vector<Value> array;
  std::vector<std::pair<std::string, Value>> object;  // in file order, keys unique
};

// Parses a whole document; anything but whitespace after the value is an error. Throws
// fw::Error "<context>: invalid JSON header at byte <i>: <what>".
Value parse(std::string_view text, const std::string& context);

// The kind as a word for error messages ("an object", "a string", ...).
const char* kind_name(Value::Kind k);

// Appends s as a JSON string literal (quotes, escapes of '"', '\\' and control characters).
void write_string(std::string& out, std::string_view s);

// True when s is valid UTF-8 (no overlong forms, no surrogates, <= U+10FFFF).
bool valid_utf8(std::string_view s);

}  // namespace fw::json
