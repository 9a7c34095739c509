#include "cli.h"
int cmd_info(int argc, char **argv) { (void)argc; (void)argv; return cli_error(EXIT_FAILURE_GENERIC, "not built yet"); }
