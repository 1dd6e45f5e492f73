package node

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// A second node on a datadir in use stops at once with a clear error; once
// the first closes, the datadir opens again.
func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	first, err := New(Config{DataDir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{DataDir: dir, Logger: quiet})
	if !errors.Is(err, ErrDataDirInUse) || !strings.Contains(err.Error(), "another preconf is using "+dir) {
		t.Fatalf("second node on %s: %v", dir, err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := New(Config{DataDir: dir, Logger: quiet})
	if err != nil {
		t.Fatalf("after close: %v", err)
	}
	again.Close()
}
