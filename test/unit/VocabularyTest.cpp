//===- VocabularyTest.cpp - the ODS enums speak the vocabulary ------------===//
//
// Every kind of Support/Vocabulary.h converts to the sbp and plan dialects'
// enums and back, to the case of the same name: an enum reordered, or a
// case added on one side only, fails here.
//
//===----------------------------------------------------------------------===//

#include "parplan/Support/Vocabulary.h"
#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Dialect/SBP/SBPAttrs.h"

#include <catch2/catch.hpp>

#include <iterator>

using namespace parplan;

TEST_CASE("reduction kinds: the sbp and plan enums by name", "[vocabulary]") {
  REQUIRE(std::size(kReduceKinds) == sbp::getMaxEnumValForReduceKind() + 1);
  REQUIRE(std::size(kReduceKinds) == plan::getMaxEnumValForReduceKind() + 1);
  for (ReduceKind kind : kReduceKinds) {
    INFO(toString(kind));
    REQUIRE(parseReduceKind(toString(kind)) == kind);
    sbp::ReduceKind inSbp = sbp::toSbpReduceKind(kind);
    REQUIRE(sbp::stringifyReduceKind(inSbp) == toString(kind));
    REQUIRE(sbp::toReduceKind(inSbp) == kind);
    plan::ReduceKind inPlan = plan::toPlanReduceKind(kind);
    REQUIRE(plan::stringifyReduceKind(inPlan) == toString(kind));
    REQUIRE(plan::toReduceKind(inPlan) == kind);
  }
  REQUIRE_FALSE(parseReduceKind("mean"));
}

TEST_CASE("buffer kinds: the plan enum by name", "[vocabulary]") {
  REQUIRE(std::size(kBufferKinds) == plan::getMaxEnumValForBufferKind() + 1);
  for (BufferKind kind : kBufferKinds) {
    INFO(toString(kind));
    REQUIRE(parseBufferKind(toString(kind)) == kind);
    plan::BufferKind inPlan = plan::toPlanBufferKind(kind);
    REQUIRE(plan::stringifyBufferKind(inPlan) == toString(kind));
    REQUIRE(plan::toBufferKind(inPlan) == kind);
  }
}

TEST_CASE("collective kinds: spelled as the plan dialect's ops",
          "[vocabulary]") {
  for (CollectiveKind kind : kCollectiveKinds)
    REQUIRE(parseCollectiveKind(toString(kind)) == kind);
  REQUIRE(std::string(toString(CollectiveKind::AllReduce)) ==
          plan::AllReduceOp::getOperationName().drop_front(5).str());
  REQUIRE(std::string(toString(CollectiveKind::AllToAll)) ==
          plan::AllToAllOp::getOperationName().drop_front(5).str());
  REQUIRE(std::string(toString(CollectiveKind::Broadcast)) ==
          plan::BroadcastOp::getOperationName().drop_front(5).str());
}
