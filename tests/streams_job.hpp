// tests/streams_job.hpp — the job the exec/port-forward tests reach: an MPIJob with a GPU worker
// and a TensorBoard (tests/cli/streams_test.cpp, tests/cluster/streams_test.cpp).
#pragma once

#include "gpupool/submit_options.hpp"

namespace gpupool::testing {

inline SubmitOptions streams_job() {
  SubmitOptions o;
  o.kind = "mpi";
  o.name = "train";
  o.gpus = 1;
  o.workers = 1;
  o.image = "registry.example.com/horovod:latest";
  o.tensorboard = true;
  o.command = "python train.py";
  return o;
}

}  // namespace gpupool::testing
