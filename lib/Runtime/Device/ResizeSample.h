//===- ResizeSample.h - where nn.resize reads along one axis ----*- C++ -*-===//
//
// The input indices and weight a resized axis samples for one result
// index: the reference kernel (Kernels.cpp) and the device kernels
// (Sampling.h) compute them with these functions, in double, so every
// backend reads the same elements with the same weights.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_RESIZESAMPLE_H
#define PARPLAN_LIB_RUNTIME_DEVICE_RESIZESAMPLE_H

#include "Device/DeviceTensor.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace parplan::runtime::device {

/// nn.resize's `coordinates` and `rounding` cases.
enum class ResizeCoordinates : int {
  HalfPixel,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfHalfPixelForNn
};
enum class ResizeRounding : int { PreferFloor, PreferCeil, Floor, Ceil };

/// How a resized axis maps result indices to input ones.
struct ResizeMode {
  bool linear = false;
  ResizeCoordinates coordinates = ResizeCoordinates::HalfPixel;
  ResizeRounding rounding = ResizeRounding::PreferFloor;
};

/// The mode of the op's attribute values (their names as nn.resize's
/// enums print them); an unknown name takes the default.
inline ResizeMode resizeMode(const std::string &mode,
                             const std::string &coordinates,
                             const std::string &rounding) {
  ResizeMode parsed;
  parsed.linear = mode == "linear";
  parsed.coordinates =
      coordinates == "pytorch_half_pixel" ? ResizeCoordinates::PytorchHalfPixel
      : coordinates == "align_corners"    ? ResizeCoordinates::AlignCorners
      : coordinates == "asymmetric"       ? ResizeCoordinates::Asymmetric
      : coordinates == "tf_half_pixel_for_nn"
          ? ResizeCoordinates::TfHalfPixelForNn
          : ResizeCoordinates::HalfPixel;
  parsed.rounding = rounding == "round_prefer_ceil" ? ResizeRounding::PreferCeil
                    : rounding == "floor"           ? ResizeRounding::Floor
                    : rounding == "ceil" ? ResizeRounding::Ceil
                                         : ResizeRounding::PreferFloor;
  return parsed;
}

/// Where result index `x` of an axis resized from `in` to `out` elements
/// samples the input (before rounding or interpolation).
PARPLAN_HD double resizeCoordinate(ResizeCoordinates coordinates, int64_t x,
                                   int64_t in, int64_t out) {
  double scale = static_cast<double>(out) / static_cast<double>(in);
  auto at = static_cast<double>(x);
  switch (coordinates) {
  case ResizeCoordinates::AlignCorners:
    return out == 1 ? 0
                    : at * static_cast<double>(in - 1) /
                          static_cast<double>(out - 1);
  case ResizeCoordinates::Asymmetric:
    return at / scale;
  case ResizeCoordinates::TfHalfPixelForNn:
    return (at + 0.5) / scale;
  case ResizeCoordinates::PytorchHalfPixel:
    if (out == 1)
      return 0;
    return (at + 0.5) / scale - 0.5;
  default:
    return (at + 0.5) / scale - 0.5;
  }
}

/// Result index x's sample of an axis resized from `in` to `out` elements:
/// the input index below (low) and above (high) its coordinate and the
/// upper one's weight; one index and weight 0 where the axis keeps its
/// extent or the mode is nearest.
PARPLAN_HD void resizeAxisSample(const ResizeMode &mode, int64_t in,
                                 int64_t out, int64_t x, int64_t &low,
                                 int64_t &high, double &weight) {
  weight = 0;
  if (in == out) {
    low = high = x;
    return;
  }
  double at = resizeCoordinate(mode.coordinates, x, in, out);
  double below = floor(at), fraction = at - below;
  auto clamp = [in](double index) {
    double top = static_cast<double>(in - 1);
    return static_cast<int64_t>(index < 0 ? 0 : index > top ? top : index);
  };
  if (mode.linear) {
    low = clamp(below);
    high = clamp(below + 1);
    weight = fraction;
    return;
  }
  double index = below;
  switch (mode.rounding) {
  case ResizeRounding::Floor:
    break;
  case ResizeRounding::Ceil:
    index = ceil(at);
    break;
  case ResizeRounding::PreferCeil:
    index = fraction < 0.5 ? below : below + 1;
    break;
  default:
    index = fraction <= 0.5 ? below : below + 1;
    break;
  }
  low = high = clamp(index);
}

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_RESIZESAMPLE_H
