//===- RuntimePlanFileTest.cpp - plan files and their checks --------------===//
//
// The plan file envelope (PlanFile.h): a round trip, deterministic bytes,
// and every way a file can be wrong (missing, not a plan, another schema
// version, corrupted, truncated), each a one-line error naming the file.
// Then checkPlan on a small valid plan and one broken field at a time.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/Communicator.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Runtime/WeightFile.h"

#include "MlpPlan.h"
#include "PlanChecks.h"

#include <catch2/catch.hpp>
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <unistd.h>

using namespace parplan;
using namespace parplan::runtime;

namespace {

using testing::addBuffer;
using testing::addKernel;
using testing::checkErrorAfter;
using testing::has;

/// Two devices, data parallel: y = x w, loss = mean(y), with w's gradient
/// summed over both devices. One program, which both devices share: each
/// holds its block of x's rows.
plan::Plan smallPlan() {
  plan::Plan result;
  result.set_model("tiny");
  result.set_seed(7);
  result.add_mesh_shape(2);
  plan::Group *all = result.add_groups();
  all->set_name("all");
  all->add_devices(0);
  all->add_devices(1);
  plan::Program &program = *result.add_programs();
  program.add_devices(0);
  program.add_devices(1);
  plan::Buffer *x = addBuffer(program, "x", {2, 3}, plan::Buffer::INPUT);
  x->set_logical_shape(0, 4);
  x->set_splits(0, 0);
  addBuffer(program, "w", {3, 5}, plan::Buffer::PARAMETER); // 1
  addBuffer(program, "", {2, 5});                           // 2: y
  addBuffer(program, "", {});                               // 3: loss
  addBuffer(program, "", {3, 5});                           // 4: dw
  addBuffer(program, "", {3, 5});                           // 5: w'
  addKernel(program, "matmul", {0, 1}, {2});
  plan::Kernel *mean = addKernel(program, "reduce_mean", {2}, {3});
  plan::Attr *keepdims = mean->add_attrs();
  keepdims->set_name("keepdims");
  keepdims->set_bool_value(false);
  plan::Collective *reduce = program.add_instructions()->mutable_collective();
  reduce->set_kind(plan::Collective::ALL_REDUCE);
  reduce->set_group("all");
  reduce->set_input(4);
  reduce->set_output(4);
  addKernel(program, "sgd_update", {1, 4}, {5});
  program.set_loss(3);
  plan::Update *update = program.add_updates();
  update->set_target(1);
  update->set_source(5);
  return result;
}

/// smallPlan with a program of its own for each device.
plan::Plan perDevicePlan() {
  plan::Plan result = smallPlan();
  plan::Program second = result.programs(0);
  result.mutable_programs(0)->clear_devices();
  result.mutable_programs(0)->add_devices(0);
  second.clear_devices();
  second.add_devices(1);
  *result.add_programs() = std::move(second);
  return result;
}

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("parplan-plan-test-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream file(path, std::ios::binary);
  file << bytes;
}

std::string errorOf(const std::string &bytes) {
  std::string path = tempPath("bad.pb");
  writeBytes(path, bytes);
  plan::Plan out;
  Status status = readPlanFile(path, out);
  std::filesystem::remove(path);
  return status.error;
}

std::string envelope(uint32_t version, const std::string &payload,
                     uint64_t checksum) {
  plan::PlanFile file;
  file.set_schema_version(version);
  file.set_payload(payload);
  file.set_checksum(checksum);
  return file.SerializeAsString();
}

} // namespace

