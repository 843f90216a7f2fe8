//===- CrossMeshSteps.h - a cross-mesh move as a device's instructions -*- C++
//-*-===//
//
// A plan file says a cross-mesh move once (Plan.cross_mesh_moves) and each
// device taking part runs its cross_mesh_send or cross_mesh_recv. When the
// executor instantiates a device's program, each of those becomes the
// device's own instructions (slices, sends, receives, broadcasts, pads
// and adds, on buffers in the instruction's scratch), so that the backends
// run only kernels, collectives and messages, and the devices of a stage
// share one program in the file.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_CROSSMESHSTEPS_H
#define PARPLAN_RUNTIME_CROSSMESHSTEPS_H

#include "parplan/Runtime/plan.pb.h"
#include "parplan/Sbp/CrossMeshPart.h"
#include "parplan/Sbp/Sbp.h"

#include <map>
#include <string>
#include <vector>

namespace parplan::runtime {

/// A move's tiles and transfers in the form crossMeshPart reads, and the
/// bytes of an element.
struct CrossMeshTable {
  std::vector<Slice> tiles;
  std::vector<CrossMeshTransfer> transfers;
  int64_t elementBytes = 0;
};

/// `move` read; its dtype must be valid (checkPlan's business).
CrossMeshTable readCrossMeshMove(const plan::CrossMeshMove &move);

/// The part of the device at `coordinate` of mesh `meshShape` (its side's
/// mesh) in `move`: its block is the one its side's splits give it.
CrossMeshPart crossMeshPartOf(const plan::CrossMeshMove &move,
                              const CrossMeshTable &table, int64_t device,
                              const std::vector<int64_t> &meshShape,
                              const std::vector<int64_t> &coordinate,
                              bool receiving,
                              const std::vector<size_t> *mine = nullptr);

/// The parts devices run of a plan's moves, each move's table read once.
class CrossMeshParts {
public:
  explicit CrossMeshParts(const plan::Plan &plan) : plan(plan) {}

  /// The cross_mesh_send or cross_mesh_recv `instruction` is; null for
  /// any other instruction.
  static const plan::CrossMeshPart *
  partOf(const plan::Instruction &instruction);
  /// The move a part of one is of.
  const plan::CrossMeshMove &moveOf(const plan::CrossMeshPart &part) const {
    return plan.cross_mesh_moves(static_cast<int>(part.move()));
  }
  /// The part of `device`, at `coordinate` of mesh `meshShape`, in
  /// `instruction`, a part of a move of the plan (checkPlan passed).
  CrossMeshPart of(const plan::Instruction &instruction, int64_t device,
                   const std::vector<int64_t> &meshShape,
                   const std::vector<int64_t> &coordinate);

private:
  const plan::Plan &plan;
  std::map<int64_t, CrossMeshTable> tables;
};

/// The name of the group a cross-mesh broadcast over `members` (in rank
/// order) runs on: the same on every device, whatever the program.
std::string crossMeshGroupName(const std::vector<int64_t> &members);

/// Every group the broadcasts of `plan`'s moves run on, by name: a device
/// adds all of them, not only its own, as a backend that creates its
/// communicators on every device (NCCL's split) needs the same list
/// everywhere.
std::map<std::string, std::vector<int64_t>>
crossMeshGroups(const plan::Plan &plan);

/// Appends to `program` (a device's, being instantiated) the instructions
/// of `part` of `move`: a buffer per slot (a temporary of the move's dtype
/// at the scratch's arena offset plus the slot's, when the scratch has
/// one), then each step, on `block` (the instruction's block buffer) or a
/// slot.
void appendCrossMeshPart(const CrossMeshPart &part,
                         const plan::CrossMeshMove &move, int64_t block,
                         const plan::Buffer *scratch, plan::Program &program);

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_CROSSMESHSTEPS_H
