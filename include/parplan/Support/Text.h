//===- Text.h - formatting numbers for people -------------------*- C++ -*-===//

#ifndef PARPLAN_SUPPORT_TEXT_H
#define PARPLAN_SUPPORT_TEXT_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace parplan {

/// "174,615,846,912".
std::string groupThousands(uint64_t value);

/// "12.34 GB" from 1e9 bytes up, else "5.67 MB".
std::string formatBytes(int64_t bytes);

/// "1.20 s", "12.30 ms", "450.0 us".
std::string formatSeconds(double seconds);

/// "1.23 TFLOP", "456.00 MFLOP", "12.00 FLOP".
std::string formatFlops(double flops);

/// Device ids: "8..15" when consecutive (more than one), else "4, 5, 8, 9".
std::string formatDevices(const std::vector<int64_t> &devices);

/// `text` as one line, for an error that quotes what a file holds: each
/// control character (a line break, a tab, any other below 0x20, DEL)
/// written as its C escape ("\\n", "\\t", "\\x1b"). Every reader's error
/// passes through it, so that a name in a file cannot break its one line.
std::string oneLine(std::string_view text);

} // namespace parplan

#endif // PARPLAN_SUPPORT_TEXT_H
