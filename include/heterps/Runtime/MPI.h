//===- MPI.h - Jobs of several processes under mpirun -----------*- C++ -*-===//
//
// heterps-run under `mpirun -np N` is one process of a job: it finds out
// from the launcher's environment, initializes MPI, and gets the job's
// processes as a Communicator. This header does not include MPI.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_MPI_H
#define HETERPS_RUNTIME_MPI_H

#include "heterps/Runtime/Communicator.h"

#include <memory>

namespace heterps::runtime {

/// True when a launcher started this process as one of a job of several:
/// mpirun's environment (Open MPI's OMPI_COMM_WORLD_SIZE, or PMI_SIZE /
/// PMIX_SIZE of other launchers) says more than one.
bool startedAsMPIJob();

/// Initializes MPI and returns the job's processes (MPI_COMM_WORLD). MPI is
/// finalized when the returned communicator is destroyed; communicators
/// split from it must be destroyed first. Throws when MPI cannot start.
std::unique_ptr<Communicator> initMPI(int *argc, char ***argv);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_MPI_H
