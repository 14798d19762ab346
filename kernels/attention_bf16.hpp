#pragma once
// Prefill tiles of paged attention multiplied in bf16 with AVX-512 BF16's vdpbf16ps, internal to
// kernels/ (paged_attention.cpp walks the blocks and calls these). Each vdpbf16ps is 32
// multiply-adds where an f32 FMA is 16 (8 in AVX2's registers), and the pool's bf16 K and V are
// multiplied as stored, paired, instead of widened to f32. The price is two roundings to bf16
// (nearest even): the scaled queries, once per item, and the softmax weights, per tile; sums,
// maxima and the running softmax stay f32. A bf16 model's activations are rounded so before every
// matmul already.
//
// Stateless, on raw pointers: no pool, no threads. Only where usable(head_dim).

#include <cstddef>
#include <cstdint>

namespace hearth::ops::attention_bf16 {

//! Keys a packed tile holds at most, and a multiple of 16 (one vector of scores).
inline constexpr uint32_t max_tile_keys = 128;

//! Whether this CPU has vdpbf16ps (dpbf16_available) and head_dim suits it (a multiple of 16).
bool usable(uint32_t head_dim);

//! q (nq, hd) f32, rows ldq apart, rounded to bf16 into qb (nq, hd).
void round_queries(const float* q, size_t ldq, uint32_t nq, uint32_t hd, uint16_t* qb);

//! One head's K and V of n keys (<= max_tile_keys), from the pool's tiles of consecutive blocks:
//! k[t], v[t] the (block_size, hd) bf16 tiles of block t, packed for fold: kp (hd / 2, ldk) the
//! keys' element pairs, a key to a column (ldk = n rounded up to 16, the rest zero); vp (n / 2
//! rounded up, hd) pairs of consecutive keys' elements (an odd last key paired with zero).
void pack_tile(const uint16_t* const* k, const uint16_t* const* v, uint32_t block_size, uint32_t n,
               uint32_t hd, uint32_t* kp, uint32_t* vp);

//! The scratch a fold needs: scores (4, ldk) f32 and weights (4, ldk) bf16.
struct fold_scratch {
  float* s;
  uint16_t* p;
};

//! Folds a packed tile of n keys into queries [0, nq) of qb (nq, hd): query i sees keys
//! [from[i], seen[i]) of the tile (none when from >= seen: its state stays), its scores
//! soft-capped (c tanh(s / c)) when softcap > 0. Its running max m[i], sum l[i] and acc (nq, hd)
//! row i are updated as in attention_tile.hpp's folds.
void fold(const uint16_t* qb, uint32_t nq, const uint32_t* kp, const uint32_t* vp, uint32_t n, uint32_t hd,
          const uint32_t* from, const uint32_t* seen, float softcap, float* m, float* l, float* acc,
          fold_scratch scratch);

//! Chunks of 16 keys a decode fold reads at most.
inline constexpr uint32_t max_fold_chunks = max_tile_keys / 16;

//! Where fold_in_place finds its keys: key j's K row at k[j / 16] + (j % 16) hd, its V row at
//! v[j / 16] + (j % 16) hd; each chunk's rows lie in one tile of the pool (the last may be short).
struct key_chunks {
  const uint16_t* k[max_fold_chunks];
  const uint16_t* v[max_fold_chunks];
};

//! Where fold_in_place's queries find their tiles, and what to ask for meanwhile. stride 0: they
//! share the chunks (one kv head's). Else query i's rows are stride elements after query i - 1's:
//! a decode row's consecutive kv heads of one query each, folded together so that their chains
//! of reductions overlap (a head at a time left each fold waiting on its own). Either way it asks
//! for the ahead_lines cache lines from each of ahead[0, ahead_runs) into L1 (the tiles the next
//! fold reads), a few at each pair of keys (asked all at once, they stalled the fold).
struct head_tiles {
  size_t stride = 0;
  const char* ahead[2 * max_fold_chunks] = {};
  uint32_t ahead_runs = 0;
  uint32_t ahead_lines = 0;
};

//! Folds keys [from, n) (n <= max_tile_keys) of bf16 K and V rows read in place from the pool
//! (keys) into queries [0, nq) of qb (nq, hd), each seeing them all: decode rows, where a tile
//! meets too few queries to pay for packing it. acc (nq, hd) in order; the same roundings as fold.
void fold_in_place(const uint16_t* qb, uint32_t nq, const key_chunks& keys, head_tiles ht, uint32_t n,
                   uint32_t from, uint32_t hd, float softcap, float* m, float* l, float* acc);

}  // namespace hearth::ops::attention_bf16
