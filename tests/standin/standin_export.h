// The stand-in libraries are built with hidden visibility; only the API they stand in for (and
// the bridge) is exported.
#pragma once
#define STANDIN_EXPORT __attribute__((visibility("default")))
