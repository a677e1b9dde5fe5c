#pragma once
// Discrete Fourier transforms (fft.cpp), PyTorch's three primitives. ints = dims, transformed in
// order; i0 = normalization (0 none, 1 by 1/sqrt(n), 2 by 1/n, n the signal length of each dim);
// fft_r2c: flags bit 0 = onesided (last dim keeps n/2+1 bins);
// fft_c2r: i1 = output length of the last dim (its input keeps the first i1/2+1 bins);
// fft_c2c: flags bit 0 = forward (e^{-2 pi i jk/n}) else backward.
// fft/ifft/rfft/irfft/stft/istft and the fftshift helpers are composites (fw/fft.h).
// check_nola returns its input (istft's window envelope) and raises in its kernel when the
// envelope is too close to 0 somewhere, so a traced istft checks it on every replay without
// reading values on the host (no graph break).
#define FW_OPS_FFT(X) X(fft_r2c, Opaque) X(fft_c2r, Opaque) X(fft_c2c, Opaque) X(check_nola, Opaque)
