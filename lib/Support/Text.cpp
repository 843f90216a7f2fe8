//===- Text.cpp - formatting numbers for people ---------------------------===//

#include "parplan/Support/Text.h"

#include <cstdio>

std::string parplan::groupThousands(uint64_t value) {
  std::string digits = std::to_string(value), result;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0)
      result += ',';
    result += digits[i];
  }
  return result;
}

namespace {
std::string printed(const char *format, double value, const char *unit) {
  char text[64];
  std::snprintf(text, sizeof(text), format, value, unit);
  return text;
}
} // namespace

std::string parplan::formatBytes(int64_t bytes) {
  double value = static_cast<double>(bytes);
  if (value >= 1e9)
    return printed("%.2f %s", value / 1e9, "GB");
  return printed("%.2f %s", value / 1e6, "MB");
}

std::string parplan::formatSeconds(double seconds) {
  if (seconds >= 1)
    return printed("%.2f %s", seconds, "s");
  if (seconds >= 1e-3)
    return printed("%.2f %s", seconds * 1e3, "ms");
  return printed("%.1f %s", seconds * 1e6, "us");
}

std::string parplan::formatFlops(double flops) {
  static const char *const units[] = {"FLOP",  "KFLOP", "MFLOP", "GFLOP",
                                      "TFLOP", "PFLOP", "EFLOP"};
  int unit = 0;
  while (flops >= 1000 && unit < 6) {
    flops /= 1000;
    ++unit;
  }
  return printed("%.2f %s", flops, units[unit]);
}

std::string parplan::formatDevices(const std::vector<int64_t> &devices) {
  bool consecutive = devices.size() > 1;
  for (size_t i = 1; i < devices.size(); ++i)
    consecutive &= devices[i] == devices[i - 1] + 1;
  if (consecutive)
    return std::to_string(devices.front()) + ".." +
           std::to_string(devices.back());
  std::string text;
  for (int64_t device : devices)
    text += (text.empty() ? "" : ", ") + std::to_string(device);
  return text;
}

std::string parplan::oneLine(std::string_view text) {
  std::string line;
  line.reserve(text.size());
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      line += c;
    } else if (c == '\n') {
      line += "\\n";
    } else if (c == '\r') {
      line += "\\r";
    } else if (c == '\t') {
      line += "\\t";
    } else {
      static const char hex[] = "0123456789abcdef";
      line += "\\x";
      line += hex[byte >> 4];
      line += hex[byte & 15];
    }
  }
  return line;
}
