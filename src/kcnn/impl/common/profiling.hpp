// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/common/profiling.hpp
/// \brief A scoped Kokkos profiling region, so that Kokkos Tools show which kcnn
///        operation (and which algorithm) a kernel belongs to.
#pragma once

#include <Kokkos_Core.hpp>

#include <string>

namespace kcnn::Impl {

/// Pushes a named region on construction and pops it on destruction (Kokkos 3.4 has no
/// ScopedRegion of its own).
class ProfilingRegion {
 public:
  explicit ProfilingRegion(const std::string& name) { Kokkos::Profiling::pushRegion(name); }
  ~ProfilingRegion() { Kokkos::Profiling::popRegion(); }
  ProfilingRegion(const ProfilingRegion&) = delete;
  ProfilingRegion& operator=(const ProfilingRegion&) = delete;
};

}  // namespace kcnn::Impl
