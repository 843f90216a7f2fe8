//===- Report.h - a plan on one self-contained HTML page --------*- C++ -*-===//
//
// `parplan compile --report FILE` (docs/simulate.md#the-report): what the
// compiler chose and what the simulation of it shows, on one page that
// fetches nothing: the devices and the stages they form as a picture, each
// class of devices' simulated timeline (SVG, coarse enough for a thousand
// devices), its peak memory against the device's capacity, the critical
// path and the layout chosen for each parameter. MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_SIMULATE_REPORT_H
#define PARPLAN_SIMULATE_REPORT_H

#include "parplan/Cost/Cluster.h"
#include "parplan/Simulate/Simulator.h"

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace parplan::simulate {

struct ReportInput {
  /// The page's title: the model and the cluster.
  std::string title;
  /// The compiled plan (its meshes and programs), the cluster it runs on,
  /// and its simulation, with timelines (SimulateOptions::timelineColumns).
  const plan::Plan *plan = nullptr;
  const cost::Cluster *cluster = nullptr;
  const Simulation *simulation = nullptr;
  /// Facts listed at the top, in order: ("predicted step", "21.64 s").
  std::vector<std::pair<std::string, std::string>> facts;
  /// Each parameter and the layout chosen for it ("[S(0), B]").
  std::vector<std::pair<std::string, std::string>> layouts;
};

/// Writes the page. Deterministic: the same input gives the same bytes.
void writeReport(const ReportInput &input, std::ostream &out);

/// The colour the report draws stage `stage` in ("#4e79a7"), and the ones
/// of compute, communication and moves on its timeline: for tests that
/// look for them in a rendering.
std::string stageColor(int64_t stage);
extern const char *const kComputeColor;
extern const char *const kCommunicationColor;
extern const char *const kMoveColor;

} // namespace parplan::simulate

#endif // PARPLAN_SIMULATE_REPORT_H
