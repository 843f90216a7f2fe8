//===- Hash.h - small non-cryptographic hashes ------------------*- C++ -*-===//
//
// The hashes behind every "same inputs, same bytes" of the project: plan
// file checksums, synthetic weights and batches, the zoo's weights.
// Changing them changes files and synthetic values everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_SUPPORT_HASH_H
#define PARPLAN_SUPPORT_HASH_H

#include <cstdint>
#include <string_view>

namespace parplan {

/// FNV-1a, 64 bits.
inline uint64_t fnv1a64(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

/// SplitMix64's output for state `x`: a bijection with good avalanche, so
/// hashing (key + index) gives independent-looking values per index.
/// constexpr, so that device code calls it too (the CUDA backend compiles
/// with --expt-relaxed-constexpr): dropout's masks draw with it there.
constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A file's fingerprint from its size and 64 samples of 4 KiB (the first,
/// the last and 62 spaced evenly between; one sample of a smaller file),
/// without reading it whole: a plan records its model file's, so that
/// `parplan-run --weights` refuses another file of the same size.
/// `read(offset, length)` returns those bytes of the file (anything
/// convertible to std::string_view).
template <class Read> uint64_t fileFingerprint(uint64_t size, Read read) {
  constexpr uint64_t kSamples = 64, kSampleBytes = 4096;
  uint64_t hash = splitmix64(size);
  uint64_t length = size < kSampleBytes ? size : kSampleBytes;
  uint64_t samples = size > kSampleBytes ? kSamples : 1;
  for (uint64_t i = 0; i < samples; ++i) {
    uint64_t offset =
        samples > 1 ? i * (size - kSampleBytes) / (samples - 1) : 0;
    hash = splitmix64(hash ^ fnv1a64(read(offset, length)));
  }
  return hash;
}

} // namespace parplan

#endif // PARPLAN_SUPPORT_HASH_H
