// The project's own code, which a bench imports by a relative path.
module {
  public func upTo(n : Nat) : Nat {
    var total = 0;
    var i = 0;
    while (i < n) {
      i += 1;
      total += i;
    };
    total;
  };
};
