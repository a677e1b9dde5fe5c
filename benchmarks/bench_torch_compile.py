"""The peer for fw::compile: W2/W3/W4 (../shared/WORKLOADS.md) under torch.compile (inductor,
CPU) and PyTorch 2 eager, printed in compare.sh's "name value unit" form with the same names
fw_bench_compile uses ("[compiled]" for torch.compile) so that benchmarks/torch_compile.sh can
divide one by the other. Also the first-call compile latency of the W4 step (W7)."""
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def med(f, reps=11):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
    x, w, b = (torch.randn(16 << 20) for _ in range(3))
    w2 = lambda x, w, b: F.gelu(x * w + b)
    c2 = torch.compile(w2)
    print("W2_gelu_chain_16M %.2f ms" % (med(lambda: w2(x, w, b)) * 1e3))
    print("W2_gelu_chain_16M[compiled] %.2f ms" % (med(lambda: c2(x, w, b)) * 1e3))
    x, g, be = torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024)
    w3 = lambda x, g, be: torch.softmax(F.layer_norm(x, (1024,), g, be), -1)
    c3 = torch.compile(w3)
    print("W3_softmax_layernorm %.2f ms" % (med(lambda: w3(x, g, be)) * 1e3))
    print("W3_softmax_layernorm[compiled] %.2f ms" % (med(lambda: c3(x, g, be)) * 1e3))
    for compiled in (False, True):
        mlp = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                  torch.nn.ReLU(), torch.nn.Linear(1024, 10))
        model = torch.compile(mlp) if compiled else mlp
        opt = torch.optim.SGD(mlp.parameters(), lr=0.01, momentum=0.9)
        x, y = torch.randn(256, 784), torch.randint(0, 10, (256,))

        def step():
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

        t0 = time.perf_counter()
        step()
        first = time.perf_counter() - t0
        print("W4_mlp_train_step%s %.2f ms" % ("[compiled]" if compiled else "", med(step) * 1e3))
        if compiled:
            print("W7_first_call %.3f s" % first)


if __name__ == "__main__":
    main()
