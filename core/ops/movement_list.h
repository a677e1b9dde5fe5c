#pragma once
// Copying shape ops (flip, roll, repeat, constant padding) and unfold (a view).
#define FW_OPS_MOVEMENT(X) \
  X(flip, Opaque) X(roll, Opaque) X(repeat, Opaque) X(constant_pad_nd, Opaque) X(unfold, View)
