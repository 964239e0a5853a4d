#include "rank_setup.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char* keep(tt_rank_setup* setup, const char* format, va_list args) {
  char* slot = setup->text[setup->used++];
  vsnprintf(slot, sizeof setup->text[0], format, args);
  return slot;
}

void tt_setup_init(tt_rank_setup* setup, const char* program) {
  memset(setup, 0, sizeof *setup);
  tt_setup_arg(setup, "%s", program);
}

void tt_setup_arg(tt_rank_setup* setup, const char* format, ...) {
  int n = 0;
  while (setup->argv[n]) ++n;
  va_list args;
  va_start(args, format);
  setup->argv[n] = keep(setup, format, args);
  va_end(args);
}

void tt_setup_env(tt_rank_setup* setup, const char* format, ...) {
  int n = 0;
  while (setup->env[n]) ++n;
  va_list args;
  va_start(args, format);
  setup->env[n] = keep(setup, format, args);
  va_end(args);
}
