#pragma once
// Matrix products. addmm/baddbmm: attrs s0 = beta, s1 = alpha. matmul, mv, outer, linear and
// einsum are composites over these.
#define FW_OPS_LINALG(X) X(mm, Opaque) X(addmm, Opaque) X(bmm, Opaque) X(baddbmm, Opaque) X(dot, Opaque)
