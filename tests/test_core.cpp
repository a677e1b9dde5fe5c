#include <gtest/gtest.h>
#include <fw/fw.h>
TEST(Core, Smoke) {
  auto a = fw::ones({2, 3});
  auto b = fw::arange(3);
  auto c = a + b;
  EXPECT_EQ(c.dtype(), fw::kFloat);
  EXPECT_FLOAT_EQ(c.sum().item<float>(), 6 + 3 * 2);
}
