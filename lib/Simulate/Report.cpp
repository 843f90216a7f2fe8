//===- Report.cpp - a plan on one self-contained HTML page ----------------===//
//
// Plain HTML and inline SVG: no script, no style sheet or font from
// elsewhere, so the page opens anywhere, offline, and prints.
//
//===----------------------------------------------------------------------===//

#include "parplan/Simulate/Report.h"

#include "parplan/Support/Text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace parplan::simulate {

const char *const kComputeColor = "#4e79a7";
const char *const kCommunicationColor = "#e15759";
const char *const kMoveColor = "#f28e2b";

std::string stageColor(int64_t stage) {
  static const char *const palette[] = {
      "#59a14f", "#edc948", "#b07aa1", "#76b7b2", "#ff9da7", "#9c755f",
      "#86bcb6", "#d4a6c8", "#8cd17d", "#f1ce63", "#a0cbe8", "#ffbe7d"};
  return palette[static_cast<size_t>(stage) % std::size(palette)];
}

namespace {

std::string escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// A coordinate or length in the SVG, to a tenth of a pixel.
std::string px(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", value);
  return text;
}

/// The devices of each stage: the plan's named meshes, or its one mesh.
struct DrawnMesh {
  std::string name;
  std::vector<int64_t> shape, devices;
};

std::vector<DrawnMesh> meshesOf(const plan::Plan &plan) {
  std::vector<DrawnMesh> meshes;
  for (const plan::Mesh &mesh : plan.meshes())
    meshes.push_back({mesh.name(),
                      {mesh.shape().begin(), mesh.shape().end()},
                      {mesh.devices().begin(), mesh.devices().end()}});
  if (meshes.empty()) {
    DrawnMesh whole{
        "mesh", {plan.mesh_shape().begin(), plan.mesh_shape().end()}, {}};
    for (int64_t d = 0; d < runtime::planDevices(plan); ++d)
      whole.devices.push_back(d);
    meshes.push_back(std::move(whole));
  }
  return meshes;
}

/// The meshes side by side (wrapping), each a grid of its devices: rows
/// its first axis, columns the rest, in its stage's colour.
void drawMeshes(const plan::Plan &plan, std::ostream &out) {
  std::vector<DrawnMesh> meshes = meshesOf(plan);
  // A block is at least as wide as its two label lines.
  constexpr double kWidth = 1100, kGap = 16, kLabel = 30, kNarrowest = 90;
  auto gridOf = [](const DrawnMesh &mesh) {
    int64_t rows = mesh.shape.size() > 1 ? mesh.shape.front() : 1;
    int64_t columns =
        static_cast<int64_t>(mesh.devices.size()) / std::max<int64_t>(rows, 1);
    return std::make_pair(rows, std::max<int64_t>(columns, 1));
  };
  // One cell size for all: the meshes in rows of the page's width.
  int64_t widest = 1, tallest = 1;
  for (const DrawnMesh &mesh : meshes) {
    auto [rows, columns] = gridOf(mesh);
    widest = std::max(widest, columns);
    tallest = std::max(tallest, rows);
  }
  double perRow = std::max<double>(
      1, std::min<double>(
             static_cast<double>(meshes.size()),
             std::floor(kWidth /
                        std::max(kNarrowest,
                                 static_cast<double>(widest) * 6 + kGap))));
  double cell = std::clamp(
      (kWidth / perRow - kGap) / static_cast<double>(widest), 3.0, 40.0);
  double blockWidth =
      std::max(kNarrowest, cell * static_cast<double>(widest) + kGap);
  double blockHeight = cell * static_cast<double>(tallest) + kLabel + kGap;
  auto meshRows = static_cast<int64_t>(
      std::ceil(static_cast<double>(meshes.size()) / perRow));
  out << "<svg class=\"meshes\" xmlns=\"http://www.w3.org/2000/svg\" width=\""
      << px(perRow * blockWidth) << "\" height=\""
      << px(static_cast<double>(meshRows) * blockHeight) << "\">\n";
  for (size_t m = 0; m < meshes.size(); ++m) {
    const DrawnMesh &mesh = meshes[m];
    auto [rows, columns] = gridOf(mesh);
    double x0 =
        static_cast<double>(m % static_cast<size_t>(perRow)) * blockWidth;
    double y0 = std::floor(static_cast<double>(m) / perRow) * blockHeight;
    std::string color = stageColor(static_cast<int64_t>(m));
    out << "<text x=\"" << px(x0) << "\" y=\"" << px(y0 + 11)
        << "\" class=\"label\">" << escape(mesh.name) << "</text>"
        << "<text x=\"" << px(x0) << "\" y=\"" << px(y0 + 24)
        << "\" class=\"label\">devices " << escape(formatDevices(mesh.devices))
        << "</text>\n";
    for (size_t i = 0; i < mesh.devices.size(); ++i) {
      double x =
          x0 + static_cast<double>(static_cast<int64_t>(i) % columns) * cell;
      double y = y0 + kLabel +
                 static_cast<double>(static_cast<int64_t>(i) / columns) * cell;
      out << "<rect x=\"" << px(x) << "\" y=\"" << px(y) << "\" width=\""
          << px(cell - (cell > 6 ? 1 : 0)) << "\" height=\""
          << px(cell - (cell > 6 ? 1 : 0)) << "\" fill=\"" << color
          << "\"><title>device " << mesh.devices[i] << "</title></rect>\n";
    }
  }
  out << "</svg>\n";
}

/// Each class's lanes (compute, communication, and the moves it sends when
/// it sends any): a rectangle per run of columns of one dominant kind and
/// busy fraction, on a grey (idle) lane.
void drawTimelines(const Simulation &simulation, std::ostream &out) {
  constexpr double kLabelWidth = 300, kPlot = 800, kLane = 12, kGap = 8;
  struct Lane {
    size_t deviceClass;
    int thread;
  };
  std::vector<Lane> lanes;
  for (size_t c = 0; c < simulation.timelines.size(); ++c)
    for (int thread = 0; thread < 4; ++thread) {
      const std::vector<TimelineColumn> &columns =
          simulation.timelines[c].threads[thread];
      bool busy = std::any_of(
          columns.begin(), columns.end(), [](const TimelineColumn &column) {
            return column.compute + column.communication + column.moves > 0;
          });
      if (thread < 2 || busy)
        lanes.push_back({c, thread});
    }
  double height = 0;
  std::vector<double> laneY;
  for (size_t l = 0; l < lanes.size(); ++l) {
    if (l > 0 && lanes[l].deviceClass != lanes[l - 1].deviceClass)
      height += kGap;
    laneY.push_back(height);
    height += kLane + 2;
  }
  double axis = height + 6;
  out << "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" "
         "width=\""
      << px(kLabelWidth + kPlot + 20) << "\" height=\"" << px(axis + 24)
      << "\">\n";
  static const char *const threadNames[] = {"compute", "communication",
                                            "moves out", "gradients"};
  for (size_t l = 0; l < lanes.size(); ++l) {
    const Lane &lane = lanes[l];
    const DeviceClass &figures = simulation.classes[lane.deviceClass];
    const std::vector<TimelineColumn> &columns =
        simulation.timelines[lane.deviceClass].threads[lane.thread];
    double y = laneY[l];
    std::string label = lane.thread == 0
                            ? "devices " + formatDevices(figures.devices) +
                                  " (stage " + std::to_string(figures.stage) +
                                  ") " + threadNames[0]
                            : threadNames[lane.thread];
    out << "<text x=\"" << px(kLabelWidth - 6) << "\" y=\"" << px(y + 10)
        << "\" class=\"lane\">" << escape(label) << "</text>\n";
    out << "<rect x=\"" << px(kLabelWidth) << "\" y=\"" << px(y)
        << "\" width=\"" << px(kPlot) << "\" height=\"" << px(kLane)
        << "\" fill=\"#eeeeee\"/>\n";
    if (columns.empty())
      continue;
    double width = kPlot / static_cast<double>(columns.size());
    double seconds =
        simulation.stepSeconds / static_cast<double>(columns.size());
    // Runs of columns of one colour and busy tenth.
    size_t begin = 0;
    auto kind = [&](size_t i) -> std::pair<const char *, int> {
      const TimelineColumn &column = columns[i];
      double busy = column.compute + column.communication + column.moves;
      if (busy <= 0 || seconds <= 0)
        return {nullptr, 0};
      const char *color = column.compute >= column.communication &&
                                  column.compute >= column.moves
                              ? kComputeColor
                          : column.communication >= column.moves
                              ? kCommunicationColor
                              : kMoveColor;
      int tenth = std::clamp(
          static_cast<int>(std::ceil(10 * std::min(1.0, busy / seconds))), 1,
          10);
      return {color, tenth};
    };
    for (size_t i = 1; i <= columns.size(); ++i) {
      if (i < columns.size() && kind(i) == kind(begin))
        continue;
      auto [color, tenth] = kind(begin);
      if (color)
        out << "<rect x=\""
            << px(kLabelWidth + static_cast<double>(begin) * width) << "\" y=\""
            << px(y) << "\" width=\""
            << px(static_cast<double>(i - begin) * width) << "\" height=\""
            << px(kLane) << "\" fill=\"" << color << "\" fill-opacity=\""
            << tenth / 10.0 << "\"/>\n";
      begin = i;
    }
  }
  // The time axis: five ticks.
  out << "<line x1=\"" << px(kLabelWidth) << "\" y1=\"" << px(axis)
      << "\" x2=\"" << px(kLabelWidth + kPlot) << "\" y2=\"" << px(axis)
      << "\" stroke=\"#555555\"/>\n";
  for (int tick = 0; tick <= 5; ++tick) {
    double x = kLabelWidth + kPlot * tick / 5.0;
    out << "<line x1=\"" << px(x) << "\" y1=\"" << px(axis) << "\" x2=\""
        << px(x) << "\" y2=\"" << px(axis + 4) << "\" stroke=\"#555555\"/>"
        << "<text x=\"" << px(x) << "\" y=\"" << px(axis + 16)
        << "\" class=\"tick\">"
        << escape(formatSeconds(simulation.stepSeconds * tick / 5.0))
        << "</text>\n";
  }
  out << "</svg>\n";
}

/// Each class's peak memory against its devices' capacity.
void drawMemory(const Simulation &simulation, const cost::Cluster &cluster,
                std::ostream &out) {
  constexpr double kLabelWidth = 300, kBar = 600, kRow = 22;
  double most = 1;
  for (const DeviceClass &figures : simulation.classes)
    most =
        std::max({most, figures.peakMemory,
                  cluster.deviceTypeOf(figures.devices.front()).memoryBytes});
  out << "<svg class=\"memory\" xmlns=\"http://www.w3.org/2000/svg\" "
         "width=\""
      << px(kLabelWidth + kBar + 260) << "\" height=\""
      << px(kRow * static_cast<double>(simulation.classes.size()) + 4)
      << "\">\n";
  for (size_t c = 0; c < simulation.classes.size(); ++c) {
    const DeviceClass &figures = simulation.classes[c];
    double capacity = cluster.deviceTypeOf(figures.devices.front()).memoryBytes;
    double y = kRow * static_cast<double>(c);
    bool fits = figures.peakMemory <= capacity;
    out << "<text x=\"" << px(kLabelWidth - 6) << "\" y=\"" << px(y + 14)
        << "\" class=\"lane\">devices "
        << escape(formatDevices(figures.devices)) << "</text>\n"
        << "<rect x=\"" << px(kLabelWidth) << "\" y=\"" << px(y + 3)
        << "\" width=\"" << px(kBar * capacity / most) << "\" height=\"14\" "
        << "fill=\"#eeeeee\" stroke=\"#999999\"/>\n"
        << "<rect x=\"" << px(kLabelWidth) << "\" y=\"" << px(y + 3)
        << "\" width=\"" << px(kBar * figures.peakMemory / most)
        << "\" height=\"14\" fill=\""
        << (fits ? stageColor(figures.stage) : kCommunicationColor) << "\"/>\n"
        << "<text x=\"" << px(kLabelWidth + kBar + 8) << "\" y=\"" << px(y + 14)
        << "\" class=\"value\">"
        << escape(formatBytes(static_cast<int64_t>(figures.peakMemory)) +
                  " of " + formatBytes(static_cast<int64_t>(capacity)))
        << "</text>\n";
  }
  out << "</svg>\n";
}

void table(std::ostream &out, const std::vector<std::string> &head,
           const std::vector<std::vector<std::string>> &rows) {
  out << "<table>";
  if (!head.empty()) {
    out << "<tr>";
    for (const std::string &cell : head)
      out << "<th>" << escape(cell) << "</th>";
    out << "</tr>";
  }
  out << "\n";
  for (const std::vector<std::string> &row : rows) {
    out << "<tr>";
    for (const std::string &cell : row)
      out << "<td>" << escape(cell) << "</td>";
    out << "</tr>\n";
  }
  out << "</table>\n";
}

} // namespace

