"""The torchaudio side of benchmarks/audio/compare.sh: same workloads and output format as
bench_audio.cpp ("name median_ms"). Run with Debian's python3-torchaudio. kaldi_pitch times Kaldi's
own ComputeKaldiPitch (vosk's build, tests/fixtures/audio/kaldi_ctypes.py) when VOSK_LIB names
libvosk.so: torchaudio's compute_kaldi_pitch is missing from Debian's build (and wrong in PyPI's)."""
import os
import warnings
import sys
import time

import torch
import torchaudio.compliance.kaldi as K
import torchaudio.transforms as T

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
torch.set_num_threads(int(sys.argv[2]) if len(sys.argv) > 2 else 2)
torch.manual_seed(0)


def median_ms(f, n):
    for _ in range(3):
        f()
    t = []
    for _ in range(n):
        a = time.perf_counter()
        f()
        t.append((time.perf_counter() - a) * 1e3)
    t.sort()
    return t[len(t) // 2]


with torch.no_grad():
    x16 = torch.randn(1, 16000 * 60) * 0.1
    x44 = torch.randn(1, 44100 * 60) * 0.1
    x48 = torch.randn(1, 48000 * 60) * 0.1
    mel, mfcc = T.MelSpectrogram(), T.MFCC()
    r44, r48 = T.Resample(44100, 16000), T.Resample(48000, 16000)
    xk = x16 * 32768.0
    print(f"melspectrogram {median_ms(lambda: mel(x16), reps):.3f}")
    print(f"mfcc {median_ms(lambda: mfcc(x16), reps):.3f}")
    print(f"kaldi_fbank {median_ms(lambda: K.fbank(xk), reps):.3f}")
    print(f"resample_44k_16k {median_ms(lambda: r44(x44), reps // 2 + 1):.3f}")
    print(f"resample_48k_16k {median_ms(lambda: r48(x48), reps // 2 + 1):.3f}")
    import torchaudio.models as M

    torch.manual_seed(0)
    conformer = M.Conformer(80, 4, 256, 4, 31).eval()
    feats = torch.randn(4, 400, 80)
    flens = torch.full((4,), 400)
    print(f"conformer_4x400x80 {median_ms(lambda: conformer(feats, flens), reps // 2 + 1):.3f}")
    w2v = M.wav2vec2_base().eval()
    wave4 = torch.randn(1, 16000 * 4) * 0.1
    print(f"wav2vec2_base_4s {median_ms(lambda: w2v(wave4), reps // 4 + 1):.3f}")
    tasnet = M.conv_tasnet_base(num_sources=2).eval()
    mix = torch.randn(1, 1, 16000) * 0.1
    print(f"conv_tasnet_base_2s_8k {median_ms(lambda: tasnet(mix), reps // 4 + 1):.3f}")
    rnnt = M.emformer_rnnt_base(4097).eval()
    mel4 = torch.randn(1, 404, 80)
    len4 = torch.tensor([400])
    print(f"emformer_rnnt_transcribe_4s {median_ms(lambda: rnnt.transcribe(mel4, len4), reps // 4 + 1):.3f}")
    seg_len = torch.tensor([20])

    def stream():
        st = None
        for s in range(25):
            _, _, st = rnnt.transcribe_streaming(mel4[:, s * 16: s * 16 + 20], seg_len, st)

    print(f"emformer_rnnt_stream_4s {median_ms(stream, reps // 4 + 1):.3f}")
    demucs = M.hdemucs_high(["drums", "bass", "other", "vocals"]).eval()
    song = torch.randn(1, 2, 88200) * 0.1
    print(f"hdemucs_high_2s_44k {median_ms(lambda: demucs(song), reps // 4 + 1):.3f}")
    taco = M.Tacotron2(decoder_max_step=200, decoder_early_stopping=False).eval()
    text = (torch.arange(60) % 147 + 1)[None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        print(f"tacotron2_infer_200_steps {median_ms(lambda: taco.infer(text), reps // 4 + 1):.3f}")
    if os.path.exists(os.environ.get("VOSK_LIB", "")):
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, os.path.join(here, "..", "..", "tests", "fixtures", "audio"))
        import torchaudio
        from kaldi_ctypes import kaldi_pitch

        w, _ = torchaudio.load(os.path.join(here, "..", "..", "tests", "fixtures", "audio", "speech_en_16k.wav"))
        speech60 = w[0].repeat(16000 * 60 // w.shape[1] + 1)[: 16000 * 60].contiguous()
        print(f"kaldi_pitch {median_ms(lambda: kaldi_pitch(speech60, 16000, {}), reps // 2 + 1):.3f}")
