//===- Trainer.cpp - The training loop ------------------------------------===//

#include "heterps/Runtime/Trainer.h"

#include "heterps/Runtime/Error.h"

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

using namespace heterps;
using namespace heterps::runtime;

using Clock = std::chrono::steady_clock;

int64_t runtime::checkpointCount(const CheckpointInfo &info,
                                 const std::string &key, int64_t otherwise) {
  auto it = info.entries.find(key);
  if (it == info.entries.end())
    return otherwise;
  char *end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end || v < 0)
    fail("checkpoint MANIFEST entry '", key, "' is '", it->second,
         "', expected a count");
  return v;
}

Trainer::Trainer(Program &program, StepExecutor &stepper,
                 TrainerOptions options)
    : program(program), stepper(stepper), options(std::move(options)),
      inputs(program) {
  if (this->options.batchSize < 1)
    fail("the batch size must be positive, got ", this->options.batchSize);
  // A model trained with from-logits bce predicts logits: the metrics take
  // their sigmoid.
  for (const plan::Stage &stage : program.plan().stages())
    for (const plan::Op &op : stage.ops())
      if (op.name() == "heterps.bce_loss") {
        auto fromLogits = op.attrs().find("from_logits");
        logitScores |= fromLogits != op.attrs().end() && fromLogits->second.b();
      }
}

void Trainer::log(const char *format, ...) {
  if (!options.log)
    return;
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  options.log(buf);
}

bool Trainer::report(TrainingReport::Kind kind, int64_t epoch,
                     double samplesPerSecond, const Metrics &metrics) {
  if (!options.report)
    return true;
  TrainingReport r;
  r.kind = kind;
  r.step = stepper.steps();
  r.epoch = epoch + 1;
  r.samplesPerSecond = samplesPerSecond;
  r.seconds = std::chrono::duration<double>(Clock::now() - loopStart).count();
  r.metrics = &metrics;
  return options.report(r);
}

Metrics Trainer::evaluate(DataSource &source, const PredictionSink &sink) {
  Metrics m(logitScores);
  std::vector<int> outs = predictionOutputs(program);
  if (outs.empty())
    return m;
  Batch batch;
  source.rewind();
  while (source.next(batch, options.batchSize)) {
    std::vector<const Tensor *> bound = inputs.bind(batch);
    const std::vector<const Tensor *> &res =
        program.run(bound, false, {outs[0]});
    const Tensor *label =
        inputs.labelIndex() >= 0 ? bound[inputs.labelIndex()] : nullptr;
    if (label)
      m.add(*res[0], *label);
    if (sink)
      sink(*res[0], label, batch.present);
  }
  return m;
}

TrainingSummary Trainer::fit(DataSource &train, DataSource *eval,
                             const CheckpointInfo &resume) {
  return loop(&train, eval, nullptr, resume);
}

TrainingSummary Trainer::fitOn(const std::vector<const Tensor *> &fixed) {
  if (!options.steps)
    fail("training on fixed input tensors needs a step count");
  return loop(nullptr, nullptr, &fixed, {});
}

