//===- RuntimeCrossMeshTest.cpp - cross-mesh moves in plan files ----------===//
//
// A move is one table in the plan file, and each device works out its own
// part (crossMeshPart): which tiles it slices and sends, which it receives,
// how it puts its block together, and the scratch that takes. Then the
// table's checks (checkPlan), each a one-line error, and a device's program
// with its part instantiated as its own instructions.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/CrossMeshSteps.h"
#include "parplan/Runtime/PlanFile.h"

#include "MlpPlan.h"
#include "PlanChecks.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace parplan;
using namespace parplan::runtime;

namespace {

using Kind = CrossMeshPart::StepKind;

std::vector<Kind> kindsOf(const CrossMeshPart &part) {
  std::vector<Kind> kinds;
  for (const CrossMeshPart::Step &step : part.steps)
    kinds.push_back(step.kind);
  return kinds;
}

/// A 4x3 tensor of f32 split by rows over mesh "first" (devices 0 and 1),
/// moved whole to both devices of "second" (listed 3 then 2): rows 0-1
/// from device 0 broadcast to 3 and 2, rows 2-3 from device 1 sent to 3,
/// which passes them on to 2.
plan::Plan movePlan() {
  plan::Plan result;
  result.add_mesh_shape(4);
  testing::addMesh(result, "first", {0, 1});
  testing::addMesh(result, "second", {3, 2});
  plan::CrossMeshMove &move = *result.add_cross_mesh_moves();
  move.set_name("x");
  move.set_dtype(plan::F32);
  move.add_logical_shape(4);
  move.add_logical_shape(3);
  move.set_source_mesh("first");
  move.add_source_splits(0);
  move.set_destination_mesh("second");
  move.add_destination_splits(-1);
  for (int64_t row : {0, 2}) {
    plan::CrossMeshTile &tile = *move.add_tiles();
    tile.add_offsets(row);
    tile.add_offsets(0);
    tile.add_sizes(2);
    tile.add_sizes(3);
  }
  auto transfer = [&](int64_t tile, int64_t sender,
                      std::vector<int64_t> receivers) {
    plan::CrossMeshTransfer &step = *move.add_transfers();
    step.set_tile(tile);
    step.set_sender(sender);
    for (int64_t receiver : receivers)
      step.add_receivers(receiver);
  };
  transfer(0, 0, {3, 2});
  transfer(1, 1, {3});
  transfer(1, 3, {2});
  // The sources: their blocks of rows.
  plan::Program &sources = *result.add_programs();
  sources.set_mesh("first");
  sources.add_devices(0);
  sources.add_devices(1);
  sources.set_loss(-1);
  plan::Buffer *block =
      testing::addBuffer(sources, "x", {2, 3}, plan::Buffer::PARAMETER);
  block->set_logical_shape(0, 4);
  block->clear_splits();
  block->add_splits(0);
  plan::CrossMeshPart &send =
      *sources.add_instructions()->mutable_cross_mesh_send();
  send.set_move(0);
  send.set_block(0);
  send.set_scratch(-1);
  // The destinations: the whole tensor, and the scratch of their tiles.
  plan::Program &destinations = *result.add_programs();
  destinations.set_mesh("second");
  destinations.add_devices(2);
  destinations.add_devices(3);
  destinations.set_loss(-1);
  testing::addBuffer(destinations, "", {4, 3});
  plan::Buffer *scratch = testing::addBuffer(destinations, "", {256});
  scratch->set_dtype(plan::I8);
  plan::CrossMeshPart &recv =
      *destinations.add_instructions()->mutable_cross_mesh_recv();
  recv.set_move(0);
  recv.set_block(0);
  recv.set_scratch(1);
  testing::addBuffer(destinations, "", {4, 3});
  testing::addKernel(destinations, "relu", {0}, {2});
  return result;
}

using testing::has;

/// checkPlan's error on movePlan() after `edit`.
std::string checkErrorAfter(void (*edit)(plan::Plan &)) {
  return testing::checkErrorAfter(movePlan(), edit);
}

} // namespace

