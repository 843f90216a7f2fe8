//===- Text.h - formatting numbers for people -------------------*- C++ -*-===//

#ifndef PARPLAN_SUPPORT_TEXT_H
#define PARPLAN_SUPPORT_TEXT_H

#include <cstdint>
#include <string>

namespace parplan {

/// "174,615,846,912".
std::string groupThousands(uint64_t value);

} // namespace parplan

#endif // PARPLAN_SUPPORT_TEXT_H
