//===- Communicator.h - The processes of a multi-process job ----*- C++ -*-===//
//
// What the pipelined executor needs from the other processes of a job that
// runs as several (under mpirun): who this process is, messages to and from
// another process, tagged so that the receiver can tell them apart, and
// collectives over a group of processes (the whole job, or the replicas of
// one stage). A job of one process has no communicator. This header does not
// include MPI; lib/Runtime/MPI implements it on MPI.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_COMMUNICATOR_H
#define HETERPS_RUNTIME_COMMUNICATOR_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace heterps::runtime {

class Communicator {
public:
  virtual ~Communicator();

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// The largest tag send() takes.
  virtual int maxTag() const = 0;

  /// Starts sending `message` to process `to`; it returns at once and owns
  /// the message until it has left.
  virtual void send(int to, int tag, std::vector<char> message) = 0;
  /// Takes one message that has arrived, from any process: false when none
  /// has. Also moves the sends along.
  virtual bool tryReceive(int &from, int &tag, std::vector<char> &message) = 0;
  /// Waits until every message sent so far has left this process.
  virtual void flushSends() = 0;

  // Collectives: every process of the group calls them, in the same order.
  // Every process gets the same result.
  virtual void allReduceSum(float *data, size_t count) = 0;
  virtual void allReduceSum(double *data, size_t count) = 0;
  /// `all[r]` is what process r passed as `mine`.
  virtual void allGather(const std::vector<char> &mine,
                         std::vector<std::vector<char>> &all) = 0;
  /// Process `root`'s `bytes` at `data` to every process's `data`.
  virtual void broadcast(void *data, size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  /// A group of the processes that pass the same `color`, ranked by `key`
  /// (a collective of this group).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  /// Ends the whole job: prints `message` on stderr, naming this process's
  /// rank, and makes every process of the job exit non-zero.
  [[noreturn]] virtual void abort(const std::string &message) = 0;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_COMMUNICATOR_H
