// icbench's bench canister for `icbench mops`: the wrapper `mops bench` (ic-mops 3.x,
// cli/commands/bench/bench-canister.mo) puts around a `*.bench.mo`, written anew to behave
// as it does. Its public methods, their order of statements and the statistics it reads
// are mops': a cell runs inside `countInstructions` (three performance-counter reads, the
// empty read's cost subtracted), the runtime's statistics are read before and after, and
// in the update path the statistics after are read only once two awaited calls have let
// the collector run.
import Prim "mo:prim";

import UserBench "./user-bench"; // icbench puts the bench file's path here

persistent actor class () {
  type BenchSchema = {
    name : Text;
    description : Text;
    rows : [Text];
    cols : [Text];
  };

  type Bench = {
    getVersion : () -> Nat;
    getSchema : () -> BenchSchema;
    runCell : (Nat, Nat) -> ();
  };

  type BenchResult = {
    instructions : Int;
    rts_mutator_instructions : Int;
    stable_memory_size : Int;
    rts_stable_memory_size : Int;
    rts_logical_stable_memory_size : Int;
    rts_collector_instructions : Int;
    rts_heap_size : Int;
    rts_memory_size : Int;
    rts_total_allocation : Int;
    rts_reclaimed : Int;
  };

  transient var current : ?Bench = null;

  func loaded() : Bench {
    switch current {
      case (?bench) bench;
      case null Prim.trap("bench not initialized");
    };
  };

  public func init() : async BenchSchema {
    let bench = UserBench.init();
    current := ?bench;
    // As mops: one page of a region, so stable memory is in use from the start.
    ignore Prim.regionGrow(Prim.regionNew(), 1);
    bench.getSchema();
  };

  public query func getSchema() : async BenchSchema {
    loaded().getSchema();
  };

  func stats() : BenchResult {
    {
      instructions = 0;
      rts_heap_size = Prim.rts_heap_size();
      stable_memory_size = Prim.rts_stable_memory_size() * 65536;
      rts_stable_memory_size = Prim.rts_stable_memory_size();
      rts_logical_stable_memory_size = Prim.rts_logical_stable_memory_size();
      rts_memory_size = Prim.rts_memory_size();
      rts_total_allocation = Prim.rts_total_allocation();
      rts_reclaimed = Prim.rts_reclaimed();
      rts_mutator_instructions = Prim.rts_mutator_instructions();
      rts_collector_instructions = Prim.rts_collector_instructions();
    };
  };

  func since(a : BenchResult, b : BenchResult) : BenchResult {
    {
      instructions = b.instructions - a.instructions;
      rts_heap_size = b.rts_heap_size - a.rts_heap_size;
      stable_memory_size = b.stable_memory_size - a.stable_memory_size;
      rts_stable_memory_size = b.rts_stable_memory_size - a.rts_stable_memory_size;
      rts_logical_stable_memory_size = b.rts_logical_stable_memory_size - a.rts_logical_stable_memory_size;
      rts_memory_size = b.rts_memory_size - a.rts_memory_size;
      rts_total_allocation = b.rts_total_allocation - a.rts_total_allocation;
      rts_reclaimed = b.rts_reclaimed - a.rts_reclaimed;
      rts_mutator_instructions = b.rts_mutator_instructions - a.rts_mutator_instructions;
      rts_collector_instructions = b.rts_collector_instructions - a.rts_collector_instructions;
    };
  };

  // The instructions of `f`: the counter's rise over it, less that of an empty reading.
  func counted(f : () -> ()) : Nat64 {
    let first = Prim.performanceCounter(0);
    let start = Prim.performanceCounter(0);
    f();
    let end = Prim.performanceCounter(0);
    end - start - (start - first);
  };

  func cell(row : Nat, col : Nat) : BenchResult {
    let bench = loaded();
    let before = stats();
    let instructions = Prim.nat64ToNat(counted(func() { bench.runCell(row, col) }));
    let after = stats();
    since(before, { after with instructions });
  };

  func cellThenCollect(row : Nat, col : Nat) : async BenchResult {
    let bench = loaded();
    let before = stats();
    let instructions = Prim.nat64ToNat(counted(func() { bench.runCell(row, col) }));
    // A message ends here: the collector runs before the statistics are read again.
    await (func() : async () {})();
    let after = stats();
    since(before, { after with instructions });
  };

  public query func getStats() : async BenchResult {
    stats();
  };

  public query func runCellQuery(rowIndex : Nat, colIndex : Nat) : async BenchResult {
    cell(rowIndex, colIndex);
  };

  public func runCellUpdate(rowIndex : Nat, colIndex : Nat) : async BenchResult {
    cell(rowIndex, colIndex);
  };

  public func runCellUpdateAwait(rowIndex : Nat, colIndex : Nat) : async BenchResult {
    await cellThenCollect(rowIndex, colIndex);
  };
};
