//! What rho does to text a server controls before anyone sees it.
//!
//! Every string a server sends is hostile: [`terminal`] strips what a
//! terminal would obey, [`redact`] hides the secrets rho gave the server
//! should it echo them, and [`stderr`] keeps a bounded tail of a child's
//! diagnostics. Every human-output path and every log line goes through
//! here.

pub mod redact;
pub mod stderr;
pub mod terminal;

/// `n` with thousands separators: `163,838`.
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::grouped;

    #[test]
    fn counts_read_with_thousands_separators() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(163_838), "163,838");
        assert_eq!(grouped(16_777_316), "16,777,316");
    }
}
