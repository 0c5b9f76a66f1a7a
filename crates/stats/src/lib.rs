//! Counters recorded on the data path and the typed snapshots that the admin's `stats_*`
//! tables (and later Prometheus) are filled from. No I/O, no SQLite.
#![forbid(unsafe_code)]
