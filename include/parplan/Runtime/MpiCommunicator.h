//===- MpiCommunicator.h - collectives over MPI -----------------*- C++ -*-===//
//
// The Communicator of parplan-run under mpirun: world rank i runs device i.
// Only parplan-run links this (library ParplanMpi), so nothing else needs
// MPI; the header keeps mpi.h out for the same reason.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_MPICOMMUNICATOR_H
#define PARPLAN_RUNTIME_MPICOMMUNICATOR_H

#include "parplan/Runtime/Communicator.h"

#include <memory>

namespace parplan::runtime {

/// A communicator over MPI_COMM_WORLD; MPI must be initialized and stay so
/// while it lives.
std::unique_ptr<Transport> createMpiCommunicator();

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_MPICOMMUNICATOR_H
