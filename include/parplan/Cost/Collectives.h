//===- Collectives.h - alpha-beta cost of collectives -----------*- C++ -*-===//
//
// Time of collectives over n devices joined by a link of latency alpha and
// bandwidth 1 / beta, and the bytes each device sends. The formulas are
// written out, with their sources, in docs/cost-model.md.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_COST_COLLECTIVES_H
#define PARPLAN_COST_COLLECTIVES_H

#include "parplan/Cost/Cluster.h"

#include <cstdint>

namespace parplan::cost {

enum class Collective {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Broadcast,
  SendRecv
};
const char *toString(Collective collective);

enum class Algorithm { Ring, Tree };

/// Time for `collective` over `n` devices on `link`. `bytes` is the size of
/// the whole buffer: the reduced tensor (all-reduce, reduce-scatter input),
/// the gathered tensor (all-gather output), each device's buffer (all-to-all,
/// broadcast, send/recv).
double collectiveTime(Collective collective, int64_t n, double bytes,
                      const Link &link, Algorithm algorithm = Algorithm::Ring);

/// Bytes each device sends in a ring implementation (the "bus" volume):
/// all-reduce 2(n-1)/n N, all-gather and reduce-scatter (n-1)/n N, all-to-all
/// (n-1)/n N, broadcast N (a ring forwards the whole buffer), send/recv N.
double bytesSentPerDevice(Collective collective, int64_t n, double bytes);

/// Two-level all-reduce: reduce-scatter within groups of `inner` devices,
/// all-reduce of the 1/inner shards across `outer` groups, all-gather within
/// the groups.
double hierarchicalAllReduceTime(int64_t inner, const Link &innerLink,
                                 int64_t outer, const Link &outerLink,
                                 double bytes);

} // namespace parplan::cost

#endif // PARPLAN_COST_COLLECTIVES_H
