//===- MPICommunicator.cpp - A job's processes on MPI ---------------------===//
//
// Only the thread that initialized MPI calls it (MPI_THREAD_FUNNELED): the
// pipelined executor runs a process's one worker on that thread and polls
// for messages while it waits, so no thread blocks inside MPI while another
// needs it.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/MPI.h"

#include "heterps/Runtime/Error.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <mpi.h>

using namespace heterps;
using namespace heterps::runtime;

bool runtime::startedAsMPIJob() {
  for (const char *name :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"}) {
    const char *value = std::getenv(name);
    if (value && std::atoi(value) > 1)
      return true;
  }
  return false;
}

namespace {

int checkedCount(size_t count, const char *what) {
  if (count > static_cast<size_t>(INT_MAX))
    fail(what, " of ", count,
         " elements is larger than one MPI message takes (", INT_MAX, ")");
  return static_cast<int>(count);
}

class MPICommunicator : public Communicator {
public:
  MPICommunicator(MPI_Comm comm, bool world) : comm(comm), world(world) {
    MPI_Comm_rank(comm, &rankValue);
    MPI_Comm_size(comm, &sizeValue);
    int *ub = nullptr, found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    tagBound = found && ub ? *ub : 32767;
  }
  ~MPICommunicator() override {
    if (world) {
      flushSends();
      MPI_Finalize();
    } else {
      MPI_Comm_free(&comm);
    }
  }

  int rank() const override { return rankValue; }
  int size() const override { return sizeValue; }
  int maxTag() const override { return tagBound; }

  void send(int to, int tag, std::vector<char> message) override {
    pending.emplace_back();
    Pending &p = pending.back();
    p.message = std::move(message);
    MPI_Isend(p.message.data(), checkedCount(p.message.size(), "a message"),
              MPI_BYTE, to, tag, comm, &p.request);
  }

  bool tryReceive(int &from, int &tag, std::vector<char> &message) override {
    for (auto it = pending.begin(); it != pending.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? pending.erase(it) : std::next(it);
    }
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &status);
    if (!flag)
      return false;
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    message.resize(bytes);
    MPI_Recv(message.data(), bytes, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG,
             comm, MPI_STATUS_IGNORE);
    from = status.MPI_SOURCE;
    tag = status.MPI_TAG;
    return true;
  }

  void flushSends() override {
    for (Pending &p : pending)
      MPI_Wait(&p.request, MPI_STATUS_IGNORE);
    pending.clear();
  }

  void allReduceSum(float *data, size_t count) override {
    MPI_Allreduce(MPI_IN_PLACE, data, checkedCount(count, "a reduction"),
                  MPI_FLOAT, MPI_SUM, comm);
  }
  void allReduceSum(double *data, size_t count) override {
    MPI_Allreduce(MPI_IN_PLACE, data, checkedCount(count, "a reduction"),
                  MPI_DOUBLE, MPI_SUM, comm);
  }

  void allGather(const std::vector<char> &mine,
                 std::vector<std::vector<char>> &all) override {
    int bytes = checkedCount(mine.size(), "a gathered message");
    std::vector<int> counts(sizeValue), offsets(sizeValue);
    MPI_Allgather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
    size_t total = 0;
    for (int r = 0; r < sizeValue; ++r) {
      offsets[r] = checkedCount(total, "a gather");
      total += counts[r];
    }
    checkedCount(total, "a gather");
    std::vector<char> joined(total);
    MPI_Allgatherv(mine.data(), bytes, MPI_BYTE, joined.data(), counts.data(),
                   offsets.data(), MPI_BYTE, comm);
    all.assign(sizeValue, {});
    for (int r = 0; r < sizeValue; ++r)
      all[r].assign(joined.begin() + offsets[r],
                    joined.begin() + offsets[r] + counts[r]);
  }

  void broadcast(void *data, size_t bytes, int root) override {
    MPI_Bcast(data, checkedCount(bytes, "a broadcast"), MPI_BYTE, root, comm);
  }

  void barrier() override { MPI_Barrier(comm); }

  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm part;
    MPI_Comm_split(comm, color, key, &part);
    return std::make_unique<MPICommunicator>(part, false);
  }

  [[noreturn]] void abort(const std::string &message) override {
    int worldRank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
    std::fprintf(stderr, "heterps-run: error: rank %d: %s\n", worldRank,
                 message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
  }

private:
  struct Pending {
    MPI_Request request;
    std::vector<char> message;
  };
  MPI_Comm comm;
  bool world;
  int rankValue = 0, sizeValue = 1, tagBound = 32767;
  std::list<Pending> pending;
};

} // namespace

std::unique_ptr<Communicator> runtime::initMPI(int *argc, char ***argv) {
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) !=
      MPI_SUCCESS)
    fail("MPI did not start");
  if (provided < MPI_THREAD_FUNNELED)
    fail("this MPI library offers no thread support (level ", provided,
         "); heterps-run needs MPI_THREAD_FUNNELED");
  return std::make_unique<MPICommunicator>(MPI_COMM_WORLD, true);
}
