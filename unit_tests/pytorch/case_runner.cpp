// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file case_runner.cpp
/// \brief kcnn_case_runner DIR: runs the problems of DIR/cases.txt through kcnn on the
///        default execution space, for compare_with_pytorch.py (PyTorch as a second,
///        independent reference; a file exchange, no Python bindings).
///
/// Each line of cases.txt is one problem as key=value pairs: id, op (conv, pool,
/// conv_bwd_data, conv_bwd_weights, pool_bwd, act_bwd), dtype (f32, f64), layout (NCHW,
/// NHWC), the extents N C H W M R S and the output's P Q, stride sh sw, padding ph pw,
/// dilation dh dw, act (0-3), bias (0/1), algo (a ConvAlgo name), and for a pooling
/// (pool=1) pmode (0 Max, 1 Average), pwh pww psh psw pph ppw pinc pact and its output
/// PP QQ. Inputs are DIR/<id>_<name>.bin (x, w, b, dy, y), raw little-endian arrays in
/// the layout's order; the outputs go to DIR/<id>_out.bin (and <id>_db.bin), or the
/// message of a kcnn::Error to DIR/<id>_error.txt.
#include <Kokkos_Core.hpp>
#include <kcnn/kcnn.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Space = Kokkos::DefaultExecutionSpace;
template <class T>
using Tensor = Kokkos::View<T****, Kokkos::LayoutRight, Space::memory_space>;
template <class T>
using Vector = Kokkos::View<T*, Kokkos::LayoutRight, Space::memory_space>;

struct Case {
  std::map<std::string, std::string> kv;
  long get(const std::string& key, long fallback = 0) const {
    const auto it = kv.find(key);
    return it == kv.end() ? fallback : std::stol(it->second);
  }
  std::string str(const std::string& key) const {
    const auto it = kv.find(key);
    if (it == kv.end()) throw std::runtime_error("case without '" + key + "'");
    return it->second;
  }
};

template <class T>
std::vector<T> read_values(const std::string& path, std::size_t count) {
  std::vector<T> v(count);
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(v.data()), std::streamsize(count * sizeof(T))))
    throw std::runtime_error("cannot read " + std::to_string(count) + " values from " + path);
  return v;
}

template <class View>
void write_view(const std::string& path, const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(h.data()),
            std::streamsize(h.span() * sizeof(typename View::value_type)));
  if (!out) throw std::runtime_error("cannot write " + path);
}

/// A device tensor of the case's layout order (NCHW or NHWC storage of n, c, h, w),
/// read from DIR/<id>_<name>.bin, or zero-filled when `name` is empty.
template <class T>
Tensor<T> tensor(const std::string& prefix, const std::string& name, bool nhwc, long n, long c,
                 long h, long w) {
  const std::array<long, 4> e = nhwc ? std::array{n, h, w, c} : std::array{n, c, h, w};
  Tensor<T> t(name.empty() ? "out" : name, e[0], e[1], e[2], e[3]);
  if (!name.empty()) {
    const auto values = read_values<T>(prefix + name + ".bin", t.size());
    Kokkos::deep_copy(t, Kokkos::View<const T****, Kokkos::LayoutRight, Kokkos::HostSpace,
                                      Kokkos::MemoryTraits<Kokkos::Unmanaged>>(values.data(), e[0],
                                                                               e[1], e[2], e[3]));
  }
  return t;
}

template <class T>
Vector<T> vector(const std::string& prefix, const std::string& name, long count) {
  Vector<T> v(name, count);
  if (count > 0) {
    const auto values = read_values<T>(prefix + name + ".bin", count);
    Kokkos::deep_copy(
        v, Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
               values.data(), count));
  }
  return v;
}

kcnn::ConvAlgo algo_named(const std::string& name) {
  for (kcnn::ConvAlgo a :
       {kcnn::ConvAlgo::Auto, kcnn::ConvAlgo::Reference, kcnn::ConvAlgo::Tiled,
        kcnn::ConvAlgo::Im2colGemm, kcnn::ConvAlgo::ImplicitGemm, kcnn::ConvAlgo::TensorCoreGemm})
    if (name == kcnn::to_string(a)) return a;
  throw std::runtime_error("unknown algorithm " + name);
}

