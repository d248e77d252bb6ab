import Bench "mo:bench";
import Sum "../src/Sum";

module {
  public func init() : Bench.Bench {
    let bench = Bench.Bench();
    bench.name("Sum");
    bench.description("Adds the numbers up to n");
    bench.rows(["loop"]);
    bench.cols(["10", "1000"]);
    bench.runner(func(_row, col) {
      let n = if (col == "10") 10 else 1000;
      ignore Sum.upTo(n);
    });
    bench;
  };
};
