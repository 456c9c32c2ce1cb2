// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The prebuilt conv2d_launch instances for bfloat16 tensors (impl/conv2d/prebuilt_instances.hpp).
#define KCNN_DEFINING_INSTANCES
#include <kcnn/kcnn.hpp>

#if KCNN_BFLOAT16_IS_OWN_TYPE
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_LAUNCH_INSTANCE, , kcnn::bfloat16)
#endif
