/* Minimal declarations of Cambricon's CNCL (cncl.h), for the stand-in of
 * tests/standin only: the calls InfiniCCL's adapter makes, with the
 * signatures, types and result codes of Cambricon's public cncl.h. Not
 * Cambricon's header; the real SDK's win when present. */
#ifndef ICCL_STANDIN_CNCL_H_
#define ICCL_STANDIN_CNCL_H_

#include <cnrt.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  CNCL_RET_SUCCESS = 0x0,
  CNCL_RET_ERR_INTERNAL = 0x01,
  CNCL_RET_ERR_UNSUPPORTED = 0x11,
  CNCL_RET_ERR_NULL_POINTER = 0x21,
  CNCL_RET_ERR_INIT = 0x51,
  CNCL_RET_ERR_NOT_INIT = 0x61,
  CNCL_RET_ERR_SYSTEM = 0x02,
  CNCL_RET_ERR_MLU_RUNTIME = 0x03,
  CNCL_RET_ASYNC_IN_PROGRESS = 0x06,
  CNCL_RET_ASYNC_ERROR = 0x16,
  CNCL_RET_ERR_ARGUMENTS = 0x07,
} cnclResult_t;

typedef enum {
  cnclInvalid = 0x0,
  cnclHalf = 0x10,
  cnclFloat16 = 0x10,
  cnclBfloat16 = 0x11,
  cnclFloat = 0x12,
  cnclFloat32 = 0x12,
  cnclInt8 = 0x20,
  cnclChar = 0x20,
  cnclInt16 = 0x21,
  cnclInt = 0x22,
  cnclInt32 = 0x22,
  cnclInt64 = 0x23,
  cnclUint8 = 0x30,
  cnclUint16 = 0x31,
  cnclUint32 = 0x32,
  cnclUint64 = 0x33,
} cnclDataType_t;

typedef enum { cnclSum = 0, cnclProd = 1, cnclMax = 2, cnclMin = 3 } cnclReduceOp_t;

typedef struct cnclComm *cnclComm_t;

#define CNCL_CLIQUE_ID_BYTES_SIZE 128
struct cnclCliqueId {
  char data[CNCL_CLIQUE_ID_BYTES_SIZE];
  uint64_t hash;
};
typedef struct cnclCliqueId *cnclCliqueId_t;

const char *cnclGetErrorStr(cnclResult_t result);
cnclResult_t cnclGetCliqueId(cnclCliqueId_t clique_id);
cnclResult_t cnclInitComms(cnclComm_t *comms, int num_comm, const int *dev_list,
                           const int *rank_list, int nrank, const cnclCliqueId_t clique_id);
cnclResult_t cnclFreeComm(cnclComm_t comm);
cnclResult_t cnclAbortComm(cnclComm_t comm);
cnclResult_t cnclGetCommAsyncError(cnclComm_t comm);
cnclResult_t cnclGroupStart(void);
cnclResult_t cnclGroupEnd(void);

cnclResult_t cnclAllReduce(const void *send_buffer, void *recv_buffer, size_t count,
                           cnclDataType_t data_type, cnclReduceOp_t reduce_op, cnclComm_t comm,
                           cnrtQueue_t queue);
cnclResult_t cnclBroadcast(const void *send_buffer, void *recv_buffer, size_t count,
                           cnclDataType_t data_type, int root, cnclComm_t comm,
                           cnrtQueue_t queue);
cnclResult_t cnclReduce(const void *send_buffer, void *recv_buffer, size_t count,
                        cnclDataType_t data_type, cnclReduceOp_t reduce_op, int root,
                        cnclComm_t comm, cnrtQueue_t queue);
cnclResult_t cnclAllGather(const void *send_buffer, void *recv_buffer, size_t count,
                           cnclDataType_t data_type, cnclComm_t comm, cnrtQueue_t queue);
cnclResult_t cnclReduceScatter(const void *send_buffer, void *recv_buffer, size_t count,
                               cnclDataType_t data_type, cnclReduceOp_t reduce_op,
                               cnclComm_t comm, cnrtQueue_t queue);
cnclResult_t cnclSend(void *send_buffer, size_t count, cnclDataType_t data_type, int peer,
                      cnclComm_t comm, cnrtQueue_t queue);
cnclResult_t cnclRecv(void *recv_buffer, size_t count, cnclDataType_t data_type, int peer,
                      cnclComm_t comm, cnrtQueue_t queue);

#ifdef __cplusplus
}
#endif

#endif /* ICCL_STANDIN_CNCL_H_ */
