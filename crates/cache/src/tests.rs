#![allow(clippy::unwrap_used)]

use super::*;
use std::sync::atomic::AtomicUsize;

const LONG: Duration = Duration::from_secs(5);

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

async fn fill(cache: &QueryCache, key: &[u8], reply: &'static [u8], ttl: Duration) {
    match cache.lookup(key, LONG).await {
        Lookup::Fill(f) => f.store(Bytes::from_static(reply), ttl),
        other => panic!("expected a fill, got {other:?}"),
    }
}

#[test]
fn a_stored_reply_is_served_until_it_expires() {
    rt().block_on(async {
        let cache = QueryCache::new(1 << 20);
        fill(&cache, b"k", b"reply", Duration::from_secs(1)).await;
        match cache.lookup(b"k", LONG).await {
            Lookup::Hit(r) => assert_eq!(&r[..], b"reply"),
            other => panic!("expected a hit, got {other:?}"),
        }
        std::thread::sleep(Duration::from_millis(1100));
        assert!(matches!(cache.lookup(b"k", LONG).await, Lookup::Fill(_)));
        let s = cache.stats();
        assert_eq!((s.count_get, s.count_get_ok, s.count_set), (3, 1, 1));
        assert_eq!((s.bytes_in, s.bytes_out), (5, 5));
        assert_eq!(s.purged, 1, "the expired entry met by the lookup is purged");
    });
}

#[test]
fn keys_are_separate() {
    rt().block_on(async {
        let cache = QueryCache::new(1 << 20);
        fill(&cache, b"a", b"A", LONG).await;
        fill(&cache, b"b", b"B", LONG).await;
        for (k, v) in [(b"a", b"A"), (b"b", b"B")] {
            match cache.lookup(k, LONG).await {
                Lookup::Hit(r) => assert_eq!(&r[..], v),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(cache.stats().entries, 2);
    });
}

#[test]
fn purge_drops_expired_entries_only() {
    rt().block_on(async {
        let cache = QueryCache::new(1 << 20);
        fill(&cache, b"short", b"x", Duration::from_millis(1)).await;
        fill(&cache, b"long", b"y", LONG).await;
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(cache.purge_expired(Instant::now()), 1);
        let s = cache.stats();
        assert_eq!((s.entries, s.purged), (1, 1));
        assert!(matches!(cache.lookup(b"long", LONG).await, Lookup::Hit(_)));
    });
}

#[test]
fn clear_empties_and_capacity_zero_turns_off() {
    rt().block_on(async {
        let cache = QueryCache::new(1 << 20);
        fill(&cache, b"a", b"A", LONG).await;
        assert_eq!(cache.clear(), 1);
        assert_eq!(cache.stats().entries, 0);
        assert_eq!(cache.stats().memory_bytes, 0);
        cache.set_capacity(0);
        assert_eq!(cache.capacity(), 0);
        cache.set_capacity(1 << 20);
        fill(&cache, b"a", b"A", LONG).await;
        assert!(matches!(cache.lookup(b"a", LONG).await, Lookup::Hit(_)));
    });
}

#[test]
fn memory_stays_within_the_budget_under_a_flood() {
    rt().block_on(async {
        let budget = 256 * 1024;
        let cache = QueryCache::new(budget);
        static REPLY: [u8; 900] = [7; 900];
        for i in 0..20_000u32 {
            let key = format!("SELECT * FROM t WHERE id = {i}");
            fill(&cache, key.as_bytes(), &REPLY, LONG).await;
            assert!(cache.stats().memory_bytes <= budget);
        }
        let s = cache.stats();
        assert_eq!(s.count_set, 20_000);
        assert!(s.entries < 300, "{} entries in 256 KiB", s.entries);
        assert!(s.purged >= 20_000 - s.entries, "evictions are counted");
    });
}

#[test]
fn a_reply_larger_than_a_shard_is_not_stored() {
    rt().block_on(async {
        let cache = QueryCache::new(64 * 1024);
        let big = Bytes::from(vec![0u8; cache.max_entry_bytes() as usize]);
        match cache.lookup(b"big", LONG).await {
            Lookup::Fill(f) => f.store(big, LONG),
            other => panic!("{other:?}"),
        }
        assert_eq!(cache.stats().count_set, 0);
        assert!(matches!(cache.lookup(b"big", LONG).await, Lookup::Fill(_)));
    });
}

#[test]
fn concurrent_misses_wait_for_one_fill() {
    rt().block_on(async {
        let cache = Arc::new(QueryCache::new(1 << 20));
        let fills = Arc::new(AtomicUsize::new(0));
        let local = tokio::task::LocalSet::new();
        let mut tasks = Vec::new();
        for _ in 0..100 {
            let cache = cache.clone();
            let fills = fills.clone();
            tasks.push(local.spawn_local(async move {
                match cache.lookup(b"hot", LONG).await {
                    Lookup::Fill(f) => {
                        fills.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        f.store(Bytes::from_static(b"R"), LONG);
                        true
                    }
                    Lookup::Hit(r) => {
                        assert_eq!(&r[..], b"R");
                        false
                    }
                    Lookup::Bypass => panic!("a waiter bypassed a fill that stored"),
                }
            }));
        }
        local
            .run_until(async {
                for t in tasks {
                    t.await.unwrap();
                }
            })
            .await;
        assert_eq!(fills.load(Ordering::Relaxed), 1);
        assert_eq!(cache.stats().count_get_ok, 99);
    });
}

#[test]
fn waiters_of_an_abandoned_fill_all_run_at_once() {
    rt().block_on(async {
        let cache = Arc::new(QueryCache::new(1 << 20));
        let local = tokio::task::LocalSet::new();
        let leader = match cache.lookup(b"k", LONG).await {
            Lookup::Fill(f) => f,
            other => panic!("{other:?}"),
        };
        let mut tasks = Vec::new();
        for _ in 0..10 {
            let cache = cache.clone();
            tasks.push(local.spawn_local(async move {
                matches!(cache.lookup(b"k", LONG).await, Lookup::Bypass)
            }));
        }
        local
            .run_until(async {
                tokio::task::yield_now().await;
                drop(leader);
                for t in tasks {
                    assert!(
                        t.await.unwrap(),
                        "every waiter bypasses, none becomes a new fill"
                    );
                }
            })
            .await;
        // The marker does not stay: the next caller fills.
        assert!(matches!(cache.lookup(b"k", LONG).await, Lookup::Fill(_)));
        assert_eq!(cache.stats().entries, 0);
    });
}

#[test]
fn a_wait_is_bounded() {
    rt().block_on(async {
        let cache = QueryCache::new(1 << 20);
        let _leader = match cache.lookup(b"k", LONG).await {
            Lookup::Fill(f) => f,
            other => panic!("{other:?}"),
        };
        let started = Instant::now();
        let got = cache.lookup(b"k", Duration::from_millis(30)).await;
        assert!(matches!(got, Lookup::Bypass));
        assert!(started.elapsed() >= Duration::from_millis(30));
    });
}

#[test]
fn a_zero_wait_still_fills_an_uncontended_key() {
    rt().block_on(async {
        let cache = QueryCache::new(1 << 20);
        assert!(matches!(
            cache.lookup(b"k", Duration::ZERO).await,
            Lookup::Fill(_)
        ));
    });
}
