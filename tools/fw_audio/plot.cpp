#include "tools/fw_audio/plot.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "fw/fw.h"
#include "tools/fw_audio/args.h"

namespace fwaudio {

// ---- colormap
namespace {
double srgb_encode(double x) {
  x = std::clamp(x, 0.0, 1.0);
  return x <= 0.0031308 ? 12.92 * x : 1.055 * std::pow(x, 1 / 2.4) - 0.055;
}
uint8_t to_byte(double x) { return uint8_t(std::lround(std::clamp(x, 0.0, 1.0) * 255.0)); }
}  // namespace

Rgb colormap(double t) {
  t = std::isfinite(t) ? std::clamp(t, 0.0, 1.0) : 0.0;
  // OKLCh ramp: lightness 0.27 -> 0.93, hue 300 deg (violet) -> 105 deg (yellow) through blue
  // and green, chroma dipping in the teal middle and peaking in the yellow, like viridis.
  const double pi = 3.14159265358979323846;
  double L = 0.27 + 0.66 * t;
  double h = (300.0 - 195.0 * t) * pi / 180.0;
  double C = 0.10 - 0.06 * std::sin(pi * t) + 0.08 * t * t;
  double a = C * std::cos(h), b = C * std::sin(h);
  // OKLab -> linear sRGB (Ottosson's matrices).
  double l_ = L + 0.3963377774 * a + 0.2158037573 * b;
  double m_ = L - 0.1055613458 * a - 0.0638541728 * b;
  double s_ = L - 0.0894841775 * a - 1.2914855480 * b;
  double l = l_ * l_ * l_, m = m_ * m_ * m_, s = s_ * s_ * s_;
  double R = 4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s;
  double G = -1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s;
  double B = -0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s;
  return {to_byte(srgb_encode(R)), to_byte(srgb_encode(G)), to_byte(srgb_encode(B))};
}

// ---- image
Image::Image(int width, int height, Rgb fill) : w_(width), h_(height), px_(size_t(width) * size_t(height), fill) {}

void Image::fill_rect(int x0, int y0, int x1, int y1, Rgb c) {
  for (int y = std::max(0, y0); y < std::min(h_, y1); y++)
    for (int x = std::max(0, x0); x < std::min(w_, x1); x++) px_[size_t(y) * w_ + x] = c;
}

// ---- font: each glyph is 5 rows of up to 3 pixels, bit 2 = leftmost column.
namespace {
struct Glyph {
  char c;
  int width;
  uint8_t rows[kGlyphHeight];
};
constexpr Glyph kFont[] = {
    {'0', 3, {7, 5, 5, 5, 7}}, {'1', 3, {2, 6, 2, 2, 7}}, {'2', 3, {7, 1, 7, 4, 7}}, {'3', 3, {7, 1, 7, 1, 7}},
    {'4', 3, {5, 5, 7, 1, 1}}, {'5', 3, {7, 4, 7, 1, 7}}, {'6', 3, {7, 4, 7, 5, 7}}, {'7', 3, {7, 1, 1, 2, 2}},
    {'8', 3, {7, 5, 7, 5, 7}}, {'9', 3, {7, 5, 7, 1, 7}}, {'.', 1, {0, 0, 0, 0, 1}}, {'s', 3, {0, 3, 6, 3, 6}},
    {'H', 3, {5, 5, 7, 5, 5}}, {'z', 3, {0, 7, 3, 6, 7}}, {'k', 3, {4, 5, 6, 6, 5}}, {' ', 2, {0, 0, 0, 0, 0}},
};
const Glyph& glyph(char c) {
  for (const auto& g : kFont)
    if (g.c == c) return g;
  throw std::logic_error(std::string("fw-audio plot: no glyph for '") + c + "'");
}
}  // namespace

int text_width(const std::string& s, int scale) {
  int w = 0;
  for (size_t i = 0; i < s.size(); i++) w += (glyph(s[i]).width + (i + 1 < s.size() ? 1 : 0)) * scale;
  return w;
}

void draw_text(Image& img, int x, int y, const std::string& s, int scale, Rgb color) {
  for (char c : s) {
    const Glyph& g = glyph(c);
    for (int r = 0; r < kGlyphHeight; r++)
      for (int col = 0; col < g.width; col++)
        if (g.rows[r] >> (g.width - 1 - col) & 1) img.fill_rect(x + col * scale, y + r * scale, x + (col + 1) * scale, y + (r + 1) * scale, color);
    x += (g.width + 1) * scale;
  }
}

std::string format_number(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", std::max(0, decimals), v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

// ---- spectrogram picture
namespace {
double hz_to_mel(double f, const std::string& scale) {
  if (scale == "htk") return 2595.0 * std::log10(1.0 + f / 700.0);
  const double f_sp = 200.0 / 3, min_log_hz = 1000.0, min_log_mel = min_log_hz / f_sp, logstep = std::log(6.4) / 27.0;
  return f < min_log_hz ? f / f_sp : min_log_mel + std::log(f / min_log_hz) / logstep;
}

// 1, 2, 5 times a power of ten: the i-th such step from 10^-3 up.
double nice_step(int i) {
  static const double m[] = {1, 2, 5};
  return m[i % 3] * std::pow(10.0, i / 3 - 3);
}
// Digits after the point that multiples of step need (0.5 -> 1, 2.5 -> 1, 0.25 -> 2, 20 -> 0).
int decimals_of(double step) {
  for (int d = 0; d < 9; d++) {
    double x = step * std::pow(10.0, d);
    if (std::abs(x - std::round(x)) < 1e-6 * std::max(1.0, x)) return d;
  }
  return 9;
}

constexpr Rgb kInk{0, 0, 0};

struct Tick {
  int pos;
  std::string label;
};
}  // namespace

Image render_spectrogram(const fw::Tensor& values, const SpectrogramAxes& axes, int width, int height) {
  if (values.dim() != 2 || values.sizes()[0] < 1 || values.sizes()[1] < 1)
    throw Failure("nothing to plot: the spectrogram has shape " + [&] {
      std::string s;
      for (int64_t d : values.sizes()) s += (s.empty() ? "" : "x") + std::to_string(d);
      return s;
    }());
  const int64_t bins = values.sizes()[0], frames = values.sizes()[1];
  fw::Tensor v = values.to(fw::kFloat).contiguous();
  const float* data = v.data_ptr<float>();

  // Font scale and margins: vertical layout first (the frequency labels depend on the height).
  const int s = (width >= 480 && height >= 240) ? 2 : 1;
  const int tick = 3 * s, gap = 2 * s, gh = kGlyphHeight * s;
  // Top: the unit "Hz" above the axis, then room for half a label centred on the top edge.
  const int top = gap + gh + gap + gh / 2 + 1, bottom = 1 + tick + gap + gh + gap;
  const int ph = height - top - bottom;
  const std::string unit_t = "s", unit_f = "Hz";
  if (ph < 16) throw UsageError("--height " + std::to_string(height) + " is too small for the axes (need at least " + std::to_string(top + bottom + 16) + ")");

  // Frequency ticks: the finest 1-2-5 step whose labels do not touch on the mel-spaced axis.
  const double mel_lo = hz_to_mel(axes.f_min, axes.mel_scale), mel_hi = hz_to_mel(axes.f_max, axes.mel_scale);
  const double mel_span = mel_hi > mel_lo ? mel_hi - mel_lo : 1.0;
  auto freq_y = [&](double f) {  // row of frequency f; the bottom edge of the plot area is top + ph
    return top + ph - int(std::lround((hz_to_mel(f, axes.mel_scale) - mel_lo) / mel_span * ph));
  };
  auto freq_label = [](double f, double step) {
    return f < 1000 ? format_number(f, 0) : format_number(f / 1000.0, decimals_of(step / 1000.0)) + "k";
  };
  std::vector<Tick> fticks;
  double fstep = 0;
  for (int i = 3 * 3; i < 3 * 9; i++) {  // steps 1 Hz .. 500 kHz
    double step = nice_step(i);
    std::vector<Tick> t;
    bool ok = true;
    for (double f = std::ceil(axes.f_min / step - 1e-9) * step; f <= axes.f_max + 1e-6 * step; f += step) {
      int y = freq_y(f);
      if (!t.empty() && t.back().pos - y < gh + gap) {
        ok = false;
        break;
      }
      t.push_back({y, freq_label(f, step)});
    }
    if (ok) {
      fticks = std::move(t);
      fstep = step;
      break;
    }
  }
  // The mel scale leaves room at the low end: add the 1-2-5 values (100, 200, 500, 1k, 2k, ...)
  // that keep their distance from every label already there.
  if (fstep > 0) {
    for (int i = 3 * 3; i < 3 * 9; i++) {
      double f = nice_step(i);
      if (f <= axes.f_min || f > axes.f_max) continue;
      int y = freq_y(f);
      bool fits = true;
      for (const auto& t : fticks) fits = fits && std::abs(t.pos - y) >= gh + gap;
      if (fits) fticks.push_back({y, freq_label(f, f)});
    }
  }
  int label_w = text_width(unit_f, s);
  for (const auto& t : fticks) label_w = std::max(label_w, text_width(t.label, s));
  const int left = gap + label_w + gap + tick + 1;
  const int right = gap + text_width(unit_t, s) + gap;
  const int pw = width - left - right;
  if (pw < 16) throw UsageError("--width " + std::to_string(width) + " is too small for the axes (need at least " + std::to_string(left + right + 16) + ")");
  const int x0 = left, y0 = top, x1 = left + pw, y1 = top + ph;

  Image img(width, height);
  // The spectrogram, bilinearly resampled: pixel centres map to seconds and mel.
  const double duration = axes.duration > 0 ? axes.duration : 1.0;
  const double period = frames > 1 ? duration / double(frames - 1) : duration;
  std::vector<double> fcol(pw);
  for (int x = 0; x < pw; x++) fcol[x] = std::clamp((x + 0.5) / pw * duration / period, 0.0, double(frames - 1));
  for (int y = 0; y < ph; y++) {
    double mel = mel_lo + (ph - y - 0.5) / ph * mel_span;
    double b = std::clamp((mel - mel_lo) / mel_span * double(bins + 1) - 1.0, 0.0, double(bins - 1));
    int64_t b0 = int64_t(b), b1 = std::min(b0 + 1, bins - 1);
    double wb = b - double(b0);
    for (int x = 0; x < pw; x++) {
      int64_t f0 = int64_t(fcol[x]), f1 = std::min(f0 + 1, frames - 1);
      double wf = fcol[x] - double(f0);
      double lo = data[b0 * frames + f0] * (1 - wf) + data[b0 * frames + f1] * wf;
      double hi = data[b1 * frames + f0] * (1 - wf) + data[b1 * frames + f1] * wf;
      img.set(x0 + x, y0 + y, colormap(lo * (1 - wb) + hi * wb));
    }
  }
  // Axes lines along the left and bottom edges.
  img.fill_rect(x0 - 1, y0, x0, y1 + 1, kInk);
  img.fill_rect(x0 - 1, y1, x1, y1 + 1, kInk);

  // Frequency ticks and labels (right-aligned), unit on top.
  for (const auto& t : fticks) {
    int y = std::clamp(t.pos, y0, y1);
    img.fill_rect(x0 - 1 - tick, y - (s - 1) / 2, x0 - 1, y - (s - 1) / 2 + s, kInk);
    int ty = std::clamp(y - gh / 2, 0, height - gh);
    draw_text(img, x0 - 1 - tick - gap - text_width(t.label, s), ty, t.label, s, kInk);
  }
  draw_text(img, std::max(0, x0 - 1 - tick - gap - text_width(unit_f, s)), gap, unit_f, s, kInk);

  // Time ticks: the finest 1-2-5 step whose labels keep a gap, unit at the right end.
  const int unit_x = x1 + gap, label_y = y1 + 1 + tick + gap;
  draw_text(img, unit_x, label_y, unit_t, s, kInk);
  for (int i = 0; i < 3 * 10; i++) {
    double step = nice_step(i);
    int dec = decimals_of(step);
    int widest = text_width(format_number(std::floor(duration / step) * step, dec), s);
    if (step / duration * pw < widest + 3 * gap) continue;
    int last_right = -1;
    for (int64_t k = 0; double(k) * step <= duration * (1 + 1e-9); k++) {
      double t = double(k) * step;
      int x = x0 + std::min(pw - 1, int(std::lround(t / duration * pw)));
      img.fill_rect(x - (s - 1) / 2, y1 + 1, x - (s - 1) / 2 + s, y1 + 1 + tick, kInk);
      std::string label = format_number(t, dec);
      int w = text_width(label, s);
      int lx = std::clamp(x - w / 2, 0, width - w);
      if (lx <= last_right + gap || lx + w + gap > unit_x) continue;  // would touch a neighbour or the unit
      draw_text(img, lx, label_y, label, s, kInk);
      last_right = lx + w;
    }
    break;
  }
  return img;
}

// ---- PNG
namespace {
struct PngSink {
  std::string* out;
  char error[256];
  std::jmp_buf jmp;
};
void png_error_fn(png_structp png, png_const_charp msg) {
  auto* sink = static_cast<PngSink*>(png_get_error_ptr(png));
  std::snprintf(sink->error, sizeof sink->error, "%s", msg ? msg : "unknown libpng error");
  std::longjmp(sink->jmp, 1);
}
void png_warning_fn(png_structp, png_const_charp) {}
void png_write_fn(png_structp png, png_bytep data, png_size_t n) {
  auto* sink = static_cast<PngSink*>(png_get_io_ptr(png));
  sink->out->append(reinterpret_cast<const char*>(data), n);
}
void png_flush_fn(png_structp) {}

// The libpng calls, with no C++ objects alive between setjmp and a longjmp back.
bool encode_png(const Image& img, png_bytep* rows, PngSink* sink) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, sink, png_error_fn, png_warning_fn);
  if (!png) {
    std::snprintf(sink->error, sizeof sink->error, "png_create_write_struct failed");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    std::snprintf(sink->error, sizeof sink->error, "png_create_info_struct failed");
    return false;
  }
  if (setjmp(sink->jmp)) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, sink, png_write_fn, png_flush_fn);
  png_set_IHDR(png, info, png_uint_32(img.width()), png_uint_32(img.height()), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}
}  // namespace

std::string png_bytes(const Image& img) {
  static_assert(sizeof(Rgb) == 3, "Rgb must be packed bytes");
  std::string out;
  std::vector<png_bytep> rows(size_t(img.height()));
  auto* base = reinterpret_cast<png_bytep>(const_cast<Rgb*>(img.pixels().data()));
  for (int y = 0; y < img.height(); y++) rows[size_t(y)] = base + size_t(y) * size_t(img.width()) * 3;
  PngSink sink{&out, {0}, {}};
  if (!encode_png(img, rows.data(), &sink)) throw Failure(std::string("libpng: ") + sink.error);
  return out;
}

}  // namespace fwaudio