template <class T>
void run_case(const std::string& dir, const Case& c) {
  const std::string prefix = dir + "/" + c.str("id") + "_", op = c.str("op");
  const bool nhwc = c.str("layout") == "NHWC";
  const long N = c.get("N"), C = c.get("C"), H = c.get("H"), W = c.get("W"), M = c.get("M");
  const long R = c.get("R"), S = c.get("S"), P = c.get("P"), Q = c.get("Q");
  kcnn::Conv2dParams p;
  p.stride_h = int(c.get("sh", 1)), p.stride_w = int(c.get("sw", 1));
  p.pad_h = int(c.get("ph")), p.pad_w = int(c.get("pw"));
  p.dilation_h = int(c.get("dh", 1)), p.dilation_w = int(c.get("dw", 1));
  p.layout = nhwc ? kcnn::Layout::NHWC : kcnn::Layout::NCHW;
  p.activation = static_cast<kcnn::Activation>(c.get("act"));
  if (c.kv.count("algo")) p.algo = algo_named(c.str("algo"));
  kcnn::Pool2dParams q;
  q.mode = static_cast<kcnn::PoolMode>(c.get("pmode"));
  q.window_h = int(c.get("pwh", 2)), q.window_w = int(c.get("pww", 2));
  q.stride_h = int(c.get("psh", 2)), q.stride_w = int(c.get("psw", 2));
  q.pad_h = int(c.get("pph")), q.pad_w = int(c.get("ppw"));
  q.count_include_pad = c.get("pinc", 1) != 0;
  q.layout = p.layout;
  q.activation = static_cast<kcnn::Activation>(c.get("pact"));
  const bool pooled = c.get("pool") != 0, bias = c.get("bias") != 0;
  const long PP = c.get("PP"), QQ = c.get("QQ");

  if (op == "conv") {
    if (pooled) p.pool = q;
    const auto x = tensor<T>(prefix, "x", nhwc, N, C, H, W);
    const auto w = tensor<T>(prefix, "w", nhwc, M, C, R, S);
    const auto b = vector<T>(prefix, "b", bias ? M : 0);
    const auto y = tensor<T>(prefix, "", nhwc, N, M, pooled ? PP : P, pooled ? QQ : Q);
    kcnn::conv2d_forward(Space(), x, w, b, y, p);
    write_view(prefix + "out.bin", y);
  } else if (op == "pool") {
    const auto x = tensor<T>(prefix, "x", nhwc, N, C, H, W);
    const auto b = vector<T>(prefix, "b", bias ? C : 0);
    const auto y = tensor<T>(prefix, "", nhwc, N, C, PP, QQ);
    kcnn::pool2d_forward(Space(), x, b, y, q);
    write_view(prefix + "out.bin", y);
  } else if (op == "conv_bwd_data") {
    const auto dy = tensor<T>(prefix, "dy", nhwc, N, M, P, Q);
    const auto w = tensor<T>(prefix, "w", nhwc, M, C, R, S);
    const auto dx = tensor<T>(prefix, "", nhwc, N, C, H, W);
    kcnn::conv2d_backward_data(Space(), dy, w, dx, p);
    write_view(prefix + "out.bin", dx);
  } else if (op == "conv_bwd_weights") {
    const auto x = tensor<T>(prefix, "x", nhwc, N, C, H, W);
    const auto dy = tensor<T>(prefix, "dy", nhwc, N, M, P, Q);
    const auto dw = tensor<T>(prefix, "", nhwc, M, C, R, S);
    Vector<T> db("db", bias ? M : 0);
    kcnn::conv2d_backward_weights(Space(), x, dy, dw, db, p);
    write_view(prefix + "out.bin", dw);
    if (bias) write_view(prefix + "db.bin", db);
  } else if (op == "pool_bwd") {
    const auto x = tensor<T>(prefix, "x", nhwc, N, C, H, W);
    const auto dy = tensor<T>(prefix, "dy", nhwc, N, C, PP, QQ);
    const auto dx = tensor<T>(prefix, "", nhwc, N, C, H, W);
    kcnn::pool2d_backward(Space(), x, dy, dx, q);
    write_view(prefix + "out.bin", dx);
  } else if (op == "act_bwd") {
    const auto y = tensor<T>(prefix, "y", nhwc, N, C, H, W);
    const auto dy = tensor<T>(prefix, "dy", nhwc, N, C, H, W);
    const auto dx = tensor<T>(prefix, "", nhwc, N, C, H, W);
    kcnn::activation_backward(Space(), p.activation, y, dy, dx);
    write_view(prefix + "out.bin", dx);
  } else {
    throw std::runtime_error("unknown op " + op);
  }
  Space().fence();
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc != 2) {
    std::cerr << "usage: kcnn_case_runner DIR (DIR/cases.txt, see case_runner.cpp)\n";
    return 2;
  }
  const std::string dir = argv[1];
  std::ifstream cases(dir + "/cases.txt");
  if (!cases) {
    std::cerr << "kcnn_case_runner: cannot read " << dir << "/cases.txt\n";
    return 2;
  }
  Kokkos::ScopeGuard kokkos;
  int run = 0, refused = 0;
  for (std::string line; std::getline(cases, line);) {
    if (line.empty()) continue;
    Case c;
    std::istringstream fields(line);
    for (std::string field; fields >> field;) {
      const auto eq = field.find('=');
      if (eq != std::string::npos) c.kv[field.substr(0, eq)] = field.substr(eq + 1);
    }
    try {
      if (c.str("dtype") == "f64") {
        run_case<double>(dir, c);
      } else {
        run_case<float>(dir, c);
      }
      ++run;
    } catch (const kcnn::Error& e) {
      std::ofstream(dir + "/" + c.str("id") + "_error.txt") << e.what() << '\n';
      ++refused;
    } catch (const std::exception& e) {  // a malformed case or a missing file
      std::cerr << "kcnn_case_runner: " << e.what() << " (line: " << line << ")\n";
      return 1;
    }
  }
  kcnn::release_workspaces();
  std::cout << "kcnn_case_runner: " << run << " cases run, " << refused << " refused\n";
  return 0;
}
