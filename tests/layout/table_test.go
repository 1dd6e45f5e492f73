package layout

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestImportsFollowLayoutTable: no package imports one listed above it in
// the README's layout table (a row may import its own row and those below),
// and every package of the module has a row: the table is the layering, so
// a new package or import that breaks it fails here, not in a reader's head.
// Test files' imports are not counted (tests may drive a layer from above).
func TestImportsFollowLayoutTable(t *testing.T) {
	rows := layoutRows(t, "../../README.md")
	rank := func(pkg string) (int, string) {
		best, at := "", -1
		for i, entries := range rows {
			for _, e := range entries {
				if (pkg == e || strings.HasPrefix(pkg, e+"/")) && len(e) > len(best) {
					best, at = e, i
				}
			}
		}
		return at, best
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(f[0], module)
		r, row := rank(pkg)
		if r < 0 {
			t.Errorf("package %s has no row in README's layout table", pkg)
			continue
		}
		for _, imp := range f[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if dr, drow := rank(dep); dr >= 0 && dr < r {
				t.Errorf("%s (row %q) imports %s (row %q, listed above it)", pkg, row, dep, drow)
			}
		}
	}
}

// layoutRows parses the README's "## Layout" table: each row's first cell
// lists packages (or directories) in backquotes, top row first.
func layoutRows(t *testing.T, readme string) [][]string {
	t.Helper()
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Layout\n")
	if !ok {
		t.Fatal("README has no ## Layout section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	quoted := regexp.MustCompile("`([^`]+)`")
	var rows [][]string
	for line := range strings.SplitSeq(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.Contains(cells[1], "`") {
			continue // not a row, or the header and its rule
		}
		var entries []string
		for _, m := range quoted.FindAllStringSubmatch(cells[1], -1) {
			entries = append(entries, strings.TrimSuffix(m[1], "/"))
		}
		rows = append(rows, entries)
	}
	if len(rows) < 10 {
		t.Fatalf("README's layout table has %d rows: not parsed", len(rows))
	}
	return rows
}
