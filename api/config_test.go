package api

import (
	"testing"
	"time"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/internal/option"
	"github.com/preconf/preconf/simulate"
)

// mustNew is New for a configuration the test knows is valid.
func mustNew(t testing.TB, b Backend, cfg Config) *API {
	t.Helper()
	a, err := New(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Validate refuses each bad option naming it (simulate's under
// "simulate."); zero values, the defaults, and the "none" spellings pass.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string // "": valid
	}{
		{"zero: the defaults", Config{}, ""},
		{"call default latest", Config{CallDefault: ethjson.Latest}, ""},
		{"call default pending", Config{CallDefault: pendingRef}, ""},
		{"no log caps", Config{LogLimits: &LogLimits{MaxRange: NoLogMaxRange, MaxResults: NoLogMaxResults}}, ""},
		{"zero log caps", Config{LogLimits: &LogLimits{}}, ""},
		{"call default a block number", Config{CallDefault: ethjson.BlockRef{Number: 7}}, "call-default"},
		{"call default safe", Config{CallDefault: ethjson.BlockRef{Tag: ethjson.TagSafe}}, "call-default"},
		{"negative log results", Config{LogLimits: &LogLimits{MaxResults: -1}}, "getlogs-max-results"},
		{"negative simulate timeout", Config{Simulate: &simulate.Options{Timeout: -time.Second}}, "simulate.timeout"},
		{"unknown state-root mode", Config{Simulate: &simulate.Options{Roots: simulate.RootCompute + 1}}, "simulate.state-root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if !option.Names(err, tc.field) {
				t.Fatalf("error %v, want one naming %q (\"\": none)", err, tc.field)
			}
		})
	}
}

// New refuses what Validate refuses, and fills zero values with the
// defaults.
func TestNewDefaults(t *testing.T) {
	b := localChain{mustOpenDev(t)}
	if _, err := New(b, Config{LogLimits: &LogLimits{MaxResults: -5}}); err == nil {
		t.Fatal("New took a negative eth_getLogs cap")
	}
	a := mustNew(t, b, Config{LogLimits: &LogLimits{MaxRange: 10}})
	if want := (LogLimits{MaxRange: 10, MaxResults: DefaultLogMaxResults}); a.logLimits != want {
		t.Fatalf("log limits %+v, want %+v", a.logLimits, want)
	}
	if a.callDefault != ethjson.Latest || a.engine.Options() != simulate.DefaultOptions() {
		t.Fatalf("call default %v, simulate options %+v: not the defaults", a.callDefault, a.engine.Options())
	}
}
