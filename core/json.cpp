// Strict JSON reader/writer for safetensors headers; see Note [strict JSON] in json.h.
#include "core/json.h"

#include <set>

#include "fw/error.h"

namespace fw::json {

namespace {

constexpr int kMaxDepth = 32;

// Length of the UTF-8 sequence at s[i] (0 when invalid).
size_t utf8_len(std::string_view s, size_t i) {
  auto c = uint8_t(s[i]);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; k++) {
    auto cc = uint8_t(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  Parser(std::string_view s, const std::string& context) : s_(s), context_(context) {}

  Value document() {
    skip_ws();
    Value v = value(0);
    skip_ws();
    if (i_ != s_.size()) fail("unexpected data after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    detail::throw_error(context_, ": invalid JSON header at byte ", i_, ": ", what);
  }
  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[i_]; }
  void skip_ws() {
    while (!at_end() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) i_++;
  }
  void expect(char c) {
    if (peek() != c || at_end()) fail(std::string("expected '") + c + "'");
    i_++;
  }
  void literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) fail("invalid literal");
    i_ += word.size();
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than 32");
    if (at_end()) fail("unexpected end of the header");
    Value v;
    char c = s_[i_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') {
      v.kind = Value::String;
      v.text = string();
    } else if (c == 't') {
      literal("true"), v.kind = Value::Bool, v.b = true;
    } else if (c == 'f') {
      literal("false"), v.kind = Value::Bool;
    } else if (c == 'n') {
      literal("null");
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Value::Number;
      v.text = number();
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  Value object(int depth) {
    Value v;
    v.kind = Value::Object;
    std::set<std::string> keys;
    i_++;
    skip_ws();
    if (peek() == '}') return i_++, v;
    while (true) {
      skip_ws();
      if (peek() != '"') fail("expected a string key");
      size_t key_at = i_;
      std::string key = string();
      if (!keys.insert(key).second) {
        i_ = key_at;
        fail("duplicate key '" + key + "'");
      }
      skip_ws();
      expect(':');
      skip_ws();
      v.object.emplace_back(std::move(key), value(depth + 1));
      skip_ws();
      if (peek() == ',' && !at_end()) { i_++; continue; }
      expect('}');
      return v;
    }
  }

  Value array(int depth) {
    Value v;
    v.kind = Value::Array;
    i_++;
    skip_ws();
    if (peek() == ']' && !at_end()) return i_++, v;
    while (true) {
      skip_ws();
      v.array.push_back(value(depth + 1));
      skip_ws();
      if (peek() == ',' && !at_end()) { i_++; continue; }
      expect(']');
      return v;
    }
  }

  uint32_t hex4() {
    if (i_ + 4 > s_.size()) fail("truncated \\u escape");
    uint32_t cp = 0;
    for (int k = 0; k < 4; k++) {
      char h = s_[i_++];
      int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) fail("invalid \\u escape");
      cp = cp * 16 + uint32_t(d);
    }
    return cp;
  }

  void escape(std::string& out) {
    if (at_end()) fail("unterminated string");
    char e = s_[i_++];
    switch (e) {
      case '"': out += '"'; return;
      case '\\': out += '\\'; return;
      case '/': out += '/'; return;
      case 'b': out += '\b'; return;
      case 'f': out += '\f'; return;
      case 'n': out += '\n'; return;
      case 'r': out += '\r'; return;
      case 't': out += '\t'; return;
      case 'u': break;
      default: fail("invalid escape");
    }
    uint32_t cp = hex4();
    if (cp >= 0xDC00 && cp <= 0xDFFF) fail("unpaired surrogate in \\u escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (s_.substr(i_, 2) != "\\u") fail("unpaired surrogate in \\u escape");
      i_ += 2;
      uint32_t lo = hex4();
      if (lo < 0xDC00 || lo > 0xDFFF) fail("unpaired surrogate in \\u escape");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    append_utf8(out, cp);
  }

  std::string string() {
    std::string out;
    i_++;
    while (true) {
      if (at_end()) fail("unterminated string");
      auto c = uint8_t(s_[i_]);
      if (c == '"') return i_++, out;
      if (c < 0x20) fail("control character in string");
      if (c == '\\') {
        i_++;
        escape(out);
        continue;
      }
      size_t n = utf8_len(s_, i_);
      if (n == 0) fail("invalid UTF-8 in string");
      out.append(s_.substr(i_, n));
      i_ += n;
    }
  }

  std::string number() {
    size_t start = i_;
    auto digits = [&] {
      size_t d0 = i_;
      while (!at_end() && s_[i_] >= '0' && s_[i_] <= '9') i_++;
      if (i_ == d0) fail("invalid number");
    };
    if (peek() == '-') i_++;
    if (peek() == '0' && !at_end()) i_++;
    else digits();
    if (peek() == '.' && !at_end()) i_++, digits();
    if ((peek() == 'e' || peek() == 'E') && !at_end()) {
      i_++;
      if (peek() == '+' || peek() == '-') i_++;
      digits();
    }
    return std::string(s_.substr(start, i_ - start));
  }

  std::string_view s_;
  const std::string& context_;
  size_t i_ = 0;
};

}  // namespace

Value parse(std::string_view text, const std::string& context) { return Parser(text, context).document(); }

const char* kind_name(Value::Kind k) {
  static constexpr const char* kNames[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
  return kNames[k];
}

void write_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    auto c = uint8_t(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  out += '"';
}

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_len(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace fw::json
