// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file baselines.hpp
/// \brief The vendor libraries kcnn_perf measures beside kcnn, in the same process and on
///        the same shapes: cuDNN in CUDA builds, oneDNN in host builds (each only when
///        CMake found it).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "suites.hpp"

namespace kcnn_perf {

/// One baseline convolution, ready to run: inputs allocated and random, algorithm chosen,
/// workspace allocated, data reordered; none of that is timed.
class BaselineRun {
 public:
  virtual ~BaselineRun() = default;
  /// One convolution (with bias and ReLU, like kcnn's), finished when it returns (the
  /// caller fences Kokkos' default instance too, which shares cuDNN's stream).
  virtual void run() = 0;
  /// What the library chose, for the benchmark's label (e.g. cuDNN's algorithm).
  virtual std::string describe() const = 0;
};

struct Baseline {
  std::string name;  ///< the last level of the benchmark name, e.g. "cuDNN"
  /// The time that kcnn's "vs_baseline" counter divides by (one per layout and build).
  bool is_reference;
  /// Prepares a run of this shape; throws (std::exception) if it cannot.
  std::function<std::unique_ptr<BaselineRun>(const Shape&)> prepare;
};

/// The library and version, for the benchmark context ("none" when there is none).
struct BaselineLibrary {
  std::string name, version;
};

#if defined(KCNN_PERF_HAVE_CUDNN)
/// cuDNN in element type `scalar`: float strict ("cuDNN") and TF32 ("cuDNN-TF32"); half
/// and bfloat16 on tensor cores with float sums ("cuDNN"); none for double.
std::vector<Baseline> cudnn_baselines(ScalarKind scalar);
BaselineLibrary cudnn_library();
void cudnn_shutdown();
#endif
#if defined(KCNN_PERF_HAVE_ONEDNN)
std::vector<Baseline> onednn_baselines();
BaselineLibrary onednn_library();
/// The LeNet stack (kcnn_perf's lenet_stack) as oneDNN's six primitives: conv (with bias),
/// ReLU, 2x2 max pool, conv, ReLU, 4x4 max pool; `blocked`: in oneDNN's own formats,
/// else every tensor NHWC (`nhwc`) or NCHW.
std::unique_ptr<BaselineRun> onednn_lenet_stack(int batch, bool nhwc, bool blocked);
/// conv2d_backward_data's counterpart (oneDNN's convolution_backward_data: dx from dy and
/// the weights), "oneDNN" in the shape's layout and "oneDNN_blocked" in its own formats
/// (dy and the weights reordered once, untimed; dx stays blocked).
std::vector<Baseline> onednn_backward_data_baselines();
/// conv2d_backward_weights' counterpart (convolution_backward_weights with the bias
/// gradient), in the layout and in oneDNN's own formats (x and dy reordered untimed).
std::vector<Baseline> onednn_backward_weights_baselines();
#endif

/// Every baseline this build has for element type `scalar` (oneDNN: float only).
inline std::vector<Baseline> available_baselines(ScalarKind scalar) {
  std::vector<Baseline> all;
#if defined(KCNN_PERF_HAVE_CUDNN)
  for (auto& b : cudnn_baselines(scalar))
    all.push_back(std::move(b));
#endif
#if defined(KCNN_PERF_HAVE_ONEDNN)
  if (scalar == ScalarKind::Float)
    for (auto& b : onednn_baselines())
      all.push_back(std::move(b));
#endif
  (void)scalar;
  return all;
}

/// The backward-data baselines this build has for `scalar` (oneDNN, float; none on GPUs
/// yet).
inline std::vector<Baseline> available_backward_data_baselines(ScalarKind scalar) {
  std::vector<Baseline> all;
#if defined(KCNN_PERF_HAVE_ONEDNN)
  if (scalar == ScalarKind::Float)
    for (auto& b : onednn_backward_data_baselines())
      all.push_back(std::move(b));
#endif
  (void)scalar;
  return all;
}

/// The backward-weights baselines this build has for `scalar` (oneDNN, float).
inline std::vector<Baseline> available_backward_weights_baselines(ScalarKind scalar) {
  std::vector<Baseline> all;
#if defined(KCNN_PERF_HAVE_ONEDNN)
  if (scalar == ScalarKind::Float)
    for (auto& b : onednn_backward_weights_baselines())
      all.push_back(std::move(b));
#endif
  (void)scalar;
  return all;
}

inline std::vector<BaselineLibrary> baseline_libraries() {
  std::vector<BaselineLibrary> all;
#if defined(KCNN_PERF_HAVE_CUDNN)
  all.push_back(cudnn_library());
#endif
#if defined(KCNN_PERF_HAVE_ONEDNN)
  all.push_back(onednn_library());
#endif
  return all;
}

/// Releases library handles before Kokkos finalizes.
inline void shutdown_baselines() {
#if defined(KCNN_PERF_HAVE_CUDNN)
  cudnn_shutdown();
#endif
}

}  // namespace kcnn_perf
