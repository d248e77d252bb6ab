//! The formats against what mops' own npm packages print (markdown-table 3.0.4, filesize
//! 10.1.6 and `toLocaleString`, run with node on these values).

use super::*;

#[test]
fn sizes_as_filesize() {
    let cases: [(f64, &str); 11] = [
        (0.0, "0 B"),
        (360.0, "360 B"),
        (400_280.0, "390.9 KiB"),
        (-399_736.0, "-390.37 KiB"),
        (400_352.0, "390.97 KiB"),
        (1024.0, "1 KiB"),
        (1_048_576.0, "1 MiB"),
        (-1.0, "-1 B"),
        (196_608.0, "192 KiB"),
        (1536.0, "1.5 KiB"),
        (1_048_574.976, "1 MiB"),
    ];
    for (n, want) in cases {
        assert_eq!(size(n), want, "{n}");
    }
}

#[test]
fn numbers_as_to_locale_string() {
    assert_eq!(number(1_234_567), "1_234_567");
    assert_eq!(number(-7922), "-7_922");
    assert_eq!(number(0), "0");
    assert_eq!(number(999), "999");
}

#[test]
fn tables_as_markdown_table() {
    let rows = |r: &[&[&str]]| -> Vec<Vec<String>> {
        r.iter()
            .map(|row| row.iter().map(|c| c.to_string()).collect())
            .collect()
    };
    assert_eq!(
        markdown_table(&rows(&[&["", "10", "1000"], &["loop", "1_234", "56_789_012"], &["x", "", "7"]])),
        "|      |    10 |       1000 |\n| :--- | ----: | ---------: |\n| loop | 1_234 | 56_789_012 |\n| x    |       |          7 |"
    );
    assert_eq!(
        markdown_table(&rows(&[&["", "a"], &["r", "1"]])),
        "|    |  a |\n| :- | -: |\n| r  |  1 |"
    );
}

#[test]
fn percents_as_mops() {
    let plain = Style::default();
    let ci = Style {
        color: false,
        ci: true,
    };
    assert_eq!(percent(0.0, true, plain), "(0%)");
    assert_eq!(percent(12.3456, true, plain), "(+12.35%)");
    assert_eq!(percent(-3.0, false, plain), "-3.00%");
    assert_eq!(percent(1.5, true, ci), "$({\\color{red}+1.50\\\\%})$");
    assert_eq!(percent(0.0, false, ci), "${\\color{gray}0\\\\%}$");
    assert_eq!(change(5, 0), f64::INFINITY);
    assert_eq!(change(0, 0), 0.0);
}
