// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Test driver: Kokkos lives for the whole test program.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  Kokkos::ScopeGuard kokkos(argc, argv);
  return RUN_ALL_TESTS();
}