TEST_CASE("a device's part of a cross-mesh move", "[cross-mesh]") {
  // Rows 0-1 and 2-3 of a 4x3 tensor of f32.
  std::vector<Slice> tiles = {{{0, 0}, {2, 3}}, {{2, 0}, {2, 3}}};
  std::vector<CrossMeshTransfer> transfers = {
      {0, 0, {3, 2}}, {1, 1, {3}}, {1, 3, {2}}};
  Slice whole{{0, 0}, {4, 3}};

  SECTION("a holder whose tile is its block sends the block itself") {
    CrossMeshPart part =
        crossMeshPart(tiles, transfers, 0, {{0, 0}, {2, 3}}, false, 4);
    REQUIRE(kindsOf(part) == std::vector<Kind>{Kind::Broadcast});
    CHECK(part.steps[0].from == CrossMeshPart::kBlock);
    CHECK(part.steps[0].members == std::vector<int64_t>{0, 3, 2});
    CHECK(part.scratchBytes == 0);
  }
  SECTION("a holder of a larger block slices the tile out first") {
    std::vector<CrossMeshTransfer> fromWhole = {{1, 5, {3}}};
    CrossMeshPart part = crossMeshPart(tiles, fromWhole, 5, whole, false, 4);
    REQUIRE(kindsOf(part) == std::vector<Kind>{Kind::Slice, Kind::Send});
    CHECK(part.steps[0].starts == std::vector<int64_t>{2, 0});
    CHECK(part.steps[0].to == 0);
    CHECK(part.steps[1].from == 0);
    CHECK(part.steps[1].peer == 3);
    CHECK(part.steps[1].tag == 0);
    // 24 bytes of tile, rounded up to 64.
    CHECK(part.scratchBytes == 64);
  }
  SECTION("a receiver of two tiles pads each to its block and adds them") {
    CrossMeshPart part = crossMeshPart(tiles, transfers, 3, whole, true, 4);
    REQUIRE(kindsOf(part) == std::vector<Kind>{Kind::Broadcast, Kind::Recv,
                                               Kind::Send, Kind::Pad, Kind::Pad,
                                               Kind::Add});
    // Device 3 passes tile 1 on to device 2 from the slot it received into.
    CHECK(part.steps[1].peer == 1);
    CHECK(part.steps[1].tag == 1);
    CHECK(part.steps[2].from == part.steps[1].to);
    CHECK(part.steps[2].peer == 2);
    CHECK(part.steps[2].tag == 2);
    CHECK(part.steps[4].starts == std::vector<int64_t>{2, 0});
    CHECK(part.steps[5].to == CrossMeshPart::kBlock);
    CHECK(part.tilesReceived == 2);
    // Two tiles of 24 bytes and two blocks of 48, each in 64 bytes.
    CHECK(part.scratchBytes == 256);
    for (const CrossMeshPart::Slot &slot : part.slots)
      CHECK(slot.offset % CrossMeshPart::kAlignment == 0);
  }
  SECTION("a receiver of three tiles alternates between two sums") {
    std::vector<Slice> rows = {
        {{0, 0}, {1, 3}}, {{1, 0}, {1, 3}}, {{2, 0}, {2, 3}}};
    std::vector<CrossMeshTransfer> three = {
        {0, 0, {9}}, {1, 1, {9}}, {2, 2, {9}}};
    CrossMeshPart part = crossMeshPart(rows, three, 9, whole, true, 4);
    REQUIRE(kindsOf(part) ==
            std::vector<Kind>{Kind::Recv, Kind::Recv, Kind::Recv, Kind::Pad,
                              Kind::Pad, Kind::Add, Kind::Pad, Kind::Add});
    const CrossMeshPart::Step &first = part.steps[5], &last = part.steps[7];
    CHECK(last.from == first.to);
    CHECK(first.to != first.from);
    CHECK(last.to == CrossMeshPart::kBlock);
  }
  SECTION("a receiver whose tile is its block receives into it") {
    std::vector<CrossMeshTransfer> one = {{0, 0, {4}}};
    CrossMeshPart part =
        crossMeshPart(tiles, one, 4, {{0, 0}, {2, 3}}, true, 4);
    REQUIRE(kindsOf(part) == std::vector<Kind>{Kind::Recv});
    CHECK(part.steps[0].to == CrossMeshPart::kBlock);
    CHECK(part.scratchBytes == 0);
  }
  SECTION("a device no transfer names has nothing to do") {
    CrossMeshPart part = crossMeshPart(tiles, transfers, 7, whole, true, 4);
    CHECK(part.steps.empty());
    CHECK(part.tilesReceived == 0);
  }
}

