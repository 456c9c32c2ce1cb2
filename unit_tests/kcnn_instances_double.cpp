// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The test program's one compilation of the double kernels (see kcnn_instances.hpp).
#define KCNN_TEST_DEFINE_INSTANCES
#include "kcnn_instances.hpp"

KCNN_TEST_FOR_EACH_SPACE(KCNN_TEST_CONV2D_INSTANCE, , double)
