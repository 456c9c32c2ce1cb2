// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file weights_file.hpp
/// \brief The lenet5 weights file: a small binary with a header that is checked on load.
///
/// Layout (all integers little-endian, floats IEEE-754 binary32 little-endian):
///
///   offset  size  field
///        0     8  magic "KCNNLNT5"
///        8     4  format version (1)
///       12     4  layer count L (4)
///       16  16*L  per layer: out, in, kernel_h, kernel_w (uint32 each; dense layers
///                 have a 1x1 kernel); the layer holds out*in*kernel_h*kernel_w weights
///                 followed by out biases
///   16+16L     8  float count F (uint64): the sum over the layers
///   24+16L     8  checksum (uint64): 64-bit FNV-1a of the F*4 payload bytes
///   32+16L   4*F  payload: per layer its weights (in kcnn's NCHW (M, C, R, S) order for
///                 convolutions, (out, in) row-major for dense layers), then its biases
///
/// The loader rejects, with a message naming the problem, a file that is too short, has
/// another magic or version, other layer shapes, a float count or file size that does
/// not match, or a payload whose checksum differs.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace lenet5 {

struct LayerShape {
  std::uint32_t out, in, kh, kw;
  std::size_t weights() const { return std::size_t(out) * in * kh * kw; }
  std::size_t floats() const { return weights() + out; }
};

/// conv1, conv2, dense1, dense2
inline constexpr std::array<LayerShape, 4> kShapes{
    {{4, 1, 7, 7}, {16, 4, 7, 7}, {32, 1024, 1, 1}, {10, 32, 1, 1}}};
inline constexpr char kMagic[8] = {'K', 'C', 'N', 'N', 'L', 'N', 'T', '5'};
inline constexpr std::uint32_t kVersion = 1;

inline std::size_t total_floats() {
  std::size_t n = 0;
  for (const auto& s : kShapes)
    n += s.floats();
  return n;
}

inline std::uint64_t fnv1a64(const unsigned char* data, std::size_t size) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 1099511628211ull;
  }
  return h;
}

/// Little-endian encoding independent of the host's byte order.
inline void put(std::vector<unsigned char>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}
inline std::uint64_t get(const std::vector<unsigned char>& in, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= std::uint64_t(in[at + i]) << (8 * i);
  return v;
}

inline std::vector<unsigned char> encode_payload(const std::vector<float>& floats) {
  std::vector<unsigned char> out;
  out.reserve(floats.size() * 4);
  for (float f : floats) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    put(out, bits, 4);
  }
  return out;
}

inline void save_weights(const std::string& path, const std::vector<float>& floats) {
  if (floats.size() != total_floats())
    throw std::runtime_error("internal error: " + std::to_string(floats.size()) +
                             " floats to save, the network has " + std::to_string(total_floats()));
  std::vector<unsigned char> file(kMagic, kMagic + 8);
  put(file, kVersion, 4);
  put(file, kShapes.size(), 4);
  for (const auto& s : kShapes) {
    put(file, s.out, 4);
    put(file, s.in, 4);
    put(file, s.kh, 4);
    put(file, s.kw, 4);
  }
  const auto payload = encode_payload(floats);
  put(file, floats.size(), 8);
  put(file, fnv1a64(payload.data(), payload.size()), 8);
  file.insert(file.end(), payload.begin(), payload.end());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(file.data()), std::streamsize(file.size()));
  if (!out) throw std::runtime_error("cannot write the weights file " + path);
}

inline std::vector<float> load_weights(const std::string& path) {
  // (A directory opens as a stream on Linux and fails only when read.)
  if (std::filesystem::is_directory(path))
    throw std::runtime_error(path + " is a directory, not a lenet5 weights file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open the weights file " + path);
  const std::vector<unsigned char> file((std::istreambuf_iterator<char>(in)),
                                        std::istreambuf_iterator<char>());
  auto fail = [&](const std::string& why) {
    throw std::runtime_error(path + " is not a usable lenet5 weights file: " + why);
  };
  const std::size_t header = 32 + 16 * kShapes.size();
  if (file.size() < 16) fail("only " + std::to_string(file.size()) + " bytes");
  if (std::memcmp(file.data(), kMagic, 8) != 0) fail("wrong magic (expected \"KCNNLNT5\")");
  if (get(file, 8, 4) != kVersion)
    fail("format version " + std::to_string(get(file, 8, 4)) + ", this program reads version " +
         std::to_string(kVersion));
  if (get(file, 12, 4) != kShapes.size())
    fail(std::to_string(get(file, 12, 4)) + " layers, the network has " +
         std::to_string(kShapes.size()));
  if (file.size() < header) fail("truncated header");
  for (std::size_t l = 0; l < kShapes.size(); ++l) {
    const auto& s = kShapes[l];
    const std::size_t at = 16 + 16 * l;
    if (get(file, at, 4) != s.out || get(file, at + 4, 4) != s.in || get(file, at + 8, 4) != s.kh ||
        get(file, at + 12, 4) != s.kw)
      fail("layer " + std::to_string(l + 1) + " has shape (" + std::to_string(get(file, at, 4)) +
           ", " + std::to_string(get(file, at + 4, 4)) + ", " +
           std::to_string(get(file, at + 8, 4)) + ", " + std::to_string(get(file, at + 12, 4)) +
           "), expected (" + std::to_string(s.out) + ", " + std::to_string(s.in) + ", " +
           std::to_string(s.kh) + ", " + std::to_string(s.kw) + ")");
  }
  const std::uint64_t count = get(file, header - 16, 8);
  if (count != total_floats())
    fail("float count " + std::to_string(count) + ", expected " + std::to_string(total_floats()));
  if (file.size() != header + 4 * count)
    fail(std::to_string(file.size()) + " bytes, expected " + std::to_string(header + 4 * count) +
         (file.size() < header + 4 * count ? " (truncated)" : " (trailing bytes)"));
  if (fnv1a64(file.data() + header, 4 * count) != get(file, header - 8, 8))
    fail("checksum mismatch (the weights are corrupted)");
  std::vector<float> floats(count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto bits = static_cast<std::uint32_t>(get(file, header + 4 * i, 4));
    std::memcpy(&floats[i], &bits, 4);
  }
  return floats;
}

}  // namespace lenet5
