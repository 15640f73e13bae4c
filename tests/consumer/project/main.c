/* A C program that uses the installed InfiniCCL: AllReduce of rank-dependent
 * integers, checked exactly; and the emulated device's header, installed
 * beside it (a kernel of 0 us on the default stream: done, or refused
 * because INFINICCL_DEVICE=sim is not set). */
#include <infiniccl/infiniccl.h>
#include <infiniccl/infiniccl_sim.h>
#include <stdio.h>

int main(int argc, char **argv) {
  int rank = 0, size = 0, i, wrong = 0;
  int send[16], recv[16];
  infinicclComm_t comm = NULL;
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 1;
  infinicclGetRank(&rank);
  infinicclGetSize(&size);
  if (infinicclCommInitAll(&comm, 0, NULL) != infinicclSuccess) return 1;
  {
    const infinicclResult_t r = infinicclSimKernel(NULL, 0);
    if (r != infinicclSuccess && r != infinicclInvalidUsage) return 1;
  }
  for (i = 0; i < 16; ++i) send[i] = rank + i;
  if (infinicclAllReduce(send, recv, 16, infinicclInt32, infinicclSum, comm, NULL) !=
      infinicclSuccess) {
    fprintf(stderr, "AllReduce failed: %s\n", infinicclGetLastError(comm));
    return 1;
  }
  for (i = 0; i < 16; ++i) {
    if (recv[i] != size * (size - 1) / 2 + size * i) ++wrong;
  }
  printf("consumer rank %d/%d: %s\n", rank, size, wrong ? "WRONG" : "OK");
  infinicclCommDestroy(comm);
  infinicclFinalize();
  return wrong ? 1 : 0;
}
