//===- Text.cpp - formatting numbers for people ---------------------------===//

#include "parplan/Support/Text.h"

std::string parplan::groupThousands(uint64_t value) {
  std::string digits = std::to_string(value), result;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0)
      result += ',';
    result += digits[i];
  }
  return result;
}
