#include "mixcclrun_options.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace mixcclrun {

const char* const kProg = "mixcclrun";

namespace {

void usage(FILE* f) {
  std::fprintf(
      f,
      "usage: %s -np N [options] PROGRAM [ARGS...]\n"
      "  -np, -n, --np N        number of ranks to start on this host\n"
      "  --adaptors LIST        MIXCCL_ADAPTOR of each rank, in rank order: NAME or\n"
      "                         NAME:COUNT entries (host,gloo,host,gloo or host:2,gloo:2);\n"
      "                         -np may be left out, it is then the list's length\n"
      "  --host-list, -H LIST   comma-separated hosts (h or h:slots); every entry must be\n"
      "                         this host: mixcclrun only launches locally (use mpirun,\n"
      "                         srun or torchrun across hosts)\n"
      "  -x VAR=VAL | -x VAR    set VAR for every rank (VAR alone: require it is set)\n"
      "  --grace SECONDS        wait before SIGKILL after SIGTERM (default 3)\n"
      "  --timeout SECONDS      kill the job after this long, exit 124 (default: none)\n"
      "  --keep-going           a rank that fails is reported and the others go on (a job\n"
      "                         that survives lost ranks); exit 0 when some rank exited 0\n"
      "  --no-prefix            do not prefix output lines with [rank]\n"
      "  --bind-to auto|core|none  auto (default): each rank on its own core when there are\n"
      "                         at least as many cores as ranks, else unbound; core: always\n"
      "                         (an error if cores are too few); none: never\n"
      "  -h, --help             this help\n",
      kProg);
}

bool parseDouble(const std::string& s, double* out) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end == s.c_str() || *end != '\0' || v < 0) return false;
  *out = v;
  return true;
}

bool parseCount(const std::string& s, long lo, long hi, long* out) {
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || *end != '\0' || n < lo || n > hi) return false;
  *out = n;
  return true;
}

std::vector<std::string> splitCommas(const std::string& v) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    size_t len = comma == std::string::npos ? std::string::npos : comma - start;
    items.push_back(v.substr(start, len));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

}  // namespace

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "%s: %s\n", kProg, msg.c_str());
  std::exit(2);
}

std::string expandAdaptors(const std::string& spec, std::vector<std::string>* out) {
  out->clear();
  for (const std::string& item : splitCommas(spec)) {
    size_t colon = item.find(':');
    std::string name = item.substr(0, colon);
    long count = 1;
    if (colon != std::string::npos && !parseCount(item.substr(colon + 1), 1, 4096, &count))
      return "invalid count in --adaptors entry '" + item + "' (NAME or NAME:COUNT)";
    // The name becomes a plugin file name (libmixccl-adaptor-NAME.so): no path characters.
    bool valid = !name.empty();
    for (char c : name) {
      valid &= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
    }
    if (!valid) return "invalid adaptor name '" + name + "' in --adaptors '" + spec + "'";
    for (long k = 0; k < count; ++k) out->push_back(name);
  }
  if (out->size() > 4096) return "--adaptors names more than 4096 ranks";
  return "";
}

Options parseArgs(int argc, char** argv) {
  Options o;
  int i = 1;
  auto need = [&](const std::string& opt) -> std::string {
    if (i + 1 >= argc) die("option " + opt + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    if (a == "-np" || a == "-n" || a == "--np" || a == "-c") {
      std::string v = need(a);
      long n = 0;
      if (!parseCount(v, 1, 4096, &n)) die("invalid rank count '" + v + "'");
      o.np = static_cast<int>(n);
    } else if (a == "--adaptors") {
      std::string why = expandAdaptors(need(a), &o.adaptors);
      if (!why.empty()) die(why);
    } else if (a == "--host-list" || a == "-H" || a == "--host" || a == "--hosts") {
      for (const std::string& h : splitCommas(need(a)))
        if (!h.empty()) o.hosts.push_back(h);
      if (o.hosts.empty()) die("empty host list");
    } else if (a == "-x") {
      std::string v = need(a);
      size_t eq = v.find('=');
      if (eq == 0 || v.empty()) die("invalid -x '" + v + "'");
      if (eq == std::string::npos) {
        const char* cur = std::getenv(v.c_str());
        if (cur == nullptr) die("-x " + v + ": variable is not set in this environment");
        o.exports.emplace_back(v, cur);
      } else {
        o.exports.emplace_back(v.substr(0, eq), v.substr(eq + 1));
      }
    } else if (a == "--grace") {
      if (!parseDouble(need(a), &o.graceS)) die("invalid --grace value");
    } else if (a == "--timeout") {
      if (!parseDouble(need(a), &o.timeoutS)) die("invalid --timeout value");
    } else if (a == "--bind-to") {
      std::string v = need(a);
      if (!parseBindMode(v, &o.bind)) die("invalid --bind-to '" + v + "' (auto, core or none)");
    } else if (a == "--keep-going") {
      o.keepGoing = true;
    } else if (a == "--no-prefix") {
      o.prefix = false;
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      std::exit(0);
    } else {
      die("unknown option '" + a + "' (see --help)");
    }
  }
  for (; i < argc; ++i) o.command.push_back(argv[i]);
  if (o.np == 0 && !o.adaptors.empty()) o.np = static_cast<int>(o.adaptors.size());
  if (o.np == 0) die("missing -np N (see --help)");
  if (!o.adaptors.empty() && static_cast<int>(o.adaptors.size()) != o.np)
    die("--adaptors names " + std::to_string(o.adaptors.size()) + " rank(s) but -np is " +
        std::to_string(o.np));
  for (const auto& kv : o.exports) {
    // Two sources for one variable would leave the user guessing which one a rank got.
    if (kv.first == "MIXCCL_ADAPTOR" && !o.adaptors.empty())
      die("-x MIXCCL_ADAPTOR and --adaptors both set the adaptor; use one");
  }
  if (o.command.empty()) die("missing PROGRAM (see --help)");
  return o;
}

}  // namespace mixcclrun
