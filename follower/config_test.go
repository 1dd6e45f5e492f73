package follower

import (
	"strings"
	"testing"
	"time"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/internal/option"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/remote"
)

// Validate refuses each bad option naming it (as `preconf follow` spells
// its flag); zero values are the defaults New fills in.
func TestConfigValidate(t *testing.T) {
	ok := func(change func(*Config)) Config {
		c := Config{Upstream: "http://127.0.0.1:1", Feed: "ws://127.0.0.1:2/ws", Chain: chain.DevGenesis().Config}
		if change != nil {
			change(&c)
		}
		return c
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string // "": valid
	}{
		{"zero options", ok(nil), ""},
		{"https and wss", ok(func(c *Config) { c.Upstream, c.Feed = "https://node.example/v2/key", "wss://feed.example/ws" }), ""},
		{"feed over http", ok(func(c *Config) { c.Feed = "http://127.0.0.1:2/ws" }), ""},
		{"every option set", ok(func(c *Config) {
			c.Proofs, c.PollInterval, c.UpstreamTimeout, c.Ahead = remote.ProofsRequired, time.Second, time.Second, 5
			c.MinBackoff, c.MaxBackoff, c.PingInterval, c.MaxFrame, c.Stall = time.Millisecond, time.Second, time.Second, 1<<20, time.Minute
		}), ""},
		{"no upstream", ok(func(c *Config) { c.Upstream = "" }), "upstream"},
		{"websocket upstream", ok(func(c *Config) { c.Upstream = "ws://127.0.0.1:1" }), "upstream"},
		{"upstream without host", ok(func(c *Config) { c.Upstream = "http:///x" }), "upstream"},
		{"no feed", ok(func(c *Config) { c.Feed = "" }), "flashblocks"},
		{"feed not a URL", ok(func(c *Config) { c.Feed = "ws://[::1" }), "flashblocks"},
		{"no chain", ok(func(c *Config) { c.Chain = nil }), "chain"},
		{"proofs off", ok(func(c *Config) { c.Proofs = remote.ProofsOff }), ""},
		{"unknown proofs mode", ok(func(c *Config) { c.Proofs = remote.ProofsOff + 1 }), "proofs"},
		{"negative proofs mode", ok(func(c *Config) { c.Proofs = -1 }), "proofs"},
		{"negative poll", ok(func(c *Config) { c.PollInterval = -time.Millisecond }), "upstream.poll"},
		{"negative upstream timeout", ok(func(c *Config) { c.UpstreamTimeout = -time.Second }), "upstream.timeout"},
		{"negative ahead", ok(func(c *Config) { c.Ahead = -1 }), "flashblocks.ahead"},
		{"negative min backoff", ok(func(c *Config) { c.MinBackoff = -1 }), "flashblocks.min-backoff"},
		{"negative backoff", ok(func(c *Config) { c.MaxBackoff = -1 }), "flashblocks.backoff"},
		{"backoff below the first wait", ok(func(c *Config) { c.MaxBackoff = time.Millisecond }), "flashblocks.backoff"},
		{"negative ping", ok(func(c *Config) { c.PingInterval = -time.Second }), "flashblocks.ping"},
		{"negative stall", ok(func(c *Config) { c.Stall = -time.Second }), "flashblocks.stall"},
		{"negative max frame", ok(func(c *Config) { c.MaxFrame = -1 }), "flashblocks.max-frame"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if !option.Names(err, tc.field) {
				t.Fatalf("error %v, want one naming %q (\"\": none)", err, tc.field)
			}
			f, newErr := New(tc.cfg, new(pending.Source))
			if (newErr != nil) != (tc.field != "") {
				t.Fatalf("New's error %v, Validate's %v", newErr, err)
			}
			if f != nil && strings.Contains(tc.name, "zero") {
				d := f.cfg
				if d.PollInterval != DefaultPollInterval || d.UpstreamTimeout != DefaultUpstreamTimeout || d.Stall != DefaultStall || d.Ahead == 0 || d.MaxFrame == 0 {
					t.Fatalf("zero options run as %+v, not the defaults", d)
				}
			}
		})
	}
}

// A refused URL is named without its credentials.
func TestConfigValidateRedacts(t *testing.T) {
	c := Config{Upstream: "ws://127.0.0.1:1/v2/SECRETKEY", Feed: "ws://127.0.0.1:2", Chain: chain.DevGenesis().Config}
	if err := c.Validate(); err == nil || strings.Contains(err.Error(), "SECRETKEY") {
		t.Fatalf("error %v", err)
	}
}
