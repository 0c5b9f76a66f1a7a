//! weir pool crate.