TEST_CASE("plan checksum is FNV-1a 64", "[plan]") {
  CHECK(planChecksum("") == 0xcbf29ce484222325ULL);
  CHECK(planChecksum("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(planChecksum("foobar") == 0x85944171f73967e8ULL);
}

TEST_CASE("plan files round trip with deterministic bytes", "[plan]") {
  plan::Plan original = smallPlan();
  std::string bytes = serializePlan(original);
  CHECK(serializePlan(original) == bytes);
  plan::Plan copy;
  copy.CopyFrom(original);
  CHECK(serializePlan(copy) == bytes);

  std::string path = tempPath("round-trip.pb");
  REQUIRE(writePlanFile(original, path).ok());
  plan::Plan read;
  Status status = readPlanFile(path, read);
  std::filesystem::remove(path);
  REQUIRE(status.error == "");
  CHECK(read.SerializeAsString() == original.SerializeAsString());
  CHECK(serializePlan(read) == bytes);
}

TEST_CASE("plan file errors name the file", "[plan]") {
  plan::Plan out;
  std::string missing = tempPath("missing.pb");
  Status status = readPlanFile(missing, out);
  CHECK(status.error.find("cannot read plan file " + missing) == 0);
  // A directory (the -o of parplan compile) opens as a stream that reads
  // nothing: said as a directory, not as an empty plan.
  std::string directory = tempPath("plan-directory");
  std::filesystem::create_directories(directory);
  CHECK(readPlanFile(directory, out).error ==
        "cannot read plan file " + directory +
            ": it is a directory (parplan compile -o DIR writes DIR/plan.pb)");
  std::filesystem::remove(directory);

  std::string good = serializePlan(smallPlan());
  CHECK(errorOf("this is not a plan, just some text\n")
            .find("is not a plan file") != std::string::npos);
  CHECK(errorOf("").find("is not a plan file") != std::string::npos);
  CHECK(errorOf(good.substr(0, good.size() / 2))
            .find("is not a plan file (or is truncated)") != std::string::npos);

  std::string payload = smallPlan().SerializeAsString();
  CHECK(errorOf(envelope(7, payload, planChecksum(payload)))
            .find("has schema version 7; this parplan-run reads version 6") !=
        std::string::npos);

  // The payload's last byte comes just before the checksum's tag and 8
  // bytes.
  std::string corrupted = good;
  corrupted[corrupted.size() - 10] ^= 0x01;
  std::string error = errorOf(corrupted);
  CHECK(error.find("is corrupted: checksum 0x") != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);

  std::string junk = "\xff\xff\xff";
  CHECK(errorOf(envelope(kPlanSchemaVersion, junk, planChecksum(junk)))
            .find("is corrupted: its plan does not parse") !=
        std::string::npos);

  // A string field that is not UTF-8 fails the parse, and protobuf's own
  // log line about it is held back (found by the plan fuzz target): the
  // reader's error is the only line.
  std::string notUtf8 = "\x0a\x02\xff\xfe"; // field 1 (model), 2 bytes
  static int logged;
  logged = 0;
  google::protobuf::LogHandler *previous = google::protobuf::SetLogHandler(
      [](google::protobuf::LogLevel, const char *, int, const std::string &) {
        ++logged;
      });
  CHECK(errorOf(envelope(kPlanSchemaVersion, notUtf8, planChecksum(notUtf8)))
            .find("is corrupted: its plan does not parse") !=
        std::string::npos);
  google::protobuf::SetLogHandler(previous);
  CHECK(logged == 0);
}

TEST_CASE("writePlanFile reports a path it cannot write", "[plan]") {
  Status status = writePlanFile(smallPlan(), "/nonexistent-dir/plan.pb");
  CHECK(status.error ==
        "plan file: cannot write '/nonexistent-dir/plan.pb': No such file or "
        "directory");
}

TEST_CASE("checkPlan accepts an optimizer stepping in place", "[plan]") {
  plan::Plan inPlace = smallPlan();
  plan::Program &program = *inPlace.mutable_programs(0);
  program.mutable_instructions(3)->mutable_kernel()->set_results(0, 1);
  program.clear_updates();
  Status status = checkPlan(inPlace);
  INFO(status.error);
  CHECK(status.ok());
}

TEST_CASE("checkPlan accepts a valid plan", "[plan]") {
  CHECK(checkPlan(smallPlan()).error == "");
}

TEST_CASE("checkPlan names what is wrong", "[plan]") {
  auto errorAfter = [](auto &&edit) {
    return checkErrorAfter(smallPlan(), edit);
  };
  CHECK(has(errorAfter([](plan::Plan &p) { p.clear_programs(); }),
            "plan has no programs"));
  // Only a kernel that reads each element before writing it may write a
  // result over an operand, and only over the one its signature names.
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)
                  ->mutable_instructions(0)
                  ->mutable_kernel()
                  ->set_results(0, 0);
            }),
            "results[0] is operands[0] (buffer 0), which nn.matmul may not "
            "write in place"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)
                  ->mutable_instructions(3)
                  ->mutable_kernel()
                  ->set_results(0, 4);
            }),
            "results[0] is operands[1] (buffer 4), which nn.sgd_update may "
            "not write in place"));
  CHECK(has(errorAfter([](plan::Plan &p) { p.set_mesh_shape(0, 1); }),
            "program 0 lists device 1, not one of the 1 devices of mesh [1]"));
  CHECK(has(errorAfter([](plan::Plan &p) { p.set_mesh_shape(0, -1); }),
            "plan mesh_shape [-1]: axes must be positive"));
  CHECK(has(errorAfter([](plan::Plan &p) { p.add_mesh_shape(2); }),
            "no program runs device 2 of mesh [2, 2]"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->set_devices(1, 0);
            }),
            "program 0 lists its devices out of ascending order"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              plan::Program copy = p.programs(0);
              copy.clear_devices();
              copy.add_devices(1);
              *p.add_programs() = copy;
            }),
            "program 1 lists device 1, which program 0 runs too"));
  CHECK(has(
      errorAfter([](plan::Plan &p) { p.mutable_programs(0)->clear_devices(); }),
      "program 0 lists no devices"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_buffers(2)->set_dtype(
                  plan::DTYPE_UNSPECIFIED);
            }),
            "program 0 buffer 2 '' has no valid dtype"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_buffers(2)->set_dtype(
                  static_cast<plan::DType>(99));
            }),
            "has no valid dtype (99)"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_buffers(2)->set_shape(0, -2);
            }),
            "program 0 buffer 2 '' has a negative dimension [-2, 5]"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              auto *b = p.mutable_programs(0)->mutable_buffers(2);
              b->set_shape(0, int64_t{1} << 40);
              b->set_shape(1, int64_t{1} << 40);
            }),
            "is too large"));
  // Hostile sizes within each buffer's bound: 2^38 floats per device, or
  // an arena of 10^18 bytes, are refused before anything is allocated.
  CHECK(has(errorAfter([](plan::Plan &p) {
              auto *b = p.mutable_programs(0)->mutable_buffers(2);
              b->set_shape(0, int64_t{1} << 19);
              b->set_shape(1, int64_t{1} << 19);
            }),
            "program 0 holds 1099511627984 bytes of buffers per device, more "
            "than the 1099511627776 (1 TiB) a plan may ask of a device"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->set_arena_bytes(1000000000000000000);
            }),
            "program 0 holds 1000000000000000000 bytes of arena per device"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_buffers(0)->add_offsets(0);
            }),
            "program 0 buffer 0 'x' has offsets; a plan file gives splits"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_buffers(0)->set_shape(0, 3);
            }),
            "program 0 buffer 0 'x': device 0's block of [4, 3] split by [0] "
            "is [2, 3], not the buffer's shape [3, 3]"));
  // 3 rows over 2 devices: device 0 holds 2, device 1 only 1.
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_buffers(0)->set_logical_shape(0,
                                                                           3);
            }),
            "device 1's block of [3, 3] split by [0] is [1, 3], not the "
            "buffer's shape [2, 3]"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_buffers(1)->clear_splits();
            }),
            "program 0 buffer 1 'w' splits [] need one entry per axis of mesh "
            "[2]"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_buffers(1)->set_splits(0, 2);
            }),
            "splits [2] name no dimension of [3, 5]"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_buffers(1)->clear_logical_shape();
            }),
            "of another rank"));
  // A temporary with splits would have the executor cut a block of it.
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_buffers(2)->add_splits(3);
            }),
            "program 0 buffer 2 '' is a temporary with splits or a "
            "logical_shape"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_updates(0)->set_target(2);
              p.mutable_programs(0)->mutable_updates(0)->set_source(2);
            }),
            "program 0 updates[0]: target buffer 2 is neither a parameter "
            "nor state"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              auto *c = addBuffer(*p.mutable_programs(0), "", {1, 2},
                                  plan::Buffer::CONSTANT);
              c->add_logical_shape(2);
              c->add_logical_shape(2);
              c->add_splits(0);
              c->set_data(std::string(8, '\0'));
            }),
            "program 0 buffer 6 '' is a constant of 16 bytes but data has 8"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              plan::Attr *attr = p.mutable_programs(0)
                                     ->mutable_instructions(0)
                                     ->mutable_kernel()
                                     ->add_attrs();
              attr->set_name("offset");
              attr->mutable_block_offset()->add_shape(4);
              attr->mutable_block_offset()->add_splits(0);
              attr->mutable_block_offset()->set_dim(1);
            }),
            "program 0 instruction 0: attribute 'offset' dim 1 is not -1 or "
            "a dimension of [4]"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              auto *c = addBuffer(*p.mutable_programs(0), "", {2, 2},
                                  plan::Buffer::CONSTANT);
              c->set_data(std::string(15, '\0'));
            }),
            "program 0 buffer 6 '' is a constant of 16 bytes but data has 15"));
  // Shared constant data: an index in range, not beside inline data, of
  // the constant's size.
  CHECK(has(errorAfter([](plan::Plan &p) {
              auto *c = addBuffer(*p.mutable_programs(0), "", {2, 2},
                                  plan::Buffer::CONSTANT);
              c->set_shared_data(2);
              p.add_constant_data(std::string(16, '\0'));
            }),
            "program 0 buffer 6 '' has shared_data 2 but the plan has 1 "
            "shared constants"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_buffers(2)->set_shared_data(1);
              p.add_constant_data(std::string(40, '\0'));
            }),
            "program 0 buffer 2 '' has shared_data but is not a constant"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              auto *c = addBuffer(*p.mutable_programs(0), "", {2, 2},
                                  plan::Buffer::CONSTANT);
              c->set_shared_data(1);
              c->set_data(std::string(16, '\0'));
              p.add_constant_data(std::string(16, '\0'));
            }),
            "program 0 buffer 6 '' has both data and shared data"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              auto *c = addBuffer(*p.mutable_programs(0), "", {2, 2},
                                  plan::Buffer::CONSTANT);
              c->set_shared_data(1);
              p.add_constant_data(std::string(12, '\0'));
            }),
            "program 0 buffer 6 '' is a constant of 16 bytes but its shared "
            "data has 12"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_buffers(1)->clear_name();
            }),
            "names no logical tensor"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              auto *x = p.mutable_programs(0)->mutable_buffers(0);
              x->set_dtype(plan::I64);
            }),
            "is an integer input without a positive value_bound"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_buffers(1)->set_synthetic_center(
                  std::numeric_limits<double>::quiet_NaN());
            }),
            "has a synthetic_center that is not a finite number"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)
                  ->mutable_instructions(0)
                  ->mutable_kernel()
                  ->set_operands(1, 17);
            }),
            "program 0 instruction 0 operands[1] is buffer 17, not one of "
            "the 6 buffers"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)
                  ->mutable_instructions(0)
                  ->mutable_kernel()
                  ->set_operands(1, -1);
            }),
            "operands[1] of nn.matmul is absent but not optional"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)
                  ->mutable_instructions(0)
                  ->mutable_kernel()
                  ->set_op("frobnicate");
            }),
            "program 0 instruction 0: no kernel for nn.frobnicate"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)
                  ->mutable_instructions(0)
                  ->mutable_kernel()
                  ->add_operands(2);
            }),
            "nn.matmul takes 2 operands, not 3"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)
                  ->mutable_instructions(0)
                  ->mutable_kernel()
                  ->clear_results();
            }),
            "nn.matmul has 1 results, not 0"));
  CHECK(has(
      errorAfter([](plan::Plan &p) {
        auto *attrs =
            p.mutable_programs(0)->mutable_instructions(1)->mutable_kernel();
        attrs->add_attrs()->set_name("keepdims");
      }),
      "attribute 'keepdims' appears twice"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->add_instructions();
            }),
            "program 0 instruction 4 is empty"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)
                  ->mutable_instructions(2)
                  ->mutable_collective()
                  ->set_group("rows");
            }),
            "program 0 instruction 2: all_reduce over group 'rows', which "
            "the plan lacks"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              plan::Collective *c = p.mutable_programs(0)
                                        ->mutable_instructions(2)
                                        ->mutable_collective();
              c->set_kind(plan::Collective::ALL_TO_ALL);
              c->set_feeds_update(true);
            }),
            "program 0 instruction 2: all_to_all with feeds_update: only an "
            "all_reduce, a reduce_scatter, an all_gather or a broadcast runs "
            "on the gradients stream"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_groups(0)->clear_devices();
              p.mutable_groups(0)->add_devices(0);
            }),
            "program 0 instruction 2: all_reduce over group 'all', which "
            "does not contain device 1"));
  CHECK(has(
      errorAfter([](plan::Plan &p) { p.mutable_groups(0)->add_mesh_axes(0); }),
      "plan groups[0] 'all' needs either devices or mesh_axes, not "
      "both"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_groups(0)->clear_devices();
              p.mutable_groups(0)->add_mesh_axes(1);
            }),
            "plan groups[0] 'all' mesh_axes [1] are not ascending axes of "
            "mesh [2]"));
  CHECK(has(
      errorAfter([](plan::Plan &p) { p.mutable_groups(0)->add_devices(5); }),
      "plan groups[0] 'all' names device 5"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)
                  ->mutable_instructions(2)
                  ->mutable_collective()
                  ->set_output(5);
            }),
            "all_reduce works in place"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              auto *c = p.mutable_programs(0)
                            ->mutable_instructions(2)
                            ->mutable_collective();
              c->set_kind(plan::Collective::ALL_GATHER);
              c->set_output(2);
            }),
            "all_gather shapes do not agree with its group (input [3, 5], "
            "output [2, 5], group of 2)"));
  CHECK(
      has(errorAfter([](plan::Plan &p) { p.mutable_programs(0)->set_loss(2); }),
          "program 0 loss buffer 2 is not a float scalar"));
  CHECK(
      has(errorAfter([](plan::Plan &p) { p.mutable_programs(0)->set_loss(6); }),
          "program 0 loss is buffer 6"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_updates(0)->set_source(2);
            }),
            "program 0 updates[0]: target buffer 1 [3, 5] and source buffer "
            "2 [2, 5] differ in shape or dtype"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              plan::Recv *recv =
                  p.mutable_programs(0)->add_instructions()->mutable_recv();
              recv->set_buffer(3);
              recv->set_peer(1);
            }),
            "recv peer 1 is not another device"));
  // Messages are matched per device.
  plan::Plan sending = perDevicePlan();
  plan::Send *send =
      sending.mutable_programs(0)->add_instructions()->mutable_send();
  send->set_buffer(3);
  send->set_peer(1);
  send->set_tag(4);
  CHECK(checkPlan(perDevicePlan()).error == "");
  // The members of a group run its calls on the same stream: marked
  // feeds_update in both programs, or in neither.
  plan::Plan marked = perDevicePlan();
  for (int p = 0; p < 2; ++p)
    marked.mutable_programs(p)
        ->mutable_instructions(2)
        ->mutable_collective()
        ->set_feeds_update(true);
  CHECK(checkPlan(marked).error == "");
  CHECK(has(checkErrorAfter(marked,
                            [](plan::Plan &p) {
                              p.mutable_programs(1)
                                  ->mutable_instructions(2)
                                  ->mutable_collective()
                                  ->set_feeds_update(false);
                            }),
            "program 1 instruction 2: all_reduce over group 'all' is not "
            "marked feeds_update, but program 0's call 0 over that group "
            "is: every member of a group runs its calls on the same stream"));
  CHECK(has(checkPlan(sending).error,
            "device 0 sends 1 message(s) with tag 4 to device 1 that it "
            "does not receive alike"));
}

