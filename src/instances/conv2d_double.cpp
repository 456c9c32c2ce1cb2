// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The prebuilt conv2d_launch instances for double tensors (impl/conv2d/prebuilt_instances.hpp).
#define KCNN_DEFINING_INSTANCES
#include <kcnn/kcnn.hpp>

KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_LAUNCH_INSTANCE, , double)
