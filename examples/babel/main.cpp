// fw-babel: the multilingual Babel-style recipe's stages (examples/babel/README.md).
#include "examples/babel/recipe.h"

int main(int argc, char** argv) { return fw::recipe::recipe_main(argc, argv, "fw-babel"); }