TEST_CASE("checkPlan refuses weights read from outside the model",
          "[plan][hostile]") {
  // Buffer 1 is the parameter w, [3, 5] float32: 60 bytes.
  auto errorWith = [](const std::string &source, uint64_t modelBytes = 0) {
    return checkErrorAfter(smallPlan(), [&](plan::Plan &p) {
      p.set_model_bytes(modelBytes);
      p.mutable_programs(0)->mutable_buffers(1)->set_source(source);
    });
  };
  // What the importer writes passes, and sources that name no bytes.
  for (const char *source :
       {"initializer@100+60", "constant@0+60", "external:w.bin@0+60",
        "external:data/w.bin@8", "zeros", "initializer", "constant:/c"})
    CHECK(errorWith(source, 1000).empty());
  CHECK(has(errorWith("external:../secret@0+60"),
            "program 0 buffer 1 'w': source 'external:../secret@0+60' names "
            "a file outside the model's folder"));
  CHECK(has(errorWith("external:/etc/passwd@0+60"), "outside the model's"));
  CHECK(has(errorWith("external:a/../../b@0"), "outside the model's"));
  CHECK(has(errorWith("external:w.bin"), "gives no byte offset"));
  CHECK(has(errorWith("initializer@-4+60"), "has no valid byte range"));
  CHECK(has(errorWith("initializer@4+x"), "has no valid byte range"));
  CHECK(has(errorWith("initializer@99999999999999999999+60"),
            "has no valid byte range"));
  // Past the end of the model the plan names (its model_bytes).
  CHECK(has(errorWith("initializer@980+60", 1000),
            "program 0 buffer 1 'w''s weights ('initializer@980+60') lie past "
            "the end of the model's 1000 bytes"));
  CHECK(errorWith("initializer@980+60").empty());
}

