#pragma once
#define FW_OPS_REDUCE(X) X(sum, Reduction)
