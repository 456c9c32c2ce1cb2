// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// oneDNN (2.x API) convolution forward with bias and ReLU, as kcnn_perf's CPU baseline:
//  - "oneDNN": tensors in the shape's own layout (NCHW/oihw or NHWC/ohwi), used in place
//    from Kokkos Views: the like-for-like comparison behind "vs_baseline";
//  - "oneDNN_blocked": oneDNN's preferred (blocked) formats (format_tag::any); inputs are
//    reordered into them once, outside the timed region, and y stays blocked.
#include <Kokkos_Core.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <string>
#include <unordered_map>

#include "baselines.hpp"

namespace kcnn_perf {
namespace {

using dnnl::memory;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

class OnednnConv final : public BaselineRun {
 public:
  OnednnConv(const Shape& sh, bool blocked) : stream_(cpu_engine()), data_(sh, 17) {
    auto& eng = cpu_engine();
    // oneDNN's dims are always logical (N, C, H, W); the tag says how they are stored.
    const memory::dims xd = {sh.N, sh.C, sh.H, sh.W}, wd = {sh.M, sh.C, sh.R, sh.S}, bd = {sh.M},
                       yd = {sh.N, sh.M, sh.P(), sh.Q()};
    const auto f32 = memory::data_type::f32;
    const auto act_tag = sh.nhwc() ? memory::format_tag::nhwc : memory::format_tag::nchw;
    const auto wei_tag = sh.nhwc() ? memory::format_tag::ohwi : memory::format_tag::oihw;
    const memory::desc x_user(xd, f32, act_tag), w_user(wd, f32, wei_tag),
        b_user(bd, f32, memory::format_tag::x), y_user(yd, f32, act_tag);
    const auto any = memory::format_tag::any;
    const memory::desc x_want = blocked ? memory::desc(xd, f32, any) : x_user;
    const memory::desc w_want(wd, f32, any);
    const memory::desc y_want = blocked ? memory::desc(yd, f32, any) : y_user;

    const memory::dims strides = {sh.stride, sh.stride}, pads = {sh.pad, sh.pad},
                       dilates = {sh.dilation - 1, sh.dilation - 1};  // oneDNN: 0 = dense
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::convolution_direct, x_want, w_want,
                                         b_user, y_want, strides, dilates, pads, pads);
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    const dnnl::convolution_forward::primitive_desc pd(desc, attr, eng);
    impl_ = pd.impl_info_str();

    // User memories over the Kokkos Views; reorders into oneDNN's formats if it wants
    // others (only with format_tag::any).
    auto prepared = [&](const memory::desc& want, const memory::desc& user, float* data) {
      memory user_mem(user, eng, data);
      if (want == user) return user_mem;
      memory mem(want, eng);
      dnnl::reorder(user_mem, mem).execute(stream_, user_mem, mem);
      return mem;
    };
    args_[DNNL_ARG_SRC] = prepared(pd.src_desc(), x_user, data_.x.data());
    args_[DNNL_ARG_WEIGHTS] = prepared(pd.weights_desc(), w_user, data_.w.data());
    args_[DNNL_ARG_BIAS] = memory(b_user, eng, data_.bias.data());
    args_[DNNL_ARG_DST] =
        pd.dst_desc() == y_user ? memory(y_user, eng, data_.y.data()) : memory(pd.dst_desc(), eng);
    stream_.wait();
    conv_ = dnnl::convolution_forward(pd);
  }

  void run() override {
    conv_.execute(stream_, args_);
    stream_.wait();
  }
  std::string describe() const override { return "oneDNN " + impl_; }

 private:
  dnnl::stream stream_;
  ShapeData<Kokkos::DefaultHostExecutionSpace> data_;
  std::unordered_map<int, memory> args_;
  dnnl::convolution_forward conv_;
  std::string impl_;
};

}  // namespace

std::vector<Baseline> onednn_baselines() {
  return {
      {"oneDNN", true,
       [](const Shape& sh) -> std::unique_ptr<BaselineRun> {
         return std::make_unique<OnednnConv>(sh, false);
       }},
      {"oneDNN_blocked", false,
       [](const Shape& sh) -> std::unique_ptr<BaselineRun> {
         return std::make_unique<OnednnConv>(sh, true);
       }},
  };
}

BaselineLibrary onednn_library() {
  const dnnl_version_t* v = dnnl::version();
  return {"oneDNN", std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                        std::to_string(v->patch) + " (cpu_runtime " +
                        (v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other") + ")"};
}

}  // namespace kcnn_perf
