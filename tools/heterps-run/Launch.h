//===- Launch.h - heterps-run launch ----------------------------*- C++ -*-===//

#ifndef HETERPS_TOOLS_HETERPS_RUN_LAUNCH_H
#define HETERPS_TOOLS_HETERPS_RUN_LAUNCH_H

namespace heterps::run {

/// `heterps-run launch PLAN [options]`: argv[1] is "launch".
int runLaunch(int argc, char **argv);

} // namespace heterps::run

#endif // HETERPS_TOOLS_HETERPS_RUN_LAUNCH_H
