//===- Progress.h - what a long command is doing, on stderr -----*- C++ -*-===//
//
// parplan compile's stages (importing, the pipeline search's trials, laying
// out, lowering, writing, simulating) told on stderr once one has run for
// about a second: on a terminal a bar over the whole command, rewritten in
// place; otherwise a plain line when such a stage starts being long and
// one when it ends. Short stages say nothing, and --quiet nothing at all.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TOOLS_PARPLAN_PROGRESS_H
#define PARPLAN_TOOLS_PARPLAN_PROGRESS_H

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace parplan::cli {

class Progress {
public:
  /// Says nothing unless `enabled`; `command` starts each plain line.
  Progress(bool enabled, std::string command);
  /// Clears the bar; a stage not finished is abandoned.
  ~Progress();
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  /// Ends the current stage and starts `name`, about `fraction` of the way
  /// through the command (for the bar).
  void stage(const std::string &name, double fraction);
  /// Ends the current stage; the bar is cleared before output follows.
  void finish();
  /// Ends the current stage without telling its time (a command that
  /// fails says why instead) and clears the bar.
  void abandon();
  /// Runs `print` (which writes whole lines to stderr) with the bar
  /// cleared and kept away meanwhile; it comes back at its next refresh.
  void write(const std::function<void()> &print);

private:
  void watch();
  /// With the lock held: the end of the current stage, said where its
  /// start was.
  void endStage();

  bool enabled, terminal;
  std::string command;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::string current;
  double fraction = 0;
  std::chrono::steady_clock::time_point started;
  /// How long a stage runs before it is told.
  std::chrono::duration<double> threshold;
  /// Whether the current stage was said (it ran over a second), and whether
  /// a bar is on the terminal's last line.
  bool said = false, barShown = false;
  std::thread watcher;
};

} // namespace parplan::cli

#endif // PARPLAN_TOOLS_PARPLAN_PROGRESS_H
