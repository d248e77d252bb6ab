use super::*;

#[test]
fn pct_handles_zero_base() {
    assert_eq!(pct(100, 105), 5.0);
    assert_eq!(pct(0, 0), 0.0);
    assert_eq!(pct(0, 1), f64::INFINITY);
}

#[test]
fn exactly_the_noise_counts_as_a_change() {
    let mut b = super::super::fixture::result("btree", "", "middle", "insert", 1, 1_000);
    b.instructions = 1_000;
    let mut n = b.clone();
    n.instructions = 1_020;
    assert_eq!(
        entry("k".into(), Some(b), Some(n), 2.0).change,
        Change::Regression
    );
}

#[test]
fn the_pages_are_priced_on_the_new_runs_host() {
    use super::super::fixture::{report, result};
    let base = report(vec![result("btree", "", "middle", "insert", 1, 1_000)]);
    let linux = compare(&base, &base, 2.0).about();
    assert!(
        linux.contains("(each costs 80,000 instructions under the memory tracker). "),
        "{linux}"
    );
    assert!(!linux.contains("Hosts:"), "{linux}");
    let mut mac = base.clone();
    mac.set_host(Some(Host::MacosArm64));
    let about = compare(&base, &mac, 2.0).about();
    assert!(
        about.contains(
            "(each costs 20,000 instructions under the memory tracker on this run's host, `macos-arm64`). "
        ),
        "{about}"
    );
    assert!(
        about.ends_with(" Hosts: `linux` (base), `macos-arm64` (new): their page charges differ."),
        "{about}"
    );
}
