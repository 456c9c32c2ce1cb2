// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file fuzz_operations_float.cpp
/// \brief The fuzzed operations in float (one translation unit per element type).
#include "fuzz_operations.hpp"

template int kcnn_fuzz::fuzz_one<float>(Draw& d);
