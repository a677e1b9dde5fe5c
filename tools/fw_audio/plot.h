// fw-audio plot: a spectrogram picture with a time axis (seconds) and a frequency axis (Hz),
// tick marks and labels in a tiny built-in bitmap font, written as an 8-bit RGB PNG by libpng.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fw/tensor.h"

namespace fwaudio {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};

// A viridis-like perceptual colormap computed in OKLab: lightness rises linearly from dark
// violet through blue and green to yellow. t is clamped to [0, 1].
Rgb colormap(double t);

class Image {
 public:
  Image(int width, int height, Rgb fill = {255, 255, 255});
  int width() const { return w_; }
  int height() const { return h_; }
  void set(int x, int y, Rgb c) {
    if (x >= 0 && y >= 0 && x < w_ && y < h_) px_[size_t(y) * w_ + x] = c;
  }
  Rgb get(int x, int y) const { return px_[size_t(y) * w_ + x]; }
  void fill_rect(int x0, int y0, int x1, int y1, Rgb c);  // [x0, x1) x [y0, y1)
  const std::vector<Rgb>& pixels() const { return px_; }

 private:
  int w_, h_;
  std::vector<Rgb> px_;
};

// The built-in font: 3x5 pixel glyphs for "0123456789.sHzk" (and ' '), drawn `scale` times
// larger. text_width is the advance of the whole string (glyphs plus one pixel gaps).
int text_width(const std::string& s, int scale);
constexpr int kGlyphHeight = 5;
// Draws s with its top-left corner at (x, y); characters outside the font throw std::logic_error.
void draw_text(Image& img, int x, int y, const std::string& s, int scale, Rgb color);

// What the spectrogram covers: [0, duration] seconds, [f_min, f_max] Hz on the mel scale
// ("htk" or "slaney") its bins are spaced on.
struct SpectrogramAxes {
  double duration = 0;
  double f_min = 0, f_max = 8000;
  std::string mel_scale = "htk";
};

// Renders values (bins, frames), already scaled to [0, 1] (0 = floor, 1 = peak), with bin 0 at
// the bottom, into a width x height picture with axes, ticks and labels. Throws UsageError when
// the picture is too small for the axes.
Image render_spectrogram(const fw::Tensor& values, const SpectrogramAxes& axes, int width, int height);

// PNG bytes (8-bit RGB, non-interlaced) of img.
std::string png_bytes(const Image& img);

// "0.5", "1", "1.25": the shortest decimal spelling of v with at most `decimals` digits.
std::string format_number(double v, int decimals);

}  // namespace fwaudio
