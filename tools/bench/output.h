// What rank 0 prints and writes: the header, one nccl-tests style block per
// mode, and the same rows as JSON or CSV.
#ifndef INFINICCL_BENCH_OUTPUT_H_
#define INFINICCL_BENCH_OUTPUT_H_

#include <cstdio>
#include <string>
#include <vector>

#include "run.h"
#include "runner.h"

namespace bench {

void PrintHeader(std::FILE *out, const Env &env);
void PrintResults(std::FILE *out, const Env &env, const std::vector<Result> &rows);
void PrintModeList(std::FILE *out);

// False (and *error set) when the file cannot be written.
bool WriteJson(const std::string &path, const Env &env, const std::vector<Result> &rows,
               std::string *error);
bool WriteCsv(const std::string &path, const Env &env, const std::vector<Result> &rows,
              std::string *error);

}  // namespace bench

#endif  // INFINICCL_BENCH_OUTPUT_H_
