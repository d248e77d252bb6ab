// Run only by name (`icbench mops broken`): moc rejects it.
import Bench "mo:bench";

module {
  public func init() : Bench.Bench {
    let bench = Bench.Bench();
    bench.name(42);
    bench;
  };
};
