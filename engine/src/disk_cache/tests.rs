use super::*;

fn temp(name: &str) -> PathBuf {
    crate::testing::fresh_temp_dir("disk-cache", name)
}

#[test]
fn entries_round_trip_and_damage_is_detected() {
    let dir = temp("round-trip");
    let key = [7u8; 32];
    assert!(matches!(
        read(&dir, MODULES, &key).unwrap(),
        Lookup::Missing
    ));
    write(&dir, MODULES, &key, b"meta", b"payload bytes").unwrap();
    let Lookup::Found(entry) = read(&dir, MODULES, &key).unwrap() else {
        panic!("the entry just written")
    };
    assert_eq!(
        (entry.meta(), entry.payload()),
        (&b"meta"[..], &b"payload bytes"[..])
    );
    let path = entry_path(&dir, MODULES, &key);
    let good = std::fs::read(&path).unwrap();
    let damaged = |bytes: &[u8]| {
        std::fs::write(&path, bytes).unwrap();
        match read(&dir, MODULES, &key).unwrap() {
            Lookup::Damaged(e) => format!("{e:#}"),
            other => panic!("{other:?}"),
        }
    };
    let mut flipped = good.clone();
    *flipped.last_mut().unwrap() ^= 1;
    assert!(damaged(&flipped).contains("checksum mismatch"));
    assert!(damaged(&good[..good.len() - 1]).contains("truncated or padded"));
    assert!(damaged(&good[..10]).contains("truncated: 10 bytes"));
    let wasm_like = [&b"\0asm"[..], &[0u8; HEADER]].concat();
    assert!(damaged(&wasm_like).contains("not an icbench cache entry"));
    // A whole entry of another key, copied over this one.
    write(&dir, MODULES, &[8u8; 32], b"meta", b"payload bytes").unwrap();
    let other = std::fs::read(entry_path(&dir, MODULES, &[8u8; 32])).unwrap();
    assert!(damaged(&other).contains("made for another key"));
    let mut newer = good.clone();
    newer[8] = 4;
    assert!(damaged(&newer).contains("format version 4, not 3"));
    // The payload starts on a page of the file; the zeros before it are checked too.
    assert_eq!(entry.payload_file().1, PAYLOAD_ALIGN as u64);
    assert_eq!(good.len(), PAYLOAD_ALIGN + b"payload bytes".len());
    let mut padding = good.clone();
    padding[PAYLOAD_ALIGN - 1] = 1;
    assert!(damaged(&padding).contains("nonzero bytes before the payload"));

    std::fs::write(dir.join(MODULES).join(".tmp-left-over"), b"x").unwrap();
    std::fs::write(dir.join(MODULES).join("user-file"), b"x").unwrap();
    let u = usage(&dir).unwrap();
    assert_eq!(
        u.kinds,
        vec![
            (MODULES, 2, good.len() as u64 + other.len() as u64),
            (STATES, 0, 0),
            (WARM, 0, 0),
            (MOPS, 0, 0)
        ]
    );
    // The two entries, the stamp of the one read and the temporary file; the user's
    // file stays.
    assert!(stamp::path(&path).is_file());
    assert_eq!(clear(&dir).unwrap(), 4);
    assert_eq!(
        usage(&dir).unwrap().kinds,
        vec![(MODULES, 0, 0), (STATES, 0, 0), (WARM, 0, 0), (MOPS, 0, 0)]
    );
    assert!(dir.join(MODULES).join("user-file").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(clear(&dir).unwrap(), 0);
}

#[cfg(target_os = "linux")]
#[test]
fn checking_a_large_entry_leaves_none_of_its_payload_resident_and_finds_damage_in_any_chunk() {
    let dir = temp("large");
    let key = [5u8; 32];
    // Three chunks of the checksum's walk, the last one partial.
    let payload: Vec<u8> = (0..2 * SUM_CHUNK + 12_345)
        .map(|i| (i % 251) as u8)
        .collect();
    write(&dir, STATES, &key, b"meta", &payload).unwrap();
    let Lookup::Found(entry) = read(&dir, STATES, &key).unwrap() else {
        panic!("the entry just written")
    };
    let FileBytes::Mapped { ptr, .. } = entry.bytes else {
        panic!("a file is mapped on Linux")
    };
    // The header and meta page, read by the check, and at most what the kernel maps
    // around that page's fault (64 KiB by default, of what its readahead brought in):
    // none of the rest of the summed payload.
    let resident = crate::testing::mapping_kb(ptr, "Rss");
    assert!(
        (PAYLOAD_ALIGN / 1024..=64).contains(&resident),
        "{resident} KiB"
    );
    assert!(entry.payload() == &payload[..]);
    drop(entry);

    let path = entry_path(&dir, STATES, &key);
    let good = std::fs::read(&path).unwrap();
    let mut flipped = good.clone();
    flipped[PAYLOAD_ALIGN + SUM_CHUNK + 7] ^= 0x10;
    std::fs::write(&path, &flipped).unwrap();
    match read(&dir, STATES, &key).unwrap() {
        Lookup::Damaged(e) => assert!(format!("{e:#}").contains("checksum mismatch"), "{e:#}"),
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_stamp_spares_the_sum_of_an_unchanged_state_and_no_more() {
    use std::time::Duration;
    let dir = temp("stamp");
    let key = [6u8; 32];
    let read_now = |kind| read_settled(&dir, kind, &key, Duration::ZERO).unwrap();
    let found = |kind| match read_now(kind) {
        Lookup::Found(entry) => entry.payload().to_vec(),
        other => panic!("{other:?}"),
    };
    let damaged = |kind| match read_now(kind) {
        Lookup::Damaged(e) => assert!(format!("{e:#}").contains("checksum mismatch"), "{e:#}"),
        other => panic!("{other:?}"),
    };
    // A change one tick of the kernel's coarse clock after the stamp's `stat`, as a real
    // one is at least [`stamp::SETTLE`] after it.
    let flip = |path: &Path| {
        std::thread::sleep(Duration::from_millis(50));
        let mut bytes = std::fs::read(path).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(path, bytes).unwrap();
    };
    // What a stamp of the file as it is now would say, as if the sum had passed.
    let forge = |path: &Path| {
        let crc = std::fs::read(path).unwrap()[60..64].try_into().unwrap();
        let identity = stamp::Identity::of(&std::fs::metadata(path).unwrap());
        let stamp = stamp::Stamp::new(identity, crc, std::time::SystemTime::now(), Duration::ZERO);
        stamp::write(path, &stamp).unwrap();
    };
    for kind in [STATES, MODULES] {
        write(&dir, kind, &key, b"meta", b"payload").unwrap();
        let path = entry_path(&dir, kind, &key);
        if kind == STATES {
            // Its writer summed it: the stamp vouches at once, and a read keeps it so.
            assert!(stamp::read(&path).unwrap().checked);
            assert!(matches!(read(&dir, kind, &key).unwrap(), Lookup::Found(_)));
            assert!(stamp::read(&path).unwrap().checked);
            std::fs::remove_file(stamp::path(&path)).unwrap();
        }
        // Without the writer's stamp, a file that just changed is summed, and its stamp
        // does not vouch for it yet.
        assert!(matches!(read(&dir, kind, &key).unwrap(), Lookup::Found(_)));
        assert!(!stamp::read(&path).unwrap().checked);
        assert_eq!(found(kind), b"payload");
        assert!(stamp::read(&path).unwrap().checked);
        // Any change through the file system moves ctime: the stamp no longer matches.
        flip(&path);
        damaged(kind);
        // A new file under the entry's name is another inode: summed again.
        write(&dir, kind, &key, b"meta", b"payload").unwrap();
        assert_eq!(found(kind), b"payload");
        // Damage a stamp vouches for (one a disk could cause below the file system) is
        // not summed for a state; a module is summed at every read.
        flip(&path);
        forge(&path);
        if kind == STATES {
            assert_eq!(found(kind), b"payloae");
        } else {
            damaged(kind);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_streamed_entry_is_the_written_one_and_a_failed_stream_leaves_nothing() {
    let dir = temp("streamed");
    let key = [3u8; 32];
    write_streamed(&dir, STATES, &key, b"meta", |w| {
        w.write_all(b"payload ")?;
        w.write_all(&[b'x'; 3 << 20])?;
        w.write_all(b" end")
    })
    .unwrap();
    let streamed = std::fs::read(entry_path(&dir, STATES, &key)).unwrap();
    let payload = [&b"payload "[..], &[b'x'; 3 << 20], b" end"].concat();
    write(&dir, STATES, &key, b"meta", &payload).unwrap();
    assert_eq!(
        streamed,
        std::fs::read(entry_path(&dir, STATES, &key)).unwrap()
    );
    match read(&dir, STATES, &key).unwrap() {
        Lookup::Found(entry) => assert_eq!(
            (entry.meta(), entry.payload()),
            (&b"meta"[..], &payload[..])
        ),
        other => panic!("{other:?}"),
    }

    let other = [4u8; 32];
    let failed = write_streamed(&dir, STATES, &other, b"meta", |w| {
        w.write_all(b"half")?;
        Err(std::io::Error::other("the state could not be made"))
    })
    .unwrap_err();
    assert!(
        format!("{failed:#}").contains("the state could not be made"),
        "{failed:#}"
    );
    assert!(matches!(
        read(&dir, STATES, &other).unwrap(),
        Lookup::Missing
    ));
    // Only the first entry stays, with the stamp its read left.
    let first = entry_path(&dir, STATES, &key);
    assert_eq!(files(&dir, STATES).unwrap(), [stamp::path(&first), first]);
    let all = std::fs::read_dir(dir.join(STATES)).unwrap().count();
    assert_eq!(all, 2, "nothing else is left");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_least_recently_used_entries_go_first() {
    use std::time::{Duration, SystemTime};
    let dir = temp("prune");
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let age = |key: u8, secs: u64| {
        std::fs::File::options()
            .write(true)
            .open(entry_path(&dir, STATES, &[key; 32]))
            .unwrap()
            .set_modified(t0 + Duration::from_secs(secs))
            .unwrap();
    };
    let bound = KEEP[kind_index(STATES)] as u8;
    let present = || -> Vec<u8> {
        (1..=bound + 2)
            .filter(|k| entry_path(&dir, STATES, &[*k; 32]).is_file())
            .collect()
    };
    // As many states as the cache's bound: nothing goes.
    for key in 1..=bound {
        write(&dir, STATES, &[key; 32], b"", b"state").unwrap();
        age(key, key as u64);
    }
    assert_eq!(present(), (1..=bound).collect::<Vec<u8>>());
    // Entry 1 is read (so used most recently); one more state then evicts entry 2.
    assert!(matches!(
        read(&dir, STATES, &[1; 32]).unwrap(),
        Lookup::Found(_)
    ));
    let last = bound + 1;
    write(&dir, STATES, &[last; 32], b"", b"state").unwrap();
    let mut kept = vec![1];
    kept.extend(3..=last);
    assert_eq!(present(), kept);
    // The entry just written stays even when it is the oldest by its time stamp.
    age(last, 0);
    assert_eq!(
        prune(&dir, STATES, 1, &[last; 32]).unwrap(),
        bound as usize - 1
    );
    assert_eq!(present(), vec![last]);
    // With their stamps, and a stamp whose entry is gone.
    let stamp_of = |key: u8| stamp::path(&entry_path(&dir, STATES, &[key; 32]));
    assert!(!stamp_of(1).exists());
    std::fs::write(stamp_of(2), b"left over").unwrap();
    prune(&dir, STATES, 1, &[last; 32]).unwrap();
    assert!(!stamp_of(2).exists());
    // Modules are bounded apart: states never evict them.
    write(&dir, MODULES, &[9; 32], b"", b"module").unwrap();
    assert_eq!(prune(&dir, STATES, 1, &[last + 1; 32]).unwrap(), 1);
    assert!(entry_path(&dir, MODULES, &[9; 32]).is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}