TEST_CASE("weight sources parse as the executor reads them",
          "[plan][weights]") {
  std::optional<WeightRange> range;
  REQUIRE(parseWeightSource("external:d/w.bin@16+400", range).ok());
  REQUIRE(range);
  CHECK(range->location == "d/w.bin");
  CHECK(range->offset == 16);
  CHECK(range->length == 400);
  REQUIRE(parseWeightSource("initializer@7", range).ok());
  REQUIRE(range);
  CHECK(range->location.empty());
  CHECK(range->length == -1);
  REQUIRE(parseWeightSource("zeros", range).ok());
  CHECK(!range);
  // A loader refuses the same sources, naming the parameter.
  plan::Plan p = smallPlan();
  plan::Buffer buffer = p.programs(0).buffers(1);
  buffer.set_source("external:../w.bin@0+60");
  Tensor block(DType::F32, {3, 5});
  Status status = loadWeightBlock(buffer, "/tmp/model.onnx", block);
  CHECK(has(status.error, "parameter 'w': source 'external:../w.bin@0+60' "
                          "names a file outside the model's folder"));
}

TEST_CASE("a plan's mesh shares cut each device's block", "[plan][shares]") {
  // smallPlan's x (4 rows over 2 devices) by shares 3 : 1: device 0 holds
  // rows 0..2, device 1 row 3, each in a program of its own.
  plan::Plan shared = perDevicePlan();
  shared.add_mesh_shares()->add_weights(3);
  shared.mutable_mesh_shares(0)->add_weights(1);
  for (int p = 0; p < 2; ++p) {
    plan::Program &program = *shared.mutable_programs(p);
    program.mutable_buffers(0)->set_shape(0, p == 0 ? 3 : 1);
    program.mutable_buffers(2)->set_shape(0, p == 0 ? 3 : 1);
  }
  REQUIRE(checkPlan(shared).error == "");
  for (int64_t device : {0, 1}) {
    DeviceProgram view;
    REQUIRE(instantiateProgram(shared, device, view).ok());
    const plan::Buffer &x = view.program.buffers(0);
    CHECK(x.offsets(0) == (device == 0 ? 0 : 3));
  }
  // Balanced blocks are not the shares' blocks.
  plan::Plan balanced = perDevicePlan();
  *balanced.add_mesh_shares() = shared.mesh_shares(0);
  CHECK(has(checkPlan(balanced).error, "device 0's block"));
  // Shares that are not the mesh's.
  plan::Plan wrong = shared;
  wrong.mutable_mesh_shares(0)->add_weights(1);
  CHECK(checkPlan(wrong).error ==
        "plan mesh_shares: mesh axis 0 has 2 devices but 3 shares");
  plan::Plan zero = shared;
  zero.mutable_mesh_shares(0)->set_weights(1, 0);
  CHECK(has(checkPlan(zero).error, "share 0 of mesh axis 0"));
  // Parts exchanged along the axis of uneven shares: refused.
  plan::Plan gather = shared;
  for (int p = 0; p < 2; ++p) {
    plan::Collective &collective = *gather.mutable_programs(p)
                                        ->mutable_instructions(2)
                                        ->mutable_collective();
    collective.set_kind(plan::Collective::ALL_GATHER);
    collective.set_group("line");
  }
  plan::Group *line = gather.add_groups();
  line->set_name("line");
  line->add_mesh_axes(0);
  CHECK(has(checkPlan(gather).error,
            "exchanges parts along mesh axis 0, whose mesh_shares are uneven"));
}

