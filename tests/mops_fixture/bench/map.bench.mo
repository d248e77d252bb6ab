import Bench "mo:bench";
import Map "mo:core/Map";
import Nat "mo:core/Nat";
import Array "mo:core/Array";

module {
  public func init() : Bench.Bench {
    let bench = Bench.Bench();
    bench.name("Map");
    bench.description("mo:core's Map: insert, then look up, the heap carried from cell to cell");
    bench.rows(["Map"]);
    bench.cols(["add 1k", "get 1k", "clear"]);
    let map = Map.empty<Nat, [Nat]>();
    bench.runner(func(_row, col) {
      switch col {
        case "add 1k" {
          for (i in Nat.range(0, 1000)) {
            Map.add(map, Nat.compare, i, Array.repeat<Nat>(i, 4));
          };
        };
        case "get 1k" {
          for (i in Nat.range(0, 1000)) { ignore Map.get(map, Nat.compare, i) };
        };
        case _ { Map.clear(map) };
      };
    });
    bench;
  };
};
