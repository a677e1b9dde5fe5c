#pragma once
#define FW_OPS_NN(X)
