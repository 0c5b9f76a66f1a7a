//! The prepared statements one backend connection holds, keyed by weir's global statement id.
//!
//! Clients' statements live in a global registry; each connection prepares a statement the
//! first time it runs it and keeps the server's id here, least recently used first out, so a
//! connection never holds more than `mysql-max_stmts_per_connection` statements and the server's
//! max_prepared_stmt_count is never reached however many clients prepare.
//!
//! Keys are weir's global statement ids, or a client statement's own key when it needs a server
//! statement of its own (another statement of its session has a cursor open on the shared one).

/// Statement ids a connection knows: (key, server id, last use tick).
#[derive(Debug, Default)]
pub struct StmtCache {
    entries: Vec<(u64, u32, u64)>,
    tick: u64,
}

impl StmtCache {
    /// The server's id for a global statement, marking it used.
    pub fn get(&mut self, global: u64) -> Option<u32> {
        self.tick += 1;
        let tick = self.tick;
        self.entries.iter_mut().find(|e| e.0 == global).map(|e| {
            e.2 = tick;
            e.1
        })
    }

    /// Records that `global` is prepared as `server_id`. Returns the server ids that must be
    /// closed: the one `global` had before (prepared again), and the least recently used when
    /// the cache is over `max` entries, except those `protected` names (statements with a
    /// cursor open: closing them would end the cursor), which may keep it over `max` a while.
    pub fn insert(
        &mut self,
        global: u64,
        server_id: u32,
        max: usize,
        protected: &[u64],
        closed: &mut Vec<u32>,
    ) {
        self.tick += 1;
        if let Some(e) = self.entries.iter_mut().find(|e| e.0 == global) {
            if e.1 != server_id {
                closed.push(e.1);
            }
            e.1 = server_id;
            e.2 = self.tick;
            return;
        }
        self.entries.push((global, server_id, self.tick));
        while self.entries.len() > max.max(1) {
            let oldest = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.0 != global && !protected.contains(&e.0))
                .min_by_key(|(_, e)| e.2)
                .map(|(i, _)| i);
            match oldest {
                Some(i) => closed.push(self.entries.swap_remove(i).1),
                None => break,
            }
        }
    }

    /// Forgets a statement (its server id was closed or is unusable).
    pub fn remove(&mut self, global: u64) -> Option<u32> {
        let i = self.entries.iter().position(|e| e.0 == global)?;
        Some(self.entries.swap_remove(i).1)
    }

    /// (global id, server id) of every statement held, without marking them used.
    pub fn ids(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.entries.iter().map(|e| (e.0, e.1))
    }

    /// Number of statements held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_used_goes_first() {
        let mut c = StmtCache::default();
        let mut closed = Vec::new();
        c.insert(1, 10, 2, &[], &mut closed);
        c.insert(2, 20, 2, &[], &mut closed);
        assert_eq!(c.get(1), Some(10));
        c.insert(3, 30, 2, &[], &mut closed);
        assert_eq!(closed, vec![20]);
        assert_eq!(c.get(2), None);
        assert_eq!((c.get(1), c.get(3)), (Some(10), Some(30)));
        c.insert(1, 11, 2, &[], &mut closed);
        assert_eq!(closed, vec![20, 10]);
        assert_eq!(c.remove(1), Some(11));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn statements_with_a_cursor_open_are_not_evicted() {
        let mut c = StmtCache::default();
        let mut closed = Vec::new();
        c.insert(1, 10, 2, &[], &mut closed);
        c.insert(2, 20, 2, &[], &mut closed);
        c.insert(3, 30, 2, &[1], &mut closed);
        assert_eq!(closed, vec![20]);
        // Every other one protected: over max until they are not.
        c.insert(4, 40, 2, &[1, 3], &mut closed);
        assert_eq!((closed.len(), c.len()), (1, 3));
        c.insert(5, 50, 2, &[], &mut closed);
        assert_eq!(closed, vec![20, 10, 30]);
        assert_eq!((c.get(4), c.get(5)), (Some(40), Some(50)));
    }
}
