#pragma once
// Views alias their input's storage; the others copy.
#define FW_OPS_SHAPE(X)                                                                     \
  X(view, View) X(permute, View) X(expand, View) X(slice, View) X(select, View)             \
  X(unsqueeze, View) X(squeeze, View) X(as_strided, View) X(view_as_real, View)             \
  X(view_as_complex, View) X(view_dtype, View) X(cat, Opaque)
