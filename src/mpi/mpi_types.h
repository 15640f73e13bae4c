// The MPI datatype and MPI_Op for every public dtype and op, built once when
// the library starts and freed when it finalises, so a collective never
// creates or frees an MPI object.
//
// Float16 and BFloat16 travel as their own 2-byte MPI types (never MPI_BYTE)
// and reduce through user-defined ops that compute in float and round to
// nearest even. Avg maps to the Sum op; the backend divides afterwards.
// Band, Bor and Bxor map to MPI_BAND, MPI_BOR and MPI_BXOR (integer types
// only; validation refuses the others).
// Unsigned Max/Min are user-defined too: several MPI releases compare
// unsigned integers as signed in their built-in ops.
#pragma once

#include <mpi.h>

#include <infiniccl/infiniccl.h>

#include "core/status.h"

namespace infiniccl {

class MpiTypeTable {
 public:
  static Status Create();   // after MPI is initialised
  static void Destroy();    // before MPI is finalised
  static bool Ready();

  static MPI_Datatype Type(infinicclDataType_t dtype);
  static MPI_Op Op(infinicclDataType_t dtype, infinicclRedOp_t op);
};

// The user-defined reduction kernels, exposed for unit tests:
// inout[i] = op(in[i], inout[i]) for n elements of a 16-bit float type.
void ReduceHalf(infinicclRedOp_t op, const void *in, void *inout, size_t n);
void ReduceBFloat16(infinicclRedOp_t op, const void *in, void *inout, size_t n);

}  // namespace infiniccl
