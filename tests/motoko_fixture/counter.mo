// A Motoko canister with enhanced orthogonal persistence (moc's default since 0.15): a
// 64-bit heap that holds its state, kept across upgrades only with
// `wasm_memory_persistence = opt variant { keep }`. tests/it/motoko.rs runs the compiled
// counter.wasm on the embedded engine; scripts/build-motoko-fixture.sh rebuilds it.
import Prim "mo:⛔";

persistent actor {
  var count : Nat = 0;

  public func inc() : async Nat {
    count += 1;
    count;
  };

  public query func get() : async Nat { count };

  // A text literal: it lives in a data segment, which must still be readable after an
  // upgrade that kept the old heap.
  public query func hello() : async Text { "hello, persistent world" };

  // Allocates an n-element array in the heap and returns its size.
  public func allocate(n : Nat) : async Nat {
    let xs = Prim.Array_init<Nat>(n, 7);
    xs.size();
  };
};