TEST_CASE("instantiateProgram works out each device's program", "[plan]") {
  // A 2x2 mesh, one program: w's rows are split over axis 0 and its
  // columns over axis 1; a constant is split over axis 1; a slice starts at
  // the device's block of a 4x6 tensor; the group runs along axis 1.
  plan::Plan shared;
  shared.add_mesh_shape(2);
  shared.add_mesh_shape(2);
  plan::Group *row = shared.add_groups();
  row->set_name("axis1");
  row->add_mesh_axes(1);
  plan::Program &program = *shared.add_programs();
  for (int64_t device : {0, 1, 2, 3})
    program.add_devices(device);
  program.set_loss(-1);
  plan::Buffer *w = addBuffer(program, "w", {2, 3}, plan::Buffer::PARAMETER);
  w->clear_splits();
  w->add_splits(0);
  w->add_splits(1);
  w->set_logical_shape(0, 4);
  w->set_logical_shape(1, 6);
  plan::Buffer *c = addBuffer(program, "", {2}, plan::Buffer::CONSTANT);
  c->add_logical_shape(4);
  c->add_splits(-1);
  c->add_splits(0);
  std::string bytes;
  for (float value : {1.0f, 2.0f, 3.0f, 4.0f})
    bytes.append(reinterpret_cast<const char *>(&value), sizeof(value));
  c->set_data(bytes);
  addBuffer(program, "", {2, 3});
  plan::Kernel *slice = addKernel(program, "reshape", {0}, {2});
  plan::Attr *starts = slice->add_attrs();
  starts->set_name("starts");
  for (int64_t extent : {4, 6})
    starts->mutable_block_offset()->add_shape(extent);
  starts->mutable_block_offset()->add_splits(0);
  starts->mutable_block_offset()->add_splits(1);
  starts->mutable_block_offset()->set_dim(-1);
  plan::Attr *offset = slice->add_attrs();
  offset->set_name("offset");
  *offset->mutable_block_offset() = starts->block_offset();
  offset->mutable_block_offset()->set_dim(1);
  plan::Collective *gather = program.add_instructions()->mutable_collective();
  gather->set_kind(plan::Collective::ALL_REDUCE);
  gather->set_group("axis1");
  gather->set_input(2);
  gather->set_output(2);
  REQUIRE(checkPlan(shared).error == "");

  DeviceProgram device3;
  REQUIRE(instantiateProgram(shared, 3, device3).ok());
  CHECK(device3.coordinate == std::vector<int64_t>{1, 1});
  CHECK(std::vector<int64_t>(device3.program.devices().begin(),
                             device3.program.devices().end()) ==
        std::vector<int64_t>{3});
  const plan::Buffer &block = device3.program.buffers(0);
  CHECK(std::vector<int64_t>(block.offsets().begin(), block.offsets().end()) ==
        std::vector<int64_t>{2, 3});
  const plan::Buffer &constant = device3.program.buffers(1);
  CHECK(constant.splits_size() == 0);
  REQUIRE(constant.data().size() == 2 * sizeof(float));
  float kept[2];
  std::memcpy(kept, constant.data().data(), sizeof(kept));
  CHECK(kept[0] == 3.0f);
  CHECK(kept[1] == 4.0f);
  const plan::Kernel &kernel = device3.program.instructions(0).kernel();
  REQUIRE(kernel.attrs(0).has_ints_value());
  CHECK(std::vector<int64_t>(kernel.attrs(0).ints_value().values().begin(),
                             kernel.attrs(0).ints_value().values().end()) ==
        std::vector<int64_t>{2, 3});
  CHECK(kernel.attrs(1).int_value() == 3);
  CHECK(device3.groups.at("axis1") == std::vector<int64_t>{2, 3});

  DeviceProgram device1;
  REQUIRE(instantiateProgram(shared, 1, device1).ok());
  CHECK(device1.groups.at("axis1") == std::vector<int64_t>{0, 1});
  // One name, two sets of devices: a backend splitting communicators by
  // groupColor gives each row its own.
  CHECK(groupColor(device1.groups.at("axis1"), 1) == 0);
  CHECK(groupColor(device3.groups.at("axis1"), 3) == 2);
  CHECK(groupColor(device3.groups.at("axis1"), 1) == -1);
  CHECK(device1.program.instructions(0).kernel().attrs(1).int_value() == 3);
  CHECK(device1.program.buffers(0).offsets(0) == 0);
  DeviceProgram none;
  CHECK(instantiateProgram(shared, 4, none).error ==
        "device 4 runs none of the plan's programs");

  // The same constant's elements stored once in the plan: each device's
  // program gets its block of them, as from inline data.
  plan::Plan pooled = shared;
  plan::Buffer &pooledConstant =
      *pooled.mutable_programs(0)->mutable_buffers(1);
  pooled.add_constant_data(pooledConstant.data());
  pooledConstant.clear_data();
  pooledConstant.set_shared_data(1);
  REQUIRE(checkPlan(pooled).error == "");
  DeviceProgram pooled3;
  REQUIRE(instantiateProgram(pooled, 3, pooled3).ok());
  CHECK(pooled3.program.buffers(1).shared_data() == 0);
  CHECK(pooled3.program.buffers(1).data() == constant.data());
}

TEST_CASE("batch files: each rank reads its block of step s's batch",
          "[runtime][plan]") {
  // Two batches of a 4x3 float input, values 100 * batch + index.
  std::string path =
      (std::filesystem::temp_directory_path() / "parplan-batch-test").string();
  std::filesystem::create_directories(path);
  {
    std::FILE *file = std::fopen((path + "/x.bin").c_str(), "wb");
    REQUIRE(file);
    for (int batch = 0; batch < 2; ++batch)
      for (int i = 0; i < 12; ++i) {
        float value = 100.0f * batch + i;
        std::fwrite(&value, sizeof(value), 1, file);
      }
    std::fclose(file);
  }
  plan::Buffer buffer;
  buffer.set_name("x");
  buffer.set_kind(plan::Buffer::INPUT);
  for (int64_t extent : {4, 3})
    buffer.add_logical_shape(extent);
  // The block the executor worked out for its device.
  for (int64_t offset : {2, 1})
    buffer.add_offsets(offset);
  Tensor block(DType::F32, {2, 2});
  // Step 3 reads batch 3 mod 2 = 1, rows 2..3, columns 1..2.
  REQUIRE(loadBatchBlock(buffer, path, 3, block).ok());
  CHECK(block.get(0) == 107);
  CHECK(block.get(1) == 108);
  CHECK(block.get(2) == 110);
  CHECK(block.get(3) == 111);
  REQUIRE(loadBatchBlock(buffer, path, 0, block).ok());
  CHECK(block.get(0) == 7);

  buffer.set_name("missing");
  CHECK(loadBatchBlock(buffer, path, 0, block).error ==
        "input 'missing': cannot open its batch file '" + path +
            "/missing.bin'");
  {
    std::FILE *file = std::fopen((path + "/short.bin").c_str(), "wb");
    REQUIRE(file);
    float value = 1;
    std::fwrite(&value, sizeof(value), 1, file);
    std::fclose(file);
  }
  buffer.set_name("short");
  CHECK(loadBatchBlock(buffer, path, 0, block).error ==
        "input 'short': '" + path +
            "/short.bin' has 4 bytes, not a whole number of batches of 48");
}

