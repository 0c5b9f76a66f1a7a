//! weir backend crate.
