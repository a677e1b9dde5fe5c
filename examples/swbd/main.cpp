// fw-swbd: the single-language (Switchboard-style) recipe's stages; the same commands as fw-babel
// (examples/swbd/README.md, examples/babel/README.md).
#include "examples/babel/recipe.h"

int main(int argc, char** argv) { return fw::recipe::recipe_main(argc, argv, "fw-swbd"); }
