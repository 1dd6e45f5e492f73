package peers

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAtLeast(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"v20.10.0", true},
		{"v20.9.5", false},
		{"v20.20.2", true},
		{"v18.19.0", false},
		{"v24.0.0", true},
		{"v20.10", false}, // not a full version
		{"garbage", false},
	} {
		if got := atLeast(tc.v, MinNode); got != tc.want {
			t.Errorf("atLeast(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// A missing peer is an error unless installing is allowed; an installed one
// is returned as it is, without running the installer.
func TestInstallOnce(t *testing.T) {
	cache := t.TempDir()
	bin := filepath.Join(cache, "bin", "peer")
	ran := 0
	do := func() error {
		ran++
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			return err
		}
		return os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	}
	if _, err := installOnce(cache, bin, false, do); err == nil || !strings.Contains(err.Error(), "not installed") || ran != 0 {
		t.Fatalf("without install: err %v, installer ran %d times", err, ran)
	}
	for range 2 {
		got, err := installOnce(cache, bin, true, do)
		if err != nil || got != bin {
			t.Fatalf("install: %q %v", got, err)
		}
	}
	if ran != 1 {
		t.Fatalf("installer ran %d times, want once", ran)
	}
	if _, err := installOnce(cache, filepath.Join(cache, "none"), true, func() error { return nil }); err == nil {
		t.Fatal("an install that leaves no binary was accepted")
	}
	if _, err := Geth(t.TempDir(), false, io.Discard); err == nil {
		t.Fatal("geth found in an empty cache")
	}
}

// Program prefers the environment, then the cache, then PATH.
func TestProgram(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("PATH", t.TempDir())
	if _, err := Program("promtool", "PRECONF_TEST_PROMTOOL"); err == nil {
		t.Fatal("found a program that is nowhere")
	}
	bin := filepath.Join(DefaultCache(), "bin", "promtool")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Program("promtool", "PRECONF_TEST_PROMTOOL"); err != nil || got != bin {
		t.Fatalf("cached program: %q %v", got, err)
	}
	t.Setenv("PRECONF_TEST_PROMTOOL", filepath.Join(cache, "none"))
	if _, err := Program("promtool", "PRECONF_TEST_PROMTOOL"); err == nil {
		t.Fatal("a missing $PRECONF_TEST_PROMTOOL was accepted")
	}
}
