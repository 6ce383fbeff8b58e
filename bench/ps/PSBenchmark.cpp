//===- PSBenchmark.cpp - Pull and push rows/s of the PS service -----------===//
//
// Rows per second of pulls and pushes (SGD) through the PS client, for
// each dimension, client thread count and request size, to the embedded
// server (in-process) and to a server over loopback gRPC, each against the
// bound: a raw loop over a std::unordered_map of the same rows with the
// same keys (one private map per thread, no locks, no dedup), run in the
// same process just before.
//
//   heterps-ps-bench [--seconds=S] [--dims=16,64] [--threads=1,2,4]
//                    [--keys=1000,10000] [--rows=200000] [--modes=inproc,grpc]
//                    [--repeat=N] [--push-only | --pull-only]
//
//===----------------------------------------------------------------------===//

#include "heterps/PS/Client.h"
#include "heterps/PS/LocalConnection.h"
#include "heterps/PS/Server.h"
#include "heterps/Support/Flags.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>
#include <unordered_map>

using namespace heterps;
using namespace heterps::ps;
using Clock = std::chrono::steady_clock;

namespace {

/// Requests of `n` keys drawn uniformly from `rows` distinct keys (spread
/// over the uint64 range), one sequence per thread.
std::vector<std::vector<int64_t>> makeRequests(int thread, int64_t n,
                                               int64_t rows) {
  std::mt19937_64 rng(1234 + thread);
  std::vector<std::vector<int64_t>> out(16);
  for (auto &r : out) {
    r.resize(n);
    for (int64_t &k : r)
      k = static_cast<int64_t>((rng() % rows) * 0x9E3779B97F4A7C15ULL >> 1);
  }
  return out;
}

/// Runs body(thread, iteration) on `threads` threads for `seconds`;
/// returns iterations per second in total.
double timed(int threads, double seconds,
             const std::function<void(int, int64_t)> &body) {
  std::atomic<bool> stop{false};
  std::vector<int64_t> counts(threads);
  std::vector<std::thread> pool;
  auto start = Clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      int64_t i = 0;
      while (!stop.load(std::memory_order_relaxed))
        body(t, i++);
      counts[t] = i;
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (std::thread &t : pool)
    t.join();
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  int64_t total = 0;
  for (int64_t c : counts)
    total += c;
  return total / secs;
}

/// The median of `v` (the mean of the middle two for an even count).
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

struct RawTable {
  std::unordered_map<uint64_t, uint32_t> index;
  std::vector<float> data;
  int64_t dim;
  RawTable(int64_t rows, int64_t dim) : dim(dim) {
    index.reserve(rows);
    data.assign(rows * dim, 0.01f);
    for (int64_t r = 0; r < rows; ++r)
      index.emplace((r * 0x9E3779B97F4A7C15ULL) >> 1, static_cast<uint32_t>(r));
  }
  void pull(const int64_t *keys, int64_t n, float *out) const {
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(out + i * dim,
                  data.data() + index.at(static_cast<uint64_t>(keys[i])) * dim,
                  dim * sizeof(float));
  }
  void push(const int64_t *keys, int64_t n, const float *g) {
    for (int64_t i = 0; i < n; ++i) {
      float *row = data.data() + index.at(static_cast<uint64_t>(keys[i])) * dim;
      for (int64_t j = 0; j < dim; ++j)
        row[j] -= 0.01f * g[i * dim + j];
    }
  }
};

v1::TableConfig config(int64_t dim) {
  v1::TableConfig c;
  c.set_table_id(0);
  c.set_name("bench");
  c.set_dim(static_cast<uint32_t>(dim));
  c.mutable_init()->set_kind("constant");
  c.mutable_init()->add_args(0.01);
  c.mutable_optimizer()->set_kind("sgd");
  c.mutable_optimizer()->set_learning_rate(0.01);
  return c;
}

} // namespace

