//! Packet framing: the 4-byte header (3-byte little-endian length, sequence id) and 16 MiB splits.

use bytes::{BufMut, BytesMut};

/// Largest payload of one physical packet; a payload of exactly this size continues in the next.
pub const MAX_PAYLOAD: usize = 0xFF_FFFF;

/// The header of one physical packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketHeader {
    /// Payload length of this physical packet.
    pub len: usize,
    /// Sequence id.
    pub seq: u8,
}

impl PacketHeader {
    /// Reads a header from the first four bytes of `buf`, if present.
    #[inline]
    pub fn parse(buf: &[u8]) -> Option<PacketHeader> {
        if buf.len() < 4 {
            return None;
        }
        let len = buf[0] as usize | (buf[1] as usize) << 8 | (buf[2] as usize) << 16;
        Some(PacketHeader { len, seq: buf[3] })
    }

    /// Whether a further physical packet continues this payload.
    #[inline]
    pub fn continues(&self) -> bool {
        self.len == MAX_PAYLOAD
    }
}

/// Appends `payload` to `out` as one logical packet, split into 16 MiB frames as needed.
/// Returns the sequence id that follows.
pub fn write_packet(out: &mut BytesMut, mut seq: u8, payload: &[u8]) -> u8 {
    out.reserve(payload.len() + 4 * (payload.len() / MAX_PAYLOAD + 1));
    let mut rest = payload;
    loop {
        let n = rest.len().min(MAX_PAYLOAD);
        out.put_uint_le(n as u64, 3);
        out.put_u8(seq);
        out.put_slice(&rest[..n]);
        seq = seq.wrapping_add(1);
        rest = &rest[n..];
        // A payload that is an exact multiple of MAX_PAYLOAD ends with an empty frame.
        if n < MAX_PAYLOAD {
            return seq;
        }
    }
}

/// Starts a packet whose payload is written afterwards; finish with [`finish_packet`].
pub fn begin_packet(out: &mut BytesMut, seq: u8) -> usize {
    let start = out.len();
    out.put_slice(&[0, 0, 0, seq]);
    start
}

/// Fills in the length of a packet started with [`begin_packet`]; payloads must stay below 16 MiB.
pub fn finish_packet(out: &mut BytesMut, start: usize) {
    let len = out.len() - start - 4;
    debug_assert!(len < MAX_PAYLOAD);
    out[start] = len as u8;
    out[start + 1] = (len >> 8) as u8;
    out[start + 2] = (len >> 16) as u8;
}

/// Result of trying to take one logical packet out of a buffer.
#[derive(Debug)]
pub enum Framed {
    /// More bytes are needed.
    Incomplete,
    /// A complete logical packet: the raw frames (headers included) and the first sequence id.
    Packet {
        /// Raw frames, exactly as received.
        raw: BytesMut,
        /// Sequence id of the first frame.
        seq: u8,
        /// Sequence id of the last frame.
        last_seq: u8,
        /// Number of frames.
        frames: usize,
    },
}

/// Splits a complete logical packet (all of its frames) off the front of `buf`.
///
/// `max_payload` bounds the total payload; a larger packet is an error so that a client cannot
/// make weir buffer without limit.
pub fn take_logical_packet(buf: &mut BytesMut, max_payload: usize) -> Result<Framed, usize> {
    let mut off = 0usize;
    let mut total = 0usize;
    let mut frames = 0usize;
    let mut first_seq = 0u8;
    loop {
        let Some(h) = PacketHeader::parse(&buf[off..]) else {
            return Ok(Framed::Incomplete);
        };
        if frames == 0 {
            first_seq = h.seq;
        }
        total += h.len;
        if total > max_payload {
            return Err(total);
        }
        if buf.len() < off + 4 + h.len {
            return Ok(Framed::Incomplete);
        }
        off += 4 + h.len;
        frames += 1;
        if !h.continues() {
            let raw = buf.split_to(off);
            return Ok(Framed::Packet {
                raw,
                seq: first_seq,
                last_seq: h.seq,
                frames,
            });
        }
    }
}

/// The payload of a logical packet held as raw frames: borrowed when it is a single frame.
pub fn payload_of(raw: &[u8], frames: usize) -> std::borrow::Cow<'_, [u8]> {
    if frames <= 1 {
        return std::borrow::Cow::Borrowed(&raw[4.min(raw.len())..]);
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut off = 0;
    while let Some(h) = PacketHeader::parse(&raw[off..]) {
        let end = (off + 4 + h.len).min(raw.len());
        out.extend_from_slice(&raw[off + 4..end]);
        off = end;
        if !h.continues() {
            break;
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Rewrites the sequence ids of consecutive frames in `raw`, starting at `seq`; returns the next id.
pub fn renumber(raw: &mut [u8], mut seq: u8) -> u8 {
    let mut off = 0;
    while let Some(h) = PacketHeader::parse(&raw[off..]) {
        raw[off + 3] = seq;
        seq = seq.wrapping_add(1);
        off += 4 + h.len;
        if off >= raw.len() {
            break;
        }
    }
    seq
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn split_and_reassemble_large_payload() {
        for size in [
            0usize,
            1,
            MAX_PAYLOAD - 1,
            MAX_PAYLOAD,
            MAX_PAYLOAD + 5,
            2 * MAX_PAYLOAD,
        ] {
            let payload: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            let mut out = BytesMut::new();
            let next = write_packet(&mut out, 3, &payload);
            let frames = size / MAX_PAYLOAD + 1;
            assert_eq!(next, 3 + frames as u8);
            let mut buf = out.clone();
            match take_logical_packet(&mut buf, usize::MAX).unwrap() {
                Framed::Packet {
                    raw,
                    seq,
                    frames: f,
                    ..
                } => {
                    assert_eq!(seq, 3);
                    assert_eq!(f, frames);
                    assert_eq!(&*payload_of(&raw, f), &payload[..]);
                }
                Framed::Incomplete => panic!("incomplete"),
            }
            assert!(buf.is_empty());
            // Every strict prefix is incomplete.
            let mut partial = BytesMut::from(&out[..out.len() - 1]);
            assert!(matches!(
                take_logical_packet(&mut partial, usize::MAX).unwrap(),
                Framed::Incomplete
            ));
        }
    }

    #[test]
    fn oversized_packet_is_refused() {
        let mut out = BytesMut::new();
        write_packet(&mut out, 0, &[7u8; 100]);
        assert!(take_logical_packet(&mut out, 50).is_err());
    }
}
