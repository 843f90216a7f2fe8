//===- Progress.cpp - what a long command is doing, on stderr -------------===//

#include "Progress.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

using namespace parplan::cli;

namespace {

/// A stage is told once it has run this long: a second, or
/// PARPLAN_PROGRESS_AFTER seconds (0 in tests: every stage).
std::chrono::duration<double> longStage() {
  if (const char *text = std::getenv("PARPLAN_PROGRESS_AFTER")) {
    char *end = nullptr;
    double seconds = std::strtod(text, &end);
    if (end != text && *end == '\0' && seconds >= 0 && seconds < 1e6)
      return std::chrono::duration<double>(seconds);
  }
  return std::chrono::duration<double>(1.0);
}
/// How often the bar is drawn again.
constexpr std::chrono::milliseconds kRefresh(200);
constexpr int kBarWidth = 24;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

Progress::Progress(bool enabled, std::string command)
    : enabled(enabled), terminal(isatty(fileno(stderr)) != 0),
      command(std::move(command)), threshold(longStage()) {
  if (this->enabled)
    watcher = std::thread([this] { watch(); });
}

Progress::~Progress() {
  if (!enabled)
    return;
  abandon();
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  watcher.join();
}

void Progress::stage(const std::string &name, double fraction) {
  if (!enabled)
    return;
  std::lock_guard<std::mutex> lock(mutex);
  endStage();
  current = name;
  this->fraction = std::clamp(fraction, 0.0, 1.0);
  started = std::chrono::steady_clock::now();
  said = false;
}

void Progress::finish() {
  if (!enabled)
    return;
  std::lock_guard<std::mutex> lock(mutex);
  endStage();
  current.clear();
}

void Progress::abandon() {
  if (!enabled)
    return;
  std::lock_guard<std::mutex> lock(mutex);
  if (barShown)
    std::fprintf(stderr, "\r\033[K");
  barShown = false;
  current.clear();
  std::fflush(stderr);
}

void Progress::write(const std::function<void()> &print) {
  if (!enabled) {
    print();
    return;
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (barShown)
    std::fprintf(stderr, "\r\033[K");
  barShown = false;
  std::fflush(stderr);
  print();
}

void Progress::endStage() {
  if (current.empty())
    return;
  // A stage that ended long before the watcher saw it is told too.
  if (!terminal && std::chrono::steady_clock::now() - started >= threshold)
    said = true;
  if (barShown) {
    std::fprintf(stderr, "\r\033[K");
    barShown = false;
  } else if (said) {
    std::fprintf(stderr, "%s: %s: %.1f s\n", command.c_str(), current.c_str(),
                 secondsSince(started));
  }
  std::fflush(stderr);
}

void Progress::watch() {
  std::unique_lock<std::mutex> lock(mutex);
  while (!stopping) {
    wake.wait_for(lock, kRefresh);
    if (stopping || current.empty() ||
        std::chrono::steady_clock::now() - started < threshold)
      continue;
    double seconds = secondsSince(started);
    if (terminal) {
      int filled = static_cast<int>(fraction * kBarWidth + 0.5);
      std::string bar(static_cast<size_t>(filled), '=');
      bar.resize(kBarWidth, ' ');
      std::fprintf(stderr, "\r\033[K%s [%s] %s %.0f s", command.c_str(),
                   bar.c_str(), current.c_str(), seconds);
      barShown = true;
    } else if (!said) {
      std::fprintf(stderr, "%s: %s ...\n", command.c_str(), current.c_str());
    }
    said = true;
    std::fflush(stderr);
  }
}
