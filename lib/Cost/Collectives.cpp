//===- Collectives.cpp - alpha-beta cost of collectives -------------------===//

#include "parplan/Cost/Collectives.h"

#include <cmath>

using namespace parplan::cost;

const char *parplan::cost::toString(Collective collective) {
  switch (collective) {
  case Collective::AllReduce:
    return "all_reduce";
  case Collective::AllGather:
    return "all_gather";
  case Collective::ReduceScatter:
    return "reduce_scatter";
  case Collective::AllToAll:
    return "all_to_all";
  case Collective::Broadcast:
    return "broadcast";
  case Collective::SendRecv:
    return "send_recv";
  }
  return "?";
}

double parplan::cost::bytesSentPerDevice(Collective collective, int64_t n,
                                         double bytes) {
  if (n <= 1)
    return 0;
  double fraction = static_cast<double>(n - 1) / static_cast<double>(n);
  switch (collective) {
  case Collective::AllReduce:
    return 2 * fraction * bytes;
  case Collective::AllGather:
  case Collective::ReduceScatter:
  case Collective::AllToAll:
    return fraction * bytes;
  case Collective::Broadcast:
  case Collective::SendRecv:
    return bytes;
  }
  return 0;
}

double parplan::cost::collectiveTime(Collective collective, int64_t n,
                                     double bytes, const Link &link,
                                     Algorithm algorithm) {
  if (n <= 1 && collective != Collective::SendRecv)
    return 0;
  double alpha = link.latency, beta = 1.0 / link.bandwidth;
  double steps = static_cast<double>(n - 1);
  double depth = std::ceil(std::log2(static_cast<double>(n)));
  switch (collective) {
  case Collective::AllReduce:
    if (algorithm == Algorithm::Tree) // Reduce up, broadcast down, pipelined.
      return 2 * depth * alpha + 2 * bytes * beta;
    return 2 * steps * alpha + bytesSentPerDevice(collective, n, bytes) * beta;
  case Collective::AllGather:
  case Collective::ReduceScatter:
  case Collective::AllToAll:
    return steps * alpha + bytesSentPerDevice(collective, n, bytes) * beta;
  case Collective::Broadcast:
    if (algorithm == Algorithm::Tree)
      return depth * (alpha + bytes * beta);
    return steps * alpha + bytes * beta; // Pipelined along the ring.
  case Collective::SendRecv:
    return alpha + bytes * beta;
  }
  return 0;
}

double parplan::cost::hierarchicalAllReduceTime(int64_t inner,
                                                const Link &innerLink,
                                                int64_t outer,
                                                const Link &outerLink,
                                                double bytes) {
  double shard = bytes / static_cast<double>(std::max<int64_t>(inner, 1));
  return collectiveTime(Collective::ReduceScatter, inner, bytes, innerLink) +
         collectiveTime(Collective::AllReduce, outer, shard, outerLink) +
         collectiveTime(Collective::AllGather, inner, bytes, innerLink);
}
