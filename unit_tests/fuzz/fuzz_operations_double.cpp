// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file fuzz_operations_double.cpp
/// \brief The fuzzed operations in double (one translation unit per element type).
#include "fuzz_operations.hpp"

template int kcnn_fuzz::fuzz_one<double>(Draw& d);