TrainingSummary Trainer::loop(DataSource *source, DataSource *eval,
                              const std::vector<const Tensor *> *fixed,
                              const CheckpointInfo &resume) {
  int lossOutput = program.plan().training().loss_output();
  std::vector<int> outs = predictionOutputs(program);
  std::vector<int> wanted{lossOutput};
  if (!outs.empty())
    wanted.push_back(outs[0]);
  int64_t batchSize = options.batchSize;

  Metrics window(logitScores);
  TrainingSummary summary;
  int64_t windowSamples = 0;
  Clock::time_point start = Clock::now(), windowStart = start;
  loopStart = start;
  // With a pull-ahead the next batch is read before a step runs (two
  // batches and binders, used in turn): its rows travel while the step
  // computes.
  Batch batches[2];
  InputBinder spare(inputs);
  InputBinder *binders[2] = {&inputs, &spare};
  int cur = 0;
  bool haveAhead = false;
  bool readAhead = source && stepper.pullsAhead();
  bool done = false;
  // A checkpoint resumes at its position in the data: the epoch (rewinding
  // replays the shuffle of each epoch) and the batches read.
  int64_t firstEpoch = checkpointCount(resume, "epoch", 0);
  int64_t epochBatches = 0;
  // Batches of a whole epoch, once one has been read (for the ETA), and
  // those a resumed run skipped.
  int64_t batchesPerEpoch = 0, resumedBatches = 0;
  if (source) {
    for (int64_t e = 0; e < firstEpoch; ++e)
      source->rewind();
    // The batches read were of the checkpoint's batch size: another one
    // resumes at the same example when that is a whole number of its
    // batches (the position is counted in batches).
    int64_t readBatches = checkpointCount(resume, "epoch-batches", 0);
    int64_t readBatch = checkpointCount(resume, "batch", batchSize);
    if (readBatch != batchSize && readBatches) {
      if (readBatch == 0 || (readBatches * readBatch) % batchSize)
        fail("the checkpoint is ", readBatches, " batches of ", readBatch, " (",
             readBatches * readBatch, " examples) into epoch ", firstEpoch + 1,
             "; a batch of ", batchSize,
             " cannot resume there: give a batch size that divides ",
             readBatches * readBatch, ", or ", readBatch);
      readBatches = readBatches * readBatch / batchSize;
    }
    for (int64_t b = readBatches; b > 0; --b, ++epochBatches)
      if (!source->next(batches[0], batchSize))
        fail("the checkpoint is ", epochBatches, "+ batches into epoch ",
             firstEpoch + 1, ", the data has fewer");
    resumedBatches = epochBatches;
  }
  auto checkpointNow = [&](int64_t epoch) {
    CheckpointInfo info;
    info.step = stepper.steps();
    info.entries["epoch"] = std::to_string(epoch);
    info.entries["epoch-batches"] = std::to_string(epochBatches);
    info.entries["batch"] = std::to_string(batchSize);
    options.saveCheckpoint(std::move(info));
  };
  // A run resumed after its last epoch has nothing to do; "trained 0
  // steps, last loss 0" read as a failed run.
  if (source && firstEpoch >= options.epochs) {
    log("nothing to train: the checkpoint is at the end of epoch %lld, and "
        "this run trains %lld epoch%s (give more to go on)",
        static_cast<long long>(firstEpoch),
        static_cast<long long>(options.epochs), options.epochs == 1 ? "" : "s");
    summary.nextEpoch = firstEpoch;
    // A checkpoint asked for is still written (the same position).
    if (options.saveCheckpoint)
      checkpointNow(firstEpoch);
    return summary;
  }
  int64_t epoch = firstEpoch;
  for (; epoch < options.epochs && !done; ++epoch) {
    if (source && epoch > firstEpoch) {
      source->rewind();
      epochBatches = 0;
    }
    while (!done) {
      std::vector<const Tensor *> bound;
      int64_t n;
      if (source) {
        if (haveAhead) {
          cur ^= 1;
          haveAhead = false;
        } else if (!source->next(batches[cur], batchSize)) {
          break;
        }
        bound = binders[cur]->bind(batches[cur]);
        n = batches[cur].size;
        ++epochBatches;
        bool last = options.steps && summary.steps + 1 >= options.steps;
        if (readAhead && !last && source->next(batches[cur ^ 1], batchSize)) {
          haveAhead = true;
          stepper.pullAhead(binders[cur ^ 1]->bind(batches[cur ^ 1]));
        }
      } else {
        bound = *fixed;
        n = bound[0] && bound[0]->rank() ? bound[0]->dim(0) : 1;
      }
      const std::vector<const Tensor *> &res = stepper.run(bound, true, wanted);
      summary.lastLoss = res[0]->as<float>()[0];
      window.addLoss(summary.lastLoss, n);
      if (res.size() > 1 && inputs.labelIndex() >= 0 &&
          bound[inputs.labelIndex()])
        window.add(*res[1], *bound[inputs.labelIndex()],
                   source ? batches[cur].present : std::vector<char>{});
      ++summary.steps;
      summary.samples += n;
      windowSamples += n;
      if (options.logEvery && summary.steps % options.logEvery == 0) {
        if (options.combineMetrics)
          options.combineMetrics(window);
        double secs =
            std::chrono::duration<double>(Clock::now() - windowStart).count();
        double rate = secs > 0 ? windowSamples / secs : 0.0;
        double elapsed =
            std::chrono::duration<double>(Clock::now() - start).count();
        // The steps of this run: the step count, or the epochs once one
        // has shown how many batches an epoch has.
        int64_t total = options.steps;
        if (!total && batchesPerEpoch)
          total =
              (options.epochs - firstEpoch) * batchesPerEpoch - resumedBatches;
        char eta[48] = "";
        if (total > summary.steps)
          std::snprintf(eta, sizeof(eta), "  eta %.1fs",
                        elapsed / summary.steps * (total - summary.steps));
        char line[384];
        std::snprintf(
            line, sizeof(line),
            "step %lld  epoch %lld  samples/s %.0f  loss %.5f  %s  elapsed "
            "%.1fs%s",
            static_cast<long long>(stepper.steps()),
            static_cast<long long>(epoch + 1), rate, window.meanLoss(),
            metricsText(window).c_str(), elapsed, eta);
        if (options.progress)
          options.progress(line);
        else if (options.log)
          options.log(line);
        if (!report(TrainingReport::Kind::Steps, epoch, rate, window))
          done = summary.stopped = true;
        window.reset();
        windowSamples = 0;
        windowStart = Clock::now();
      }
      if (options.steps && summary.steps >= options.steps)
        done = true;
      if (options.saveCheckpoint && options.checkpointEvery &&
          stepper.steps() % options.checkpointEvery == 0 && !done)
        checkpointNow(epoch);
    }
    // Training that never steps would end "successfully" on, say, an empty
    // file.
    if (!done && source && epochBatches == 0)
      fail("the training data (", source->describe(),
           ") yields no batch: it holds no examples, or fewer than one "
           "step's share of each data lane");
    // An epoch read to its end (not one resumed part of the way in).
    if (!done && source && !batchesPerEpoch &&
        (epoch > firstEpoch || !resumedBatches))
      batchesPerEpoch = epochBatches;
    if (eval) {
      stepper.synchronize();
      summary.evaluation = evaluate(*eval);
      log("eval after epoch %lld: %s", static_cast<long long>(epoch + 1),
          metricsText(summary.evaluation).c_str());
      if (!report(TrainingReport::Kind::Evaluation, epoch, 0,
                  summary.evaluation))
        done = summary.stopped = true;
    }
  }
  summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  log("trained %lld step%s, %lld samples in %.2f s: %.0f samples/s, last "
      "loss %.6f",
      static_cast<long long>(summary.steps), summary.steps == 1 ? "" : "s",
      static_cast<long long>(summary.samples), summary.seconds,
      summary.seconds > 0 ? summary.samples / summary.seconds : 0.0,
      summary.lastLoss);
  // Where the next run resumes: after the last epoch, or at the next batch
  // of the epoch the step count stopped in.
  if (done)
    --epoch;
  else
    epochBatches = 0;
  summary.nextEpoch = epoch;
  summary.nextEpochBatches = epochBatches;
  if (options.saveCheckpoint)
    checkpointNow(epoch);
  return summary;
}