TEST_CASE("checkPlan checks arena offsets", "[plan]") {
  using namespace parplan::testing;
  // Every buffer of the 1-device MLP step in bytes of its own, then edits.
  auto placed = [] {
    plan::Plan placed = buildMlpPlan(1, 4, 0.1);
    plan::Program &program = *placed.mutable_programs(0);
    int64_t offset = 0;
    for (plan::Buffer &buffer : *program.mutable_buffers()) {
      buffer.set_arena_offset(offset);
      offset += (bufferBytes(buffer) + 63) / 64 * 64;
    }
    program.set_arena_bytes(offset);
    return placed;
  };
  auto offsetOf = [](const plan::Plan &plan, int64_t buffer) {
    return plan.programs(0).buffers(buffer).arena_offset();
  };
  auto place = [](plan::Plan &plan, int64_t buffer, int64_t offset) {
    plan.mutable_programs(0)->mutable_buffers(buffer)->set_arena_offset(offset);
  };
  CHECK(checkPlan(placed()).error == "");
  CHECK(arenaOverlaps(placed().programs(0)).empty());

  // The per-example losses are dead before their gradient is made: they
  // may share bytes.
  plan::Plan reused = placed();
  place(reused, kDLosses, offsetOf(reused, kLosses));
  CHECK(arenaOverlaps(reused.programs(0)) ==
        std::vector<std::pair<int64_t, int64_t>>{{kLosses, kDLosses}});
  CHECK(checkPlan(reused).error == "");

  // The hidden activation is still read by relu_grad (instruction 11).
  plan::Plan clash = placed();
  place(clash, kDA, offsetOf(clash, kH) + 8);
  int64_t begin = offsetOf(clash, kH) + 8;
  CHECK(checkPlan(clash).error ==
        "program 0: buffers " + std::to_string(kH) + " and " +
            std::to_string(kDA) + " share arena bytes [" +
            std::to_string(begin) + ", " +
            std::to_string(offsetOf(clash, kH) + 4 * kMlpHidden * 4) +
            ") while both are live (instructions 0 to 11 and 10 to 11)");

  // A parameter lives across steps: nothing may share its bytes.
  plan::Plan persistent = placed();
  place(persistent, kDW1, offsetOf(persistent, kW1));
  CHECK(
      checkPlan(persistent).error ==
      "program 0: buffers " + std::to_string(kW1) + " and " +
          std::to_string(kDW1) + " share arena bytes [" +
          std::to_string(offsetOf(persistent, kW1)) + ", " +
          std::to_string(offsetOf(persistent, kW1) + kMlpIn * kMlpHidden * 4) +
          "), but buffer " + std::to_string(kW1) + " lives across steps");

  // A temporary only an update reads (no instruction touches it) is live
  // at the end of the step, with the parameters.
  plan::Plan endOnly = placed();
  {
    plan::Program &program = *endOnly.mutable_programs(0);
    plan::Buffer *spare = addBuffer(program, "", {kMlpIn, kMlpHidden});
    spare->set_arena_offset(offsetOf(endOnly, kW1));
    program.mutable_updates(0)->set_source(program.buffers_size() - 1);
  }
  CHECK(checkPlan(endOnly).error ==
        "program 0: buffers " + std::to_string(kW1) + " and " +
            std::to_string(endOnly.programs(0).buffers_size() - 1) +
            " share arena bytes [" + std::to_string(offsetOf(endOnly, kW1)) +
            ", " +
            std::to_string(offsetOf(endOnly, kW1) + kMlpIn * kMlpHidden * 4) +
            "), but buffer " + std::to_string(kW1) + " lives across steps");

  // A reshape's view shares its operand's bytes: the hidden activation
  // reshaped after its last reader, at its offset, is one buffer over both
  // lives; a write to either after the reshape is refused.
  enum class After { Nothing, WriteOperand, ReshapeIntoView };
  auto withView = [&](After after) {
    plan::Plan viewed = placed();
    plan::Program &program = *viewed.mutable_programs(0);
    int64_t view = program.buffers_size();
    addBuffer(program, "", {4 * kMlpHidden})
        ->set_arena_offset(offsetOf(viewed, kH));
    addKernel(program, "reshape", {kH}, {view});
    addKernel(program, "relu", {view}, {kDA});
    if (after == After::WriteOperand)
      addKernel(program, "relu", {kDA}, {kH});
    // Another reshape into the view writes the view's bytes as a copy.
    if (after == After::ReshapeIntoView)
      addKernel(program, "reshape", {kDA}, {view});
    return viewed;
  };
  CHECK(checkPlan(withView(After::Nothing)).error == "");
  int64_t reshapeAt =
      withView(After::Nothing).programs(0).instructions_size() - 2;
  auto writtenAfter = [&](int64_t buffer) {
    return "program 0: instruction " + std::to_string(reshapeAt + 2) +
           " writes buffer " + std::to_string(buffer) +
           ", which shares its arena bytes with a reshape's view made at "
           "instruction " +
           std::to_string(reshapeAt);
  };
  CHECK(checkPlan(withView(After::WriteOperand)).error == writtenAfter(kH));
  CHECK(checkPlan(withView(After::ReshapeIntoView)).error ==
        writtenAfter(withView(After::Nothing).programs(0).buffers_size() - 1));

  plan::Plan small = placed();
  small.mutable_programs(0)->set_arena_bytes(64);
  CHECK(checkPlan(small).error.find("ends beyond arena_bytes 64") !=
        std::string::npos);
  plan::Plan partial = placed();
  place(partial, kA, -1);
  CHECK(checkPlan(partial).error == "program 0 buffer " + std::to_string(kA) +
                                        " has no arena offset, but others do");
}

