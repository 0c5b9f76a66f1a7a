//! weir config crate.
