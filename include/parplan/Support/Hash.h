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

} // namespace parplan

#endif // PARPLAN_SUPPORT_HASH_H
