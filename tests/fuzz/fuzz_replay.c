/* Runs the fuzz target without libFuzzer: each file named on the command
 * line is one input (a crash reproducer or corpus entry); with none,
 * `--random N SEED` feeds N deterministic pseudo-random inputs. Lets every
 * compiler (gcc + ASan in CI) run the same driver. */
#include <infiniccl/infiniccl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern long fuzz_api_ok, fuzz_api_rejected;

static uint64_t g_state;
static uint64_t Next(void) { /* splitmix64 */
  uint64_t z = (g_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  if (argc >= 2 && strcmp(argv[1], "--random") == 0) {
    const long n = argc > 2 ? atol(argv[2]) : 10000;
    g_state = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    uint8_t buf[512];
    for (long i = 0; i < n; ++i) {
      const size_t len = Next() % sizeof buf;
      for (size_t j = 0; j < len; ++j) buf[j] = (uint8_t)Next();
      LLVMFuzzerTestOneInput(buf, len);
    }
    printf("fuzz_api_replay: %ld random inputs, %ld calls succeeded, %ld refused, no finding\n",
           n, fuzz_api_ok, fuzz_api_rejected);
  } else {
    for (int i = 1; i < argc; ++i) {
      FILE *f = fopen(argv[i], "rb");
      if (f == NULL) {
        perror(argv[i]);
        return 2;
      }
      static uint8_t buf[1 << 20];
      const size_t len = fread(buf, 1, sizeof buf, f);
      fclose(f);
      LLVMFuzzerTestOneInput(buf, len);
    }
    printf("fuzz_api_replay: %d input file(s), no finding\n", argc - 1);
  }
  return infinicclFinalize() == infinicclSuccess ? 0 : 1;
}
