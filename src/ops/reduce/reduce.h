/* What the rest of the library (the reduction's tuning target) needs to know about reduce.c. */
#ifndef KJ_OPS_REDUCE_H
#define KJ_OPS_REDUCE_H

/* Facts about a reduction entry that kj_reduce runs: 0 when `name` is one (NULL is the default
 * entry), with whether it uses COARSE_FACTOR and whether it reduces in a single block (at most
 * 2 x BLOCK_SIZE elements); -1 for other names (the helpers reduce_init and reduce_load included). */
int kj__reduce_entry(const char *name, int *coarsens, int *single_block);

/* The entries kj_reduce runs, for messages: "reduce_fast (the default), reduce_simple, ..." */
extern const char kj__reduce_entry_list[];

#endif
