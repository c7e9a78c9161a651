// libFuzzer's driver entry point (compiler-rt FuzzerInterface.h), linked by -sanitize=fuzzer.
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));
