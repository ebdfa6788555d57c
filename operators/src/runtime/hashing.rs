//! Stable hashes (never `RandomState`): FNV-1a for strings and ids, the splitmix64 finalizer,
//! and a hash-map state for keys that are hashes already.

/// FNV-1a, 64 bit: a fixed hash for ids and routing (never `RandomState`).
#[derive(Clone, Debug)]
pub struct StableHasher(u64);

impl Default for StableHasher {
    fn default() -> Self {
        StableHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl StableHasher {
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    pub fn finish(&self) -> u64 {
        mix64(self.0)
    }
}

/// A 64-bit finalizer (splitmix64) so that nearby inputs spread over all bits.
pub fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Stable hash of a string.
pub fn stable_hash(s: &str) -> u64 {
    let mut h = StableHasher::default();
    h.write(s.as_bytes());
    h.finish()
}

/// Hash-map state for keys that are hashes or addresses already: one multiply-mix per word
/// instead of SipHash (the verdict cache is on the hot path of re-verification).
#[derive(Clone, Copy, Default)]
pub struct Mixed;

impl std::hash::BuildHasher for Mixed {
    type Hasher = MixHasher;
    fn build_hasher(&self) -> MixHasher {
        MixHasher(0)
    }
}

pub struct MixHasher(u64);

impl std::hash::Hasher for MixHasher {
    fn finish(&self) -> u64 {
        mix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(29) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}
