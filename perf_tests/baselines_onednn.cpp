// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// oneDNN (2.x API) convolution forward with bias and ReLU, as kcnn_perf's CPU baseline:
//  - "oneDNN": tensors in the shape's own layout (NCHW/oihw or NHWC/ohwi), used in place
//    from Kokkos Views: the like-for-like comparison behind "vs_baseline";
//  - "oneDNN_blocked": oneDNN's preferred (blocked) formats (format_tag::any); inputs are
//    reordered into them once, outside the timed region, and y stays blocked;
//  - the LeNet stack as six primitives (onednn_lenet_stack), in either way;
//  - the backward data and weights convolutions (onednn_backward_data_baselines,
//    onednn_backward_weights_baselines), in either way.
#include <Kokkos_Core.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "baselines.hpp"

namespace kcnn_perf {
namespace {

using dnnl::memory;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// An input in the format a primitive wants: the user's buffer where the formats match,
/// else a copy reordered into `want` once, on `stream` (outside any timed region).
memory input_memory(const memory::desc& want, const memory::desc& user, float* data,
                    dnnl::stream& stream) {
  memory user_mem(user, cpu_engine(), data);
  if (want == user) return user_mem;
  memory mem(want, cpu_engine());
  dnnl::reorder(user_mem, mem).execute(stream, user_mem, mem);
  return mem;
}

/// An output: the user's buffer where the formats match, else oneDNN's own (left there).
memory output_memory(const memory::desc& want, const memory::desc& user, float* data) {
  return want == user ? memory(user, cpu_engine(), data) : memory(want, cpu_engine());
}

/// The weights' dims and storage tag: (M, C, R, S) as oihw / ohwi, or grouped (G, M/G,
/// C/G, R, S) as goihw / gohwi (kcnn's (M, C/G, R, S) / (M, R, S, C/G) read per group).
memory::dims weights_dims(const Shape& sh) {
  if (sh.groups == 1) return {sh.M, sh.C, sh.R, sh.S};
  return {sh.groups, sh.M / sh.groups, sh.C / sh.groups, sh.R, sh.S};
}
memory::format_tag weights_tag(const Shape& sh) {
  using tag = memory::format_tag;
  if (sh.groups == 1) return sh.nhwc() ? tag::ohwi : tag::oihw;
  return sh.nhwc() ? tag::gohwi : tag::goihw;
}

class OnednnConv final : public BaselineRun {
 public:
  OnednnConv(const Shape& sh, bool blocked) : stream_(cpu_engine()), data_(sh, 17) {
    auto& eng = cpu_engine();
    // oneDNN's dims are always logical (N, C, H, W); the tag says how they are stored.
    const memory::dims xd = {sh.N, sh.C, sh.H, sh.W}, wd = weights_dims(sh), bd = {sh.M},
                       yd = {sh.N, sh.M, sh.P(), sh.Q()};
    const auto f32 = memory::data_type::f32;
    const auto act_tag = sh.nhwc() ? memory::format_tag::nhwc : memory::format_tag::nchw;
    const auto wei_tag = weights_tag(sh);
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
    args_[DNNL_ARG_SRC] = input_memory(pd.src_desc(), x_user, data_.x.data(), stream_);
    args_[DNNL_ARG_WEIGHTS] = input_memory(pd.weights_desc(), w_user, data_.w.data(), stream_);
    args_[DNNL_ARG_BIAS] = memory(b_user, eng, data_.bias.data());
    args_[DNNL_ARG_DST] = output_memory(pd.dst_desc(), y_user, data_.y.data());
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

/// oneDNN's backward data convolution: dx from dy (random, y's shape) and the weights, in
/// the shape's layout or (blocked) in oneDNN's own formats, dy and the weights reordered
/// once outside the timed region and dx left blocked.
class OnednnBackwardData final : public BaselineRun {
 public:
  OnednnBackwardData(const Shape& sh, bool blocked) : stream_(cpu_engine()), data_(sh, 17) {
    auto& eng = cpu_engine();
    // y, random, plays dy; x is overwritten with dx.
    Kokkos::Random_XorShift64_Pool<Kokkos::DefaultHostExecutionSpace> pool(19);
    fill_uniform(data_.y, pool);
    Kokkos::DefaultHostExecutionSpace().fence();
    const memory::dims xd = {sh.N, sh.C, sh.H, sh.W}, wd = weights_dims(sh),
                       yd = {sh.N, sh.M, sh.P(), sh.Q()};
    const auto f32 = memory::data_type::f32;
    const auto act_tag = sh.nhwc() ? memory::format_tag::nhwc : memory::format_tag::nchw;
    const auto wei_tag = weights_tag(sh);
    const memory::desc dx_user(xd, f32, act_tag), w_user(wd, f32, wei_tag),
        dy_user(yd, f32, act_tag);
    const auto any = memory::format_tag::any;
    const memory::desc dx_want = blocked ? memory::desc(xd, f32, any) : dx_user;
    const memory::desc w_want(wd, f32, any);
    const memory::desc dy_want = blocked ? memory::desc(yd, f32, any) : dy_user;
    const memory::dims strides = {sh.stride, sh.stride}, pads = {sh.pad, sh.pad},
                       dilates = {sh.dilation - 1, sh.dilation - 1};
    // The backward primitive takes a forward one as its hint.
    const dnnl::convolution_forward::primitive_desc hint(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                        dnnl::algorithm::convolution_direct, dx_want, w_want,
                                        dy_want, strides, dilates, pads, pads),
        eng);
    const dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, dx_want, w_want,
                                              dy_want, strides, dilates, pads, pads),
        eng, hint);
    impl_ = pd.impl_info_str();
    args_[DNNL_ARG_DIFF_DST] = input_memory(pd.diff_dst_desc(), dy_user, data_.y.data(), stream_);
    args_[DNNL_ARG_WEIGHTS] = input_memory(pd.weights_desc(), w_user, data_.w.data(), stream_);
    args_[DNNL_ARG_DIFF_SRC] = output_memory(pd.diff_src_desc(), dx_user, data_.x.data());
    stream_.wait();
    conv_ = dnnl::convolution_backward_data(pd);
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
  dnnl::convolution_backward_data conv_;
  std::string impl_;
};

/// oneDNN's backward weights convolution with the bias gradient: dw and dbias from x and dy
/// (random, y's shape), in the shape's layout or (blocked) in oneDNN's own formats, x and
/// dy reordered once outside the timed region and dw left blocked.
class OnednnBackwardWeights final : public BaselineRun {
 public:
  OnednnBackwardWeights(const Shape& sh, bool blocked) : stream_(cpu_engine()), data_(sh, 17) {
    auto& eng = cpu_engine();
    // y, random, plays dy; w is overwritten with dw, bias with dbias.
    Kokkos::Random_XorShift64_Pool<Kokkos::DefaultHostExecutionSpace> pool(23);
    fill_uniform(data_.y, pool);
    Kokkos::DefaultHostExecutionSpace().fence();
    const memory::dims xd = {sh.N, sh.C, sh.H, sh.W}, wd = weights_dims(sh), bd = {sh.M},
                       yd = {sh.N, sh.M, sh.P(), sh.Q()};
    const auto f32 = memory::data_type::f32;
    const auto act_tag = sh.nhwc() ? memory::format_tag::nhwc : memory::format_tag::nchw;
    const auto wei_tag = weights_tag(sh);
    const memory::desc x_user(xd, f32, act_tag), dw_user(wd, f32, wei_tag),
        db_user(bd, f32, memory::format_tag::x), dy_user(yd, f32, act_tag);
    const auto any = memory::format_tag::any;
    const memory::desc x_want = blocked ? memory::desc(xd, f32, any) : x_user;
    const memory::desc dw_want = blocked ? memory::desc(wd, f32, any) : dw_user;
    const memory::desc dy_want = blocked ? memory::desc(yd, f32, any) : dy_user;
    const memory::dims strides = {sh.stride, sh.stride}, pads = {sh.pad, sh.pad},
                       dilates = {sh.dilation - 1, sh.dilation - 1};
    const dnnl::convolution_forward::primitive_desc hint(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                        dnnl::algorithm::convolution_direct, x_want, dw_want,
                                        db_user, dy_want, strides, dilates, pads, pads),
        eng);
    const dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, x_want,
                                                 dw_want, db_user, dy_want, strides, dilates, pads,
                                                 pads),
        eng, hint);
    impl_ = pd.impl_info_str();
    args_[DNNL_ARG_SRC] = input_memory(pd.src_desc(), x_user, data_.x.data(), stream_);
    args_[DNNL_ARG_DIFF_DST] = input_memory(pd.diff_dst_desc(), dy_user, data_.y.data(), stream_);
    args_[DNNL_ARG_DIFF_WEIGHTS] = output_memory(pd.diff_weights_desc(), dw_user, data_.w.data());
    args_[DNNL_ARG_DIFF_BIAS] = memory(db_user, eng, data_.bias.data());
    stream_.wait();
    conv_ = dnnl::convolution_backward_weights(pd);
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
  dnnl::convolution_backward_weights conv_;
  std::string impl_;
};

