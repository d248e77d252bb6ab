// icbench's Motoko canister: the users table of the bench canister (bench.did) in three
// Motoko stores, in a persistent actor (enhanced orthogonal persistence: the heap is kept
// across upgrades, nothing is serialized):
//   mo_map       mo:core's Map<Nat64, Text>, a B-tree on the heap;
//   mo_pure_map  mo:core's pure/Map<Nat64, Text>, a red-black tree on the heap, replaced
//                by a new version at every insert;
//   mo_region    the values in a Region (stable memory), appended, each after its length
//                as a Nat32, and an index Map<Nat64, Nat64> from id to offset on the heap.
// Each row's value is a Text of its own (a copy of the payload, as a decoded argument would
// be), so that a row holds its bytes as the Rust stores' rows do.
// `instructions` counts the store work alone (ic0.performance_counter(0) around it); the
// collector runs after the message and is charged to it, not counted there.

import Map "mo:core/Map";
import PureMap "mo:core/pure/Map";
import Region "mo:core/Region";
import Nat64 "mo:core/Nat64";
import Prim "mo:⛔";

persistent actor {
  type InsertReport = {
    rows_inserted : Nat64;
    rows_replaced : Nat64;
    instructions : Nat64;
    heap_pages : Nat64;
    stable_pages : Nat64;
  };
  type ReadReport = {
    rows_found : Nat64;
    bytes_read : Nat64;
    instructions : Nat64;
    heap_pages : Nat64;
    stable_pages : Nat64;
  };
  type InsertResult = { #Ok : InsertReport; #Err : Text };
  type ReadResult = { #Ok : ReadReport; #Err : Text };
  type Nat64Result = { #Ok : Nat64; #Err : Text };
  type Stats = {
    btree_rows : Nat64;
    sqlite_rows : Nat64;
    heap_pages : Nat64;
    stable_pages : Nat64;
    btree_stable_pages : ?Nat64;
    sqlite_page_count : Nat64;
    sqlite_page_size : Nat64;
    sqlite_freelist_count : Nat64;
    journal_mode : Text;
    payload_size : Nat64;
  };
  type MotokoStats = {
    map_rows : Nat64;
    pure_map_rows : Nat64;
    region_rows : Nat64;
    region_pages : Nat64;
    heap_size : Nat64;
    memory_size : Nat64;
    max_live_size : Nat64;
    total_allocation : Nat64;
    reclaimed : Nat64;
    mutator_instructions : Nat64;
    collector_instructions : Nat64;
  };

  // The limits of bench_types::limits::users.
  transient let MAX_ROWS_PER_CALL : Nat = 100_000_000;
  transient let MAX_IDS_PER_CALL : Nat = 100_000;
  transient let MAX_ID : Nat = 18_446_744_073_709_551_615;
  transient let MAX_PAYLOAD_SIZE : Nat64 = 1_048_576;
  transient let PAGE : Nat64 = 65_536;
  // Before each value in the region: its length.
  transient let LEN_BYTES : Nat64 = 4;

  let map = Map.empty<Nat64, Text>();
  var pureMap = PureMap.empty<Nat64, Text>();
  // Made at the first insert, so that a canister of the other stores has no region.
  var region : ?Region.Region = null;
  let regionIndex = Map.empty<Nat64, Nat64>();
  var regionEnd : Nat64 = 0;
  var payloadSize : Nat64 = 100;
  // The payload's bytes, built once per size.
  transient var payload : ?Blob = null;

  func heapPages() : Nat64 = Prim.natToNat64(Prim.rts_memory_size()) / PAGE;
  func stablePages() : Nat64 = Prim.natToNat64(Prim.rts_stable_memory_size());

  func payloadBlob() : Blob {
    switch payload {
      case (?p) p;
      case null {
        let n = Prim.nat64ToNat(payloadSize);
        let bytes = Prim.Array_tabulate<Nat8>(n, func i = Prim.natToNat8(97 + i % 26));
        let p = Prim.arrayToBlob(bytes);
        payload := ?p;
        p;
      };
    };
  };

  // The row's own copy of the payload.
  func value(bytes : Blob) : Text {
    switch (Prim.decodeUtf8(bytes)) {
      case (?t) t;
      case null Prim.trap("the payload is ASCII");
    };
  };

  // Ids offset, offset + step, ... exactly `count` of them, checked as ids.rs checks them.
  func sequence(offset : Nat64, step : Nat64, count : Nat64) : ?Text {
    let n = Prim.nat64ToNat(count);
    if (n > MAX_ROWS_PER_CALL) {
      return ?("count " # debug_show n # " exceeds MAX_ROWS_PER_CALL (" # debug_show MAX_ROWS_PER_CALL # ")");
    };
    if (step == 0) return ?"step must be at least 1";
    if (count > 0) {
      let last = Prim.nat64ToNat(offset) + Prim.nat64ToNat(step) * Prim.nat64ToNat(count - 1);
      if (last > MAX_ID) {
        return ?("ids overflow u64: offset " # debug_show offset # " + step " # debug_show step # " * (count " # debug_show count # " - 1) > " # debug_show MAX_ID);
      };
    };
    null;
  };

  func list(ids : [Nat64]) : ?Text {
    if (ids.size() > MAX_IDS_PER_CALL) {
      return ?("count " # debug_show ids.size() # " exceeds MAX_IDS_PER_CALL (" # debug_show MAX_IDS_PER_CALL # ")");
    };
    null;
  };

  func insertReport(inserted : Nat64, replaced : Nat64, instructions : Nat64) : InsertResult {
    #Ok {
      rows_inserted = inserted;
      rows_replaced = replaced;
      instructions;
      heap_pages = heapPages();
      stable_pages = stablePages();
    };
  };

  func readReport(found : Nat64, bytes : Nat64, instructions : Nat64) : ReadResult {
    #Ok {
      rows_found = found;
      bytes_read = bytes;
      instructions;
      heap_pages = heapPages();
      stable_pages = stablePages();
    };
  };

  // The stores: one insert, one lookup and one scan each, on any id iterator.

  type Ids = { next : () -> ?Nat64 };

  func seqIds(offset : Nat64, step : Nat64, count : Nat64) : Ids {
    var i : Nat64 = 0;
    { next = func() : ?Nat64 { if (i == count) null else { let id = offset + i * step; i += 1; ?id } } };
  };

  func listIds(ids : [Nat64]) : Ids {
    var i = 0;
    { next = func() : ?Nat64 { if (i == ids.size()) null else { let id = ids[i]; i += 1; ?id } } };
  };

  type Store = {
    insert : (Ids, Blob) -> (Nat64, Nat64);
    get : Ids -> (Nat64, Nat64);
    scan : (Nat64, Nat64) -> (Nat64, Nat64);
  };

  func mapInsert(ids : Ids, bytes : Blob) : (Nat64, Nat64) {
    var inserted : Nat64 = 0;
    var replaced : Nat64 = 0;
    loop {
      switch (ids.next()) {
        case null return (inserted, replaced);
        case (?id) {
          if (Map.insert(map, Nat64.compare, id, value(bytes))) inserted += 1 else replaced += 1;
        };
      };
    };
  };

  func mapGet(ids : Ids) : (Nat64, Nat64) {
    var found : Nat64 = 0;
    var bytes : Nat64 = 0;
    loop {
      switch (ids.next()) {
        case null return (found, bytes);
        case (?id) {
          switch (Map.get(map, Nat64.compare, id)) {
            case (?v) { found += 1; bytes += Prim.natToNat64(v.size()) };
            case null {};
          };
        };
      };
    };
  };

  func mapScan(offset : Nat64, count : Nat64) : (Nat64, Nat64) {
    var found : Nat64 = 0;
    var bytes : Nat64 = 0;
    let entries = Map.entriesFrom(map, Nat64.compare, offset);
    while (found < count) {
      switch (entries.next()) {
        case null return (found, bytes);
        case (?(_, v)) { found += 1; bytes += Prim.natToNat64(v.size()) };
      };
    };
    (found, bytes);
  };

  func pureInsert(ids : Ids, bytes : Blob) : (Nat64, Nat64) {
    var inserted : Nat64 = 0;
    var replaced : Nat64 = 0;
    loop {
      switch (ids.next()) {
        case null return (inserted, replaced);
        case (?id) {
          let (next, isNew) = PureMap.insert(pureMap, Nat64.compare, id, value(bytes));
          pureMap := next;
          if isNew inserted += 1 else replaced += 1;
        };
      };
    };
  };

  func pureGet(ids : Ids) : (Nat64, Nat64) {
    var found : Nat64 = 0;
    var bytes : Nat64 = 0;
    loop {
      switch (ids.next()) {
        case null return (found, bytes);
        case (?id) {
          switch (PureMap.get(pureMap, Nat64.compare, id)) {
            case (?v) { found += 1; bytes += Prim.natToNat64(v.size()) };
            case null {};
          };
        };
      };
    };
  };

  // pure/Map has no iterator from a key: a scan walks the tree from its smallest entry,
  // as a Motoko developer with this map must.
  func pureScan(offset : Nat64, count : Nat64) : (Nat64, Nat64) {
    var found : Nat64 = 0;
    var bytes : Nat64 = 0;
    let entries = PureMap.entries(pureMap);
    while (found < count) {
      switch (entries.next()) {
        case null return (found, bytes);
        case (?(id, v)) {
          if (id >= offset) { found += 1; bytes += Prim.natToNat64(v.size()) };
        };
      };
    };
    (found, bytes);
  };

  func theRegion() : Region.Region {
    switch region {
      case (?r) r;
      case null { let r = Region.new(); region := ?r; r };
    };
  };

  func regionInsert(ids : Ids, bytes : Blob) : (Nat64, Nat64) {
    let r = theRegion();
    let len = Prim.natToNat64(bytes.size());
    var inserted : Nat64 = 0;
    var replaced : Nat64 = 0;
    loop {
      switch (ids.next()) {
        case null return (inserted, replaced);
        case (?id) {
          let at = regionEnd;
          regionEnd += LEN_BYTES + len;
          let pages = (regionEnd + PAGE - 1) / PAGE;
          let have = Region.size(r);
          if (pages > have) {
            if (Region.grow(r, pages - have) == 0xFFFF_FFFF_FFFF_FFFF) {
              Prim.trap("the region cannot grow to " # debug_show pages # " pages");
            };
          };
          Region.storeNat32(r, at, Prim.nat64ToNat32(len));
          Region.storeBlob(r, at + LEN_BYTES, bytes);
          // An existing id's old value stays where it is: the log only grows.
          if (Map.insert(regionIndex, Nat64.compare, id, at)) inserted += 1 else replaced += 1;
        };
      };
    };
  };

  func regionRead(r : Region.Region, at : Nat64) : Nat64 {
    let len = Region.loadNat32(r, at);
    let v = Region.loadBlob(r, at + LEN_BYTES, Prim.nat32ToNat(len));
    Prim.natToNat64(v.size());
  };

  func regionGet(ids : Ids) : (Nat64, Nat64) {
    var found : Nat64 = 0;
    var bytes : Nat64 = 0;
    let r = theRegion();
    loop {
      switch (ids.next()) {
        case null return (found, bytes);
        case (?id) {
          switch (Map.get(regionIndex, Nat64.compare, id)) {
            case (?at) { found += 1; bytes += regionRead(r, at) };
            case null {};
          };
        };
      };
    };
  };

  func regionScan(offset : Nat64, count : Nat64) : (Nat64, Nat64) {
    var found : Nat64 = 0;
    var bytes : Nat64 = 0;
    let r = theRegion();
    let entries = Map.entriesFrom(regionIndex, Nat64.compare, offset);
    while (found < count) {
      switch (entries.next()) {
        case null return (found, bytes);
        case (?(_, at)) { found += 1; bytes += regionRead(r, at) };
      };
    };
    (found, bytes);
  };

  transient let MAP : Store = { insert = mapInsert; get = mapGet; scan = mapScan };
  transient let PURE : Store = { insert = pureInsert; get = pureGet; scan = pureScan };
  transient let REGION : Store = { insert = regionInsert; get = regionGet; scan = regionScan };

  func counted(work : () -> (Nat64, Nat64)) : ((Nat64, Nat64), Nat64) {
    let start = Prim.performanceCounter(0);
    let result = work();
    (result, Prim.performanceCounter(0) - start);
  };

  func addSeq(store : Store, offset : Nat64, step : Nat64, count : Nat64) : InsertResult {
    switch (sequence(offset, step, count)) {
      case (?e) #Err e;
      case null {
        let bytes = payloadBlob();
        let ids = seqIds(offset, step, count);
        let ((inserted, replaced), instructions) = counted(func() : (Nat64, Nat64) = store.insert(ids, bytes));
        insertReport(inserted, replaced, instructions);
      };
    };
  };

  func addList(store : Store, ids : [Nat64]) : InsertResult {
    switch (list(ids)) {
      case (?e) #Err e;
      case null {
        let bytes = payloadBlob();
        let it = listIds(ids);
        let ((inserted, replaced), instructions) = counted(func() : (Nat64, Nat64) = store.insert(it, bytes));
        insertReport(inserted, replaced, instructions);
      };
    };
  };

  func getSeq(store : Store, offset : Nat64, step : Nat64, count : Nat64) : ReadResult {
    switch (sequence(offset, step, count)) {
      case (?e) #Err e;
      case null {
        let ids = seqIds(offset, step, count);
        let ((found, bytes), instructions) = counted(func() : (Nat64, Nat64) = store.get(ids));
        readReport(found, bytes, instructions);
      };
    };
  };

  func getList(store : Store, ids : [Nat64]) : ReadResult {
    switch (list(ids)) {
      case (?e) #Err e;
      case null {
        let it = listIds(ids);
        let ((found, bytes), instructions) = counted(func() : (Nat64, Nat64) = store.get(it));
        readReport(found, bytes, instructions);
      };
    };
  };

  func scanFrom(store : Store, offset : Nat64, count : Nat64) : ReadResult {
    if (Prim.nat64ToNat(count) > MAX_ROWS_PER_CALL) {
      return #Err("count " # debug_show count # " exceeds MAX_ROWS_PER_CALL (" # debug_show MAX_ROWS_PER_CALL # ")");
    };
    let ((found, bytes), instructions) = counted(func() : (Nat64, Nat64) = store.scan(offset, count));
    readReport(found, bytes, instructions);
  };

  // (offset, step, count); an existing id is overwritten and counted as replaced.
  public func add_users_mo_map(offset : Nat64, step : Nat64, count : Nat64) : async InsertResult { addSeq(MAP, offset, step, count) };
  public func add_users_mo_pure_map(offset : Nat64, step : Nat64, count : Nat64) : async InsertResult { addSeq(PURE, offset, step, count) };
  public func add_users_mo_region(offset : Nat64, step : Nat64, count : Nat64) : async InsertResult { addSeq(REGION, offset, step, count) };
  public func add_users_mo_map_ids(ids : [Nat64]) : async InsertResult { addList(MAP, ids) };
  public func add_users_mo_pure_map_ids(ids : [Nat64]) : async InsertResult { addList(PURE, ids) };
  public func add_users_mo_region_ids(ids : [Nat64]) : async InsertResult { addList(REGION, ids) };

  // Point lookups; the *_update twins run replicated, as billed reads do.
  public query func get_users_mo_map(offset : Nat64, step : Nat64, count : Nat64) : async ReadResult { getSeq(MAP, offset, step, count) };
  public func get_users_mo_map_update(offset : Nat64, step : Nat64, count : Nat64) : async ReadResult { getSeq(MAP, offset, step, count) };
  public query func get_users_mo_pure_map(offset : Nat64, step : Nat64, count : Nat64) : async ReadResult { getSeq(PURE, offset, step, count) };
  public func get_users_mo_pure_map_update(offset : Nat64, step : Nat64, count : Nat64) : async ReadResult { getSeq(PURE, offset, step, count) };
  public query func get_users_mo_region(offset : Nat64, step : Nat64, count : Nat64) : async ReadResult { getSeq(REGION, offset, step, count) };
  public func get_users_mo_region_update(offset : Nat64, step : Nat64, count : Nat64) : async ReadResult { getSeq(REGION, offset, step, count) };
  public query func get_users_mo_map_ids(ids : [Nat64]) : async ReadResult { getList(MAP, ids) };
  public func get_users_mo_map_ids_update(ids : [Nat64]) : async ReadResult { getList(MAP, ids) };
  public query func get_users_mo_pure_map_ids(ids : [Nat64]) : async ReadResult { getList(PURE, ids) };
  public func get_users_mo_pure_map_ids_update(ids : [Nat64]) : async ReadResult { getList(PURE, ids) };
  public query func get_users_mo_region_ids(ids : [Nat64]) : async ReadResult { getList(REGION, ids) };
  public func get_users_mo_region_ids_update(ids : [Nat64]) : async ReadResult { getList(REGION, ids) };

  // Range scans (offset, count): up to count rows with id >= offset, in id order.
  public query func scan_users_mo_map(offset : Nat64, count : Nat64) : async ReadResult { scanFrom(MAP, offset, count) };
  public func scan_users_mo_map_update(offset : Nat64, count : Nat64) : async ReadResult { scanFrom(MAP, offset, count) };
  public query func scan_users_mo_pure_map(offset : Nat64, count : Nat64) : async ReadResult { scanFrom(PURE, offset, count) };
  public func scan_users_mo_pure_map_update(offset : Nat64, count : Nat64) : async ReadResult { scanFrom(PURE, offset, count) };
  public query func scan_users_mo_region(offset : Nat64, count : Nat64) : async ReadResult { scanFrom(REGION, offset, count) };
  public func scan_users_mo_region_update(offset : Nat64, count : Nat64) : async ReadResult { scanFrom(REGION, offset, count) };

  // Bytes per row for later inserts (default 100, max 1 MiB).
  public func set_payload_size(size : Nat64) : async Nat64Result {
    if (size > MAX_PAYLOAD_SIZE) {
      return #Err("payload size " # debug_show size # " exceeds the maximum of " # debug_show MAX_PAYLOAD_SIZE # " bytes (1 MiB)");
    };
    payloadSize := size;
    payload := null;
    #Ok size;
  };

  // Remove every row; Ok = rows removed. The region keeps its pages.
  public func clear_mo_map() : async Nat64Result {
    let n = Prim.natToNat64(Map.size(map));
    Map.clear(map);
    #Ok n;
  };
  public func clear_mo_pure_map() : async Nat64Result {
    let n = Prim.natToNat64(PureMap.size(pureMap));
    pureMap := PureMap.empty();
    #Ok n;
  };
  public func clear_mo_region() : async Nat64Result {
    let n = Prim.natToNat64(Map.size(regionIndex));
    Map.clear(regionIndex);
    regionEnd := 0;
    #Ok n;
  };

  // Does nothing: what it costs is the collector's increment after it, if one is due (the
  // host sends it until none is, so that a filled canister's snapshot has no collection
  // under way). Ok = the heap's bytes.
  public func tick() : async Nat64Result {
    #Ok(Prim.natToNat64(Prim.rts_heap_size()));
  };

  // The bench canister's Stats, for the host's one reading of every module: this canister
  // has no StableBTreeMap and no SQLite.
  public query func stats() : async Stats {
    {
      btree_rows = 0;
      sqlite_rows = 0;
      heap_pages = heapPages();
      stable_pages = stablePages();
      btree_stable_pages = null;
      sqlite_page_count = 0;
      sqlite_page_size = 0;
      sqlite_freelist_count = 0;
      journal_mode = "unavailable: this canister has no SQLite";
      payload_size = payloadSize;
    };
  };

  // The stores' rows and the runtime's figures; the instructions are those of the last
  // update message: its own (mutator) and its collector increment's.
  public query func motoko_stats() : async MotokoStats {
    {
      map_rows = Prim.natToNat64(Map.size(map));
      pure_map_rows = Prim.natToNat64(PureMap.size(pureMap));
      region_rows = Prim.natToNat64(Map.size(regionIndex));
      region_pages = switch region { case (?r) Region.size(r); case null 0 };
      heap_size = Prim.natToNat64(Prim.rts_heap_size());
      memory_size = Prim.natToNat64(Prim.rts_memory_size());
      max_live_size = Prim.natToNat64(Prim.rts_max_live_size());
      total_allocation = Prim.natToNat64(Prim.rts_total_allocation());
      reclaimed = Prim.natToNat64(Prim.rts_reclaimed());
      mutator_instructions = Prim.natToNat64(Prim.rts_mutator_instructions());
      collector_instructions = Prim.natToNat64(Prim.rts_collector_instructions());
    };
  };
};