TEST_CASE("a cross-mesh move becomes each device's own instructions",
          "[cross-mesh]") {
  plan::Plan plan = movePlan();
  REQUIRE(checkPlan(plan).error == "");
  REQUIRE(checkMessageOrder(plan).error == "");
  // Device 2 is the second mesh's second device: it gets tile 0 by the
  // broadcast and tile 1 from device 3.
  DeviceProgram device2;
  REQUIRE(instantiateProgram(plan, 2, device2).ok());
  const plan::Program &program = device2.program;
  std::vector<std::string> ops;
  for (const plan::Instruction &instruction : program.instructions()) {
    if (instruction.has_kernel())
      ops.push_back(instruction.kernel().op());
    else if (instruction.has_collective())
      ops.push_back(instruction.collective().group());
    else if (instruction.has_recv())
      ops.push_back("recv from " + std::to_string(instruction.recv().peer()));
    else if (instruction.has_send())
      ops.push_back("send to " + std::to_string(instruction.send().peer()));
    else
      ops.push_back("part");
  }
  CHECK(ops == std::vector<std::string>{"cross-mesh:0,3,2", "recv from 3",
                                        "slice_grad", "slice_grad", "add",
                                        "relu"});
  // Its slots follow the program's buffers, placed in the scratch when it
  // has an arena offset (here it has none).
  REQUIRE(program.buffers_size() == 3 + 4);
  CHECK(program.buffers(3).arena_offset() == -1);
  CHECK(device2.groups.at("cross-mesh:0,3,2") == std::vector<int64_t>{0, 3, 2});
  // Every device knows every move's groups, as NCCL's split needs.
  DeviceProgram device1;
  REQUIRE(instantiateProgram(plan, 1, device1).ok());
  CHECK(device1.groups.count("cross-mesh:0,3,2") == 1);
  REQUIRE(device1.program.instructions_size() == 1);
  CHECK(device1.program.instructions(0).has_send());
  CHECK(device1.program.instructions(0).send().peer() == 3);

  SECTION("instruction indices move with the instructions") {
    plan.set_micro_batches(2);
    plan.mutable_programs(1)->set_update_begin(1);
    plan.mutable_programs(0)->set_update_begin(1);
    REQUIRE(checkPlan(plan).error == "");
    DeviceProgram again;
    REQUIRE(instantiateProgram(plan, 2, again).ok());
    CHECK(again.program.update_begin() == 5);
  }
  SECTION("with an arena, the slots are at the scratch's offset") {
    plan::Program &destinations = *plan.mutable_programs(1);
    destinations.set_arena_bytes(512);
    destinations.mutable_buffers(0)->set_arena_offset(0);
    destinations.mutable_buffers(1)->set_arena_offset(64);
    destinations.mutable_buffers(2)->set_arena_offset(320);
    REQUIRE(checkPlan(plan).error == "");
    DeviceProgram placed;
    REQUIRE(instantiateProgram(plan, 3, placed).ok());
    CHECK(placed.program.buffers(3).arena_offset() == 64);
    CHECK(placed.program.buffers(4).arena_offset() == 128);
  }
}

