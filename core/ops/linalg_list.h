#pragma once
#define FW_OPS_LINALG(X)
