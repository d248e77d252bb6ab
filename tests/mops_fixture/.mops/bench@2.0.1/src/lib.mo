// A benchmark for `mops bench` and `icbench mops`: a table of cells, a name and a
// description, and the function that runs one cell. The bench canister reads the schema and
// runs each cell by its row and column index. (icbench's own code, with the API of
// mops-bench 2.0.1.)
module {
  public type BenchSchema = {
    name : Text;
    description : Text;
    rows : [Text];
    cols : [Text];
  };

  public class Bench() {
    var title = "";
    var about = "";
    var rowNames : [Text] = [];
    var colNames : [Text] = [];
    var run : (Text, Text) -> () = func(_ : Text, _ : Text) {};

    public func name(value : Text) { title := value };
    public func description(value : Text) { about := value };
    public func rows(value : [Text]) { rowNames := value };
    public func cols(value : [Text]) { colNames := value };
    public func runner(f : (row : Text, col : Text) -> ()) { run := f };

    // What the bench canister calls.
    public func getVersion() : Nat { 1 };
    public func getSchema() : BenchSchema {
      { name = title; description = about; rows = rowNames; cols = colNames };
    };
    public func runCell(rowIndex : Nat, colIndex : Nat) {
      run(rowNames[rowIndex], colNames[colIndex]);
    };
  };
};
