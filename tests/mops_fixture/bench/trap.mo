// Run only by name (`icbench mops trap`): not a `*.bench.mo`, so the default glob skips it.
import Bench "mo:bench";
import Prim "mo:prim";

module {
  public func init() : Bench.Bench {
    let bench = Bench.Bench();
    bench.name("Trap");
    bench.description("");
    bench.rows(["ok", "trap"]);
    bench.cols(["x"]);
    bench.runner(func(row, _col) {
      if (row == "trap") Prim.trap("the cell traps");
    });
    bench;
  };
};
