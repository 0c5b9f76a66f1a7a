//! The shortest path through weir: connect, query, read back.
#![allow(clippy::unwrap_used)]
mod common;
use mysql_async::prelude::*;

#[tokio::test]
async fn select_through_weir() {
    let mut c = common::connect().await;
    let v: Option<i64> = c.query_first("SELECT 1 + 1").await.unwrap();
    assert_eq!(v, Some(2));
    let (ok, out, err) = common::cli(&["-N"], "SELECT @@port");
    assert!(ok, "{err}");
    assert_eq!(out.trim(), common::topo().primary.port.to_string());
}
