//===- Launch.cpp - heterps-run launch: the PS servers and mpirun ---------===//
//
// A multi-process job needs a PS service and an mpirun command whose every
// process gets the servers' addresses. `launch` starts the servers on this
// machine, waits until each serves, runs mpirun with the workers' command
// line, and stops the servers when mpirun is done. It starts mpirun, it
// does not replace it: what mpirun does with hosts, slots and transports is
// the user's, through --hosts and --mpirun-arg.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "Options.h"

#include "heterps/Plan/PlanFile.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char **environ;

using namespace heterps::run;

static const char *kLaunchUsage =
    R"(usage: heterps-run launch PLAN --np=N [options] [training options]

Runs a training job of N worker processes under mpirun, with the parameter-
server (PS) service it trains against: starts --ps-shards servers
(heterps-run serve) on this machine, waits until each serves, then runs

  mpirun -np N [--host HOSTS] heterps-run PLAN --ps=SERVERS [training options]

and stops the servers when mpirun ends; the exit status is mpirun's. Each
process runs the stage replica its rank names: the plan's stages in order,
each with its units mapped onto the N processes (every stage gets at least
one). Both command lines are printed before they run.
)";

static const char *kLaunchEpilog =
    R"(Every other option is a training option of heterps-run PLAN (see
heterps-run --help), checked here and given to every worker process; --ps,
--max-workers, --pipeline=off and --infer are not: the job sets or excludes
them. With --ps-token-file, the servers require that token
(--auth-token-file). On a single machine the workers may outnumber its cores
(mpirun --oversubscribe); processes are not bound to cores (--bind-to none),
so that --threads can use them.
)";

[[noreturn]] static void launchError(const std::string &message) {
  std::fprintf(stderr, "heterps-run launch: error: %s\n", message.c_str());
  std::exit(1);
}

/// A command line as a shell would take it back.
static std::string quoted(const std::vector<std::string> &args) {
  std::string line;
  for (const std::string &arg : args) {
    bool plain = !arg.empty() && arg.find_first_not_of(
                                     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
                                     "KLMNOPQRSTUVWXYZ0123456789-_=./:,@+%") ==
                                     std::string::npos;
    line += line.empty() ? "" : " ";
    if (plain) {
      line += arg;
      continue;
    }
    line += "'";
    for (char c : arg)
      line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += "'";
  }
  return line;
}

