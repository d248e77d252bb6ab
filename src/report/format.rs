//! Number formatting shared by every output, so a figure reads the same in report.md, the
//! terminal, the plots and comparisons.

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
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

/// Signed variant of [`thousands`]: `-1,024`, `0`, `+3` (the sign shows growth vs shrink).
pub fn signed_thousands(n: i64) -> String {
    match n {
        0 => "0".to_string(),
        n if n > 0 => format!("+{}", thousands(n as u64)),
        n => format!("-{}", thousands(n.unsigned_abs())),
    }
}

/// A per-row figure: whole numbers once they are large enough that decimals are noise,
/// one decimal below 100, two significant digits below 1.
pub fn per_row(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_string();
    }
    let a = v.abs();
    if a >= 100.0 {
        let sign = if v < 0.0 { "-" } else { "" };
        format!("{sign}{}", thousands(a.round() as u64))
    } else if a >= 1.0 || a == 0.0 {
        format!("{v:.1}")
    } else {
        format!("{:.*}", significant_decimals(a, 2), v)
    }
}

/// `407462` → `407.5K`, `57301658` → `57.3M`; below 1,000 the whole number.
pub fn compact(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_string();
    }
    const UNITS: [(f64, &str); 4] = [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")];
    let a = v.abs();
    let sign = if v < 0.0 { "-" } else { "" };
    for (i, &(scale, unit)) in UNITS.iter().enumerate() {
        if a >= scale {
            let scaled = (a / scale * 10.0).round() / 10.0;
            // 999,960 rounds to 1000.0K: show it as 1.0M instead.
            if scaled >= 1000.0 && i > 0 {
                let (bigger, bigger_unit) = UNITS[i - 1];
                return format!("{sign}{:.1}{bigger_unit}", a / bigger);
            }
            return format!("{sign}{scaled:.1}{unit}");
        }
    }
    if a >= 999.5 {
        format!("{sign}1.0K")
    } else if a >= 10.0 || a == 0.0 || a.fract() == 0.0 {
        format!("{sign}{}", a.round() as u64)
    } else {
        format!("{v:.1}")
    }
}

/// US dollars with two significant digits for sub-dollar amounts (`$0.0000054`), cents
/// above a dollar.
pub fn usd(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_string();
    }
    if v == 0.0 {
        return "$0".to_string();
    }
    let sign = if v < 0.0 { "-" } else { "" };
    let a = v.abs();
    if a >= 1.0 {
        format!("{sign}${a:.2}")
    } else {
        format!("{sign}${a:.*}", significant_decimals(a, 2))
    }
}

/// Decimals needed to show `digits` significant digits of `a` (0 < a < 1).
fn significant_decimals(a: f64, digits: i32) -> usize {
    let leading = a.log10().floor() as i32; // -6 for 0.0000054
    (digits - 1 - leading).max(0) as usize
}

/// A percentage change: `+5.00%`, `-0.37%`; infinite when the base was zero.
pub fn pct_change(p: f64) -> String {
    if p.is_nan() {
        "n/a".to_string()
    } else if p.is_infinite() {
        if p > 0.0 { "+inf%" } else { "-inf%" }.to_string()
    } else if p >= 0.0 {
        format!("+{p:.2}%")
    } else {
        format!("{p:.2}%")
    }
}

/// A multiplier with two decimals, as seed 004 prints it (`1.47`); `--` when there is none.
pub fn multiplier(x: Option<f64>) -> String {
    x.map_or("--".to_string(), |v| format!("{v:.2}"))
}

/// Log-axis tick label for 10^exp: `1`, `10`, `100`, `1k`, `10k`, `100k`, `1M`, ...;
/// `0.1`, `0.01` below one.
pub fn decade_label(exp: i32) -> String {
    if exp < 0 {
        return format!("{:.*}", exp.unsigned_abs() as usize, 10f64.powi(exp));
    }
    let (unit, base) = match exp {
        0..=2 => ("", 0),
        3..=5 => ("k", 3),
        6..=8 => ("M", 6),
        9..=11 => ("B", 9),
        _ => ("T", 12),
    };
    format!("{}{unit}", 10u64.pow((exp - base) as u32))
}

/// Wall time: `42.0 s`, or `12 min 5.3 s` once past a minute.
pub fn duration(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 60.0 {
        return format!("{seconds:.1} s");
    }
    let minutes = (seconds / 60.0).floor();
    format!("{minutes:.0} min {:.1} s", seconds - minutes * 60.0)
}

/// Memory: `9.5 GB` (decimal gigabytes, one decimal: the estimates are no finer).
pub fn gigabytes(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
}

/// Checks `f` on each input against its expected text, for the tests of formatters.
#[cfg(test)]
pub(crate) fn cases<T: Copy + std::fmt::Display>(f: fn(T) -> String, cases: &[(T, &str)]) {
    for &(v, want) in cases {
        assert_eq!(f(v), want, "{v}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_by_three() {
        cases(
            thousands,
            &[
                (0, "0"),
                (999, "999"),
                (1_000, "1,000"),
                (57_301_658, "57,301,658"),
            ],
        );
        cases(signed_thousands, &[(-1_024, "-1,024"), (3, "+3"), (0, "0")]);
    }

    #[test]
    fn compact_uses_one_decimal_and_carries_over_units() {
        cases(
            compact,
            &[
                (407_462.0, "407.5K"),
                (57_301_658.0, "57.3M"),
                (999_960.0, "1.0M"),
                (999.0, "999"),
                (0.0, "0"),
                (5.26, "5.3"),
                (1_000.0, "1.0K"),
            ],
        );
    }

    #[test]
    fn per_row_precision_follows_magnitude() {
        cases(
            per_row,
            &[
                (5_706.594, "5,707"),
                (57.34, "57.3"),
                (0.0123, "0.012"),
                (f64::NAN, "n/a"),
            ],
        );
    }

    #[test]
    fn usd_keeps_two_significant_digits() {
        cases(
            usd,
            &[
                (0.0000054, "$0.0000054"),
                (0.05, "$0.050"),
                (12.345, "$12.35"),
                (0.0, "$0"),
            ],
        );
    }

    #[test]
    fn decade_labels() {
        let labels: Vec<String> = (0..=7).map(decade_label).collect();
        assert_eq!(labels, ["1", "10", "100", "1k", "10k", "100k", "1M", "10M"]);
        assert_eq!(decade_label(-1), "0.1");
    }

    #[test]
    fn pct_and_duration() {
        cases(
            pct_change,
            &[
                (5.0, "+5.00%"),
                (-0.374, "-0.37%"),
                (f64::INFINITY, "+inf%"),
            ],
        );
        assert_eq!(duration(42.04), "42.0 s");
        assert_eq!(duration(725.3), "12 min 5.3 s");
    }
}
