// fw::utils::ProgressBar.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "fw/utils.h"

namespace fw::utils {

static bool stream_is_tty(std::ostream* out) {
  if (out == &std::cout) return isatty(STDOUT_FILENO) != 0;
  if (out == &std::cerr || out == &std::clog) return isatty(STDERR_FILENO) != 0;
  return false;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = int64_t(seconds);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)(s / 3600),
                  (long long)(s / 60 % 60), (long long)(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%02lld:%02lld", (long long)(s / 60), (long long)(s % 60));
  }
  return buf;
}

ProgressBar::ProgressBar(int64_t total, std::string desc, std::ostream* out,
                         std::optional<bool> tty)
    : total_(total), desc_(std::move(desc)), out_(out ? out : &std::cout),
      tty_(tty ? *tty : stream_is_tty(out_)), start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  if (tty_) draw(true);
}

ProgressBar::~ProgressBar() { close(); }

double ProgressBar::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double ProgressBar::rate() const {
  double t = elapsed();
  return t > 0 ? double(count_) / t : 0.0;
}

std::optional<double> ProgressBar::eta() const {
  double r = rate();
  if (total_ <= 0 || r <= 0) return std::nullopt;
  return double(std::max<int64_t>(total_ - count_, 0)) / r;
}

void ProgressBar::update(int64_t n) {
  count_ += n;
  if (tty_) draw(total_ > 0 && count_ >= total_);
}

void ProgressBar::set_postfix(std::vector<std::pair<std::string, double>> postfix) {
  postfix_ = std::move(postfix);
  if (tty_) draw(false);
}

std::string ProgressBar::render() const {
  std::ostringstream os;
  if (!desc_.empty()) os << desc_ << ": ";
  if (total_ > 0) {
    constexpr int kWidth = 20;
    double frac = std::min(1.0, double(count_) / double(total_));
    int filled = int(frac * kWidth);
    char pct[8];
    std::snprintf(pct, sizeof pct, "%3d%%", int(frac * 100));
    os << pct << '|' << std::string(filled, '#') << std::string(kWidth - filled, ' ') << "| "
       << count_ << '/' << total_;
  } else {
    os << count_;
  }
  auto e = eta();
  os << " [" << format_duration(elapsed());
  if (total_ > 0) os << '<' << (e ? format_duration(*e) : std::string("?"));
  char r[32];
  std::snprintf(r, sizeof r, ", %.2f it/s", rate());
  os << r;
  for (const auto& [k, v] : postfix_) {
    char val[32];
    std::snprintf(val, sizeof val, "%.4g", v);
    os << ", " << k << '=' << val;
  }
  os << ']';
  return os.str();
}

void ProgressBar::draw(bool force) {
  auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  // "\033[K" clears the rest of the line so a shorter render fully replaces the last one.
  *out_ << '\r' << render() << "\033[K" << std::flush;
}

void ProgressBar::close() {
  if (closed_) return;
  closed_ = true;
  if (tty_) {
    draw(true);
    *out_ << '\n' << std::flush;
  } else {
    *out_ << render() << '\n' << std::flush;
  }
}

}  // namespace fw::utils
