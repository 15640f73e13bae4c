/* The calls of test_errors.cpp, made from C with int dtype/op/result values.
 * C converts any int to an enum type; C++ makes forming an enum value
 * outside the enumeration's range undefined (UBSan reports it), and the API
 * is a C API that must reject such values, so the test passes them from C. */
#include <infiniccl/infiniccl.h>

#define DT(x) ((infinicclDataType_t)(x))
#define OP(x) ((infinicclRedOp_t)(x))

infinicclResult_t itest_AllReduce(const void *s, void *r, size_t n, int dt, int op,
                                  infinicclComm_t c) {
  return infinicclAllReduce(s, r, n, DT(dt), OP(op), c, NULL);
}
infinicclResult_t itest_Broadcast(const void *s, void *r, size_t n, int dt, int root,
                                  infinicclComm_t c) {
  return infinicclBroadcast(s, r, n, DT(dt), root, c, NULL);
}
infinicclResult_t itest_Bcast(void *b, size_t n, int dt, int root, infinicclComm_t c) {
  return infinicclBcast(b, n, DT(dt), root, c, NULL);
}
infinicclResult_t itest_Reduce(const void *s, void *r, size_t n, int dt, int op, int root,
                               infinicclComm_t c) {
  return infinicclReduce(s, r, n, DT(dt), OP(op), root, c, NULL);
}
infinicclResult_t itest_AllGather(const void *s, void *r, size_t n, int dt, infinicclComm_t c) {
  return infinicclAllGather(s, r, n, DT(dt), c, NULL);
}
infinicclResult_t itest_Gather(const void *s, void *r, size_t n, int dt, int root,
                               infinicclComm_t c) {
  return infinicclGather(s, r, n, DT(dt), root, c, NULL);
}
infinicclResult_t itest_Scatter(const void *s, void *r, size_t n, int dt, int root,
                                infinicclComm_t c) {
  return infinicclScatter(s, r, n, DT(dt), root, c, NULL);
}
infinicclResult_t itest_ReduceScatter(const void *s, void *r, size_t n, int dt, int op,
                                      infinicclComm_t c) {
  return infinicclReduceScatter(s, r, n, DT(dt), OP(op), c, NULL);
}
infinicclResult_t itest_AllToAll(const void *s, void *r, size_t n, int dt, infinicclComm_t c) {
  return infinicclAllToAll(s, r, n, DT(dt), c, NULL);
}
infinicclResult_t itest_Send(const void *s, size_t n, int dt, int peer, infinicclComm_t c) {
  return infinicclSend(s, n, DT(dt), peer, c, NULL);
}
infinicclResult_t itest_Recv(void *r, size_t n, int dt, int peer, infinicclComm_t c) {
  return infinicclRecv(r, n, DT(dt), peer, c, NULL);
}
const char *itest_GetErrorString(int result) {
  return infinicclGetErrorString((infinicclResult_t)result);
}
