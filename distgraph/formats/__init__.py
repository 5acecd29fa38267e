"""Graph formats: binary container, BVSS, k2-tree, reordering."""
