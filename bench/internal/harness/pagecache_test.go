package harness

import (
	"os"
	"testing"
)

func TestWarmDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(dir+"/a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int{"x": 3 << 20, "a/y": 10, "a/b/z": 0} {
		if err := os.WriteFile(dir+"/"+name, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(dir+"/x", dir+"/a/link"); err != nil {
		t.Fatal(err)
	}
	n, _, err := WarmDir(dir)
	if err != nil || n != 3<<20+10 {
		t.Fatalf("warmDir = %d, %v; want %d bytes (regular files once, no symlinks)", n, err, 3<<20+10)
	}
	if _, _, err := WarmDir(dir + "/missing"); err == nil {
		t.Fatal("warmDir of a missing dir: no error")
	}
}
