#pragma once
// X(name, kind). copy: converts dtype/layout into a new or given output.
#define FW_OPS_CREATION(X) \
  X(copy, Elementwise) X(fill, Creation) X(arange, Creation) X(linspace, Creation) \
  X(logspace, Creation) X(eye, Creation) X(uniform, Creation) X(normal, Creation)  \
  X(randint, Creation) X(bernoulli, Creation) X(randperm, Creation)
