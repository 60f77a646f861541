/* dexagents serve in a build without WITH_HTTP=1: the web app needs the
 * library's agent routes and libmicrohttpd, so it says so (exit 1). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int cmd_serve(int argc, char **argv) {
  for (int i = 2; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      cli_print_usage("serve", stdout);
      return CLI_OK;
    }
  fprintf(stderr, "dexagents serve: not in this build (built without WITH_HTTP=1)\n");
  return CLI_FAIL;
}
