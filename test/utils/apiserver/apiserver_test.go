package apiserver

import (
	"flag"
	"testing"
)

// DefaultParallel sets -test.parallel when the command line did not, and leaves it alone when it
// did. (This test binary has read the flag already: changing it here has no effect on the run.)
func TestDefaultParallel(t *testing.T) {
	f := flag.Lookup("test.parallel")
	was := f.Value.String()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if err := DefaultParallel(7); err != nil {
		t.Fatal(err)
	}
	want := "7"
	if given {
		want = was
	}
	if got := f.Value.String(); got != want {
		t.Fatalf("-test.parallel = %s after DefaultParallel(7), want %s (given on the command line: %v)", got, want, given)
	}
	// Once set, it counts as given: a second call changes nothing.
	if err := DefaultParallel(3); err != nil {
		t.Fatal(err)
	}
	if got := f.Value.String(); got != want {
		t.Fatalf("-test.parallel = %s after a second call, want %s", got, want)
	}
}
