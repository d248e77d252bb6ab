use super::*;

/// Which of the `pages` OS pages from `base` hold memory (`mincore`).
fn resident(base: usize, pages: usize) -> usize {
    let mut flags = vec![0u8; pages];
    // SAFETY: `base` is page-aligned and `pages` pages from it lie in our own reservation.
    let rc = unsafe { libc::mincore(base as *mut _, pages * OS_PAGE, flags.as_mut_ptr()) };
    assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
    flags.iter().filter(|&&f| f & 1 == 1).count()
}

/// A message that copies the old bytes of `pages`, then its end (successful).
fn message(heap: &HeapRegion, pages: std::ops::Range<usize>) {
    for page in pages {
        heap.keep_old_bytes(page);
    }
    heap.keep(&[]).unwrap();
}

#[test]
fn undo_pages_stay_while_messages_refill_them_and_go_after_one_that_does_not() {
    let pages = UNDO_KEPT_PAGES + 1_000;
    let len = pages * OS_PAGE;
    let base = reserve(len).unwrap();
    protect(base, len, libc::PROT_READ | libc::PROT_WRITE).unwrap();
    let undo = reserve(len).unwrap();
    protect(undo, len, libc::PROT_READ | libc::PROT_WRITE).unwrap();
    let heap = HeapRegion::new(base as usize, len, len, undo as usize, HeapWrites::Faults);

    // More undo pages than are kept regardless: each message refills all of them.
    message(&heap, 0..pages);
    assert_eq!(resident(undo as usize, pages), pages);
    message(&heap, 0..pages);
    assert_eq!(heap.undo_used.load(Ordering::Acquire), pages);
    assert_eq!(resident(undo as usize, pages), pages);
    // Half of them: still the working set of the messages.
    message(&heap, 0..pages / 2);
    assert_eq!(resident(undo as usize, pages), pages);
    // Fewer than half: all are given back.
    message(&heap, 0..pages / 2 - 1);
    assert_eq!(heap.undo_used.load(Ordering::Acquire), 0);
    assert_eq!(resident(undo as usize, pages), 0);
    // Below the count kept regardless, they stay whatever a message fills.
    message(&heap, 0..10);
    message(&heap, 10..11);
    assert_eq!(resident(undo as usize, pages), 11);

    // SAFETY: our own reservations, which nothing refers to any more.
    unsafe {
        libc::munmap(base.cast(), len);
        libc::munmap(undo.cast(), len);
    }
}
