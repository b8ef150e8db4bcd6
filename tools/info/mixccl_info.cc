// mixccl-info: what mixccl finds on this machine, the first thing to send with a problem
// report (docs/troubleshooting.md). Joins no job and needs no torch.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "info_facts.h"
#include "info_probes.h"

namespace {

void usage(FILE* f) {
  fprintf(f,
          "usage: mixccl-info [--json] [--torch-version V] [--torch-built-for V]\n"
          "  Prints the versions of mixccl and the libraries it uses, the device adaptors\n"
          "  (each tried with a one-rank communicator) and why the unusable ones are, the\n"
          "  transports, RDMA ports, GPUs, and every MIXCCL_* setting with its source.\n"
          "  --json               JSON (schema mixccl-info/1) instead of text\n"
          "  --torch-version V    the installed torch to report (\"none\": not installed);\n"
          "  --torch-built-for V  the torch the backend extension was built for;\n"
          "                       the pip-installed command passes both\n");
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  mixccl_info::PythonSide python;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--json") {
      json = true;
    } else if ((a == "--torch-version" || a == "--torch-built-for") && i + 1 < argc) {
      (a == "--torch-version" ? python.torchVersion : python.torchBuiltFor) = argv[++i];
    } else {
      fprintf(stderr, "mixccl-info: %s '%s'\n",
              a.rfind("--torch", 0) == 0 ? "missing value after" : "unknown option", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  mixccl_info::InfoFacts facts;
  facts.settings = mixccl_info::probeSettings();  // before anything below reads the environment
  // The probes' expected failures (an adaptor that is not usable) are reported below, not
  // logged as warnings; MIXCCL_DEBUG, when set, is left as the user chose.
  setenv("MIXCCL_DEBUG", "NONE", 0);
  facts.versions = mixccl_info::probeVersions(python, &facts.adaptorAbi);
  facts.pluginSearchPath = mixccl_info::pluginSearchPath();
  facts.adaptors = mixccl_info::probeAdaptors(facts.pluginSearchPath, &facts.defaultAdaptor);
  mixccl_info::probeTransports(&facts);
  std::string out = json ? mixccl_info::renderJson(facts) : mixccl_info::renderText(facts);
  fputs(out.c_str(), stdout);
  return 0;
}
