// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Outside code using the installed package's kcnn::parallel (built where MPI is found):
// one rank (MPI's singleton start, no launcher), the mean of a View over that one rank
// (itself) and a broadcast; prints "parallel: ok".
#include <Kokkos_Core.hpp>
#include <kcnn/parallel.hpp>

#include <cstdio>

int main(int argc, char* argv[]) {
  MPI_Init(&argc, &argv);
  int bad = 0;
  {
    Kokkos::ScopeGuard guard(argc, argv);
    kcnn::parallel::Communicator comm;
    Kokkos::View<float*> g("g", 10);
    Kokkos::deep_copy(g, 2.5f);
    comm.allreduce_mean(Kokkos::DefaultExecutionSpace(), g);
    comm.broadcast(Kokkos::DefaultExecutionSpace(), g);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), g);
    for (int i = 0; i < 10; ++i)
      bad += h(i) != 2.5f;
    std::printf("parallel: %s (%d rank, local rank %d, device %d)\n", bad ? "WRONG" : "ok",
                comm.size(), comm.local_rank(), comm.device_id());
  }
  MPI_Finalize();
  return bad ? 1 : 0;
}
