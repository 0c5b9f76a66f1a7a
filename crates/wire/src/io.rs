//! Reading and writing the protocol's integer and string encodings.

use crate::WireError;
use bytes::{BufMut, BytesMut};

/// A cursor over a packet payload that never panics on short input.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> &'a [u8] {
        self.buf
    }

    /// Whether everything was read.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Reads `n` bytes.
    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if self.buf.len() < n {
            return Err(WireError::Truncated(what));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    /// Reads one byte.
    pub fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        Ok(self.take(1, what)?[0])
    }

    /// Reads a little-endian u16.
    pub fn u16(&mut self, what: &'static str) -> Result<u16, WireError> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    /// Reads a little-endian u32.
    pub fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads a length-encoded integer.
    pub fn lenenc(&mut self, what: &'static str) -> Result<u64, WireError> {
        let first = self.u8(what)?;
        Ok(match first {
            0xfc => {
                let b = self.take(2, what)?;
                u16::from_le_bytes([b[0], b[1]]) as u64
            }
            0xfd => {
                let b = self.take(3, what)?;
                b[0] as u64 | (b[1] as u64) << 8 | (b[2] as u64) << 16
            }
            0xfe => {
                let b = self.take(8, what)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                u64::from_le_bytes(a)
            }
            0xfb | 0xff => return Err(WireError::Invalid("length-encoded integer prefix")),
            n => n as u64,
        })
    }

    /// Reads a length-encoded string.
    pub fn lenenc_bytes(&mut self, what: &'static str) -> Result<&'a [u8], WireError> {
        let n = self.lenenc(what)?;
        let n = usize::try_from(n).map_err(|_| WireError::Invalid("string length"))?;
        self.take(n, what)
    }

    /// Reads a NUL-terminated string (the NUL is consumed, not returned).
    pub fn nul_bytes(&mut self, what: &'static str) -> Result<&'a [u8], WireError> {
        match self.buf.iter().position(|&b| b == 0) {
            Some(i) => {
                let s = &self.buf[..i];
                self.buf = &self.buf[i + 1..];
                Ok(s)
            }
            None => Err(WireError::Truncated(what)),
        }
    }

    /// Reads a NUL-terminated string, or the rest of the packet when no NUL is left.
    pub fn nul_or_eof_bytes(&mut self) -> &'a [u8] {
        match self.buf.iter().position(|&b| b == 0) {
            Some(i) => {
                let s = &self.buf[..i];
                self.buf = &self.buf[i + 1..];
                s
            }
            None => std::mem::take(&mut self.buf),
        }
    }

    /// Reads everything that is left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.buf)
    }
}

/// Appends a length-encoded integer.
pub fn put_lenenc(out: &mut BytesMut, n: u64) {
    if n < 251 {
        out.put_u8(n as u8);
    } else if n < 1 << 16 {
        out.put_u8(0xfc);
        out.put_u16_le(n as u16);
    } else if n < 1 << 24 {
        out.put_u8(0xfd);
        out.put_uint_le(n, 3);
    } else {
        out.put_u8(0xfe);
        out.put_u64_le(n);
    }
}

/// Appends a length-encoded string.
pub fn put_lenenc_bytes(out: &mut BytesMut, s: &[u8]) {
    put_lenenc(out, s.len() as u64);
    out.put_slice(s);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn lenenc_round_trips(n in any::<u64>()) {
            let mut out = BytesMut::new();
            put_lenenc(&mut out, n);
            let mut r = Reader::new(&out);
            prop_assert_eq!(r.lenenc("n").unwrap(), n);
            prop_assert!(r.is_empty());
        }

        #[test]
        fn reader_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut r = Reader::new(&data);
            let _ = r.lenenc_bytes("a");
            let _ = r.nul_bytes("b");
            let _ = r.u32("c");
        }
    }
}
