"""One file's road (read, parse, analyse, rules, fixes) and the runs over many: batches,
workers, the cache, discovery and configuration."""