/// Starts `args`; on failure sets `error` and returns -1.
static pid_t spawn(const std::vector<std::string> &args, std::string &error) {
  std::vector<char *> argv;
  for (const std::string &arg : args)
    argv.push_back(const_cast<char *>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int code =
      posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  if (code) {
    error = "cannot start '" + args[0] + "': " + std::strerror(code);
    return -1;
  }
  return pid;
}

/// The process's exit status as a shell gives it (128 + a fatal signal).
static int waitFor(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return 1;
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static volatile sig_atomic_t mpirunPid = 0;
static volatile sig_atomic_t interrupted = 0;

/// SIGINT and SIGTERM go on to mpirun once it runs; before, launch stops
/// the servers it has started and exits.
static void forwardSignal(int sig) {
  interrupted = sig;
  if (mpirunPid > 0)
    kill(mpirunPid, sig);
}

int heterps::run::runLaunch(int argc, char **argv) {
  int np = 0, shards = 1;
  std::string hosts, psHost, checkpointDir = "ps-checkpoints", rocksdbDir;
  std::string mpirun = "mpirun";
  std::vector<std::string> mpirunArgs;
  bool dryRun = false;
  Options o;
  Flags flags("heterps-run launch", kLaunchUsage);
  flags.option("--np", np, "N", "worker processes (required)", 1, 1 << 20);
  flags.option("--ps-shards", shards, "M", "PS servers to start (default 1)", 1,
               65536);
  flags.option("--hosts", hosts, "H1[:SLOTS],...",
               "the machines mpirun starts the workers on (mpirun --host); "
               "the servers then listen on every interface of this machine");
  flags.option("--ps-host", psHost, "HOST",
               "the address the workers reach this machine's servers at "
               "(default 127.0.0.1; with --hosts, this machine's host name)");
  flags.option("--ps-checkpoint-dir", checkpointDir, "DIR",
               "the servers' checkpoint directory (default ps-checkpoints); "
               "the workers' --save and --load name PS checkpoints in it");
  flags.option("--ps-rocksdb-dir", rocksdbDir, "DIR",
               "the servers' RocksDB tiers, for tables of "
               "--table-storage=rocksdb (server S uses DIR/shard-S, cleared "
               "at its start)");
  flags.option("--mpirun", mpirun, "PATH",
               "the mpirun to run (default: mpirun on PATH)");
  flags.list("--mpirun-arg", mpirunArgs, "ARG",
             "one more argument for mpirun (repeatable)");
  flags.flag("--dry-run", dryRun, "print the commands and start nothing");
  flags.epilog(kLaunchEpilog);
  flags.beginForwarded();
  declareOptions(flags, o);
  flags.parse(argc, argv, 2);
  if (np == 0)
    flags.fail("--np=N (the worker processes) is required");
  if (!o.psClient.servers.empty())
    flags.fail("--ps is set by launch: it starts the servers");
  // The workers' options are checked here, before anything starts, with
  // the --ps they will get.
  o.psClient.servers = "127.0.0.1:1";
  checkOptions(flags, o);
  if (o.maxWorkers)
    flags.fail("--max-workers caps the threads of one process; --np sets the "
               "job's workers");
  if (o.pipeline == "off" || o.infer)
    flags.fail("a job of several processes trains pipelined; --pipeline=off "
               "and --infer run in one process");
  // What launch's servers could not serve is refused before they start.
  if (!o.psClient.tlsCA.empty() || !o.psClient.tlsCert.empty() ||
      !o.psClient.tlsServerName.empty())
    flags.fail("launch starts its servers without TLS; for TLS, start them "
               "with heterps-run serve --tls-cert and the workers with "
               "mpirun (docs/Deploy.md)");
  if (o.tables.storage == "rocksdb" && rocksdbDir.empty())
    flags.fail("--table-storage=rocksdb needs --ps-rocksdb-dir=DIR, where "
               "launch's servers keep their RocksDB tiers");
  if (!rocksdbDir.empty() && o.tables.storage != "rocksdb")
    flags.fail("--ps-rocksdb-dir is for tables of --table-storage=rocksdb");
  const std::string &plan = o.plan;
  // A plan the workers would refuse is refused before any server starts.
  {
    plan::Plan checked;
    std::string error;
    if (!plan::readPlanFile(plan, checked, error))
      launchError(error);
  }
  std::vector<std::string> forwarded = flags.forwardedArguments();

  if (psHost.empty()) {
    psHost = "127.0.0.1";
    if (!hosts.empty()) {
      char name[256] = {};
      if (gethostname(name, sizeof(name) - 1) != 0)
        launchError("cannot read this machine's host name; give --ps-host");
      psHost = name;
    }
  }
  std::string listenHost = hosts.empty() ? "127.0.0.1" : "0.0.0.0";
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();

  std::vector<std::string> servers;
  std::vector<pid_t> serverPids;
  struct sigaction action = {};
  action.sa_handler = forwardSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  auto stopServers = [&] {
    for (pid_t pid : serverPids)
      kill(pid, SIGTERM);
    for (pid_t pid : serverPids)
      waitFor(pid);
    serverPids.clear();
  };
  char portDirTemplate[] = "/tmp/heterps-launch-XXXXXX";
  std::string portDir = portDirTemplate;
  bool madePortDir = false;
  // Every way out after the first server starts stops the servers and
  // removes the scratch directory.
  auto giveUp = [&](const std::string &message) {
    stopServers();
    if (madePortDir)
      std::filesystem::remove_all(portDir);
    launchError(message);
  };
  if (!dryRun) {
    if (!mkdtemp(portDirTemplate))
      launchError(std::string("cannot make a scratch directory: ") +
                  std::strerror(errno));
    portDir = portDirTemplate;
    madePortDir = true;
    std::filesystem::create_directories(checkpointDir);
  }
  for (int s = 0; s < shards; ++s) {
    std::string portFile = portDir + "/port." + std::to_string(s);
    std::vector<std::string> command{self,
                                     "serve",
                                     "--listen=" + listenHost + ":0",
                                     "--shard-index=" + std::to_string(s),
                                     "--shard-count=" + std::to_string(shards),
                                     "--checkpoint-dir=" + checkpointDir,
                                     "--port-file=" + portFile};
    if (!rocksdbDir.empty())
      command.push_back("--rocksdb-dir=" +
                        (std::filesystem::absolute(rocksdbDir) /
                         ("shard-" + std::to_string(s)))
                            .string());
    // The workers' token is the servers'.
    if (!o.psClient.tokenFile.empty())
      command.push_back(
          "--auth-token-file=" +
          std::filesystem::absolute(o.psClient.tokenFile).string());
    std::printf("launch: PS server %d: %s\n", s, quoted(command).c_str());
    std::fflush(stdout);
    if (dryRun) {
      servers.push_back(psHost + ":PORT" + std::to_string(s));
      continue;
    }
    std::string error;
    pid_t pid = spawn(command, error);
    if (pid < 0)
      giveUp(error);
    serverPids.push_back(pid);
    // The server writes its port once it serves.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::string port;
    while (port.empty()) {
      std::ifstream in(portFile);
      if (in >> port)
        break;
      int status = 0;
      if (waitpid(serverPids.back(), &status, WNOHANG) > 0) {
        serverPids.pop_back();
        giveUp("PS server " + std::to_string(s) +
               " exited before it served (see its messages above)");
      }
      if (std::chrono::steady_clock::now() > deadline) {
        giveUp("PS server " + std::to_string(s) + " did not serve within 30 s");
      }
      if (interrupted)
        giveUp("interrupted by signal " + std::to_string(interrupted) +
               " while the servers started; they are stopped");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    servers.push_back(psHost + ":" + port);
  }
  std::string serverList;
  for (const std::string &server : servers)
    serverList += (serverList.empty() ? "" : ",") + server;

  std::vector<std::string> command{mpirun, "-np", std::to_string(np)};
  if (!hosts.empty()) {
    command.push_back("--host");
    command.push_back(hosts);
  } else {
    command.push_back("--oversubscribe");
  }
  command.push_back("--bind-to");
  command.push_back("none");
  // Open MPI refuses to run as root without being told: containers do.
  if (geteuid() == 0)
    command.push_back("--allow-run-as-root");
  command.insert(command.end(), mpirunArgs.begin(), mpirunArgs.end());
  command.push_back(self);
  command.push_back(plan);
  command.push_back("--ps=" + serverList);
  command.insert(command.end(), forwarded.begin(), forwarded.end());
  std::printf("launch: workers: %s\n", quoted(command).c_str());
  std::fflush(stdout);
  if (dryRun)
    return 0;

  std::string error;
  pid_t pid = spawn(command, error);
  if (pid < 0) {
    giveUp(error + " (is Open MPI installed? give its mpirun with "
                   "--mpirun)");
  }
  mpirunPid = pid;
  // A signal that came between the servers and mpirun goes on to it.
  if (interrupted)
    kill(pid, interrupted);
  int status = waitFor(pid);
  mpirunPid = 0;
  stopServers();
  std::filesystem::remove_all(portDir);
  if (status != 0)
    std::fprintf(stderr,
                 "heterps-run launch: the job failed: mpirun exited "
                 "with status %d\n",
                 status);
  else
    std::printf("launch: the job is done; the PS servers are stopped\n");
  return status;
}
