// Environment values: case-insensitive choices and booleans, and a warning naming the variable,
// the value, what was expected and what is used for everything that does not parse
// (docs/environment.md).
#include <gtest/gtest.h>

#include "base/env_parse.h"

namespace mixccl {
namespace {

TEST(EnvParse, ChoiceIgnoresCaseAndReturnsTheCanonicalSpelling) {
  std::string w;
  EXPECT_EQ(parseEnvChoice("MIXCCL_DEBUG", "info", {"NONE", "WARN", "INFO", "TRACE"}, "WARN", &w),
            "INFO");
  EXPECT_EQ(w, "");
  EXPECT_EQ(parseEnvChoice("MIXCCL_ALGO", "RinG", {"auto", "ring", "rd", "rh"}, "auto", &w),
            "ring");
  EXPECT_EQ(w, "");
}

TEST(EnvParse, UnknownChoiceWarnsAndUsesTheDefault) {
  std::string w;
  EXPECT_EQ(parseEnvChoice("MIXCCL_ALGO", "foo", {"auto", "ring", "rd", "rh"}, "auto", &w), "auto");
  EXPECT_EQ(w, "ignoring MIXCCL_ALGO=foo (expected one of auto, ring, rd, rh, in any case); "
               "using auto");
}

TEST(EnvParse, UnsetOrEmptyIsTheDefaultWithoutWarning) {
  std::string w = "stale";
  EXPECT_EQ(parseEnvChoice("MIXCCL_ALGO", nullptr, {"auto", "ring"}, "auto", &w), "auto");
  EXPECT_EQ(w, "");
  EXPECT_EQ(parseEnvInt("MIXCCL_TIMEOUT_S", "", 300, 1, 100000, &w), 300);
  EXPECT_EQ(w, "");
  EXPECT_FALSE(parseEnvBool("MIXCCL_SHM_CMA", nullptr, false, &w));
  EXPECT_EQ(w, "");
}

TEST(EnvParse, IntegersAreDecimalAndBounded) {
  std::string w;
  EXPECT_EQ(parseEnvInt("MIXCCL_TIMEOUT_S", "010", 300, 1, 100000, &w), 10);  // not octal 8
  EXPECT_EQ(w, "");
  EXPECT_EQ(parseEnvInt("MIXCCL_TIMEOUT_S", "abc", 300, 1, 100000, &w), 300);
  EXPECT_EQ(w, "ignoring MIXCCL_TIMEOUT_S=abc (expected an integer in [1, 100000]); using 300");
  EXPECT_EQ(parseEnvInt("MIXCCL_NSOCKS_PERPEER", "17", 0, 0, 16, &w), 0);
  EXPECT_EQ(w, "ignoring MIXCCL_NSOCKS_PERPEER=17 (expected an integer in [0, 16]); using 0");
}

TEST(EnvParse, BooleansAcceptCommonSpellings) {
  std::string w;
  for (const char* t : {"1", "true", "TRUE", "Yes", "on"}) {
    EXPECT_TRUE(parseEnvBool("MIXCCL_SHM_DISABLE", t, false, &w)) << t;
    EXPECT_EQ(w, "");
  }
  for (const char* f : {"0", "false", "No", "OFF"}) {
    EXPECT_FALSE(parseEnvBool("MIXCCL_SHM_DISABLE", f, true, &w)) << f;
    EXPECT_EQ(w, "");
  }
  EXPECT_FALSE(parseEnvBool("MIXCCL_SHM_DISABLE", "2", false, &w));
  EXPECT_EQ(w, "ignoring MIXCCL_SHM_DISABLE=2 (expected 0 or 1 (or true/false, yes/no, on/off)); "
               "using 0");
}

}  // namespace
}  // namespace mixccl
