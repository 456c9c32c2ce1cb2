// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file test_16bit_types.cpp
/// \brief The 16-bit storage types kcnn names (kcnn::bfloat16 and Kokkos' half_t):
///        float -> 16-bit conversions checked bit for bit against an independent
///        reference (round to nearest, ties to even; NaN, infinities, subnormals,
///        overflow), on the host and in kernels on the default execution space.
///
/// The reference decodes all 65,536 bit patterns of the format into doubles and rounds
/// a float by searching the sorted finite values, so it shares no code and no bit
/// tricks with the conversions under test. Where Kokkos stores a 16-bit type as float
/// (KOKKOS_HALF_T_IS_FLOAT, KOKKOS_BHALF_T_IS_FLOAT) there is no rounding to test, and
/// the test checks that the value passes unchanged instead. A NaN's sign is checked where
/// the conversion is kcnn's own (keeps_nan_sign_v).

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <kcnn/bfloat16.hpp>
#include <kcnn/impl/arch/convert.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

/// A binary 16-bit floating-point format: 1 sign bit, `exponent_bits`, the rest mantissa.
struct Format16 {
  const char* name;
  int exponent_bits;
  int mantissa_bits() const { return 15 - exponent_bits; }
  int bias() const { return (1 << (exponent_bits - 1)) - 1; }

  /// The value of bit pattern b (NaN for NaN patterns), by the definition of the format.
  double decode(std::uint16_t b) const {
    const int m_bits = mantissa_bits();
    const int e_max = (1 << exponent_bits) - 1;
    const int sign = b >> 15, e = (b >> m_bits) & e_max;
    const std::uint32_t m = b & ((1u << m_bits) - 1);
    double v;
    if (e == e_max)
      v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    else if (e == 0)
      v = std::ldexp(static_cast<double>(m), 1 - bias() - m_bits);
    else
      v = std::ldexp(static_cast<double>(m | (1u << m_bits)), e - bias() - m_bits);
    return sign ? -v : v;
  }
};

constexpr Format16 kBfloat16{"bfloat16", 8};
constexpr Format16 kHalf{"half", 5};

/// Round-to-nearest-even reference over the decoded values of a format.
class RoundingReference {
 public:
  explicit RoundingReference(const Format16& f) : format_(f) {
    // Non-negative finite values in increasing order (bit patterns 0 .. +max are).
    for (std::uint32_t b = 0; b < 0x8000u; ++b) {
      const double v = f.decode(static_cast<std::uint16_t>(b));
      if (std::isfinite(v)) positive_.push_back({v, static_cast<std::uint16_t>(b)});
    }
    inf_bits_ = static_cast<std::uint16_t>(((1u << f.exponent_bits) - 1) << f.mantissa_bits());
  }

  /// The bit pattern `x` rounds to; NaN inputs are not handled here (checked apart).
  std::uint16_t round(float x) const {
    const double a = std::fabs(static_cast<double>(x));
    const std::uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
    if (std::isinf(a)) return sign | inf_bits_;
    // The largest finite value plus half its ulp rounds (ties to even: the max has an
    // odd mantissa) to infinity.
    const auto& max = positive_.back();
    const double half_ulp = (max.first - positive_[positive_.size() - 2].first) / 2;
    if (a >= max.first + half_ulp) return sign | inf_bits_;
    auto hi = std::lower_bound(positive_.begin(), positive_.end(), a,
                               [](const auto& p, double v) { return p.first < v; });
    if (hi == positive_.end()) return sign | max.second;  // above max, below the threshold
    if (hi->first == a) return sign | hi->second;
    auto lo = hi - 1;
    const double d_lo = a - lo->first, d_hi = hi->first - a;
    if (d_lo < d_hi) return sign | lo->second;
    if (d_hi < d_lo) return sign | hi->second;
    return sign | ((lo->second & 1u) == 0 ? lo->second : hi->second);
  }

  /// Inputs that probe the rounding: every midpoint between neighbours and its float
  /// neighbours, the neighbours themselves, the overflow threshold, subnormals, zeros,
  /// infinities, and random floats over the whole exponent range.
  std::vector<float> probes(std::uint32_t seed) const {
    std::vector<float> out;
    auto push_around = [&](double v) {
      const float f = static_cast<float>(v);
      if (!std::isfinite(f)) return;
      for (float g : {std::nextafter(f, -INFINITY), f, std::nextafter(f, INFINITY)})
        out.push_back(g), out.push_back(-g);
    };
    for (std::size_t i = 0; i + 1 < positive_.size(); ++i) {
      push_around(positive_[i].first);
      push_around((positive_[i].first + positive_[i + 1].first) / 2);  // exact in float
    }
    const double max = positive_.back().first;
    push_around(max);
    push_around(max + (max - positive_[positive_.size() - 2].first) / 2);
    out.push_back(std::numeric_limits<float>::max());
    out.push_back(std::numeric_limits<float>::denorm_min());
    out.push_back(std::numeric_limits<float>::min());
    out.push_back(INFINITY), out.push_back(-INFINITY), out.push_back(0.0f), out.push_back(-0.0f);
    std::mt19937 gen(seed);
    std::uniform_int_distribution<std::uint32_t> bits(0, 0xffffffffu);
    while (out.size() < 400000) {
      std::uint32_t u = bits(gen);
      float f;
      std::memcpy(&f, &u, sizeof(f));
      if (!std::isnan(f)) out.push_back(f);
    }
    return out;
  }

