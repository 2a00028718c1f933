/* blocks.c: block sizes of the 2D-blocked engines, rows per thread chunk, and the equal-blocks step (blocks.h). */
#include "engines/common/blocks.h"

size_t tsb_rows_per_chunk(uint64_t steps_per_row, double ns_per_step) {
    double ns = (double)steps_per_row * ns_per_step + 1.0;
    double rows = 1e6 / ns;
    return rows < 1 ? 1 : rows > 1e6 ? 1000000 : (size_t)rows;
}

uint32_t tsb_equal_blocks(uint32_t n, uint32_t tau) {
    uint32_t n_blocks = (n + tau - 1) / tau;
    return (n + n_blocks - 1) / n_blocks;
}

uint32_t tsb_given_tau(const tse_config *cfg, uint32_t n) { return cfg->tau == TS_BLOCK_ALL ? n : cfg->tau; }

void tsb_block_sizes(const ts_model *m, const tse_config *cfg, const tsb_sizing *z, uint32_t *tau_out,
                     uint32_t *delta_out) {
    uint32_t n_trees = m->n_trees ? m->n_trees : 1;
    uint32_t lanes = z->lanes ? z->lanes : 1;
    size_t doc_bytes = z->doc_bytes ? z->doc_bytes : 1;
    uint32_t tau = tsb_given_tau(cfg, n_trees);
    if (!tau) {
        double t = (double)z->tree_budget / ((double)z->tree_bytes / n_trees + 1.0);
        tau = t < 1 ? 1 : t > n_trees ? n_trees : (uint32_t)t;
        tau = tsb_equal_blocks(n_trees, tau);
    }
    uint32_t delta;
    if (cfg->delta)
        delta = cfg->delta;
    else {
        double d = (double)z->doc_budget / (double)doc_bytes;
        delta = d < 1 ? 1 : d > TSB_MAX_DELTA ? TSB_MAX_DELTA : (uint32_t)d;
    }
    if (z->max_block_bytes && (uint64_t)delta * doc_bytes > z->max_block_bytes) {
        size_t d = z->max_block_bytes / doc_bytes;
        delta = d < lanes ? lanes : (uint32_t)d;
    }
    if (delta > TSB_MAX_DELTA) delta = TSB_MAX_DELTA;
    delta = (delta + lanes - 1) / lanes * lanes;
    *tau_out = tau > n_trees ? n_trees : tau;
    *delta_out = delta;
}