TEST_CASE("checkPlan names what is wrong with a cross-mesh move",
          "[cross-mesh]") {
  CHECK(has(checkErrorAfter([](plan::Plan &p) {
              p.mutable_cross_mesh_moves(0)->set_destination_mesh("third");
            }),
            "plan cross_mesh_moves[0] 'x' moves to mesh 'third', which the "
            "plan does not declare"));
  CHECK(has(checkErrorAfter([](plan::Plan &p) {
              p.mutable_cross_mesh_moves(0)->set_destination_mesh("first");
            }),
            "plan cross_mesh_moves[0] 'x' moves from mesh 'first' to itself"));
  CHECK(has(checkErrorAfter([](plan::Plan &p) {
              p.mutable_cross_mesh_moves(0)->set_source_splits(0, 2);
            }),
            "plan cross_mesh_moves[0] 'x' source splits [2] name no "
            "dimension of [4, 3]"));
  CHECK(has(checkErrorAfter([](plan::Plan &p) {
              p.mutable_cross_mesh_moves(0)->mutable_tiles(1)->set_sizes(0, 3);
            }),
            "plan cross_mesh_moves[0] 'x' tile 1 at [2, 0] of [3, 3] is not "
            "a region of [4, 3]"));
  // Device 1 holds rows 2-3, not tile 0.
  CHECK(has(checkErrorAfter([](plan::Plan &p) {
              p.mutable_cross_mesh_moves(0)->mutable_transfers(0)->set_sender(
                  1);
            }),
            "plan cross_mesh_moves[0] 'x' transfer 0: sender 1 does not hold "
            "tile 0 in its block"));
  // Device 3 passes on what it has not received yet.
  CHECK(has(checkErrorAfter([](plan::Plan &p) {
              p.mutable_cross_mesh_moves(0)->mutable_transfers()->SwapElements(
                  1, 2);
            }),
            "plan cross_mesh_moves[0] 'x' transfer 1: sender 3 does not hold "
            "tile 1 (it has not received it)"));
  CHECK(
      has(checkErrorAfter([](plan::Plan &p) {
            p.mutable_cross_mesh_moves(0)->mutable_transfers(1)->set_receivers(
                0, 0);
          }),
          "plan cross_mesh_moves[0] 'x' transfer 1: receiver 0 is not on "
          "the destination mesh 'second'"));
  CHECK(has(checkErrorAfter([](plan::Plan &p) {
              p.mutable_cross_mesh_moves(0)->mutable_transfers()->RemoveLast();
            }),
            "plan cross_mesh_moves[0] 'x': device 2 receives 6 of the 12 "
            "elements of its destination block"));
  CHECK(has(checkErrorAfter([](plan::Plan &p) {
              p.mutable_programs(1)->mutable_buffers(1)->set_shape(0, 128);
            }),
            "program 1 instruction 0: device 2's part of move 'x' needs 256 "
            "bytes of scratch, but has 128"));
  CHECK(has(checkErrorAfter([](plan::Plan &p) {
              p.mutable_programs(1)->mutable_buffers(0)->set_shape(0, 2);
            }),
            "program 1 instruction 0: device 2's block of move 'x' is [4, 3], "
            "not the buffer's shape [2, 3]"));
  CHECK(has(checkErrorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->set_mesh("second");
              p.mutable_programs(1)->set_mesh("first");
            }),
            "lists device 0, which its mesh 'second' does not hold"));
  CHECK(has(checkErrorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_instructions()->RemoveLast();
            }),
            "device 0 takes part in move 'x' (cross_mesh_moves[0]), but its "
            "program runs no part of it"));
  CHECK(has(checkErrorAfter([](plan::Plan &p) {
              p.mutable_programs(0)
                  ->mutable_instructions(0)
                  ->mutable_cross_mesh_send()
                  ->set_move(3);
            }),
            "program 0 instruction 0: cross_mesh_send of move 3, not one of "
            "the 1 cross_mesh_moves"));
  // A receiving program's part read as a send runs on the wrong side.
  CHECK(has(checkErrorAfter([](plan::Plan &p) {
              plan::CrossMeshPart part =
                  p.programs(1).instructions(0).cross_mesh_recv();
              *p.mutable_programs(1)
                   ->mutable_instructions(0)
                   ->mutable_cross_mesh_send() = part;
            }),
            "program 1 instruction 0: cross_mesh_send of move 'x' runs on "
            "mesh 'second', not its source 'first'"));
  // A schedule's forward sends only to later stages.
  CHECK(has(checkErrorAfter([](plan::Plan &p) {
              p.set_micro_batches(2);
              p.set_schedule("1f1b");
              p.mutable_meshes()->SwapElements(0, 1);
              for (plan::Program &program : *p.mutable_programs()) {
                program.set_update_begin(program.instructions_size());
                program.set_backward_begin(program.instructions_size());
              }
            }),
            "takes part in move 'x' from stage 1 to stage 0 in a "
            "micro-batch's forward"));
}