TEST_CASE("checkMessageOrder: NCCL matches messages by order, not tag",
          "[plan]") {
  // Device 0 sends buffers 2 and 4 to device 1 with tags 7 and 8; device 1
  // receives them in the same order, or swapped (tags still matching, as
  // MPI allows).
  auto exchange = [](bool swapped) {
    plan::Plan plan = perDevicePlan();
    for (auto [tag, buffer] : {std::pair{7, 2}, std::pair{8, 4}}) {
      plan::Send *send =
          plan.mutable_programs(0)->add_instructions()->mutable_send();
      send->set_buffer(buffer);
      send->set_peer(1);
      send->set_tag(tag);
    }
    std::vector<std::pair<int, int>> order = {{7, 2}, {8, 4}};
    if (swapped)
      std::swap(order[0], order[1]);
    for (auto [tag, buffer] : order) {
      plan::Recv *recv =
          plan.mutable_programs(1)->add_instructions()->mutable_recv();
      recv->set_buffer(buffer);
      recv->set_peer(0);
      recv->set_tag(tag);
    }
    return plan;
  };
  plan::Plan inOrder = exchange(false), swapped = exchange(true);
  CHECK(checkPlan(inOrder).error == "");
  CHECK(checkPlan(swapped).error == "");
  CHECK(checkMessageOrder(inOrder).error == "");
  CHECK(checkMessageOrder(swapped).error ==
        "device 0 sends to device 1 with tags 7, 8 in that order, but device "
        "1 receives them as 8, 7; NCCL matches messages by order, not by tag");
  CHECK(checkMessageOrder(smallPlan()).error == "");
}

namespace {

/// Two meshes over four devices: "first" (2 devices, 0 and 1) and "second"
/// (2 devices, listed 3 then 2), each with a program holding its block of
/// a 4x3 tensor split by rows, and a group along its axis.
plan::Plan twoMeshPlan() {
  plan::Plan result;
  result.add_mesh_shape(4);
  for (const auto &[name, devices] :
       {std::pair<std::string, std::vector<int64_t>>{"first", {0, 1}},
        {"second", {3, 2}}}) {
    testing::addMesh(result, name, devices);
    plan::Group *group = result.add_groups();
    group->set_name(name + ".axis0");
    group->add_mesh_axes(0);
    group->set_mesh(name);
    plan::Program &program = *result.add_programs();
    program.set_mesh(name);
    std::vector<int64_t> sorted = devices;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t device : sorted)
      program.add_devices(device);
    program.set_loss(-1);
    plan::Buffer *block =
        addBuffer(program, "x", {2, 3}, plan::Buffer::PARAMETER);
    block->clear_splits();
    block->add_splits(0);
    block->set_logical_shape(0, 4);
    addBuffer(program, "", {4, 3});
    plan::Collective *gather = program.add_instructions()->mutable_collective();
    gather->set_kind(plan::Collective::ALL_GATHER);
    gather->set_group(name + ".axis0");
    gather->set_input(0);
    gather->set_output(1);
    gather->set_axis(0);
  }
  return result;
}

} // namespace

TEST_CASE("programs on named meshes read their layouts in their mesh",
          "[plan]") {
  plan::Plan plan = twoMeshPlan();
  REQUIRE(checkPlan(plan).error == "");
  auto offsetsOf = [&](int64_t device) {
    DeviceProgram program;
    REQUIRE(instantiateProgram(plan, device, program).ok());
    const plan::Buffer &block = program.program.buffers(0);
    return std::vector<int64_t>(block.offsets().begin(), block.offsets().end());
  };
  CHECK(offsetsOf(0) == std::vector<int64_t>{0, 0});
  CHECK(offsetsOf(1) == std::vector<int64_t>{2, 0});
  // Device 3 is the second mesh's first device, device 2 its second.
  CHECK(offsetsOf(3) == std::vector<int64_t>{0, 0});
  CHECK(offsetsOf(2) == std::vector<int64_t>{2, 0});
  DeviceProgram device2;
  REQUIRE(instantiateProgram(plan, 2, device2).ok());
  CHECK(device2.coordinate == std::vector<int64_t>{1});
  CHECK(device2.groups.at("second.axis0") == std::vector<int64_t>{3, 2});
  // A group of the other mesh holds none of its devices.
  CHECK(device2.groups.count("first.axis0") == 0);
}

TEST_CASE("checkPlan names what is wrong with named meshes", "[plan]") {
  auto errorAfter = [](auto &&edit) {
    return checkErrorAfter(twoMeshPlan(), edit);
  };
  CHECK(has(
      errorAfter([](plan::Plan &p) { p.mutable_meshes(1)->set_devices(0, 1); }),
      "plan meshes[1] 'second' lists device 1, which mesh 'first' "
      "holds too"));
  CHECK(has(
      errorAfter([](plan::Plan &p) { p.mutable_meshes(0)->set_devices(1, 0); }),
      "plan meshes[0] 'first' lists device 0 twice"));
  CHECK(has(
      errorAfter([](plan::Plan &p) { p.mutable_meshes(0)->set_devices(1, 9); }),
      "plan meshes[0] 'first' lists device 9, not one of the 4 devices "
      "of the plan"));
  CHECK(has(
      errorAfter([](plan::Plan &p) { p.mutable_meshes(0)->set_shape(0, 3); }),
      "plan meshes[0] 'first' lists 2 devices for its shape [3]"));
  CHECK(has(
      errorAfter([](plan::Plan &p) { p.mutable_meshes(1)->set_name("first"); }),
      "plan meshes[1] 'first' has the name of an earlier mesh"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->set_mesh("third");
            }),
            "program 0 names mesh 'third', which the plan does not declare"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->set_mesh("second");
            }),
            "program 0 lists device 0, which its mesh 'second' does not "
            "hold"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_groups(0)->clear_mesh_axes();
              p.mutable_groups(0)->add_devices(0);
            }),
            "plan groups[0] 'first.axis0' names mesh 'first' but no "
            "mesh_axes"));
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_groups(0)->set_mesh_axes(0, 1);
            }),
            "mesh_axes [1] are not ascending axes of mesh [2]"));
  // Splits are read in the program's mesh, of one axis here.
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)->mutable_buffers(0)->add_splits(-1);
            }),
            "splits [0, -1] need one entry per axis of mesh [2]"));
  // A program gathering over the other mesh's group.
  CHECK(has(errorAfter([](plan::Plan &p) {
              p.mutable_programs(0)
                  ->mutable_instructions(0)
                  ->mutable_collective()
                  ->set_group("second.axis0");
            }),
            "which does not contain device 0"));
}

namespace {
/// A plan.proto enum value's name as the vocabulary spells it
/// ("ALL_REDUCE" as "all_reduce").
std::string lowered(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return name;
}
} // namespace

