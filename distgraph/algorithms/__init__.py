"""One module per algorithm, one public function each (same signature for any backend
and any number of ranks)."""