void writeReport(const ReportInput &input, std::ostream &out) {
  const Simulation &simulation = *input.simulation;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
         "charset=\"utf-8\">\n<title>parplan: "
      << escape(input.title)
      << "</title>\n<style>\n"
         "body { font-family: sans-serif; margin: 24px; color: #222222; }\n"
         "h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }\n"
         "table { border-collapse: collapse; font-size: 13px; }\n"
         "td, th { border: 1px solid #cccccc; padding: 2px 8px; "
         "text-align: left; }\n"
         "svg text { font-size: 11px; }\n"
         "svg .lane { text-anchor: end; } svg .tick { text-anchor: middle; }\n"
         ".key { display: inline-block; width: 12px; height: 12px; "
         "margin: 0 4px 0 12px; vertical-align: middle; }\n"
         "</style>\n</head>\n<body>\n<h1>"
      << escape(input.title) << "</h1>\n";
  std::vector<std::vector<std::string>> facts;
  for (const auto &[name, value] : input.facts)
    facts.push_back({name, value});
  table(out, {}, facts);

  out << "<h2>Devices and stages</h2>\n";
  drawMeshes(*input.plan, out);

  out << "<h2>Simulated timeline of one step</h2>\n<p>Each class of devices "
         "that run alike; a lane's colour is what kept its stream busiest in "
         "each stretch of time, its strength how busy:"
      << "<span class=\"key\" style=\"background:" << kComputeColor
      << "\"></span>compute<span class=\"key\" style=\"background:"
      << kCommunicationColor
      << "\"></span>collectives and messages<span class=\"key\" "
         "style=\"background:"
      << kMoveColor
      << "\"></span>cross-mesh moves<span class=\"key\" "
         "style=\"background:#eeeeee\"></span>idle</p>\n";
  drawTimelines(simulation, out);

  out << "<h2>Peak memory per device</h2>\n";
  drawMemory(simulation, *input.cluster, out);

  out << "<h2>Critical path</h2>\n<p>"
      << escape(formatSeconds(simulation.criticalCompute)) << " compute, "
      << escape(formatSeconds(simulation.criticalCommunication))
      << " collectives and messages, "
      << escape(formatSeconds(simulation.criticalMoves))
      << " cross-mesh moves; its costliest ops:</p>\n";
  std::vector<std::vector<std::string>> ops;
  for (const CriticalOp &op : simulation.criticalOps)
    ops.push_back(
        {formatSeconds(op.seconds), op.op, op.node, std::to_string(op.count)});
  table(out, {"seconds on the path", "op", "node", "runs"}, ops);

  out << "<h2>Devices</h2>\n";
  std::vector<std::vector<std::string>> devices;
  for (const DeviceClass &figures : simulation.classes)
    devices.push_back(
        {formatDevices(figures.devices), std::to_string(figures.program),
         std::to_string(figures.stage), figures.deviceType,
         formatSeconds(figures.computeBusy), formatSeconds(figures.idle),
         formatSeconds(figures.communicationBusy),
         formatBytes(static_cast<int64_t>(figures.peakMemory)),
         formatBytes(static_cast<int64_t>(figures.arenaBytes))});
  table(out,
        {"devices", "program", "stage", "type", "busy", "idle", "communication",
         "peak memory", "arena planned"},
        devices);

  out << "<h2>Parameter layouts</h2>\n";
  std::vector<std::vector<std::string>> layouts;
  for (const auto &[name, layout] : input.layouts)
    layouts.push_back({layout, name});
  table(out, {"layout", "parameter"}, layouts);
  out << "</body>\n</html>\n";
}

} // namespace parplan::simulate
