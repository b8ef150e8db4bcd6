/* An NCCL program linked to NVIDIA's libnccl.so.2 (the toolkit's), to be run with the shim in
 * LD_PRELOAD: every NCCL call must reach the shim and NVIDIA's library must not even be loaded.
 * usage: preload_probe shim | real      (what the program must find itself bound to)
 * "real" is the control without LD_PRELOAD: the same binary then reaches NVIDIA's NCCL. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

static int shimObjects, ncclObjects;

static int visit(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size, (void)data;
  const char* slash = strrchr(info->dlpi_name, '/');
  const char* base = slash ? slash + 1 : info->dlpi_name;
  if (strncmp(base, "libnccl.so", 10) == 0) ++ncclObjects;
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2 || (strcmp(argv[1], "shim") && strcmp(argv[1], "real"))) {
    fprintf(stderr, "usage: %s shim|real\n", argv[0]);
    return 2;
  }
  int wantShim = strcmp(argv[1], "shim") == 0;
  dl_iterate_phdr(visit, NULL);
  shimObjects = dlsym(RTLD_DEFAULT, "mixcclNcclShimMarker") != NULL;
  int version = 0;
  ncclResult_t r = ncclGetVersion(&version);
  printf("libnccl objects loaded: %d, shim marker: %s, ncclGetVersion: %d (%d)\n", ncclObjects,
         shimObjects ? "yes" : "no", version, (int)r);
  if (!wantShim) {
    int ok = !shimObjects && ncclObjects == 1 && version != 23007;
    printf("%s\n", ok ? "bound to NVIDIA's NCCL" : "FAILED: not bound to NVIDIA's NCCL");
    return !ok;
  }
  /* One libnccl.so.2 (the preloaded shim) and the shim's answers. */
  int ok = shimObjects && ncclObjects == 1 && version == 23007;
  ncclComm_t comms[2];
  float a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
  ok = ok && ncclCommInitAll(comms, 2, NULL) == ncclSuccess;
  if (ok) {
    ok = ncclGroupStart() == ncclSuccess &&
         ncclAllReduce(a, a, 3, ncclFloat, ncclSum, comms[0], NULL) == ncclSuccess &&
         ncclAllReduce(b, b, 3, ncclFloat, ncclSum, comms[1], NULL) == ncclSuccess &&
         ncclGroupEnd() == ncclSuccess && a[2] == 33 && b[0] == 11;
    ncclCommDestroy(comms[0]);
    ncclCommDestroy(comms[1]);
  }
  printf("%s\n", ok ? "bound to the shim" : "FAILED: not bound to the shim");
  if (!ok) fprintf(stderr, "last error: %s\n", ncclGetLastError(NULL));
  return !ok;
}
