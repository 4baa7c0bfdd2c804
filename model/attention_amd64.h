// The scores' fold, shared by every score kernel of attention_amd64.s and
// attention_multi_amd64.s: a row's dot is one 8-lane FMA accumulator
// l0..l7 over its columns in order, folded as
//
//	((l0+l1) + (l2+l3)) + ((l4+l5) + (l6+l7))
//
// whichever kernel and however many rows or queries at a time, so a
// score's bits never depend on how a run of rows was split (multi-query
// prefill against one query alone: batch invariance).

// FOLD4ROWS(a, b, c, d, xa, xt): the folds of the accumulators of four
// rows into xa (row order; a, c clobbered; xt a temporary).
#define FOLD4ROWS(a, b, c, d, xa, xt) \
	VHADDPS      b, a, a; \
	VHADDPS      d, c, c; \
	VHADDPS      c, a, a; \
	VEXTRACTF128 $1, a, xt; \
	VADDPS       xt, xa, xa

// FOLD1ROW(a, xa, xt): the fold of one row's accumulator into xa's low
// lane.
#define FOLD1ROW(a, xa, xt) \
	VHADDPS      a, a, a; \
	VHADDPS      a, a, a; \
	VEXTRACTF128 $1, a, xt; \
	VADDSS       xt, xa, xa
