#pragma once
#define FW_OPS_INDEX(X)
