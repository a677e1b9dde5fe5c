// fw::audio::functional::apply_codec against torchaudio 0.13 (tests/fixtures/audio/gen_codec.py ->
// codec.safetensors): WAV encodings bit for bit, Vorbis to its coding noise; FLAC (which
// torchaudio's in-memory round trip cannot do) against the equivalent 24-bit WAV; shapes and
// errors.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "fw/audio.h"
#include "tests/audio/audio_fixture.h"
#include "tests/expect_error.h"

namespace {

namespace F = fw::audio::functional;
using fw::Tensor;
using fwtest::audio::Case;

const fwtest::audio::FixtureFile& fix() {
  static const fwtest::audio::FixtureFile f("codec");
  return f;
}

Tensor run(const Case& c, const Tensor& x) {
  return F::apply_codec(x, c.i("sr"), c.str("format"), c.flag("channels_first", true),
                        c.has("compression") ? std::optional<double>(c.num("compression")) : std::nullopt,
                        c.has("encoding") ? std::optional<std::string>(c.str("encoding")) : std::nullopt,
                        c.has("bits_per_sample") ? std::optional<int64_t>(c.i("bits_per_sample")) : std::nullopt);
}

TEST(AudioCodec, MatchesTorchaudio) {
  int n = 0;
  for (const Case& c : fix().cases("")) {
    const Tensor x = fix().out(c, "x"), expected = fix().out(c);
    const Tensor y = run(c, x);
    ASSERT_EQ(y.sizes().vec(), expected.sizes().vec()) << c.name;
    EXPECT_EQ(y.dtype(), fw::kFloat);
    if (c.str("format") == "wav") {
      FW_AUDIO_EXPECT_CLOSE(c, y, expected, 0, 0, 1e-7);  // the same quantized samples
    } else {
      // Vorbis: both sides run libvorbis at the same quality; the decoded signals agree to far
      // below the coding noise (which is what the round trip adds).
      const double noise = (expected - x).pow(2).mean().item<double>();
      const double diff = (y - expected).pow(2).mean().item<double>();
      EXPECT_GT(noise, 0) << c.name;
      EXPECT_LT(diff, 0.5 * noise) << c.name << ": coding noise " << noise << ", fw vs torchaudio " << diff;
    }
    n++;
  }
  EXPECT_GE(n, 13);
}

TEST(AudioCodec, FlacShapesAndBatches) {
  const Tensor x = fix().out(fix().cases("wav_pcm24")[0], "x");
  // FLAC is lossless at its default 24 bits: the same samples as a 24-bit WAV.
  const Tensor flac = F::apply_codec(x, 16000, "flac");
  const Tensor wav24 = F::apply_codec(x, 16000, "wav", true, std::nullopt, "PCM_S", 24);
  EXPECT_TRUE(fw::equal(flac, wav24));
  EXPECT_TRUE(fw::equal(F::apply_codec(x, 16000, "FLAC", true, 0.0, std::nullopt, 16),
                        F::apply_codec(x, 16000, "wav", true, std::nullopt, "PCM_S", 16)));
  // Mono (time) stays 1-D; leading dims are a batch of separate files.
  const Tensor m = F::apply_codec(x[0], 16000, "wav", true, std::nullopt, "ULAW", 8);
  EXPECT_EQ(m.dim(), 1);
  EXPECT_TRUE(fw::equal(m, F::apply_codec(x, 16000, "wav", true, std::nullopt, "ULAW", 8)[0]));
  const Tensor batch = fw::stack({x, x * 0.5, x * 0.25}).reshape({3, 1, x.size(-1)}).unsqueeze(0);
  const Tensor yb = F::apply_codec(batch, 16000, "wav", true, std::nullopt, "PCM_S", 16);
  ASSERT_EQ(yb.sizes().vec(), batch.sizes().vec());
  EXPECT_TRUE(fw::equal(yb[0][1], F::apply_codec(batch[0][1], 16000, "wav", true, std::nullopt, "PCM_S", 16)));
}

TEST(AudioCodec, Errors) {
  const Tensor x = fw::zeros({1, 100});
  EXPECT_ERROR(F::apply_codec(x, 16000, "mp3"), "format mp3 is not supported");
  EXPECT_ERROR(F::apply_codec(x, 0, "wav"), "sample_rate must be positive");
  EXPECT_ERROR(F::apply_codec(x, 16000, "wav", true, std::nullopt, "ULAW", 16), "[audio::apply_codec] the wav round trip failed: [audio::save] wav only supports 8-bit for mu-law");
  EXPECT_ERROR(F::apply_codec(x, 16000, "ogg", true, 20.0), "vorbis compression must be in [-1, 10]");
  EXPECT_ERROR(F::apply_codec(fw::ones({}), 16000, "wav"), "0-d");
}

}  // namespace