TEST_CASE("the plan file's enums convert to the vocabulary by name",
          "[plan-file][vocabulary]") {
  using namespace parplan;
  // One vocabulary case per value of each plan.proto enum, both ways.
  REQUIRE(std::size(kReduceKinds) == plan::Reduction_MAX + 1u);
  for (ReduceKind kind : kReduceKinds) {
    REQUIRE(lowered(plan::Reduction_Name(runtime::toProto(kind))) ==
            toString(kind));
    REQUIRE(runtime::toReduceKind(runtime::toProto(kind)) == kind);
  }
  REQUIRE(std::size(kBufferKinds) == plan::Buffer::Kind_MAX + 1u);
  for (BufferKind kind : kBufferKinds) {
    REQUIRE(lowered(plan::Buffer::Kind_Name(runtime::toProto(kind))) ==
            toString(kind));
    REQUIRE(runtime::toBufferKind(runtime::toProto(kind)) == kind);
  }
  REQUIRE(std::size(kCollectiveKinds) == plan::Collective::Kind_MAX + 1u);
  for (CollectiveKind kind : kCollectiveKinds) {
    REQUIRE(lowered(plan::Collective::Kind_Name(runtime::toProto(kind))) ==
            toString(kind));
    REQUIRE(runtime::toCollectiveKind(runtime::toProto(kind)) == kind);
    REQUIRE(std::string(runtime::collectiveName(runtime::toProto(kind))) ==
            toString(kind));
  }
  // DTYPE_UNSPECIFIED aside, one runtime type per plan dtype.
  for (int value = plan::DType_MIN; value <= plan::DType_MAX; ++value) {
    std::optional<runtime::DType> type = runtime::toRuntimeDType(value);
    if (value == plan::DTYPE_UNSPECIFIED) {
      REQUIRE_FALSE(type);
      continue;
    }
    REQUIRE(type);
    REQUIRE(lowered(plan::DType_Name(runtime::toPlanDType(*type))) ==
            runtime::toString(*type));
    REQUIRE(runtime::toPlanDType(*type) == value);
  }
  // Values a newer release may write are refused, not guessed.
  REQUIRE_FALSE(runtime::toReduceKind(plan::Reduction_MAX + 1));
  REQUIRE_FALSE(runtime::toBufferKind(plan::Buffer::Kind_MAX + 1));
  REQUIRE_FALSE(runtime::toCollectiveKind(plan::Collective::Kind_MAX + 1));
  REQUIRE(std::string(runtime::collectiveName(99)) == "collective");
}

namespace {

void addCollective(plan::Program &program, plan::Collective::Kind kind,
                   const std::string &group) {
  plan::Collective *collective =
      program.add_instructions()->mutable_collective();
  collective->set_kind(kind);
  collective->set_group(group);
  collective->set_input(4);
  collective->set_output(4);
}

void addMessage(plan::Program &program, bool send, int64_t peer, int64_t tag) {
  plan::Instruction *instruction = program.add_instructions();
  if (send) {
    instruction->mutable_send()->set_buffer(4);
    instruction->mutable_send()->set_peer(peer);
    instruction->mutable_send()->set_tag(tag);
  } else {
    instruction->mutable_recv()->set_buffer(4);
    instruction->mutable_recv()->set_peer(peer);
    instruction->mutable_recv()->set_tag(tag);
  }
}

/// perDevicePlan with a second group of both devices, "pair".
plan::Plan twoGroupPlan() {
  plan::Plan plan = perDevicePlan();
  plan::Group *pair = plan.add_groups();
  pair->set_name("pair");
  pair->add_devices(0);
  pair->add_devices(1);
  return plan;
}

} // namespace

TEST_CASE("checkPlan refuses a step that would never end", "[plan]") {
  const std::string hangs = "the step never ends: device 0 waits forever at "
                            "instruction ";
  SECTION("collectives over two groups in crossing orders") {
    for (bool crossing : {false, true}) {
      plan::Plan plan = twoGroupPlan();
      addCollective(*plan.mutable_programs(0), plan::Collective::ALL_REDUCE,
                    "all");
      addCollective(*plan.mutable_programs(0), plan::Collective::ALL_REDUCE,
                    "pair");
      addCollective(*plan.mutable_programs(1), plan::Collective::ALL_REDUCE,
                    crossing ? "pair" : "all");
      addCollective(*plan.mutable_programs(1), plan::Collective::ALL_REDUCE,
                    crossing ? "all" : "pair");
      std::string error = checkPlan(plan).error;
      INFO(error);
      if (!crossing) {
        CHECK(error.empty());
        continue;
      }
      CHECK(error == hangs + "4 of program 0 (all_reduce over 'all') for "
                             "device 1, itself waiting at instruction 4 of "
                             "program 1 (all_reduce over 'pair')");
      CHECK(error.find('\n') == std::string::npos);
    }
  }
  SECTION("two devices that each receive before they send") {
    for (bool sendFirst : {false, true}) {
      plan::Plan plan = perDevicePlan();
      addMessage(*plan.mutable_programs(0), sendFirst, 1, 3);
      addMessage(*plan.mutable_programs(0), !sendFirst, 1, 3);
      addMessage(*plan.mutable_programs(1), false, 0, 3);
      addMessage(*plan.mutable_programs(1), true, 0, 3);
      std::string error = checkPlan(plan).error;
      INFO(error);
      CHECK(error.empty() == sendFirst);
      if (!sendFirst)
        CHECK(error == hangs + "4 of program 0 (a receive from device 1, "
                               "tag 3) for device 1, itself waiting at "
                               "instruction 4 of program 1 (a receive from "
                               "device 0, tag 3)");
    }
  }
  SECTION("a collective that waits for a message sent after it") {
    // Device 0 runs the collective, then sends to device 1, which
    // receives before the collective: an all-reduce waits for device 1,
    // a broadcast from device 0 does not.
    for (auto kind :
         {plan::Collective::BROADCAST, plan::Collective::ALL_REDUCE}) {
      plan::Plan plan = twoGroupPlan();
      addCollective(*plan.mutable_programs(0), kind, "pair");
      addMessage(*plan.mutable_programs(0), true, 1, 9);
      addMessage(*plan.mutable_programs(1), false, 0, 9);
      addCollective(*plan.mutable_programs(1), kind, "pair");
      std::string error = checkPlan(plan).error;
      INFO(error);
      if (kind == plan::Collective::BROADCAST)
        CHECK(error.empty());
      else
        CHECK(error == hangs + "4 of program 0 (all_reduce over 'pair') for "
                               "device 1, itself waiting at instruction 4 of "
                               "program 1 (a receive from device 0, tag 9)");
    }
  }
}
