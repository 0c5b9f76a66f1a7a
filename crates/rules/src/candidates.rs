//! A list of chain positions that lives on the stack for the usual handful of candidates and
//! spills to the heap only when a query makes many rules candidates at once.

const INLINE: usize = 64;

pub(crate) struct Candidates {
    inline: [u32; INLINE],
    len: usize,
    heap: Vec<u32>,
}

impl Candidates {
    pub(crate) fn new() -> Self {
        Candidates {
            inline: [0; INLINE],
            len: 0,
            heap: Vec::new(),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.len = 0;
        self.heap.clear();
    }

    fn spilled(&self) -> bool {
        self.len > INLINE
    }

    pub(crate) fn push(&mut self, pos: u32) {
        if self.len < INLINE {
            self.inline[self.len] = pos;
        } else {
            if self.len == INLINE {
                self.heap.extend_from_slice(&self.inline);
            }
            self.heap.push(pos);
        }
        self.len += 1;
    }

    pub(crate) fn extend_from(&mut self, positions: &[u32], from: u32) {
        for &p in positions {
            if p >= from {
                self.push(p);
            }
        }
    }

    /// Sorts and removes duplicates (a rule reached by several literals appears once).
    pub(crate) fn sort_dedup(&mut self) {
        if self.spilled() {
            self.heap.sort_unstable();
            self.heap.dedup();
            let n = self.heap.len();
            if n <= INLINE {
                self.inline[..n].copy_from_slice(&self.heap);
                self.heap.clear();
            }
            self.len = n;
            return;
        }
        let s = &mut self.inline[..self.len];
        s.sort_unstable();
        let mut w = 0;
        for r in 0..s.len() {
            if w == 0 || s[r] != s[w - 1] {
                s[w] = s[r];
                w += 1;
            }
        }
        self.len = w;
    }

    pub(crate) fn as_slice(&self) -> &[u32] {
        if self.spilled() {
            &self.heap
        } else {
            &self.inline[..self.len]
        }
    }
}

/// Walks two sorted, disjoint lists of positions in increasing order.
pub(crate) struct Merge<'a> {
    a: &'a [u32],
    b: &'a [u32],
}

impl<'a> Merge<'a> {
    pub(crate) fn new(a: &'a [u32], b: &'a [u32]) -> Self {
        Merge { a, b }
    }
}

impl Iterator for Merge<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        match (self.a.first(), self.b.first()) {
            (Some(&x), Some(&y)) if x <= y => {
                self.a = &self.a[1..];
                if x == y {
                    self.b = &self.b[1..];
                }
                Some(x)
            }
            (_, Some(&y)) => {
                self.b = &self.b[1..];
                Some(y)
            }
            (Some(&x), None) => {
                self.a = &self.a[1..];
                Some(x)
            }
            (None, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_spilled() {
        for n in [0u32, 3, 64, 65, 200] {
            let mut c = Candidates::new();
            for i in (0..n).rev() {
                c.push(i);
                c.push(i);
            }
            c.sort_dedup();
            assert_eq!(c.as_slice(), (0..n).collect::<Vec<_>>().as_slice(), "n={n}");
            c.clear();
            assert!(c.as_slice().is_empty());
        }
    }

    #[test]
    fn merge_in_order() {
        let m: Vec<u32> = Merge::new(&[1, 4, 9], &[0, 2, 4, 10]).collect();
        assert_eq!(m, vec![0, 1, 2, 4, 9, 10]);
    }
}
