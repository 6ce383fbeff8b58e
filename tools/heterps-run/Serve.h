//===- Serve.h - heterps-run serve ------------------------------*- C++ -*-===//

#ifndef HETERPS_TOOLS_HETERPS_RUN_SERVE_H
#define HETERPS_TOOLS_HETERPS_RUN_SERVE_H

namespace heterps::run {

/// `heterps-run serve [options]`: argv[1] is "serve".
int runServe(int argc, char **argv);

} // namespace heterps::run

#endif // HETERPS_TOOLS_HETERPS_RUN_SERVE_H
