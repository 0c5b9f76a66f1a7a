#![allow(clippy::unwrap_used)]
use super::*;

fn spec(hg: u32, host: &str, port: u16, status: ServerStatus) -> ServerSpec {
    ServerSpec {
        hostgroup: hg,
        hostname: host.into(),
        port,
        status,
        weight: 1,
        max_connections: 10,
        max_replication_lag: 0,
    }
}

fn login() -> LoginTemplate {
    LoginTemplate::new("u", Credential::Clear("p".into()), None)
}

#[tokio::test]
async fn no_usable_server_times_out_with_9001_message() {
    let pool = Pool::new(PoolSettings {
        connect_timeout_max: Duration::from_millis(200),
        ..Default::default()
    });
    pool.apply_servers(&[spec(0, "127.0.0.1", 1, ServerStatus::OfflineSoft)]);
    let t = Instant::now();
    let err = pool.checkout(0, &login()).await.err().unwrap();
    assert!(t.elapsed() >= Duration::from_millis(200));
    assert_eq!(
        err.to_string().split(" after ").next().unwrap(),
        "Max connect timeout reached while reaching hostgroup 0"
    );
    let err = pool.checkout(7, &login()).await.err().unwrap();
    assert!(matches!(err, PoolError::NoServer { hostgroup: 7, .. }));
}

#[tokio::test]
async fn reload_keeps_server_state_and_retires_removed() {
    let pool = Pool::default();
    pool.apply_servers(&[
        spec(0, "a", 1, ServerStatus::Online),
        spec(1, "b", 1, ServerStatus::Online),
    ]);
    let a = pool.servers()[0].clone();
    a.stats.conn_ok.fetch_add(5, Ordering::Relaxed);
    pool.apply_servers(&[spec(0, "a", 1, ServerStatus::Online)]);
    let snap = pool.snapshot();
    assert_eq!(snap.len(), 1);
    assert_eq!(snap[0].conn_ok, 5);
    assert!(Arc::ptr_eq(&a, &pool.servers()[0]));
}

#[tokio::test]
async fn weighted_pick_only_online() {
    let pool = Pool::default();
    pool.apply_servers(&[
        spec(0, "a", 1, ServerStatus::Shunned),
        spec(0, "b", 1, ServerStatus::Online),
        spec(0, "c", 1, ServerStatus::OfflineHard),
    ]);
    for _ in 0..50 {
        assert_eq!(pool.pick(0, true).unwrap().spec().hostname, "b");
    }
}

#[tokio::test]
async fn reset_zeroes_cumulative_counters_but_not_totals() {
    let pool = Pool::new(PoolSettings {
        connect_timeout_max: Duration::from_millis(300),
        connect_retries: 1,
        ..Default::default()
    });
    // Nothing listens on port 1: every connect is refused at once.
    pool.apply_servers(&[spec(0, "127.0.0.1", 1, ServerStatus::Online)]);
    let err = pool.checkout(0, &login()).await.err().unwrap();
    assert!(matches!(err, PoolError::ConnectFailed { .. }), "{err}");
    let s = pool.servers()[0].clone();
    s.stats.queries.fetch_add(7, Ordering::Relaxed);
    s.stats.bytes_sent.fetch_add(70, Ordering::Relaxed);
    s.stats.bytes_recv.fetch_add(700, Ordering::Relaxed);
    s.stats.max_conn_used.store(4, Ordering::Relaxed);
    s.stats.conn_used.store(1, Ordering::Relaxed);
    let failed = pool.totals().connects_failed;
    assert!(failed >= 1);

    let taken = pool.snapshot_and_reset();
    assert_eq!(taken[0].conn_err, failed);
    assert_eq!(
        (taken[0].queries, taken[0].bytes_sent, taken[0].bytes_recv),
        (7, 70, 700)
    );
    assert_eq!((taken[0].max_conn_used, taken[0].conn_used), (4, 1));

    let after = pool.snapshot();
    assert_eq!(
        (after[0].conn_ok, after[0].conn_err, after[0].queries),
        (0, 0, 0)
    );
    assert_eq!((after[0].bytes_sent, after[0].bytes_recv), (0, 0));
    assert_eq!((after[0].max_conn_used, after[0].conn_used), (1, 1));
    assert_eq!(pool.totals().connects_failed, failed);
    s.stats.conn_used.store(0, Ordering::Relaxed);
}

#[tokio::test]
async fn full_servers_hand_slots_to_waiters_in_order() {
    let pool = Pool::default();
    let mut one = spec(0, "127.0.0.1", 1, ServerStatus::Online);
    one.max_connections = 1;
    pool.apply_servers(std::slice::from_ref(&one));
    let s = pool.servers()[0].clone();
    assert!(s.reserve());
    assert!(!s.reserve());
    let waiter = {
        let s = s.clone();
        tokio::spawn(async move { s.reserve_wait().await })
    };
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    s.release_slot();
    // The freed slot went to the waiter, not to whoever asks next.
    assert!(!s.reserve());
    waiter.await.unwrap();
    assert_eq!(s.stats.conn_used.load(Ordering::Relaxed), 1);
    assert_eq!(s.stats.max_conn_used.load(Ordering::Relaxed), 1);
    s.release_slot();

    // Lowering max_connections while slots are in use takes them back as they are released.
    one.max_connections = 3;
    pool.apply_servers(std::slice::from_ref(&one));
    assert!(s.reserve() && s.reserve() && s.reserve());
    one.max_connections = 1;
    pool.apply_servers(std::slice::from_ref(&one));
    s.release_slot();
    s.release_slot();
    assert!(!s.reserve());
    s.release_slot();
    assert!(s.reserve());
    assert!(!s.reserve());
    s.release_slot();
    one.max_connections = 2;
    pool.apply_servers(std::slice::from_ref(&one));
    assert!(s.reserve() && s.reserve() && !s.reserve());
    s.release_slot();
    s.release_slot();
}

/// A pooled connection serves only clients of its user and protocol options:
/// CLIENT_PS_MULTI_RESULTS splits the pool (without it, MariaDB and MySQL alike send no OUT
/// parameters for a prepared CALL), and so do the others of the key.
#[test]
fn pool_keys_split_by_user_and_protocol_options() {
    use weir_wire::cap;
    let with = PoolKey {
        username: "u".into(),
        capabilities: cap::MULTI_RESULTS | cap::PS_MULTI_RESULTS,
        mariadb_capabilities: 0,
    };
    let without = PoolKey {
        capabilities: cap::MULTI_RESULTS,
        ..with.clone()
    };
    let found_rows = PoolKey {
        capabilities: with.capabilities | cap::FOUND_ROWS,
        ..with.clone()
    };
    let other_user = PoolKey {
        username: "v".into(),
        ..with.clone()
    };
    assert!(with.serves(&with.clone()));
    for other in [&without, &found_rows, &other_user] {
        assert!(!with.serves(other) && !other.serves(&with), "{other:?}");
    }
}
