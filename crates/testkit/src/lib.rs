//! weir testkit crate.