 private:
  Format16 format_;
  std::vector<std::pair<double, std::uint16_t>> positive_;
  std::uint16_t inf_bits_;
};

template <class T>
std::uint16_t bits_of(const T& v) {
  static_assert(sizeof(T) == 2);
  std::uint16_t b;
  std::memcpy(&b, &v, sizeof(b));
  return b;
}

using Space = Kokkos::DefaultExecutionSpace;

/// y(i) = T(x(i)) in a kernel.
template <class T>
struct ConvertToStorage {
  Kokkos::View<const float*, Space::memory_space> x;
  Kokkos::View<T*, Space::memory_space> y;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const { y(i) = T(x(i)); }
};

/// Converts every float of `in` to T on the default execution space and back to bits.
template <class T>
std::vector<std::uint16_t> convert_on_device(const std::vector<float>& in) {
  Kokkos::View<float*, Space::memory_space> x("x", in.size());
  Kokkos::View<T*, Space::memory_space> y("y", in.size());
  auto x_host = Kokkos::create_mirror_view(x);
  for (std::size_t i = 0; i < in.size(); ++i)
    x_host(i) = in[i];
  Kokkos::deep_copy(x, x_host);
  Kokkos::parallel_for("kcnn_test::convert_to_16bit", Kokkos::RangePolicy<Space>(0, in.size()),
                       ConvertToStorage<T>{x, y});
  auto y_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  std::vector<std::uint16_t> out(in.size());
  std::memcpy(out.data(), y_host.data(), in.size() * sizeof(std::uint16_t));
  return out;
}

/// Whether T converts from float with kcnn's own code (kcnn::bfloat16 without Kokkos'
/// bhalf_t), which keeps a NaN's sign. Kokkos' conversions (CUDA's __float2half for half_t)
/// return a NaN too, but the canonical positive one.
template <class T>
inline constexpr bool keeps_nan_sign_v =
    std::is_same_v<T, kcnn::bfloat16> && !KCNN_BFLOAT16_IS_KOKKOS_BHALF;

/// The conversions of T (a 16-bit type in `format`) on the host and on the device.
template <class T>
void check_rounding(const Format16& format) {
  const RoundingReference reference(format);
  const std::vector<float> probes = reference.probes(20261125);
  const std::vector<std::uint16_t> device = convert_on_device<T>(probes);
  std::size_t failures = 0;
  for (std::size_t i = 0; i < probes.size() && failures < 10; ++i) {
    const std::uint16_t want = reference.round(probes[i]);
    const std::uint16_t host = bits_of(T(probes[i]));
    if (host != want || device[i] != want) {
      ++failures;
      ADD_FAILURE() << format.name << ": " << probes[i] << " (float bits 0x" << std::hex <<
          [&] {
            std::uint32_t u;
            std::memcpy(&u, &probes[i], 4);
            return u;
          }() << ") -> host 0x"
                    << host << ", device 0x" << device[i] << ", expected 0x" << want << std::dec;
    }
  }
  // Every 16-bit value converts to float exactly and back to itself; NaNs stay NaNs of
  // their sign (quiet).
  for (std::uint32_t b = 0; b <= 0xffffu; ++b) {
    T v;
    const auto bits = static_cast<std::uint16_t>(b);
    std::memcpy(static_cast<void*>(&v), &bits, sizeof(bits));  // T is trivially copyable
    const float f = static_cast<float>(v);
    const double want = format.decode(bits);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << format.name << " 0x" << std::hex << b;
      const std::uint16_t back = bits_of(T(f));
      ASSERT_TRUE(std::isnan(format.decode(back))) << format.name << " 0x" << std::hex << b;
      if (keeps_nan_sign_v<T>) {
        ASSERT_EQ(back & 0x8000u, bits & 0x8000u) << format.name << " 0x" << std::hex << b;
      }
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), want) << format.name << " 0x" << std::hex << b;
    ASSERT_EQ(bits_of(T(f)), bits) << format.name << " 0x" << std::hex << b;
  }
  // A float NaN with payload bits only in the part a 16-bit type drops stays a NaN.
  for (std::uint32_t u : {0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7f80ffffu}) {
    float f;
    std::memcpy(&f, &u, sizeof(f));
    const std::uint16_t b = bits_of(T(f));
    EXPECT_TRUE(std::isnan(format.decode(b))) << format.name << " 0x" << std::hex << u;
    if (keeps_nan_sign_v<T>) {
      EXPECT_EQ(b >> 15, u >> 31) << format.name << " 0x" << std::hex << u;
    }
    EXPECT_EQ(convert_on_device<T>({f})[0], b) << format.name << " 0x" << std::hex << u;
  }
}

