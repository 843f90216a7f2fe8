//===- PlanFileFuzzer.cpp - Fuzz target of the plan loader and checkPlan --===//
//
// A hostile plan passes the checksum whatever it holds, so this target
// forges it: an input that is a plan file keeps its payload, any other
// input is taken as the payload itself, and the envelope around it gets
// the right version and checksum. Then what parplan-run does before its
// first step: parsePlanFile, checkPlan, and on a plan checkPlan accepts,
// everything the executor works out from it on the strength of that check
// (each device's program, its step order under the plan's schedule and
// without one, what it keeps aside, the arena's overlaps, the message
// order NCCL needs). A refusal is one line; an accepted plan writes the
// same bytes again.
//
//===----------------------------------------------------------------------===//

#include "FuzzContract.h"

#include "parplan/Runtime/PlanFile.h"
#include "parplan/Runtime/plan.pb.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

using namespace parplan;
using namespace parplan::runtime;

namespace {

constexpr const char *kPlanName = "fuzz-plan.pb";
/// Devices worked out per plan: the first and the last few, since a plan
/// may hold a million.
constexpr int64_t kDevicesAtEachEnd = 8;

std::string forgedPlanFile(const uint8_t *data, size_t size) {
  plan::PlanFile envelope;
  if (!envelope.ParseFromArray(data, static_cast<int>(size)) ||
      envelope.schema_version() == 0)
    envelope.set_payload(data, size);
  envelope.set_schema_version(kPlanSchemaVersion);
  envelope.set_checksum(planChecksum(envelope.payload()));
  return envelope.SerializeAsString();
}

void runWhatTheExecutorRuns(const plan::Plan &planMessage) {
  int64_t devices = planDevices(planMessage);
  for (int64_t device = 0; device < devices; ++device) {
    if (device == kDevicesAtEachEnd &&
        devices - kDevicesAtEachEnd > kDevicesAtEachEnd)
      device = devices - kDevicesAtEachEnd;
    DeviceProgram instance;
    Status status = instantiateProgram(planMessage, device, instance);
    if (!status.ok()) {
      fuzz::requireOneLineError(status.error, "");
      continue;
    }
    for (bool followSchedule : {true, false})
      (void)stepOrder(planMessage, instance.program, followSchedule);
    (void)arenaOverlaps(instance.program);
  }
  for (const plan::Program &program : planMessage.programs()) {
    (void)keptActivationBytes(planMessage, program);
    (void)inFlightActivationBytes(planMessage, program);
  }
  Status order = checkMessageOrder(planMessage);
  if (!order.ok())
    fuzz::requireOneLineError(order.error, "");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > static_cast<size_t>(INT32_MAX))
    return 0;
  plan::Plan planMessage;
  // The file as it came, envelope and all.
  Status asRead = parsePlanFile(
      std::string_view(reinterpret_cast<const char *>(data), size), kPlanName,
      planMessage);
  if (!asRead.ok())
    fuzz::requireOneLineError(asRead.error, kPlanName);
  // The same with a checksum that holds.
  Status parsed =
      parsePlanFile(forgedPlanFile(data, size), kPlanName, planMessage);
  if (!parsed.ok()) {
    fuzz::requireOneLineError(parsed.error, kPlanName);
    return 0;
  }
  Status checked = checkPlan(planMessage);
  if (!checked.ok()) {
    fuzz::requireOneLineError(checked.error, "");
    return 0;
  }
  runWhatTheExecutorRuns(planMessage);
  std::string bytes = serializePlan(planMessage);
  plan::Plan again;
  fuzz::require(parsePlanFile(bytes, kPlanName, again).ok() &&
                    serializePlan(again) == bytes,
                "an accepted plan does not write the same bytes again");
  return 0;
}
