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
    }
}

fn login() -> LoginTemplate {
    LoginTemplate {
        key: PoolKey {
            username: "u".into(),
            capabilities: 0,
            collation: 45,
        },
        credential: Credential::Clear("p".into()),
        schema: None,
    }
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
        assert_eq!(pool.pick(0).unwrap().spec().hostname, "b");
    }
}
