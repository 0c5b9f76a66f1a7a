//! weir session crate.
