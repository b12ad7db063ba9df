//! The inverse of `arbitrary`'s decoding, for writing seed files by hand.
//!
//! Structured fuzz inputs are bytes that [`arbitrary`] decodes. To commit a
//! seed that means a particular script (a handshake, a tool call, an
//! elicitation), the script is written as a value and encoded here into the
//! bytes that decode back to it. The layout is `arbitrary` 1.x's, as its
//! derive and primitive impls read it: integers little-endian in their
//! width, `bool` one byte (`1`/`0`), `Option` a `bool` then the value,
//! `Vec` each element behind a `1` and a final `0`, and an enum variant `k`
//! of `n` as the `u32` whose `(x * n) >> 32` is `k`.
//!
//! The types implement [`Encode`] by hand, field by field; the round-trip
//! test in `tests/fuzz_corpus.rs` (decode arbitrary bytes, encode, decode
//! again) catches any drift between the two.

/// A value that can be written as the bytes `arbitrary` decodes it from.
pub trait Encode {
    /// Appends this value's encoding.
    fn encode(&self, out: &mut Vec<u8>);
}

/// Encodes `value` into a fresh buffer.
pub fn to_bytes(value: &impl Encode) -> Vec<u8> {
    let mut out = Vec::new();
    value.encode(&mut out);
    out
}

/// Writes the tag of variant `index` of an enum with `count` variants, as
/// `derive(Arbitrary)` reads it.
pub fn tag(out: &mut Vec<u8>, index: u32, count: u32) {
    assert!(index < count, "variant {index} of {count}");
    let x = (u64::from(index) << 32).div_ceil(u64::from(count));
    // `x < 2^32` because `index < count`.
    let x = u32::try_from(x).unwrap_or(u32::MAX);
    out.extend_from_slice(&x.to_le_bytes());
}

macro_rules! encode_int {
    ($($ty:ty),*) => {
        $(impl Encode for $ty {
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        })*
    };
}

encode_int!(u8, u16, u32, u64, i8, i16, i32, i64);

impl Encode for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
}

impl<T: Encode> Encode for Option<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Some(value) => {
                true.encode(out);
                value.encode(out);
            }
            None => false.encode(out),
        }
    }
}

impl<T: Encode> Encode for Vec<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        for item in self {
            true.encode(out);
            item.encode(out);
        }
        false.encode(out);
    }
}

impl<A: Encode, B: Encode> Encode for (A, B) {
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
        self.1.encode(out);
    }
}

impl Encode for crate::Chunked<'_> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.chunks.encode(out);
        out.extend_from_slice(self.stream);
    }
}
