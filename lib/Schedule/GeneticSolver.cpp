//===- GeneticSolver.cpp - A genetic algorithm over placements ------------===//

#include "heterps/Schedule/Solver.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>
#include <random>
#include <tuple>

using namespace heterps::schedule;

namespace {

struct Individual {
  std::vector<int> genes;
  double fitness = std::numeric_limits<double>::infinity();
};

/// Uniform integers from our own arithmetic on mt19937_64, so that a seed
/// gives the same plan with every standard library.
class Random {
public:
  explicit Random(uint64_t seed) : engine(seed) {}
  uint64_t below(uint64_t n) { return engine() % n; }
  double unit() { return (engine() >> 11) * (1.0 / 9007199254740992.0); }

private:
  std::mt19937_64 engine;
};

} // namespace

llvm::Expected<SolverResult>
heterps::schedule::solveGenetic(const CostModel &model,
                                const SolverOptions &options) {
  int numOps = model.getNumOps(), numResources = model.getNumResources();
  Random random(options.seed);
  std::vector<std::vector<int>> choices(numOps);
  for (int l = 0; l < numOps; ++l)
    for (int t = 0; t < numResources; ++t)
      if (model.allowed(l, t))
        choices[l].push_back(t);
  auto randomGene = [&](int l) {
    return choices[l][random.below(choices[l].size())];
  };

  SolverResult result;
  auto evaluate = [&](Individual &individual) {
    individual.fitness = model.objective(individual.genes);
    ++result.evaluations;
  };

  int size = std::max(4, options.population); // solvePlacement refuses < 4
  std::vector<Individual> population(size);
  // Single-type plans (pins permitting) seed the population next to random
  // ones: they are the natural pipelines of one stage.
  for (int i = 0; i < size; ++i) {
    population[i].genes.resize(numOps);
    for (int l = 0; l < numOps; ++l) {
      int type = i % (numResources + 1);
      bool single =
          i <= numResources && type < numResources && model.allowed(l, type);
      population[i].genes[l] = single ? type : randomGene(l);
    }
    evaluate(population[i]);
  }

  // The order std::stable_sort gives (fitness, then position), from
  // std::sort: stable_sort's temporary buffer is deprecated in C++17.
  std::vector<int> order(size);
  std::vector<Individual> sorted;
  auto sortByFitness = [&] {
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return std::tie(population[a].fitness, a) <
             std::tie(population[b].fitness, b);
    });
    sorted.clear();
    for (int i : order)
      sorted.push_back(std::move(population[i]));
    population.swap(sorted);
  };
  auto tournament = [&]() -> const Individual & {
    const Individual &a = population[random.below(size)];
    const Individual &b = population[random.below(size)];
    return a.fitness <= b.fitness ? a : b;
  };
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(options.timeBudgetSeconds);
  int elite = std::max(1, size / 10);
  for (int generation = 0; generation < options.generations; ++generation) {
    sortByFitness();
    std::vector<Individual> next(population.begin(),
                                 population.begin() + elite);
    while (static_cast<int>(next.size()) < size) {
      const Individual &mother = tournament();
      const Individual &father = tournament();
      Individual child;
      // Two-point crossover keeps runs (stages) of the parents together.
      int a = static_cast<int>(random.below(numOps + 1));
      int b = static_cast<int>(random.below(numOps + 1));
      if (a > b)
        std::swap(a, b);
      child.genes = mother.genes;
      for (int l = a; l < b; ++l)
        child.genes[l] = father.genes[l];
      for (int l = 0; l < numOps; ++l)
        if (random.unit() < options.mutationRate)
          child.genes[l] = randomGene(l);
      // A segment mutation moves a whole run to one type: it merges or
      // splits stages in one step.
      if (random.unit() < 0.3) {
        int start = static_cast<int>(random.below(numOps));
        int length =
            1 + static_cast<int>(random.below(std::max(1, numOps / 4)));
        int type = static_cast<int>(random.below(numResources));
        for (int l = start; l < std::min(numOps, start + length); ++l)
          if (model.allowed(l, type))
            child.genes[l] = type;
      }
      evaluate(child);
      next.push_back(std::move(child));
    }
    population = std::move(next);
    if (options.timeBudgetSeconds > 0 &&
        std::chrono::steady_clock::now() > deadline)
      break;
  }
  const Individual &best =
      *std::min_element(population.begin(), population.end(),
                        [](const Individual &a, const Individual &b) {
                          return a.fitness < b.fitness;
                        });
  result.assignment = best.genes;
  result.evaluation = model.evaluate(best.genes);
  return result;
}
