//! Tool-call ids carried across providers: reduced to the `[A-Za-z0-9_-]` alphabet every
//! provider accepts, and shortened with a stable hash.

/// Every character outside `[A-Za-z0-9_-]` becomes `_`.
pub(crate) fn sanitize(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// [`sanitize`]d and cut to `max` characters.
pub(crate) fn sanitize_to(id: &str, max: usize) -> String {
    let mut out = sanitize(id);
    if let Some((cut, _)) = out.char_indices().nth(max) {
        out.truncate(cut);
    }
    out
}

/// Eight base-36 characters identifying `text`: the start of [`full_hash`].
pub(crate) fn short_hash(text: &str) -> String {
    let mut out = full_hash(text);
    out.truncate(8);
    out
}

/// pi's `shortHash` whole (cyrb53 over the UTF-16 code units, two 32-bit halves in base 36,
/// up to 14 characters), so replayed ids match the ones pi would send.
pub(crate) fn full_hash(text: &str) -> String {
    let mut h1: u32 = 0xdead_beef;
    let mut h2: u32 = 0x41c6_ce57;
    for unit in text.encode_utf16() {
        let unit = u32::from(unit);
        h1 = (h1 ^ unit).wrapping_mul(2_654_435_761);
        h2 = (h2 ^ unit).wrapping_mul(1_597_334_677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h2 ^ (h2 >> 13)).wrapping_mul(3_266_489_909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h1 ^ (h1 >> 13)).wrapping_mul(3_266_489_909);
    let mut out = base36(h2);
    out.push_str(&base36(h1));
    out
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut digits = Vec::with_capacity(7);
    loop {
        digits.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    digits.iter().rev().map(|&d| char::from(d)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_and_cuts() {
        assert_eq!(sanitize("call|abc+/="), "call_abc___");
        assert_eq!(sanitize_to(&"x".repeat(70), 64).len(), 64);
        assert_eq!(sanitize_to("ab", 64), "ab");
    }

    #[test]
    fn base36_digits() {
        assert_eq!(base36(0), "0");
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
        assert_eq!(base36(u32::MAX), "1z141z3");
    }

    #[test]
    fn hash_is_stable_and_short() {
        let a = short_hash("call_Ab9|fc_0123456789abcdef0123456789abcdef");
        assert_eq!(a.len(), 8);
        assert_eq!(
            a,
            short_hash("call_Ab9|fc_0123456789abcdef0123456789abcdef")
        );
        assert_ne!(
            a,
            short_hash("call_Ab9|fc_0123456789abcdef0123456789abcdee")
        );
        assert!(
            a.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
        );
    }
}
