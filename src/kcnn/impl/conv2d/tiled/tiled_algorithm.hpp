// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tiled/tiled_algorithm.hpp
/// \brief ConvAlgo::Tiled's descriptor: direct convolution from staged halo tiles in
///        team scratch, register-blocked (on hosts, unpooled NHWC float and double: the
///        register-blocked kernel of host_simd_kernel.hpp, whose packed weights are its
///        workspace). Fuses every pooling; limits: the staged tile must fit team scratch
///        (large dilated filters), 32-bit league and filter offsets, the host kernel's
///        packed weights the workspace limit.
#pragma once

#include <cstddef>
#include <type_traits>

#include "../../../types.hpp"
#include "../../common/problem.hpp"
#include "../algorithm.hpp"
#include "tiled.hpp"

namespace kcnn::Impl {

struct TiledAlgorithm {
  static constexpr ConvAlgo id = ConvAlgo::Tiled;
  template <class T>
  static bool fuses_pool(const Conv2dProblem&) {
    return true;
  }
  template <class ExecSpace, class XView, class WView, class BView, class YView>
  static std::size_t launch(const ExecSpace& space, const XView& x, const WView& w,
                            const BView& bias, const YView& y, const Conv2dProblem& pb,
                            LaunchMode mode) {
    if constexpr (std::is_same_v<view_scalar_t<XView>, view_scalar_t<YView>>) {
      return conv2d_tiled(space, x, w, bias, y, pb, TiledTuning{}, mode);
    } else {
      // The two-pass pooling's float output for 16-bit x (dispatch.hpp compiles that
      // branch for every descriptor): Tiled fuses every pooling, so it never gets here.
      throw_if(true, "kcnn::conv2d_forward", "internal: ConvAlgo::Tiled handed an unpooled ",
               ElementTraits<view_scalar_t<YView>>::name, " output for ",
               ElementTraits<view_scalar_t<XView>>::name, " tensors");
    }
    return 0;
  }
};

}  // namespace kcnn::Impl