/// The seed network's convolution stack (as kcnn_perf's bench_lenet_stack) as six oneDNN
/// primitives: convolution (with bias), ReLU, 2x2 max pooling, convolution, ReLU, 4x4 max
/// pooling; x, weights and biases random. `blocked`: every primitive in oneDNN's own
/// formats (format_tag::any; x and the weights reordered once, untimed; a reorder of the
/// first pooling's output into the second convolution's input format is timed where
/// they differ), else every tensor in `nhwc` or NCHW.
class OnednnLenetStack final : public BaselineRun {
 public:
  OnednnLenetStack(int batch, bool nhwc, bool blocked) : stream_(cpu_engine()) {
    auto& eng = cpu_engine();
    const auto f32 = memory::data_type::f32;
    const auto act_tag = nhwc ? memory::format_tag::nhwc : memory::format_tag::nchw;
    const auto wei_tag = nhwc ? memory::format_tag::ohwi : memory::format_tag::oihw;
    const auto any = memory::format_tag::any;
    const memory::dim B = batch;
    const memory::desc x_user({B, 1, 86, 86}, f32, act_tag);
    // Random data through Kokkos Views of the user tensors (the values do not matter for
    // the time, only that they are finite and not all zero).
    const kcnn::Layout layout = nhwc ? kcnn::Layout::NHWC : kcnn::Layout::NCHW;
    const Shape c1{"lenet", "c1_s1", batch, 1, 86, 86, 4, 7, 7, 1, 0, 1, layout},
        c3{"lenet", "c3_s1", batch, 4, 40, 40, 16, 7, 7, 1, 0, 1, layout};
    data1_ = std::make_unique<ShapeData<Kokkos::DefaultHostExecutionSpace>>(c1, 23);
    data3_ = std::make_unique<ShapeData<Kokkos::DefaultHostExecutionSpace>>(c3, 29);

    // One convolution + ReLU + max pooling (window = stride = k) on `src` (its desc
    // `src_md`, or format_tag::any when blocked and `src` is the user's x).
    auto layer = [&](const memory& src, const memory::desc& src_md, memory::dim C, memory::dim H,
                     memory::dim M, int k, ShapeData<Kokkos::DefaultHostExecutionSpace>& d) {
      const memory::dim P = H - 6, Pp = P / k;
      const memory::desc w_user({M, C, 7, 7}, f32, wei_tag), b_md({M}, f32, memory::format_tag::x);
      const memory::desc conv_src = blocked ? memory::desc({B, C, H, H}, f32, any) : src_md;
      const memory::desc conv_dst({B, M, P, P}, f32, blocked ? any : act_tag);
      const memory::desc w_want({M, C, 7, 7}, f32, any);
      dnnl::convolution_forward::primitive_desc conv_pd(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                          dnnl::algorithm::convolution_direct, conv_src, w_want,
                                          b_md, conv_dst, {1, 1}, {0, 0}, {0, 0}),
          eng);
      impl_ += std::string(impl_.empty() ? "" : ", ") + conv_pd.impl_info_str();
      memory in = src;
      if (conv_pd.src_desc() != src_md) {
        // Timed: the previous pooling's output in another format than this convolution reads.
        memory re(conv_pd.src_desc(), eng);
        steps_.push_back({dnnl::reorder(src, re), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, re}}});
        impl_ += " (+reorder)";
        in = re;
      }
      memory w = input_memory(conv_pd.weights_desc(), w_user, d.w.data(), stream_);
      memory b(b_md, eng, d.bias.data());
      memory y(conv_pd.dst_desc(), eng);
      steps_.push_back(
          {dnnl::convolution_forward(conv_pd),
           {{DNNL_ARG_SRC, in}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, y}}});
      dnnl::eltwise_forward::primitive_desc relu_pd(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::eltwise_relu, conv_pd.dst_desc(), 0.0f),
          eng);
      steps_.push_back({dnnl::eltwise_forward(relu_pd), {{DNNL_ARG_SRC, y}, {DNNL_ARG_DST, y}}});
      const memory::desc pool_dst({B, M, Pp, Pp}, f32, blocked ? any : act_tag);
      dnnl::pooling_forward::primitive_desc pool_pd(
          dnnl::pooling_forward::desc(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::pooling_max, conv_pd.dst_desc(), pool_dst,
                                      {k, k}, {k, k}, {0, 0}, {0, 0}),
          eng);
      memory pooled(pool_pd.dst_desc(), eng);
      steps_.push_back(
          {dnnl::pooling_forward(pool_pd), {{DNNL_ARG_SRC, y}, {DNNL_ARG_DST, pooled}}});
      return pooled;
    };
    // x: reordered into the first convolution's format outside the timed steps.
    memory x_mem(x_user, eng, data1_->x.data());
    if (blocked) {
      const memory::desc probe =
          dnnl::convolution_forward::primitive_desc(
              dnnl::convolution_forward::desc(
                  dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                  memory::desc({B, 1, 86, 86}, f32, any), memory::desc({4, 1, 7, 7}, f32, any),
                  memory::desc({4}, f32, memory::format_tag::x),
                  memory::desc({B, 4, 80, 80}, f32, any), {1, 1}, {0, 0}, {0, 0}),
              eng)
              .src_desc();
      x_mem = input_memory(probe, x_user, data1_->x.data(), stream_);
    }
    const memory s2 = layer(x_mem, x_mem.get_desc(), 1, 86, 4, 2, *data1_);
    layer(s2, s2.get_desc(), 4, 40, 16, 4, *data3_);
    stream_.wait();
  }

  void run() override {
    for (auto& step : steps_)
      step.primitive.execute(stream_, step.args);
    stream_.wait();
  }
  std::string describe() const override { return "oneDNN " + impl_; }

 private:
  struct Step {
    dnnl::primitive primitive;
    std::unordered_map<int, memory> args;
  };
  dnnl::stream stream_;
  std::unique_ptr<ShapeData<Kokkos::DefaultHostExecutionSpace>> data1_, data3_;
  std::vector<Step> steps_;
  std::string impl_;
};

}  // namespace

std::unique_ptr<BaselineRun> onednn_lenet_stack(int batch, bool nhwc, bool blocked) {
  return std::make_unique<OnednnLenetStack>(batch, nhwc, blocked);
}

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

std::vector<Baseline> onednn_backward_data_baselines() {
  return {
      {"oneDNN", true,
       [](const Shape& sh) -> std::unique_ptr<BaselineRun> {
         return std::make_unique<OnednnBackwardData>(sh, false);
       }},
      {"oneDNN_blocked", false,
       [](const Shape& sh) -> std::unique_ptr<BaselineRun> {
         return std::make_unique<OnednnBackwardData>(sh, true);
       }},
  };
}

std::vector<Baseline> onednn_backward_weights_baselines() {
  return {
      {"oneDNN", true,
       [](const Shape& sh) -> std::unique_ptr<BaselineRun> {
         return std::make_unique<OnednnBackwardWeights>(sh, false);
       }},
      {"oneDNN_blocked", false,
       [](const Shape& sh) -> std::unique_ptr<BaselineRun> {
         return std::make_unique<OnednnBackwardWeights>(sh, true);
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
