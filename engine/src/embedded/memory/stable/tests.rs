use super::*;

fn mem(pages: u64) -> StableMemory {
    let mut m = StableMemory::new(StableImage::default(), 400 << 30);
    m.begin(u64::MAX, u64::MAX, false);
    assert_eq!(m.grow(pages), 0);
    m
}

#[test]
fn an_image_from_pages_holds_each_at_its_number_and_refuses_what_does_not_fit() {
    let bytes: Vec<(u64, Vec<u8>)> = (0..100u64)
        .map(|i| (i * 3, vec![i as u8 + 1; OS_PAGE]))
        .collect();
    let pages: Vec<(u64, &[u8])> = bytes.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    let image = StableImage::from_pages(19, &pages).unwrap();
    assert_eq!(image.stored_pages(), 100);
    let mut seen = Vec::new();
    image.for_each_page(|n, page| seen.push((n, page.to_vec())));
    assert_eq!(seen, bytes);

    let refused = |size: u64, pages: &[(u64, &[u8])]| {
        StableImage::from_pages(size, pages)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let page = [1u8; OS_PAGE];
    assert_eq!(
        refused(1, &[(16, &page)]),
        "stable page 16 is past the size of 1 Wasm pages"
    );
    assert_eq!(refused(1, &[(0, &page[..7])]), "stable page 0 of 7 bytes");
}

#[test]
fn write_across_page_boundary_dirties_two_pages_once() {
    let mut m = mem(1);
    assert_eq!(m.write(4090, &[7u8; 10]).unwrap(), 2);
    assert_eq!(m.write(4095, &[8u8; 2]).unwrap(), 0);
    let mut out = [0u8; 12];
    m.read(4089, &mut out).unwrap();
    assert_eq!(out, [0, 7, 7, 7, 7, 7, 8, 8, 7, 7, 7, 0]);
    assert_eq!(m.dirty_pages(), 2);
}

#[test]
fn rollback_restores_contents_and_size_and_snapshot_is_unaffected() {
    let mut m = mem(1);
    m.write(0, b"abc").unwrap();
    m.commit();
    let snap = m.image().clone();
    m.begin(u64::MAX, u64::MAX, false);
    m.write(1, b"XY").unwrap();
    m.grow(3);
    m.write(70000, b"z").unwrap();
    m.rollback();
    let mut out = [0u8; 3];
    m.read(0, &mut out).unwrap();
    assert_eq!(&out, b"abc");
    assert_eq!(m.size_wasm_pages(), 1);
    assert_eq!(m.image().stored_pages(), 1);
    let mut restored = StableMemory::new(snap, 400 << 30);
    restored.begin(u64::MAX, u64::MAX, false);
    restored.read(0, &mut out).unwrap();
    assert_eq!(&out, b"abc");
}

#[test]
fn bounds_and_limits() {
    let mut m = mem(1);
    assert_eq!(m.write(65535, &[1, 2]), Err(StableError::OutOfBounds));
    assert_eq!(
        m.read(u64::MAX, &mut [0u8; 2]),
        Err(StableError::OutOfBounds)
    );
    m.begin(1, u64::MAX, false);
    assert_eq!(m.write(0, &[1; 4097]), Err(StableError::DirtyPageLimit(1)));
    let mut small = StableMemory::new(StableImage::default(), 2 * WASM_PAGE);
    assert_eq!(small.grow(2), 0);
    assert_eq!(small.grow(1), -1);
}

#[test]
fn repeated_small_accesses_count_each_page_once() {
    let mut m = mem(1);
    m.begin(2, 3, false);
    assert_eq!(m.write(10, b"a").unwrap(), 1);
    assert_eq!(m.write(11, b"b").unwrap(), 0);
    assert_eq!(m.write(5000, b"c").unwrap(), 1);
    // Page 0 again, after another page: still not newly dirty.
    assert_eq!(m.write(12, b"d").unwrap(), 0);
    assert_eq!(m.dirty_pages(), 2);
    assert_eq!(m.write(9000, b"e"), Err(StableError::DirtyPageLimit(2)));
    let mut out = [0u8; 3];
    m.read(10, &mut out).unwrap();
    assert_eq!(&out, b"abd");
    // Pages 0 and 1 are accessed; page 4 is the third and last allowed.
    m.read(20000, &mut out).unwrap();
    m.read(20001, &mut out).unwrap();
    m.read(4999, &mut out).unwrap();
    assert_eq!(
        m.read(30000, &mut out),
        Err(StableError::AccessedPageLimit(3))
    );
    m.rollback();
    assert_eq!(m.image().stored_pages(), 0);
    m.begin(u64::MAX, u64::MAX, false);
    m.read(10, &mut out).unwrap();
    assert_eq!(out, [0, 0, 0]);
}

#[test]
fn accesses_within_one_page_count_and_roll_back_as_any_other() {
    // A read within one page copies without the per-page iterator; these are the
    // facts of small reads and writes, around that path and through it.
    let mut m = mem(2);
    m.write(0, b"base").unwrap();
    m.commit();
    m.begin(2, 3, true);
    let mut out = [0u8; 4];
    m.read(0, &mut out).unwrap();
    assert_eq!(&out, b"base");
    assert_eq!(m.write(1, b"A").unwrap(), 1);
    assert_eq!(m.write(2, b"B").unwrap(), 0);
    assert_eq!(m.write(4095, b"C").unwrap(), 0);
    m.read(0, &mut out).unwrap();
    assert_eq!(&out, b"bABe");
    assert_eq!(m.write(WASM_PAGE + 5, b"D").unwrap(), 1);
    assert_eq!(m.write(WASM_PAGE + 6, b"E").unwrap(), 0);
    assert_eq!(m.dirty_pages(), 2);
    assert_eq!((m.wasm_pages_accessed(), m.wasm_pages_written()), (2, 2));
    assert_eq!(m.wasm_pages_counted(), 4);
    // A third page is past the dirty limit of 2, also when it starts in a page written
    // before; the page written last can still be written.
    assert_eq!(m.write(8192, b"F"), Err(StableError::DirtyPageLimit(2)));
    assert_eq!(m.write(4095, b"GH"), Err(StableError::DirtyPageLimit(2)));
    assert_eq!(m.write(WASM_PAGE + 7, b"I").unwrap(), 0);
    // Reads within pages already accessed are free; a new one is the third and last.
    m.read(WASM_PAGE, &mut out).unwrap();
    m.read(3, &mut out[..1]).unwrap();
    m.read(20000, &mut out).unwrap();
    assert_eq!(
        m.read(30000, &mut out),
        Err(StableError::AccessedPageLimit(3))
    );
    m.rollback();
    m.begin(u64::MAX, u64::MAX, false);
    m.read(0, &mut out).unwrap();
    assert_eq!(&out, b"base");
    m.read(WASM_PAGE + 5, &mut out[..2]).unwrap();
    assert_eq!(&out[..2], [0, 0]);
    assert_eq!(m.image().stored_pages(), 1);
}

#[test]
fn wasm_pages_are_counted_once_each_when_asked() {
    let mut m = mem(4);
    m.begin(u64::MAX, u64::MAX, true);
    let mut out = [0u8; 2];
    // One byte of Wasm page 0: the first read of its OS page is the host's, unseen; the
    // second maps the Wasm page.
    m.read(5, &mut out[..1]).unwrap();
    assert_eq!((m.wasm_pages_accessed(), m.wasm_pages_written()), (0, 0));
    m.read(6, &mut out[..1]).unwrap();
    assert_eq!((m.wasm_pages_accessed(), m.wasm_pages_written()), (1, 0));
    // Across the boundary of Wasm pages 0 and 1, two untouched OS pages: unseen. A range
    // with a touched OS page maps every Wasm page it spans: the last OS page of page 1
    // and the first of page 2 (untouched) map both.
    m.read(WASM_PAGE - 1, &mut out).unwrap();
    assert_eq!(m.wasm_pages_accessed(), 1);
    m.read(2 * WASM_PAGE - 4096, &mut out[..1]).unwrap();
    m.read(2 * WASM_PAGE - 1, &mut out).unwrap();
    assert_eq!((m.wasm_pages_accessed(), m.wasm_pages_written()), (3, 0));
    // A write to an accessed page writes it; one to page 3 accesses and writes it.
    m.write(10, b"x").unwrap();
    m.write(3 * WASM_PAGE + 7, b"y").unwrap();
    assert_eq!((m.wasm_pages_accessed(), m.wasm_pages_written()), (4, 2));
    // Nothing for an empty access; a new message starts from nothing.
    m.read(2 * WASM_PAGE + 4096, &mut []).unwrap();
    assert_eq!(m.wasm_pages_accessed(), 4);
    m.commit();
    m.begin(u64::MAX, u64::MAX, true);
    assert_eq!((m.wasm_pages_accessed(), m.wasm_pages_written()), (0, 0));
    // Without counting, nothing is counted.
    m.begin(u64::MAX, u64::MAX, false);
    m.write(0, b"z").unwrap();
    assert_eq!((m.wasm_pages_accessed(), m.wasm_pages_written()), (0, 0));
}

#[test]
fn image_from_bytes_rounds_up_to_wasm_pages() {
    let image = StableImage::from_bytes(b"ABCDE");
    assert_eq!(image.size_wasm_pages(), 1);
    assert_eq!(image.stored_pages(), 1);
}
