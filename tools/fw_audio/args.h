// fw-audio's command line: a table of typed options per subcommand, parsed Kaldi style.
//   --name=value | --name value      every option
//   --flag | --flag=true|false | --flag true|false | --no-flag      booleans
//   --name=none                      options whose default is "none" (optional values)
// Values are checked while parsing, so a bad number or a missing value fails before any work.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fwaudio {

// A wrong command line (unknown option, bad value, wrong arguments): exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A failure while running (unreadable input, unwritable output): exit status 1.
// main prints either as one line "fw-audio: <subcommand>: <what()>".
class Failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class OptionSet {
 public:
  enum class Kind { Int, Double, Bool, String };

  // `def` is the default as text ("none" for an optional value that is unset by default);
  // `choices`, when given, lists the accepted strings (String options) or the extra words a Bool
  // option takes besides true/false (e.g. spectrogram's --normalized=window).
  OptionSet& add(Kind kind, const std::string& name, const std::string& def, const std::string& help,
                 std::vector<std::string> choices = {}, bool nullable = false);
  OptionSet& add_int(const std::string& name, const std::string& def, const std::string& help, bool nullable = false) {
    return add(Kind::Int, name, def, help, {}, nullable);
  }
  OptionSet& add_double(const std::string& name, const std::string& def, const std::string& help,
                        bool nullable = false) {
    return add(Kind::Double, name, def, help, {}, nullable);
  }
  OptionSet& add_bool(const std::string& name, bool def, const std::string& help, std::vector<std::string> words = {}) {
    return add(Kind::Bool, name, def ? "true" : "false", help, std::move(words));
  }
  OptionSet& add_string(const std::string& name, const std::string& def, const std::string& help,
                        std::vector<std::string> choices = {}, bool nullable = false) {
    return add(Kind::String, name, def, help, std::move(choices), nullable);
  }

  // Parses argv; options may come before, between or after the positional arguments ("--" ends
  // the options). Returns the positional arguments. Sets help_requested() on --help / -h.
  std::vector<std::string> parse(const std::vector<std::string>& args);
  bool help_requested() const { return help_; }

  // Typed values (the default when the option was not given). get_* throw std::logic_error on
  // a name that was not declared, which is a bug in fw-audio, not a user error.
  int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  std::string get_string(const std::string& name) const;
  std::optional<int64_t> get_opt_int(const std::string& name) const;
  std::optional<double> get_opt_double(const std::string& name) const;
  std::optional<std::string> get_opt_string(const std::string& name) const;
  // The raw text of the value (a Bool option's extra words come back here).
  const std::string& text(const std::string& name) const;
  bool given(const std::string& name) const;
  bool has(const std::string& name) const;

  // "  --n-fft=INT   size of the FFT (default 400)" lines, aligned.
  std::string describe() const;

 private:
  struct Opt {
    Kind kind;
    std::string name, def, help;
    std::vector<std::string> choices;
    bool nullable = false;
    std::string value;  // normalised text of the current value
    bool given = false;
  };
  const Opt& find(const std::string& name) const;
  Opt* lookup(const std::string& name);
  void set(Opt& o, const std::string& value);
  std::vector<Opt> opts_;
  bool help_ = false;
};

// Number parsing shared with the rest of the tool: the whole string must be a finite number.
std::optional<int64_t> parse_int(const std::string& s);
std::optional<double> parse_double(const std::string& s);
// Kaldi's ToBool: true/t/1 and false/f/0, any case.
std::optional<bool> parse_bool(const std::string& s);

}  // namespace fwaudio