/// Where Kokkos stores the type as float: values pass unchanged.
template <class T>
void check_float_storage() {
  static_assert(std::is_same_v<T, float>);
  for (float f : {1.0f + 0x1p-20f, -3.0e-40f, 3.0e38f}) {
    const T v = f;
    EXPECT_EQ(static_cast<float>(v), f);
  }
}

template <class T>
void check_conversions(const Format16& format) {
  if constexpr (sizeof(T) == 2)
    check_rounding<T>(format);
  else
    check_float_storage<T>();
}

TEST(Bfloat16, RoundsToNearestEvenAndKeepsNanOnHostAndDevice) {
  check_conversions<kcnn::bfloat16>(kBfloat16);
}

TEST(Bfloat16, ImplConversionsMatchTheReference) {
  // kcnn's own float -> bfloat16 bits, used by kernels whatever kcnn::bfloat16 is.
  const RoundingReference reference(kBfloat16);
  for (float f : reference.probes(7))
    ASSERT_EQ(kcnn::Impl::bfloat16_bits_from_float(f), reference.round(f)) << f;
  // NaNs stay NaNs of their sign, whatever their payload (also one only in the low bits).
  for (std::uint32_t u :
       {0x7f800001u, 0xff800001u, 0x7fc00000u, 0xffc00000u, 0x7f80ffffu, 0xffffffffu}) {
    float f;
    std::memcpy(&f, &u, sizeof(f));
    const std::uint16_t b = kcnn::Impl::bfloat16_bits_from_float(f);
    EXPECT_TRUE(std::isnan(kBfloat16.decode(b))) << std::hex << u;
    EXPECT_EQ(b >> 15, u >> 31) << std::hex << u;
  }
  for (std::uint32_t b = 0; b <= 0xffffu; ++b) {
    const double want = kBfloat16.decode(static_cast<std::uint16_t>(b));
    const float f = kcnn::Impl::float_from_bfloat16_bits(static_cast<std::uint16_t>(b));
    if (std::isnan(want))
      ASSERT_TRUE(std::isnan(f));
    else
      ASSERT_EQ(static_cast<double>(f), want);
  }
}

TEST(Half, RoundsToNearestEvenAndKeepsNanOnHostAndDevice) {
  check_conversions<Kokkos::Experimental::half_t>(kHalf);
}

/// packed(i) = the 16-bit values of x(2i) (low half) and x(2i + 1), rounded by
/// arch/convert.hpp's round_and_pack_16bit (one instruction on GPUs from sm_80).
template <class T>
struct RoundAndPack {
  Kokkos::View<const float*, Space::memory_space> x;
  Kokkos::View<std::uint32_t*, Space::memory_space> packed;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    packed(i) = kcnn::Impl::round_and_pack_16bit<T>(x(2 * i), x(2 * i + 1));
  }
};

/// round_and_pack_16bit on the default execution space against the reference: the bits
/// of every probe (ties, subnormals, overflow, infinities, random floats), in both
/// halves; NaNs stay NaNs (of any sign: the hardware's is the canonical one).
template <class T>
void check_packed_rounding(const Format16& format) {
  if constexpr (sizeof(T) != 2) {
    GTEST_SKIP() << "Kokkos stores this type as float in this build";
  } else {
    const RoundingReference reference(format);
    std::vector<float> probes = reference.probes(20261128);
    for (std::uint32_t u : {0x7f800001u, 0xff800001u, 0x7fc00000u, 0xffc00000u}) {
      float f;
      std::memcpy(&f, &u, sizeof(f));
      probes.push_back(f);
    }
    if (probes.size() % 2) probes.push_back(1.0f);
    Kokkos::View<float*, Space::memory_space> x("x", probes.size());
    Kokkos::View<std::uint32_t*, Space::memory_space> packed("packed", probes.size() / 2);
    auto x_host = Kokkos::create_mirror_view(x);
    for (std::size_t i = 0; i < probes.size(); ++i)
      x_host(i) = probes[i];
    Kokkos::deep_copy(x, x_host);
    Kokkos::parallel_for("kcnn_test::round_and_pack_16bit",
                         Kokkos::RangePolicy<Space>(0, packed.extent(0)),
                         RoundAndPack<T>{x, packed});
    auto packed_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), packed);
    std::size_t failures = 0;
    for (std::size_t i = 0; i < probes.size() && failures < 10; ++i) {
      const auto got = static_cast<std::uint16_t>(packed_host(i / 2) >> (16 * (i % 2)));
      const bool ok = std::isnan(probes[i]) ? std::isnan(format.decode(got))
                                            : got == reference.round(probes[i]);
      if (!ok) {
        ++failures;
        ADD_FAILURE() << format.name << ": " << probes[i] << " -> 0x" << std::hex << got
                      << (i % 2 ? " (high half)" : " (low half)") << std::dec;
      }
    }
  }
}

TEST(Bfloat16, PackedRoundingMatchesTheReference) {
  check_packed_rounding<kcnn::bfloat16>(kBfloat16);
}

TEST(Half, PackedRoundingMatchesTheReference) {
  check_packed_rounding<Kokkos::Experimental::half_t>(kHalf);
}

}  // namespace
