package report

import (
	"os"
	"testing"
)

func TestReplaceSection(t *testing.T) {
	doc := "a\n<!-- bench:x begin -->\nold\n<!-- bench:x end -->\nb\n<!-- bench:y begin -->\n<!-- bench:y end -->\n"
	got, err := replaceSection(doc, "x", "new table\n\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\n<!-- bench:x begin -->\nnew table\n<!-- bench:x end -->\nb\n<!-- bench:y begin -->\n<!-- bench:y end -->\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := replaceSection(doc, "z", "t"); err == nil {
		t.Error("a missing section was replaced")
	}
	// The real files carry every section -write-docs writes.
	for file, names := range map[string][]string{"../../../docs/bench.md": {"main", "writeload", "follow", "suite", "tails", "bigstate"}, "../../../README.md": {"readme"}} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if _, err := replaceSection(string(raw), n, "t"); err != nil {
				t.Errorf("%s: %v", file, err)
			}
		}
	}
}
