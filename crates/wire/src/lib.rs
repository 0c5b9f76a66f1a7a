//! weir wire crate.
