//! The values of the policy keys, checked at compile time: `timeout = "30s"` (a duration),
//! `concurrency = "db:4"` (a named limit), `max_output = "64KiB"` (a size). Each parser says
//! what is wrong in words the error message continues with.

/// The policy keys of one `#[tool]`, as the runtime's `ToolPolicy` takes them.
#[derive(Default)]
pub(crate) struct Policy {
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) retries: Option<u32>,
    /// The limit's name and permits.
    pub(crate) concurrency: Option<(String, usize)>,
    pub(crate) max_output: Option<usize>,
}

impl Policy {
    pub(crate) fn is_empty(&self) -> bool {
        self.timeout_ms.is_none()
            && self.retries.is_none()
            && self.concurrency.is_none()
            && self.max_output.is_none()
    }
}

/// A whole number followed by a unit: `ms`, `s`, `m` or `h`; more than zero.
/// `"30s"` → 30 000, `"250ms"` → 250, `"2m"` → 120 000.
pub(crate) fn duration_ms(text: &str) -> Result<u64, String> {
    const EXPECTED: &str =
        "write a whole number and a unit, `ms`, `s`, `m` or `h`, e.g. `timeout = \"30s\"`";
    let (number, unit) = split_number(text).ok_or_else(|| EXPECTED.to_owned())?;
    let scale = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(format!("unknown unit `{unit}`: {EXPECTED}")),
    };
    let ms = number
        .checked_mul(scale)
        .ok_or_else(|| format!("too long: {EXPECTED}"))?;
    if ms == 0 {
        return Err(
            "a call cannot finish in no time: write a timeout above zero, e.g. `timeout = \"30s\"`"
                .to_owned(),
        );
    }
    Ok(ms)
}

/// A whole number of bytes with an optional unit: `B`, `KB`/`MB` (1000s) or `KiB`/`MiB`
/// (1024s); more than zero. `"64KiB"` → 65 536, `"2MB"` → 2 000 000, `"4096"` → 4096.
pub(crate) fn size_bytes(text: &str) -> Result<usize, String> {
    const EXPECTED: &str = "write a whole number of bytes with an optional unit, `B`, `KB`, `KiB`, `MB` or `MiB`, e.g. `max_output = \"64KiB\"`";
    let (number, unit) = split_number(text).ok_or_else(|| EXPECTED.to_owned())?;
    let scale: u64 = match unit {
        "" | "B" => 1,
        "KB" | "kB" => 1_000,
        "KiB" => 1_024,
        "MB" => 1_000_000,
        "MiB" => 1_048_576,
        _ => return Err(format!("unknown unit `{unit}`: {EXPECTED}")),
    };
    let bytes = number
        .checked_mul(scale)
        .and_then(|bytes| usize::try_from(bytes).ok())
        .ok_or_else(|| format!("too large: {EXPECTED}"))?;
    if bytes == 0 {
        return Err("an empty output tells the model nothing: write a size above zero, e.g. `max_output = \"64KiB\"`".to_owned());
    }
    Ok(bytes)
}

/// `name:permits`: a name of `a-z`, `A-Z`, `0-9`, `_`, `-` and `.`, and at least one permit.
/// `"db:4"` → (`db`, 4).
pub(crate) fn concurrency(text: &str) -> Result<(String, usize), String> {
    const EXPECTED: &str = "write the limit's name and how many calls may hold it at once, e.g. `concurrency = \"db:4\"`";
    let (name, permits) = text.split_once(':').ok_or_else(|| EXPECTED.to_owned())?;
    let valid_name = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !valid_name {
        return Err(format!(
            "the name is 1 or more characters from `a-z`, `A-Z`, `0-9`, `_`, `-` and `.`: {EXPECTED}"
        ));
    }
    let permits: usize = permits
        .parse()
        .map_err(|_| format!("`{permits}` is not a whole number: {EXPECTED}"))?;
    if permits == 0 {
        return Err(format!("a limit of 0 lets no call run: {EXPECTED}"));
    }
    Ok((name.to_owned(), permits))
}

/// `"30s"` → (30, `"s"`): the leading digits and the rest, spaces around the unit allowed.
fn split_number(text: &str) -> Option<(u64, &str)> {
    let text = text.trim();
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let number = text[..digits].parse().ok()?;
    Some((number, text[digits..].trim()))
}

#[cfg(test)]
mod tests {
    use super::{concurrency, duration_ms, size_bytes};

    #[test]
    fn durations() {
        assert_eq!(duration_ms("30s"), Ok(30_000));
        assert_eq!(duration_ms("250ms"), Ok(250));
        assert_eq!(duration_ms("2m"), Ok(120_000));
        assert_eq!(duration_ms("1h"), Ok(3_600_000));
        assert!(duration_ms("0s").is_err());
        assert!(duration_ms("30").is_err());
        assert!(duration_ms("1.5s").is_err());
        assert!(duration_ms("soon").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(size_bytes("64KiB"), Ok(65_536));
        assert_eq!(size_bytes("2MB"), Ok(2_000_000));
        assert_eq!(size_bytes("4096"), Ok(4096));
        assert_eq!(size_bytes("1MiB"), Ok(1_048_576));
        assert!(size_bytes("0KiB").is_err());
        assert!(size_bytes("64 kilobytes").is_err());
    }

    #[test]
    fn limits() {
        assert_eq!(concurrency("db:4"), Ok(("db".to_owned(), 4)));
        assert!(concurrency("db").is_err());
        assert!(concurrency(":4").is_err());
        assert!(concurrency("db:0").is_err());
        assert!(concurrency("db:four").is_err());
        assert!(concurrency("my db:2").is_err());
    }
}