int main(int argc, char **argv) {
  double seconds = 1.0;
  std::vector<int64_t> dims{16, 64}, threadCounts{1, 2, 4},
      keyCounts{1000, 10000};
  int64_t rows = 200000, repeat = 1;
  bool pushOnly = false, pullOnly = false; // for profiling one side
  std::vector<std::string> modeList{"inproc", "grpc"};
  Flags flags("heterps-ps-bench",
              "usage: heterps-ps-bench [options]\n\n"
              "Rows per second of PS pulls and pushes (SGD) through the PS "
              "client, to the\nembedded server (inproc) and over loopback gRPC "
              "(grpc), against a raw\nunordered_map loop over the same keys "
              "(the bound) in the same process.\n");
  flags.option("--seconds", seconds, "S", "seconds per figure (default 1)", 0,
               3600, /*minExclusive=*/true);
  flags.option("--dims", dims, "D,...", "row widths (default 16,64)", 1,
               1 << 16);
  flags.option("--threads", threadCounts, "N,...",
               "client threads (default 1,2,4)", 1, 1024);
  flags.option("--keys", keyCounts, "N,...",
               "keys per request (default 1000,10000)", 1, 1 << 22);
  flags.option("--rows", rows, "N", "distinct keys (default 200000)", 1,
               int64_t(1) << 32);
  flags.option("--repeat", repeat, "N",
               "rounds per figure, each timing the bound and the service "
               "back to back; medians are printed (default 1)",
               1, 100);
  flags.choices("--modes", modeList, {"inproc", "grpc"},
                "where the server runs (default inproc,grpc)");
  flags.flag("--push-only", pushOnly, "time pushes only (for profiling)");
  flags.flag("--pull-only", pullOnly, "time pulls only (for profiling)");
  flags.parse(argc, argv);
  if (pushOnly && pullOnly) {
    std::fprintf(stderr, "heterps-ps-bench: --push-only and --pull-only "
                         "exclude each other\n");
    return 2;
  }
  std::printf("rows/s of PS pulls and pushes (SGD) against a raw "
              "unordered_map loop over the same keys (the bound), %lld rows, "
              "%.1f s per figure, median of %lld round%s, %u cores\n\n",
              static_cast<long long>(rows), seconds,
              static_cast<long long>(repeat), repeat == 1 ? "" : "s",
              std::thread::hardware_concurrency());
  std::printf("%-6s %4s %3s %6s | %12s %12s %6s | %12s %12s %6s\n", "mode",
              "dim", "thr", "keys", "pull rows/s", "bound", "ratio",
              "push rows/s", "bound", "ratio");
  std::printf("---------------------------------------------------------------"
              "-------------------------\n");
  for (const std::string mode : {"inproc", "grpc"}) {
    if (std::find(modeList.begin(), modeList.end(), mode) == modeList.end())
      continue;
    for (int64_t dim : dims) {
      std::unique_ptr<Server> server;
      std::unique_ptr<Shard> shard;
      std::string address;
      if (mode == "grpc") {
        ServerOptions o;
        server = Server::start(o);
        address = "127.0.0.1:" + std::to_string(server->port());
      } else {
        shard = std::make_unique<Shard>(ShardOptions{});
      }
      auto makeClient = [&] {
        std::vector<std::unique_ptr<Connection>> c;
        c.push_back(mode == "grpc" ? connectRemote(address, ClientOptions{})
                                   : connectLocal(*shard));
        auto client = std::make_unique<Client>(std::move(c));
        client->createTable(config(dim));
        return client;
      };
      {
        // Populate every row once, so both sides look up existing keys.
        std::unique_ptr<Client> c = makeClient();
        std::vector<int64_t> keys(rows);
        for (int64_t r = 0; r < rows; ++r)
          keys[r] = static_cast<int64_t>((r * 0x9E3779B97F4A7C15ULL) >> 1);
        std::vector<float> out(rows * dim);
        c->pull(0, keys.data(), rows, out.data());
      }
      for (int64_t threads : threadCounts)
        for (int64_t n : keyCounts) {
          int T = static_cast<int>(threads);
          std::vector<std::vector<std::vector<int64_t>>> requests;
          std::vector<std::vector<float>> buffers(T);
          std::vector<std::unique_ptr<RawTable>> raw;
          std::vector<std::unique_ptr<Client>> clients;
          for (int t = 0; t < T; ++t) {
            requests.push_back(makeRequests(t, n, rows));
            buffers[t].assign(n * dim, 0.001f);
            raw.push_back(std::make_unique<RawTable>(rows, dim));
            clients.push_back(makeClient());
          }
          auto req = [&](int t, int64_t i) -> const std::vector<int64_t> & {
            return requests[t][i % requests[t].size()];
          };
          // Each round times the bound and the service back to back, so
          // that a round's ratio compares the two under the same load.
          std::vector<double> boundPulls, boundPushes, pulls, pushes,
              pullRatios, pushRatios;
          for (int64_t r = 0; r < repeat; ++r) {
            double boundPull = timed(T, seconds, [&](int t, int64_t i) {
              raw[t]->pull(req(t, i).data(), n, buffers[t].data());
            });
            double boundPush = timed(T, seconds, [&](int t, int64_t i) {
              raw[t]->push(req(t, i).data(), n, buffers[t].data());
            });
            double pull =
                timed(T, pushOnly ? 0.01 : seconds, [&](int t, int64_t i) {
                  clients[t]->pull(0, req(t, i).data(), n, buffers[t].data());
                });
            std::fill(buffers.begin(), buffers.end(),
                      std::vector<float>(n * dim, 0.001f));
            double push =
                timed(T, pullOnly ? 0.01 : seconds, [&](int t, int64_t i) {
                  clients[t]->push(0, req(t, i).data(), n, buffers[t].data());
                });
            boundPulls.push_back(boundPull * n);
            boundPushes.push_back(boundPush * n);
            pulls.push_back(pull * n);
            pushes.push_back(push * n);
            pullRatios.push_back(pull / boundPull);
            pushRatios.push_back(push / boundPush);
          }
          std::printf("%-6s %4lld %3d %6lld | %12.0f %12.0f %6.2f | %12.0f "
                      "%12.0f %6.2f\n",
                      mode.c_str(), static_cast<long long>(dim), T,
                      static_cast<long long>(n), median(pulls),
                      median(boundPulls), median(pullRatios), median(pushes),
                      median(boundPushes), median(pushRatios));
          std::fflush(stdout);
        }
    }
  }
  return 0;
}
