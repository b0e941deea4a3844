/*
 * bench/harness_emit.c: prints harness rows for known sample sets, so that a test
 * (//scripts:harness_json_test) can check the harness's statistics and its JSON lines
 * against the validator scripts/bench uses. Not a benchmark: nothing here is timed.
 *
 *   harness_emit [--json]
 * Rows (bench "harness_emit"): "ramp_1000" (samples 1..1000), "constant" (10,000 x 42.5),
 * "single" (one sample, 7), "heavy_tail" (9,999 x 100 and one 1e9), the last with extra keys.
 */
#include <stdlib.h>

#include "bench/harness.h"

static void emit(const vmtb_options_t *opts, const char *variant, double *s, size_t n,
                 const char *extra) {
  vmtb_result_t r = {.bench = "harness_emit", .variant = variant, .unit = "ns"};
  vmtb_stats(s, n, &r);
  vmtb_report(opts, &r, extra);
}

int main(int argc, char **argv) {
  vmtb_options_t opts;
  vmtb_parse_args(argc, argv, &opts, NULL);
  vmtb_table_header(&opts, "harness_emit: known sample sets");
  enum { N = 10000 };
  double *s = malloc(N * sizeof(double));
  if (s == NULL) return 1;
  /* Reversed, so that vmtb_stats has to sort. */
  for (size_t i = 0; i < 1000; i++) s[i] = (double)(1000 - i);
  emit(&opts, "ramp_1000", s, 1000, NULL);
  for (size_t i = 0; i < N; i++) s[i] = 42.5;
  emit(&opts, "constant", s, N, NULL);
  s[0] = 7;
  emit(&opts, "single", s, 1, NULL);
  for (size_t i = 0; i < N; i++) s[i] = 100;
  s[N / 2] = 1e9;
  emit(&opts, "heavy_tail", s, N, "\"threads\":1000,\"note\":\"x\"");
  free(s);
  return 0;
}
