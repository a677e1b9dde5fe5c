// W6 (and the resample targets of the audio issue): fw's MelSpectrogram, MFCC, Kaldi fbank on 60 s
// of 16 kHz audio, resampling 60 s of 44.1 kHz / 48 kHz audio to 16 kHz and Kaldi pitch of 60 s of
// 16 kHz speech, the Conformer / wav2vec2_base encoders, conv_tasnet_base, emformer_rnnt_base's
// transcriber, hdemucs_high and Tacotron2's inference. Prints one line per workload, "name median_ms", for benchmarks/audio/compare.sh,
// which runs torchaudio on the same shapes (bench_torchaudio.py) alternately and prints the ratios.
#include <fw/audio.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

double median_ms(const std::function<void()>& f, int reps) {
  for (int i = 0; i < 3; i++) f();
  std::vector<double> t;
  for (int i = 0; i < reps; i++) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  fw::manual_seed(0);
  namespace T = fw::audio::transforms;
  fw::NoGradGuard no_grad;
  fw::Tensor x16 = fw::randn({1, 16000 * 60}) * 0.1;
  fw::Tensor x44 = fw::randn({1, 44100 * 60}) * 0.1;
  fw::Tensor x48 = fw::randn({1, 48000 * 60}) * 0.1;
  T::MelSpectrogram mel;
  T::MFCC mfcc;
  T::Resample r44(T::ResampleOptions().orig_freq(44100).new_freq(16000));
  T::Resample r48(T::ResampleOptions().orig_freq(48000).new_freq(16000));
  fw::Tensor xk = x16 * 32768.0;
  std::printf("melspectrogram %.3f\n", median_ms([&] { mel(x16); }, reps));
  std::printf("mfcc %.3f\n", median_ms([&] { mfcc(x16); }, reps));
  std::printf("kaldi_fbank %.3f\n", median_ms([&] { fw::audio::kaldi::fbank(xk); }, reps));
  std::printf("resample_44k_16k %.3f\n", median_ms([&] { r44(x44); }, reps / 2 + 1));
  std::printf("resample_48k_16k %.3f\n", median_ms([&] { r48(x48); }, reps / 2 + 1));
  // Kaldi pitch of 60 s of speech (the English recording, repeated); the peer is Kaldi itself.
  fw::Tensor speech = fw::audio::load(std::string(FW_AUDIO_FIXTURE_DIR) + "/speech_en_16k.wav").first[0];
  fw::Tensor speech60 = speech.repeat({16000 * 60 / speech.size(0) + 1}).slice(0, 0, 16000 * 60);
  std::printf("kaldi_pitch %.3f\n",
              median_ms([&] { fw::audio::functional::compute_kaldi_pitch(speech60, 16000); }, reps / 2 + 1));
  // Speech encoders (eval, no autograd), torchaudio.models' shapes: a Conformer on a (4, 400, 80)
  // batch and wav2vec2_base on 4 s of 16 kHz audio.
  fw::manual_seed(0);
  fw::audio::models::Conformer conformer(80, 4, 256, 4, 31);
  conformer->eval();
  fw::Tensor feats = fw::randn({4, 400, 80});
  fw::Tensor flens = fw::full({4}, 400, fw::TensorOptions(fw::kLong));
  std::printf("conformer_4x400x80 %.3f\n", median_ms([&] { conformer(feats, flens); }, reps / 2 + 1));
  fw::audio::models::Wav2Vec2Model w2v = fw::audio::models::wav2vec2_base();
  w2v->eval();
  fw::Tensor wave4 = fw::randn({1, 16000 * 4}) * 0.1;
  std::printf("wav2vec2_base_4s %.3f\n", median_ms([&] { w2v(wave4); }, reps / 4 + 1));
  // conv_tasnet_base (2 sources) on 2 s of 8 kHz audio.
  fw::audio::models::ConvTasNet tasnet = fw::audio::models::conv_tasnet_base(2);
  tasnet->eval();
  fw::Tensor mix = fw::randn({1, 1, 16000}) * 0.1;
  std::printf("conv_tasnet_base_2s_8k %.3f\n", median_ms([&] { tasnet(mix); }, reps / 4 + 1));
  // emformer_rnnt_base's transcriber on 4 s of 80-dim features (400 frames plus the 4 frames of
  // right context), whole and streamed in 25 segments of 16 + 4 frames.
  fw::audio::models::RNNT rnnt = fw::audio::models::emformer_rnnt_base(4097);
  rnnt->eval();
  fw::Tensor mel4 = fw::randn({1, 404, 80});
  fw::Tensor len4 = fw::full({1}, 400, fw::TensorOptions(fw::kLong));
  std::printf("emformer_rnnt_transcribe_4s %.3f\n", median_ms([&] { rnnt->transcribe(mel4, len4); }, reps / 4 + 1));
  fw::Tensor seg_len = fw::full({1}, 20, fw::TensorOptions(fw::kLong));
  std::printf("emformer_rnnt_stream_4s %.3f\n", median_ms(
                                                   [&] {
                                                     std::optional<fw::audio::models::StreamState> st;
                                                     for (int64_t s = 0; s < 25; s++)
                                                       st = std::get<2>(rnnt->transcribe_streaming(
                                                           mel4.slice(1, s * 16, s * 16 + 20), seg_len, st));
                                                   },
                                                   reps / 4 + 1));
  // hdemucs_high (4 sources) on 2 s of 44.1 kHz stereo.
  fw::audio::models::HDemucs demucs = fw::audio::models::hdemucs_high({"drums", "bass", "other", "vocals"});
  demucs->eval();
  fw::Tensor song = fw::randn({1, 2, 88200}) * 0.1;
  std::printf("hdemucs_high_2s_44k %.3f\n", median_ms([&] { demucs(song); }, reps / 4 + 1));
  // Tacotron2 (torchaudio's default sizes) inferring 200 decoder steps from 60 tokens (early
  // stopping off, so both sides run the same steps).
  fw::audio::models::Tacotron2 taco(
      fw::audio::models::Tacotron2Options().decoder_max_step(200).decoder_early_stopping(false));
  taco->eval();
  fw::Tensor text = fw::arange(60, fw::TensorOptions(fw::kLong)).remainder(147) + 1;
  std::printf("tacotron2_infer_200_steps %.3f\n", median_ms([&] { taco->infer(text.unsqueeze(0)); }, reps / 4 + 1));
  return 0;
}
