#pragma once
// Copying shape ops (flip, roll, repeat, pad, ...) and unfold.
#define FW_OPS_MOVEMENT(X)
